"""The learner's view of a vector env: every agent of every env one row of a flat batch,
on the env's device.

A shared-parameter learner sees ``B N`` agents a step: their observations as one
``(B N, W)`` float32 batch (laid out as the PettingZoo path flattens each agent's
observation, :class:`~fedbandit_env.wrappers.flatten.FlatLayout`; scaled onto ``[-1, 1]``
by their bounds where the stack says so), their learning rewards ``(B N,)`` (the local
reward, or a privileged or cooperative signal: :func:`learner_rewards`), and whether the
episodes ended. :class:`LearnerView` computes these with the vector env's own array
namespace, so on a torch device (``make_vec(..., device="cuda")``) a rollout never leaves
it; the batched trainer (:mod:`fedbandit_env.rl.batched_ppo`) and the stable-baselines3
adapter (:class:`~fedbandit_env.rl.vector_sb3.VectorAgentVecEnv`, which hands SB3 NumPy
arrays) both read the env through it.

Row ``b N + i`` is agent ``i`` of env ``b``. The envs run in lockstep: at the horizon,
or at a cut drawn from ``episode_lengths`` (one length for all envs each episode), every
env resets (continuing its generators).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from fedbandit_env.backend import Backend, array_backend
from fedbandit_env.rl.common import (
    check_episode_lengths,
    check_reward,
    draw_episode_length,
    scaled_space,
)
from fedbandit_env.vector.wrappers.flatten import flat_rows
from fedbandit_env.wrappers.flatten import FlatLayout, flat_box

VectorMessageFn = Callable[[dict[str, Any]], Any]
"""Every agent's message from a vector observation: ``obs -> (B, N, D)``."""


def learner_rewards(reward: str, rewards: Any, infos: dict[str, Any], obs: dict[str, Any]) -> Any:
    """The learning signal of a vector step, ``(B, N)`` float64, on the env's device: the
    local reward (``"own"``), minus the agent's or the team's regret (``"neg_regret"``,
    ``"team"``), or the honest team value (``"team_value"``: the agent's mean of its
    pulled arm and the means it holds or heard of it, averaged;
    :func:`~fedbandit_env.rl.common.team_value`).

    Examples:
        >>> infos = {"regret": np.array([[0.25, 0.75]])}
        >>> learner_rewards("team", np.zeros((1, 2)), infos, {}).tolist()
        [[-0.5, -0.5]]
    """
    be = array_backend(rewards)
    xp = be.xp
    if reward == "own":
        return xp.astype(rewards, be.float64)
    if reward == "neg_regret":
        return -xp.astype(infos["regret"], be.float64)
    if reward == "team":
        regret = xp.astype(infos["regret"], be.float64)
        return xp.broadcast_to(-xp.mean(regret, axis=1, keepdims=True), regret.shape)
    key = "private_means" if "private_means" in obs else "means"
    if key not in obs:
        raise ValueError("the team_value reward needs the agents' means (statistics=True)")
    arms = obs["arm"]
    means = xp.astype(obs[key], be.float64)
    own = xp.take_along_axis(means, arms[..., None], axis=2)[..., 0]
    if "held" in obs:  # (B, N receivers, N senders, D)
        table, heard = xp.astype(obs["held"], be.float64), obs["heard"]
        if int(table.shape[-1]) <= int(xp.max(arms)):
            return own
        index = xp.broadcast_to(arms[:, :, None, None], (*table.shape[:3], 1))
        got = xp.take_along_axis(table, index, axis=3)[..., 0]
    elif "messages" in obs:  # sender rows (B, N, D) and who heard them
        sent, heard = xp.astype(obs["messages"], be.float64), obs["mask"]
        if int(sent.shape[-1]) <= int(xp.max(arms)):
            return own
        b, n = int(arms.shape[0]), int(arms.shape[1])
        rows = xp.broadcast_to(sent[:, None, :, :], (b, n, n, int(sent.shape[-1])))
        index = xp.broadcast_to(arms[:, :, None, None], (b, n, n, 1))
        got = xp.take_along_axis(rows, index, axis=3)[..., 0]
    else:
        return own
    heard = xp.astype(heard, be.boolean)
    count = xp.astype(xp.sum(xp.astype(heard, be.int64), axis=2), be.float64)
    return (own + xp.sum(xp.where(heard, got, xp.zeros_like(got)), axis=2)) / (1.0 + count)


class LearnerView:
    """Every agent of a vector env as one flat batch on its device (module docstring).

    Args:
        venv: The vector env with the learner's stack in vector form
            (:meth:`LearnerStack.make_vec <fedbandit_env.rl.LearnerStack.make_vec>`).
        agent_space: One agent's PettingZoo observation space (the flat layout).
        reward: ``"own"``, ``"neg_regret"``, ``"team"`` or ``"team_value"``.
        message_fn: Every agent's message (``obs -> (B, N, D)``; default zeros; none
            when the stack sends its own, ``venv.message_dim == 0``).
        scale: Map every bounded entry of the flat observation onto ``[-1, 1]``.
        episode_lengths: ``(low, high)``: cut every episode after a length drawn
            log-uniformly from ``low..high``.

    Examples:
        >>> from fedbandit_env.rl import LearnerStack
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> stack = LearnerStack.for_setting("neighbours", posterior=True, reward="team")
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=2, setting="neighbours", instances="train")
        >>> view = LearnerView.for_stack(stack, s, copies=4)
        >>> obs = view.reset(seed=0)
        >>> obs.shape, view.rows
        ((12, 23), 12)
        >>> _, rewards, done, ended = view.step(np.zeros(12, int))
        >>> obs, rewards, done, ended = view.step(np.zeros(12, int))
        >>> done, sorted(ended)
        (True, ['comm_cost', 'epsilon', 'last', 'regret'])
    """

    def __init__(
        self,
        venv: Any,
        agent_space: spaces.Dict,
        reward: str = "own",
        message_fn: VectorMessageFn | None = None,
        scale: bool = False,
        episode_lengths: tuple[int, int] | None = None,
    ) -> None:
        layout = FlatLayout.of(agent_space)
        if layout is None:
            raise ValueError("the agents' observations have no flat layout")
        self.venv, self.layout, self.dict_space = venv, layout, agent_space
        self.backend: Backend = venv.unwrapped.backend
        self.reward_kind = check_reward(reward)
        self.message_fn = message_fn
        self.n_agents, self.copies = int(venv.n_agents), int(venv.num_envs)
        self.n_arms = int(venv.n_arms)
        self.rows = self.copies * self.n_agents
        self.horizon = int(venv.horizon)
        self.message_dim = int(venv.message_dim)
        self._public = int(venv.protocol.public_dim) if self.message_dim else 0
        box = flat_box(agent_space)
        self.observation_space: spaces.Box = box
        self.scaling: tuple[Any, Any] | None = None
        if scale:
            self.observation_space, (offset, factor) = scaled_space(box)
            be = self.backend
            self.scaling = (be.asarray(offset), be.asarray(factor))
        self.episode_lengths = check_episode_lengths(episode_lengths, self.horizon)
        self._length_rng = np.random.default_rng(0)
        self._length = 0
        self.t = 0
        self._obs: dict[str, Any] | None = None
        self._out = self.backend.zeros((self.rows, layout.width), self.backend.float32)

    @classmethod
    def for_stack(
        cls, stack: Any, scenario: Any, copies: int = 1, device: Any = None, **kwargs: Any
    ) -> LearnerView:
        """``copies`` envs of ``scenario`` under ``stack`` on ``device`` (its vector form,
        message, reward and scaling)."""
        probe = stack.make_env(scenario)
        space = probe.observation_space(probe.possible_agents[0])
        probe.close()
        venv = stack.make_vec(scenario, copies, device=device)
        message_fn = stack.vector_messages if stack.share_means else None
        kwargs = {"reward": stack.reward, "scale": stack.scale, "message_fn": message_fn,
                  **kwargs}  # fmt: skip
        return cls(venv, space, **kwargs)

    def seed_lengths(self, seed: int | None) -> None:
        """Seed the generator of the episodes' cuts."""
        self._length_rng = np.random.default_rng(seed)

    def flat(self, obs: dict[str, Any]) -> Any:
        """Every agent's observation as a row: ``(B N, W)`` float32 (a fresh array)."""
        raw = flat_rows(obs, self.layout, self._public, self._out)
        if self.scaling is None:
            return self.backend.copy(raw)
        return raw * self.scaling[1] + self.scaling[0]

    def reset(self, seed: Any = None) -> Any:
        """Reset every env (``seed``: as the vector env's ``reset``); the flat batch."""
        self._obs, _ = self.venv.reset(seed=seed)
        self.t, self._length = 0, draw_episode_length(self._length_rng, self.episode_lengths)
        return self.flat(self._obs)

    def step(self, arms: Any) -> tuple[Any, Any, bool, dict[str, Any] | None]:
        """Every agent pulls ``arms`` (``(B N,)``); returns the next flat batch, the learning
        rewards ``(B N,)`` float64, whether the episodes ended (then every env has reset:
        the batch is the new episodes' first) and, when they did, the episodes' totals
        (``regret`` ``(B, N)``, ``comm_cost`` ``(B,)``, ``epsilon`` or ``None``, ``last``
        the ended episodes' final flat batch: arrays on the device)."""
        if self._obs is None:
            raise RuntimeError("step before reset()")
        be = self.backend
        b, n = self.copies, self.n_agents
        chosen = be.xp.reshape(be.asarray(arms), (b, n))
        messages = None
        if self.message_dim:
            if self.message_fn is not None:
                messages = self.message_fn(self._obs)
            else:
                messages = be.zeros((b, n, self.message_dim))
        obs, rewards, _, _, infos = self.venv.step(chosen, messages)
        learned = learner_rewards(self.reward_kind, rewards, infos, obs)
        self.t += 1
        done = self.t >= self.horizon or self.t == self._length
        if not done:
            self._obs = obs
            return self.flat(obs), be.xp.reshape(learned, (-1,)), False, None
        ended = {
            "regret": infos["cumulative_regret"],
            "comm_cost": infos["cumulative_comm_cost"],
            "epsilon": infos.get("epsilon"),
            "last": self.flat(obs),
        }
        return self.reset(), be.xp.reshape(learned, (-1,)), True, ended


__all__ = ["LearnerView", "VectorMessageFn", "learner_rewards"]
