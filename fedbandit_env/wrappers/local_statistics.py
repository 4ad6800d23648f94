"""Add each agent's own per-arm pull counts and sample means to its observation."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit
from pettingzoo import ParallelEnv

from fedbandit_env.backend import array_backend
from fedbandit_env.core.kernels import ARITHMETIC
from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, StepResult
from fedbandit_env.wrappers.base import (
    BanditSpaces,
    ParallelWrapper,
    agent_rows,
    refuse_twice,
)


def fold_pulls(
    counts: FloatArray,
    sums: FloatArray,
    index: tuple[Any, ...],
    seen: FloatArray,
    counts32: Any,
    means32: Any,
) -> tuple[Any, Any]:
    """Add one pull with reward ``seen`` to each cell ``index`` of the float64 statistics
    ``counts`` and ``sums`` (in place; the cells distinct: one pulled arm per agent) and
    return new float32 views ``(counts32, means32)``: copies of the last ones (the
    arrays handed out are never changed) with the pulled cells set to their count and to
    ``sums / counts`` rounded once. Every other cell is unchanged, so this equals
    recomputing the views over every cell (``means32`` 0 where never pulled) with one
    write per agent instead of passes over ``(N, M)``. The PettingZoo wrapper (cells ``(i,
    arm_i)``) and its vector form (cells ``(b, i, arm_bi)``, on any device) both fold
    here.

    Examples:
        >>> counts, sums = np.zeros((2, 3)), np.zeros((2, 3))
        >>> c32, m32 = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
        >>> c32, m32 = fold_pulls(counts, sums, (np.array([0, 1]), np.array([2, 0])),
        ...                       np.array([0.5, 1.0]), c32, m32)
        >>> c32.tolist(), m32[0].tolist()
        ([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], [0.0, 0.0, 0.5])
    """
    be = array_backend(counts)
    xp = be.xp
    if be.is_numpy and len(index) == 1 and counts.ndim == 1:  # flat cells: one pass
        new_counts, new_means = np.empty_like(counts32), np.empty_like(means32)
        fold_flat(counts, sums, index[0], seen, counts32, means32, new_counts, new_means)
        return new_counts, new_means
    be.add_at(counts, index, 1.0)
    be.add_at(sums, index, seen)
    new_counts, new_means = be.copy(counts32), be.copy(means32)
    pulled = counts[index]  # every folded cell now has a pull
    new_counts[index] = xp.astype(pulled, be.float32)
    new_means[index] = xp.astype(sums[index] / pulled, be.float32)
    return new_counts, new_means


@njit(cache=True, nogil=True, **ARITHMETIC)
def fold_flat(
    counts: FloatArray,
    sums: FloatArray,
    cells: np.ndarray,
    seen: FloatArray,
    counts32: np.ndarray,
    means32: np.ndarray,
    new_counts: np.ndarray,
    new_means: np.ndarray,
) -> None:  # pragma: no cover
    """:func:`fold_pulls` of flat NumPy statistics compiled: the views copied into
    ``new_counts`` / ``new_means``, then each cell of ``cells`` folded (the same float
    operations in the same order, one pass).

    Examples:
        >>> counts, sums = np.zeros(3), np.zeros(3)
        >>> c32, m32 = np.zeros(3, np.float32), np.zeros(3, np.float32)
        >>> out = np.empty(3, np.float32), np.empty(3, np.float32)
        >>> fold_flat(counts, sums, np.array([2]), np.array([0.5]), c32, m32, *out)
        >>> out[0].tolist(), out[1].tolist()
        ([0.0, 0.0, 1.0], [0.0, 0.0, 0.5])
    """
    new_counts[:] = counts32
    new_means[:] = means32
    for k in range(cells.size):
        c = cells[k]
        counts[c] += 1.0
        sums[c] += seen[k]
        new_counts[c] = np.float32(counts[c])
        new_means[c] = np.float32(sums[c] / counts[c])


class LocalStatistics(ParallelWrapper):
    """Observation gains ``counts`` and ``means``: the agent's own sufficient statistics.

    Both are computed from what the agent already observes (its own arm and reward),
    so the wrapper adds no information, only memory: a memoryless learned policy can
    then act on the same statistics an index policy keeps.  Unpulled arms have count 0
    and mean 0 (never NaN).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = LocalStatistics(federated_mab_v0.parallel_env(n_arms=3, horizon=5))
        >>> obs, _ = env.reset(seed=0)
        >>> obs, *_ = env.step({a: 2 for a in env.agents})
        >>> obs["agent_0"]["counts"].tolist()
        [0.0, 0.0, 1.0]
    """

    vector_form = "fedbandit_env.vector.wrappers.local_statistics:VecLocalStatistics"

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action]) -> None:
        super().__init__(env)
        refuse_twice(env, LocalStatistics)
        self._spaces: dict[AgentID, spaces.Dict] = {}
        for agent in env.possible_agents:
            info = BanditSpaces.of(env, agent, "LocalStatistics")
            m, horizon = info.n_arms, info.horizon
            lo, hi = info.reward_low, info.reward_high
            base = info.base
            self._spaces[agent] = spaces.Dict(
                {
                    **base.spaces,
                    "counts": spaces.Box(0.0, horizon, shape=(m,), dtype=np.float32),
                    "means": spaces.Box(lo, hi, shape=(m,), dtype=np.float32),
                }
            )
        n, m = len(env.possible_agents), self._n_arms()
        self._counts: FloatArray = np.zeros((n, m))
        self._sums: FloatArray = np.zeros((n, m))
        self._counts32: np.ndarray = np.zeros((n, m), dtype=np.float32)
        self._means32: np.ndarray = np.zeros((n, m), dtype=np.float32)
        self._row = {a: i for i, a in enumerate(env.possible_agents)}
        self._rows = np.arange(n, dtype=np.int64)

    def _n_arms(self) -> int:
        first = next(iter(self._spaces.values()))
        return int(first["counts"].shape[0])  # type: ignore[index]

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The wrapped space plus ``counts`` and ``means`` boxes."""
        return self._spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env and the statistics."""
        obs, infos = self.env.reset(seed=seed, options=options)
        for array in (self._counts, self._sums, self._counts32, self._means32):
            array[:] = 0.0
        return self._augment(obs), infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step, then fold each agent's observed (arm, reward) into its statistics (one
        NumPy update for all agents: each appears once a step)."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        if obs:
            k, keys = len(obs), list(obs)
            rows = self._rows if keys == self.possible_agents else agent_rows(self._row, keys, k)
            arms = np.fromiter((o["arm"] for o in obs.values()), np.int64, k)
            seen = np.fromiter((o["reward"][0] for o in obs.values()), np.float64, k)
            self._counts32, self._means32 = fold_pulls(
                self._counts, self._sums, (rows, arms), seen, self._counts32, self._means32
            )
        return self._augment(obs), rewards, terms, truncs, infos

    def _augment(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        # fresh float32 arrays each step, each agent a row of them (a view)
        count_rows, mean_rows = list(self._counts32.copy()), list(self._means32.copy())
        row = self._row
        return {
            agent: {**o, "counts": count_rows[row[agent]], "means": mean_rows[row[agent]]}
            for agent, o in obs.items()
        }
