"""Compiled reward and decision-set draws: one agent's reward (:func:`draw_reward`, what
the env step of compiled code draws, :mod:`fedbandit_env.core.kernels`; the same numbers
as ``MABProblem.sample`` and ``LinearProblem.sample`` draw vectorized) and a step's
decision sets (:func:`draw_sets`, ``LinearProblem.draw_sets``'s draws one by one)."""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.rng_kernels import integer_below
from fedbandit_env.type_aliases import IntArray

NOISE_CODES = {"bernoulli": 0, "gaussian": 1, "clipped_gaussian": 2}
"""Integer code of each noise kind inside compiled code."""


@njit(cache=True, nogil=True, inline="always")
def draw_reward(
    mean: float, noise: int, sigma: float, rng: np.random.Generator
) -> float:  # pragma: no cover
    """One reward of local mean ``mean``: Bernoulli ``u < mean`` with one uniform,
    Gaussian ``mean + sigma z`` with one standard normal, clipped to [0, 1] for noise 2
    (:data:`NOISE_CODES`). Inlined where it is called (a scalar helper, no array
    arguments: it adds no reference counting to a loop).

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> draw_reward(1.0, 0, 1.0, rng), draw_reward(0.5, 1, 0.0, rng)
        (1.0, 0.5)
    """
    z = rng.random() if noise == 0 else rng.standard_normal()
    return reward_of(mean, z, noise, sigma)


@njit(cache=True, nogil=True, inline="always")
def reward_of(mean: float, z: float, noise: int, sigma: float) -> float:  # pragma: no cover
    """The reward of local mean ``mean`` from its random number ``z`` (a uniform for
    Bernoulli noise, else a standard normal): ``u < mean``, or ``mean + sigma z``
    clipped to [0, 1] for noise 2; :func:`~fedbandit_env.problems.mab.rewards_of`'s
    arithmetic, one reward at a time (what :func:`draw_reward` and the core's compiled
    step compute; inlined, a scalar helper).

    Examples:
        >>> reward_of(0.5, 0.2, 0, 1.0), reward_of(0.9, 1.0, 2, 0.5)
        (1.0, 1.0)
    """
    if noise == 0:
        return 1.0 if z < mean else 0.0
    x = mean + sigma * z
    if noise == 2:
        x = min(max(x, 0.0), 1.0)
    return x


@njit(cache=True, nogil=True)
def draw_sets(
    n_best: int, n_pool: int, rng: np.random.Generator, out: IntArray
) -> IntArray:  # pragma: no cover
    """A step's decision sets ``(N, K)`` as pool rows, the draws of
    ``LinearProblem.draw_sets`` one by one (its docstring gives the order).

    Examples:
        >>> from fedbandit_env.problems.linear import LinearProblem
        >>> p = LinearProblem(np.eye(4), [1.0, 0, 0, 0], set_size=3, n_agents=2, n_best=1)
        >>> mine = draw_sets(1, 4, np.random.default_rng(5), np.empty((2, 3), np.int64))
        >>> bool((mine == p.draw_sets(np.random.default_rng(5))).all())
        True
    """
    n, k = out.shape
    if n_best < 0:  # grouped: one group of k consecutive rows per agent
        for i in range(n):
            g = integer_below(rng, n_pool // k)
            for j in range(k):
                out[i, j] = g * k + j
        return out
    if n_best == 0:
        for i in range(n):
            for j in range(k):
                out[i, j] = integer_below(rng, n_pool)
        return out
    slot = np.empty(n, dtype=np.int64)
    for i in range(n):
        slot[i] = integer_below(rng, k)
    for i in range(n):
        out[i, slot[i]] = integer_below(rng, n_best)
    for i in range(n):
        for j in range(k):
            if j != slot[i]:
                out[i, j] = n_best + integer_below(rng, n_pool - n_best)
    return out
