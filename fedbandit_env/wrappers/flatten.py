"""Flat observations for libraries that need one ``Box`` (stable-baselines3's MLPs)."""

from __future__ import annotations

from collections.abc import Sequence
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


class FlatLayout:
    """Where each entry of a ``Dict`` observation lies in its flat vector, to flatten the
    observations of all agents with one NumPy call per entry instead of one
    ``gymnasium.spaces.flatten`` per agent (which recurses through the space: 5-11x the
    env's own step measured here).

    The result equals ``np.stack([flatten_observation(space, o) for o in ...])`` value
    for value (gymnasium's order; ``Discrete`` one-hot; ``Box`` and ``MultiBinary`` cast
    to their dtype, then to float32). A space with other entries (nested, ``Tuple``,
    ``MultiDiscrete``) has no layout: :meth:`of` returns ``None``.

    Examples:
        >>> space = spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Box(0, 1, (2,))})
        >>> FlatLayout.of(space).batch([{"a": 2, "b": [0.5, 1.0]}, {"a": 0, "b": [0, 0]}])
        array([[0. , 0. , 1. , 0.5, 1. ],
               [1. , 0. , 0. , 0. , 0. ]], dtype=float32)
    """

    def __init__(self, entries: list[tuple[str, int, int, Any]], width: int) -> None:
        self.entries = entries  # (key, start, size, start of a Discrete | dtype)
        self.width = width

    @property
    def slices(self) -> dict[str, slice]:
        """Each entry's columns in the flat vector.

        Examples:
            >>> FlatLayout.of(spaces.Dict({"a": spaces.Discrete(3)})).slices
            {'a': slice(0, 3, None)}
        """
        return {key: slice(start, start + size) for key, start, size, _ in self.entries}

    @classmethod
    def of(cls, space: spaces.Space[Any]) -> FlatLayout | None:
        """The layout of a ``Dict`` of ``Discrete``, ``Box`` and ``MultiBinary``."""
        if not isinstance(space, spaces.Dict):
            return None
        entries: list[tuple[str, int, int, Any]] = []
        start = 0
        for key, sub in space.spaces.items():
            if type(sub) is spaces.Discrete:
                entries.append((key, start, int(sub.n), int(sub.start)))
            elif type(sub) in (spaces.Box, spaces.MultiBinary):
                entries.append((key, start, spaces.flatdim(sub), np.dtype(sub.dtype)))
            else:
                return None
            start += spaces.flatdim(sub)
        return cls(entries, start)

    def batch(self, observations: Sequence[Observation]) -> np.ndarray:
        """The ``(len(observations), width)`` float32 batch."""
        n = len(observations)
        out = np.zeros((n, self.width), dtype=np.float32)
        for key, start, size, kind in self.entries:
            if isinstance(kind, int):  # Discrete: one-hot
                index = np.fromiter((o[key] for o in observations), np.int64, n)
                out[np.arange(n), start + index - kind] = 1.0
            else:
                values = np.asarray([o[key] for o in observations], dtype=kind)
                out[:, start : start + size] = values.reshape(n, size)
        return out


_LAYOUTS: dict[int, tuple[spaces.Space[Any], FlatLayout | None]] = {}


def flatten_batch(space: spaces.Space[Any], observations: Sequence[Observation]) -> np.ndarray:
    """Observations of ``space`` as one ``(n, D)`` float32 batch of
    :func:`flatten_observation` rows (through a cached :class:`FlatLayout` where the
    space has one).

    Examples:
        >>> space = spaces.Dict({"a": spaces.Discrete(2)})
        >>> flatten_batch(space, [{"a": 1}, {"a": 0}]).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    cached = _LAYOUTS.get(id(space))
    if cached is None or cached[0] is not space:
        if len(_LAYOUTS) > 1024:  # spaces of envs long gone
            _LAYOUTS.clear()
        cached = _LAYOUTS[id(space)] = (space, FlatLayout.of(space))
    layout = cached[1]
    if layout is None:
        return np.stack([flatten_observation(space, o) for o in observations])
    return layout.batch(observations)


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
        first = self._inner[env.possible_agents[0]]
        self._shared = all(s == first for s in self._inner.values())

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
        return self._flatten_all(obs), infos

    def step(self, actions: dict[AgentID, Action]) -> Any:
        """Step the wrapped env and flatten its observations."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        return self._flatten_all(obs), rewards, terms, truncs, infos

    def _flatten_all(self, obs: dict[AgentID, Observation]) -> dict[AgentID, np.ndarray]:
        """Every agent's vector, one batch for all where the agents share a space."""
        agents = list(obs)
        if not agents or not self._shared:
            return {a: self.flatten(a, o) for a, o in obs.items()}
        batch = flatten_batch(self._inner[agents[0]], list(obs.values()))
        return dict(zip(agents, list(batch), strict=True))
