"""A stable-baselines3 ``VecEnv`` with one sub-env per agent (parameter sharing)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from fedbandit_env.rl.common import batch_observations, check_reward, learner_reward, scale_box
from fedbandit_env.type_aliases import Action, AgentID, Observation
from fedbandit_env.wrappers.arm_actions import MessageFn, arm_space, pack
from fedbandit_env.wrappers.flatten import flat_box


class AgentVecEnv(VecEnv):
    """Every agent of one parallel env is one of SB3's sub-envs: a single model acts for
    all agents (shared parameters), each on its own observation.

    All agents truncate together at the horizon; the VecEnv then resets the parallel env
    (continuing its seeded generator) and reports each agent's last observation as
    ``infos[i]["terminal_observation"]`` with ``"TimeLimit.truncated"``, as SB3 expects.
    ``seed(s)`` (which SB3 calls when a model is built with ``seed=s``) seeds the next
    reset, so training is reproducible. No SuperSuit: its conversion ignores ``seed``.

    Args:
        env: A parallel env, with any stack of wrappers; all agents must share spaces.
        reward: ``"local"`` or ``"neg_regret"`` (see :class:`SingleAgentEnv`).
        flatten: Present observations as one float32 ``Box``.
        message_fn: Each learner's message when the env carries messages (default zeros).
        scale: Map every bounded entry of the flat observation onto ``[-1, 1]``
            (:func:`~fedbandit_env.rl.common.scale_box`); the box then says so.

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> venv = AgentVecEnv(federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=2))
        >>> _ = venv.seed(0); obs = venv.reset()
        >>> obs.shape, venv.num_envs
        ((3, 4), 3)
        >>> obs, rewards, dones, infos = venv.step(np.array([1, 1, 0]))
        >>> obs, rewards, dones, infos = venv.step(np.array([1, 1, 0]))
        >>> dones.tolist(), infos[0]["TimeLimit.truncated"]
        ([True, True, True], True)
    """

    def __init__(
        self,
        env: ParallelEnv[Any, Any, Any],
        reward: str = "local",
        flatten: bool = True,
        message_fn: MessageFn | None = None,
        scale: bool = False,
    ) -> None:
        if not isinstance(env, ParallelEnv):
            raise TypeError(f"env must be a PettingZoo ParallelEnv, got {type(env).__name__}")
        self.env = env
        self.agents: list[AgentID] = list(env.possible_agents)
        first = self.agents[0]
        inner = env.observation_space(first)
        for a in self.agents[1:]:
            if env.observation_space(a) != inner or env.action_space(a) != env.action_space(first):
                raise ValueError(f"all agents must share spaces; {a} differs from {first}")
        self._inner = inner
        self.flatten = flatten
        self.reward_kind = check_reward(reward)
        self.message_fn = message_fn
        arm, self._message_dim = arm_space(env, first)
        obs_space: Any = flat_box(inner) if flatten else inner
        self._scale = scale_box(obs_space) if scale and flatten else None
        if self._scale is not None:
            low = obs_space.low * self._scale[1] + self._scale[0]
            high = obs_space.high * self._scale[1] + self._scale[0]
            obs_space = spaces.Box(low.astype(np.float32), high.astype(np.float32))
        self._actions: np.ndarray = np.zeros(len(self.agents), dtype=np.int64)
        self._obs: dict[AgentID, Observation] = {}
        super().__init__(len(self.agents), obs_space, arm)

    # ------------------------------------------------------------------ core
    def _stack(self, obs: dict[AgentID, Observation]) -> VecEnvObs:
        return batch_observations(self._inner, obs, self.agents, self.flatten, self._scale)

    def reset(self) -> VecEnvObs:
        """Reset the parallel env (with the seed set by :meth:`seed`, if any)."""
        options = self._options[0] or None
        obs, infos = self.env.reset(seed=self._seeds[0], options=options)
        self._reset_seeds()
        self._reset_options()
        self._obs = obs
        self.reset_infos = [dict(infos.get(a, {})) for a in self.agents]
        return self._stack(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Store one arm per agent."""
        arms = np.asarray(actions).reshape(-1)
        if arms.size != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got shape {np.shape(actions)}")
        self._actions = arms.astype(np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every agent; auto-reset at the horizon."""
        if not self._obs:
            raise RuntimeError("step before reset()")
        actions: dict[AgentID, Action] = {
            a: pack(self._actions[i], a, self._obs[a], self._message_dim, self.message_fn)
            for i, a in enumerate(self.agents)
        }
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        out_infos = [dict(infos[a]) for a in self.agents]
        reward = np.array(
            [learner_reward(self.reward_kind, rewards[a], infos[a]) for a in self.agents],
            dtype=np.float32,
        )
        dones = np.array([terms[a] or truncs[a] for a in self.agents])
        stacked = self._stack(obs)
        if dones.all():
            for i, a in enumerate(self.agents):
                last: Any = (
                    stacked[i]
                    if isinstance(stacked, np.ndarray)
                    else {k: v[i] for k, v in stacked.items()}  # type: ignore[union-attr]
                )
                out_infos[i]["terminal_observation"] = last
                out_infos[i]["TimeLimit.truncated"] = bool(truncs[a] and not terms[a])
            stacked = self.reset()
        else:
            self._obs = obs
        return stacked, reward, dones, out_infos

    def close(self) -> None:
        """Close the parallel env."""
        self.env.close()

    # ------------------------------------------------------------------ VecEnv plumbing
    def _indices(self, indices: VecEnvIndices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices) if isinstance(indices, Iterable) else [int(indices)]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The parallel env's attribute, once per index (the sub-envs share one env)."""
        value = getattr(self.env, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the shared parallel env."""
        setattr(self.env, attr_name, value)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call a method of the shared parallel env once; its result for every index."""
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[Any], indices: VecEnvIndices = None) -> list[bool]:
        """Whether the parallel env's wrapper stack contains ``wrapper_class``."""
        env, found = self.env, False
        while True:
            found = found or isinstance(env, wrapper_class)
            inner = getattr(env, "env", None)
            if inner is None or inner is env:
                break
            env = inner
        return [found for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No image rendering."""
        return [None for _ in self.agents]
