"""Flat observations for libraries that need one ``Box`` (stable-baselines3's MLPs)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation
from fedbandit_env.wrappers.base import ParallelWrapper, refuse_twice


def flat_box(space: spaces.Space[Any]) -> spaces.Box:
    """``gymnasium.spaces.flatten_space`` as a float32 ``Box`` (one-hot for ``Discrete``).

    Examples:
        >>> flat_box(spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Box(0, 1, (2,))})).shape
        (5,)
    """
    box = spaces.flatten_space(space)
    if not isinstance(box, spaces.Box):  # pragma: no cover - every space we build flattens
        raise TypeError(f"cannot flatten {space!r} into a Box")
    return spaces.Box(box.low.astype(np.float32), box.high.astype(np.float32), dtype=np.float32)


def flatten_observation(space: spaces.Space[Any], observation: Any) -> np.ndarray:
    """One observation of ``space`` as the float32 vector of :func:`flat_box`.

    Examples:
        >>> flatten_observation(spaces.Dict({"a": spaces.Discrete(2)}), {"a": 1}).tolist()
        [0.0, 1.0]
    """
    return np.asarray(spaces.flatten(space, observation), dtype=np.float32)


class FlattenObservations(ParallelWrapper):
    """Every agent's observation becomes one float32 vector (keys in sorted order, as
    ``gymnasium.spaces.flatten`` lays them out: ``arm`` one-hot, then the boxes).

    Apply it last, over whatever stack of wrappers decides what agents see; the flat
    vector carries exactly that information.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = FlattenObservations(federated_mab_v0.parallel_env(n_arms=3, horizon=5))
        >>> obs, _ = env.reset(seed=0)
        >>> obs["agent_0"].shape, obs["agent_0"].dtype
        ((5,), dtype('float32'))
    """

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action]) -> None:
        super().__init__(env)
        refuse_twice(env, FlattenObservations)
        self._inner = {a: env.observation_space(a) for a in env.possible_agents}
        self._flat = {a: flat_box(s) for a, s in self._inner.items()}

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The flat ``Box`` of ``agent``."""
        return self._flat[agent]

    def flatten(self, agent: AgentID, observation: Observation) -> np.ndarray:
        """One inner observation of ``agent`` as its flat vector."""
        return flatten_observation(self._inner[agent], observation)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Any], dict[AgentID, dict[str, Any]]]:
        """Reset the wrapped env and flatten its observations."""
        obs, infos = self.env.reset(seed=seed, options=options)
        return {a: self.flatten(a, o) for a, o in obs.items()}, infos

    def step(self, actions: dict[AgentID, Action]) -> Any:
        """Step the wrapped env and flatten its observations."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        return {a: self.flatten(a, o) for a, o in obs.items()}, rewards, terms, truncs, infos
