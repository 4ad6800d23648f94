"""``LocalStatistics`` in vector form: each agent's own pull counts and sample means."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.type_aliases import FloatArray
from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.wrappers.local_statistics import fold_pulls


class VecLocalStatistics(VecWrapper):
    """Observations gain ``counts`` and ``means`` ``(B, N, M)`` float32, as
    :class:`~fedbandit_env.wrappers.LocalStatistics` adds them to each agent's (the same
    function, :func:`~fedbandit_env.wrappers.local_statistics.fold_pulls`; on any device).

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = VecLocalStatistics(
        ...     FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=4, num_envs=2))
        >>> _ = venv.reset(seed=0)
        >>> obs = venv.step(np.ones((2, 3), int))[0]
        >>> obs["counts"][0, 0].tolist(), obs["means"].shape
        ([0.0, 1.0], (2, 3, 2))
    """

    ANY_DEVICE = True

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        single = env.single_observation_space
        if not isinstance(single, spaces.Dict) or "counts" in single.spaces:
            raise ValueError("VecLocalStatistics needs dict observations without 'counts'")
        reward = single["reward"]
        assert isinstance(reward, spaces.Box)
        n, m = self.n_agents, self.n_arms
        lo, hi = float(reward.low.min()), float(reward.high.max())
        self.single_observation_space = spaces.Dict(
            {
                **single.spaces,
                "counts": spaces.Box(0.0, float(self.horizon), (n, m), np.float32),
                "means": spaces.Box(lo, hi, (n, m), np.float32),
            }
        )
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        be, b = self.backend, self.num_envs
        self._counts: FloatArray = be.zeros((b, n, m))
        self._sums: FloatArray = be.zeros((b, n, m))
        # agent (b, i)'s cells start at (b N + i) M: a pull is one flat index (a 1-D
        # gather/scatter, several times cheaper than three broadcast index arrays)
        self._cells = (be.arange(b)[:, None] * n + be.arange(n)[None, :]) * m
        self._counts32: Any = be.zeros((b, n, m), be.float32)
        self._means32: Any = be.zeros((b, n, m), be.float32)

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the envs and the statistics."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._clear()
        return self._augment(obs), infos

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step, then fold every agent's (arm, reward) into its statistics."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        if resets:
            self._clear()
        else:
            xp, shape = self.backend.xp, (self.num_envs, self.n_agents, self.n_arms)
            seen = xp.reshape(xp.astype(obs["reward"][..., 0], self.backend.float64), (-1,))
            index = (xp.reshape(self._cells + obs["arm"], (-1,)),)
            counts, sums, counts32, means32 = (
                xp.reshape(x, (-1,))
                for x in (self._counts, self._sums, self._counts32, self._means32)
            )  # views: the folds land in the (B, N, M) arrays
            counts32, means32 = fold_pulls(counts, sums, index, seen, counts32, means32)
            self._counts32 = xp.reshape(counts32, shape)
            self._means32 = xp.reshape(means32, shape)
        return self._augment(obs), rewards, terms, truncs, infos

    def _clear(self) -> None:
        be, shape = self.backend, (self.num_envs, self.n_agents, self.n_arms)
        self._counts, self._sums = be.zeros(shape), be.zeros(shape)
        self._counts32, self._means32 = be.zeros(shape, be.float32), be.zeros(shape, be.float32)

    def _augment(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # fold_pulls returns new views each step and _clear new zeros: never mutated
        return {**obs, "counts": self._counts32, "means": self._means32}


__all__ = ["VecLocalStatistics"]
