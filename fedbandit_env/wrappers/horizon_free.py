"""Observations that do not depend on the horizon: what a learner needs to run at any T."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit
from pettingzoo import ParallelEnv

from fedbandit_env.backend import array_backend
from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, StepResult
from fedbandit_env.wrappers.base import ParallelWrapper, refuse_twice, step_of

REPLACED = ("step", "counts", "age")
"""Entries whose bounds (or values) grow with the horizon; replaced (``age``: if present)."""


def horizon_free_features(t: int, counts: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(log_step, shares, bonus)`` after ``t`` steps with pull ``counts`` (any shape):

    - ``log_step = log(1 + t)``, shape ``(1,)``;
    - ``shares = n / t`` (0 before the first step), each arm's share of the agent's pulls;
    - ``bonus = sqrt(log(1 + t) / (1 + n))``, UCB1's exploration width (Auer et al. 2002)
      with ``n + 1`` for ``n`` so that an unpulled arm's is finite.

    All float32, computed in float64 (the batched evaluation calls this same function,
    so both paths see the same bits). On NumPy, many whole counts with few values read
    two tables of ``0 .. max`` (:func:`look_up`): the same values.

    Examples:
        >>> log_step, shares, bonus = horizon_free_features(4, np.array([[1.0, 3.0]]))
        >>> shares.tolist(), [round(float(v), 4) for v in bonus[0]]
        ([[0.25, 0.75]], [0.8971, 0.6343])
    """
    log_t = np.log1p(np.full(1, float(t)))
    be = array_backend(counts)
    xp = be.xp
    if be.is_numpy:
        counts = np.asarray(counts)
        top = float(counts.max()) if counts.size else -1.0
        if 0.0 <= top < counts.size // 4:  # whole counts, few values: two tables, one gather
            table = _computed(t, log_t, np.arange(int(top) + 1, dtype=np.float64))
            shares32 = np.empty(counts.shape, np.float32)
            bonus32 = np.empty(counts.shape, np.float32)
            if look_up(counts.reshape(-1), table[0], table[1], shares32.reshape(-1),
                       bonus32.reshape(-1)):  # fmt: skip
                found: Any = (log_t.astype(np.float32), shares32, bonus32)  # float32 arrays
                return found
        found = (log_t.astype(np.float32), *_computed(t, log_t, np.array(counts, np.float64)))
        return found
    c = xp.astype(be.asarray(counts), be.float64)
    shares = c / float(t) if t > 0 else xp.zeros_like(c)
    bonus = xp.sqrt(float(log_t[0]) / (1.0 + c))
    return (
        be.asarray(log_t.astype(np.float32)),
        xp.astype(shares, be.float32),
        xp.astype(bonus, be.float32),
    )


def _computed(t: int, log_t: np.ndarray, c: FloatArray) -> tuple[np.ndarray, np.ndarray]:
    """``(shares, bonus)`` of the float64 counts ``c`` (a copy, worked in place) on NumPy:
    the float64 work of :func:`horizon_free_features` written out as float32 (the same
    values, fewer passes)."""
    shares32 = np.zeros(c.shape, np.float32)
    if t > 0:
        np.divide(c, float(t), out=shares32, casting="same_kind")
    np.add(1.0, c, out=c)
    np.divide(float(log_t[0]), c, out=c)
    return shares32, np.sqrt(c, out=np.empty(c.shape, np.float32), casting="same_kind")


@njit(cache=True, nogil=True)
def look_up(
    counts: np.ndarray,
    shares: np.ndarray,
    bonus: np.ndarray,
    shares_out: np.ndarray,
    bonus_out: np.ndarray,
) -> bool:  # pragma: no cover
    """``shares_out[k] = shares[counts[k]]`` and the same for ``bonus``, where the tables
    hold :func:`horizon_free_features` of ``0 .. len - 1`` (so the values are those of
    computing each cell); ``False`` (the outputs not written) if some count is not a
    whole number in the tables' range.

    Examples:
        >>> out = np.empty(2, np.float32), np.empty(2, np.float32)
        >>> look_up(np.array([1.0, 0.0]), np.array([0.0, 0.5], np.float32),
        ...         np.array([2.0, 1.0], np.float32), *out)
        True
        >>> out[0].tolist(), out[1].tolist()
        ([0.5, 0.0], [1.0, 2.0])
    """
    size = shares.size
    whole = True  # checked first, branch-free (it vectorizes), then gathered
    for k in range(counts.size):
        c = np.float64(counts[k])
        whole &= (c >= 0.0) & (c < size) & (np.floor(c) == c)  # NaN fails each
    if not whole:
        return False
    for k in range(counts.size):
        i = int(counts[k])
        shares_out[k] = shares[i]
        bonus_out[k] = bonus[i]
    return True


class HorizonFree(ParallelWrapper):
    """Replace the horizon-bound entries with features a model can read at any ``T``.

    A model sees its observation scaled by the space's bounds (``AgentVecEnv(scale=True)``),
    and ``step``, ``counts`` and ``HeldMessages``' ``age`` are bounded by the horizon: a
    model trained at ``T = 200`` evaluated at ``T = 2e4`` then reads a count of 100 as
    ``0.01`` where it learned ``1.0``. This wrapper, outermost over ``LocalStatistics`` or
    ``PrivateRewards`` (which give ``counts``), drops ``step``, ``counts`` and ``age`` and
    adds (:func:`horizon_free_features`):

    - ``log_step``: ``log(1 + t)``, unbounded (the scaler leaves it as it is);
    - ``shares``: ``n_k / t`` in ``[0, 1]``, how the agent has split its pulls;
    - ``bonus``: ``sqrt(log(1 + t) / (1 + n_k))``, unbounded;
    - ``log_age`` (under ``HeldMessages``): ``log(1 + age)`` of each held message.

    No information is lost: ``n_k = shares_k (e^{log_step} - 1)``. The features are those
    of index policies (UCB1's width, the pull share a Thompson posterior's spread
    follows), so a learner reads its statistics the way the references do at any horizon.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.wrappers import LocalStatistics
        >>> env = HorizonFree(LocalStatistics(federated_mab_v0.parallel_env(n_arms=2, horizon=9)))
        >>> sorted(env.observation_space("agent_0").spaces)
        ['arm', 'bonus', 'log_step', 'means', 'reward', 'shares']
        >>> obs, _ = env.reset(seed=0)
        >>> obs, *_ = env.step({a: 1 for a in env.agents})
        >>> obs, *_ = env.step({a: 0 for a in env.agents})
        >>> obs["agent_0"]["shares"].tolist(), round(float(obs["agent_0"]["log_step"][0]), 4)
        ([0.5, 0.5], 1.0986)
    """

    vector_form = "fedbandit_env.vector.wrappers.horizon_free:VecHorizonFree"

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action]) -> None:
        super().__init__(env)
        refuse_twice(env, HorizonFree)
        self._spaces: dict[AgentID, spaces.Dict] = {}
        for agent in env.possible_agents:
            base = env.observation_space(agent)
            if not isinstance(base, spaces.Dict) or not {"step", "counts"} <= set(base.spaces):
                raise TypeError(
                    "HorizonFree needs the agent's counts and the step in a Dict observation "
                    "(wrap LocalStatistics or PrivateRewards first), got "
                    f"{sorted(getattr(base, 'spaces', {}))} for {agent}"
                )
            m = int(np.prod(base["counts"].shape))  # type: ignore[arg-type]
            kept = {k: v for k, v in base.spaces.items() if k not in REPLACED}
            kept["log_step"] = spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float32)
            kept["shares"] = spaces.Box(0.0, 1.0, shape=(m,), dtype=np.float32)
            kept["bonus"] = spaces.Box(0.0, np.inf, shape=(m,), dtype=np.float32)
            if "age" in base.spaces:
                shape = base["age"].shape
                kept["log_age"] = spaces.Box(0.0, np.inf, shape=shape, dtype=np.float32)
            self._spaces[agent] = spaces.Dict(kept)

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The wrapped space without ``step``, ``counts``, ``age``, with the new entries."""
        return self._spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env; the first observation in the new form."""
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._convert(obs), infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step the env; every agent's observation in the new form (one NumPy call each
        for all agents)."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        return self._convert(obs), rewards, terms, truncs, infos

    def _convert(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        if not obs:
            return obs
        first = next(iter(obs.values()))
        t = step_of(first)
        counts = np.stack([np.asarray(o["counts"]) for o in obs.values()])
        log_step, shares, bonus = horizon_free_features(t, counts)
        ages = None
        if "age" in first:
            stacked = np.stack([np.asarray(o["age"], dtype=np.float64) for o in obs.values()])
            ages = list(np.log1p(stacked).astype(np.float32))
        out = {}
        for j, (agent, o) in enumerate(obs.items()):
            new = {k: v for k, v in o.items() if k not in REPLACED}
            new["log_step"], new["shares"], new["bonus"] = log_step, shares[j], bonus[j]
            if ages is not None:
                new["log_age"] = ages[j]
            out[agent] = new
        return out


__all__ = ["REPLACED", "HorizonFree", "horizon_free_features"]
