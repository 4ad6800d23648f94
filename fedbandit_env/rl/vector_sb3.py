"""stable-baselines3 on the vector env: every agent of every env is one SB3 sub-env."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from fedbandit_env.rl.common import (
    check_episode_lengths,
    check_reward,
    draw_episode_length,
    scaled_space,
)
from fedbandit_env.rl.train import set_torch_threads
from fedbandit_env.vector.wrappers.flatten import flat_rows
from fedbandit_env.wrappers.flatten import FlatLayout, flat_box

VectorMessageFn = Callable[[dict[str, np.ndarray]], np.ndarray]
"""Every agent's message from a vector observation: ``obs -> (B, N, D)``."""


def vector_learner_rewards(
    reward: str, rewards: np.ndarray, infos: dict[str, Any], obs: dict[str, np.ndarray]
) -> np.ndarray:
    """:func:`~fedbandit_env.rl.common.learner_rewards` for a vector step, ``(B, N)``:
    the local reward, minus the agent's or the team's regret, or the honest team value
    (:func:`~fedbandit_env.rl.common.team_value`: the agent's mean of its pulled arm and
    the means it holds or heard of it, averaged).

    Examples:
        >>> infos = {"regret": np.array([[0.25, 0.75]])}
        >>> vector_learner_rewards("team", np.zeros((1, 2)), infos, {}).tolist()
        [[-0.5, -0.5]]
    """
    if reward == "own":
        return np.asarray(rewards, dtype=np.float64)
    if reward == "neg_regret":
        return -np.asarray(infos["regret"], dtype=np.float64)
    if reward == "team":
        regret = np.asarray(infos["regret"], dtype=np.float64)
        return np.broadcast_to(-regret.mean(axis=1, keepdims=True), regret.shape).copy()
    key = "private_means" if "private_means" in obs else "means"
    if key not in obs:
        raise ValueError("the team_value reward needs the agents' means (statistics=True)")
    arms = np.asarray(obs["arm"])
    means = np.asarray(obs[key], dtype=np.float64)
    own = np.take_along_axis(means, arms[..., None], axis=2)[..., 0]
    if "held" in obs:  # (B, N receivers, N senders, D)
        table, heard = np.asarray(obs["held"], dtype=np.float64), np.asarray(obs["heard"])
        if table.shape[-1] <= arms.max():
            return own
        got = np.take_along_axis(table, arms[:, :, None, None], axis=3)[..., 0]
    elif "messages" in obs:  # sender rows (B, N, D) and who heard them
        sent, heard = np.asarray(obs["messages"], dtype=np.float64), np.asarray(obs["mask"])
        if sent.shape[-1] <= arms.max():
            return own
        got = np.take_along_axis(sent[:, None, :, :], arms[:, :, None, None], axis=3)[..., 0]
    else:
        return own
    heard = heard.astype(bool)
    return (own + np.where(heard, got, 0.0).sum(axis=2)) / (1 + heard.sum(axis=2))


class VectorAgentVecEnv(VecEnv):
    """Every agent of every env of a vector env (:mod:`fedbandit_env.vector`) is one of
    SB3's sub-envs: sub-env ``b N + i`` is agent ``i`` of env ``b``, one model acts for
    all (shared parameters), each on its own flat observation, laid out as
    :class:`~fedbandit_env.rl.AgentVecEnv` lays out the PettingZoo env's.

    The envs run in lockstep: at the horizon (or at a sampled ``episode_lengths`` cut,
    one length for all envs each episode) every sub-env reports its last observation as
    ``terminal_observation`` with ``"TimeLimit.truncated"`` (and its episode's
    ``cumulative_regret``, ``cumulative_comm_cost`` and, under privacy, ``epsilon``, as
    the PettingZoo env's infos give them) and every env resets
    (continuing its generators). ``seed(s)`` seeds env ``b``'s next reset with
    ``s + b N`` (SB3's ``seed + index`` of its first agent), as ``AgentVecEnv`` seeds
    copy ``b``.

    Args:
        venv: The vector env with the learner's stack in vector form
            (:meth:`LearnerStack.make_vec <fedbandit_env.rl.LearnerStack.make_vec>`).
        agent_space: One agent's PettingZoo observation space (the flat layout).
        reward: ``"own"``, ``"neg_regret"``, ``"team"`` or ``"team_value"``.
        message_fn: Every agent's message (``obs -> (B, N, D)``; default zeros).
        scale: Map every bounded entry of the flat observation onto ``[-1, 1]``.
        torch_threads: torch's intra-op threads (default 1; ``None``: leave as is).
        episode_lengths: ``(low, high)``: cut every episode after a length drawn
            log-uniformly from ``low..high``.

    Examples:
        >>> from fedbandit_env.rl import LearnerStack
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> stack = LearnerStack.for_setting("neighbours")
        >>> scenario = Scenario(n_agents=3, n_arms=2, horizon=2, setting="neighbours")
        >>> env = VectorAgentVecEnv.for_stack(stack, scenario, copies=4)
        >>> _ = env.seed(0); obs = env.reset()
        >>> obs.shape[0], env.num_envs
        (12, 12)
        >>> _ = env.step(np.zeros(12, int))
        >>> obs, rewards, dones, infos = env.step(np.zeros(12, int))
        >>> bool(dones.all()), infos[0]["TimeLimit.truncated"]
        (True, True)
    """

    def __init__(
        self,
        venv: Any,
        agent_space: spaces.Dict,
        reward: str = "own",
        message_fn: VectorMessageFn | None = None,
        scale: bool = False,
        torch_threads: int | None = 1,
        episode_lengths: tuple[int, int] | None = None,
    ) -> None:
        set_torch_threads(torch_threads)
        layout = FlatLayout.of(agent_space)
        if layout is None:
            raise ValueError("the agents' observations have no flat layout")
        self.venv = venv
        self.layout = layout
        self.dict_space = agent_space
        self.reward_kind = check_reward(reward)
        self.message_fn = message_fn
        self.n_agents = int(venv.n_agents)
        self.copies = int(venv.num_envs)
        self._public = int(venv.protocol.public_dim) if venv.message_dim else 0
        box = flat_box(agent_space)
        obs_space: spaces.Box = box
        self._scale: tuple[np.ndarray, np.ndarray] | None = None
        if scale:
            obs_space, self._scale = scaled_space(box)
        self.episode_lengths = self._check_lengths(episode_lengths)
        self._length_rng = np.random.default_rng(0)
        self._length = 0
        self._t = 0
        self._obs: dict[str, np.ndarray] | None = None
        n = self.copies * self.n_agents
        self._raw = np.zeros((n, layout.width), dtype=np.float32)
        self._arms = np.zeros(n, dtype=np.int64)
        super().__init__(n, obs_space, spaces.Discrete(int(venv.n_arms)))

    @classmethod
    def for_stack(
        cls, stack: Any, scenario: Any, copies: int = 1, **kwargs: Any
    ) -> VectorAgentVecEnv:
        """``copies`` envs of ``scenario`` under ``stack`` (its vector form, its message,
        reward and scaling)."""
        probe = stack.make_env(scenario)
        space = probe.observation_space(probe.possible_agents[0])
        probe.close()
        message_fn = stack.vector_messages if stack.share_means else None
        kwargs = {"reward": stack.reward, "scale": stack.scale, "message_fn": message_fn,
                  **kwargs}  # fmt: skip
        return cls(stack.make_vec(scenario, copies), space, **kwargs)

    def _check_lengths(self, lengths: tuple[int, int] | None) -> tuple[int, int] | None:
        return check_episode_lengths(lengths, int(self.venv.horizon))

    def _draw_length(self) -> int:
        return draw_episode_length(self._length_rng, self.episode_lengths)

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """SB3's seeding (each env's next reset), and the episode lengths' generator."""
        self._length_rng = np.random.default_rng(seed)
        return super().seed(seed)

    @property
    def scaled(self) -> bool:
        """Whether observations are scaled onto ``[-1, 1]`` by their bounds."""
        return self._scale is not None

    def _flat(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        raw = flat_rows(obs, self.layout, self._public, self._raw)
        if self._scale is None:
            return raw.copy()
        return raw * self._scale[1] + self._scale[0]

    def _reset_envs(self) -> VecEnvObs:
        n = self.n_agents
        seeds = [self._seeds[b * n] for b in range(self.copies)]
        seed: Any = None if all(s is None for s in seeds) else seeds
        self._obs, _ = self.venv.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self._t, self._length = 0, self._draw_length()
        return self._flat(self._obs)

    def reset(self) -> VecEnvObs:
        """Reset every env (with the seeds set by :meth:`seed`, if any)."""
        obs = self._reset_envs()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Store one arm per agent of every env."""
        arms = np.asarray(actions).reshape(-1)
        if arms.size != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got shape {np.shape(actions)}")
        self._arms = arms.astype(np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every agent of every env; at the horizon (or the cut) all reset."""
        if self._obs is None:
            raise RuntimeError("step before reset()")
        b, n = self.copies, self.n_agents
        messages = None
        if self.venv.message_dim:
            if self.message_fn is not None:
                messages = self.message_fn(self._obs)
            else:
                messages = np.zeros((b, n, self.venv.message_dim))
        obs, rewards, terms, truncs, infos = self.venv.step(self._arms.reshape(b, n), messages)
        learned = vector_learner_rewards(self.reward_kind, rewards, infos, obs)
        self._t += 1
        done = bool(truncs.all() or terms.all()) or self._t == self._length
        flat: Any = self._flat(obs)
        out_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done:  # each agent's episode totals, as the PettingZoo env's infos hold them
            regret = np.asarray(infos["cumulative_regret"], dtype=np.float64).reshape(-1)
            cost = np.repeat(np.asarray(infos["cumulative_comm_cost"], dtype=np.float64), n)
            spent = infos.get("epsilon")
            for j in range(self.num_envs):
                info = out_infos[j]
                info["terminal_observation"] = flat[j]
                info["TimeLimit.truncated"] = True
                info["cumulative_regret"] = float(regret[j])
                info["cumulative_comm_cost"] = float(cost[j])
                if spent is not None:
                    info["epsilon"] = float(spent[j // n])
            flat = self._reset_envs()
        else:
            self._obs = obs
        dones = np.full(self.num_envs, done)
        return flat, learned.reshape(-1).astype(np.float32), dones, out_infos

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The vector env's attribute, once per sub-env."""
        return [getattr(self.venv, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the vector env (shared by every sub-env)."""
        setattr(self.venv, attr_name, value)

    def env_method(
        self, method_name: str, *args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        """Call a method of the vector env, once."""
        result = getattr(self.venv, method_name)(*args, **kwargs)
        return [result] * len(list(self._get_indices(indices)))

    def env_is_wrapped(self, wrapper_class: type[Any], indices: VecEnvIndices = None) -> list[bool]:
        """Whether the vector env has a layer of ``wrapper_class``."""
        layer, found = self.venv, False
        while layer is not None and not found:
            found = isinstance(layer, wrapper_class)
            layer = getattr(layer, "env", None)
        return [found] * len(list(self._get_indices(indices)))

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No pictures."""
        return [None] * self.num_envs


__all__ = ["VectorAgentVecEnv", "VectorMessageFn", "vector_learner_rewards"]
