"""Compiled reward and decision-set draws: one agent's reward (:func:`draw_reward`, what
the env step of compiled code draws, :mod:`fedbandit_env.core.kernels`; the same numbers
as ``MABProblem.sample`` and ``LinearProblem.sample`` draw vectorized) and a step's
decision sets (:func:`draw_sets`, ``LinearProblem.draw_sets``'s draws one by one)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.core.extending import overload

from fedbandit_env.rng_kernels import (
    GeneratorSlot,
    close_stream,
    in_place,
    open_stream,
    stream_below,
)
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
    n_best: int, n_pool: int, rng: np.random.Generator | GeneratorSlot, out: IntArray
) -> IntArray:  # pragma: no cover
    """A step's decision sets ``(N, K)`` as pool rows, the draws of
    ``LinearProblem.draw_sets`` one by one (its docstring gives the order), from a
    Generator or a row of a generator table. A PCG64 row's state is held in registers
    through the ``N K`` draws (:class:`~fedbandit_env.rng_kernels.Stream`) and written
    back at the end: drawn from the row, every number loaded and stored the state
    (about half of the linear rollout's own time at ``N = 100, K = 100``, measured
    with ``perf``).

    Examples:
        >>> from fedbandit_env.problems.linear import LinearProblem
        >>> from fedbandit_env.rng_kernels import generator_at, generator_table
        >>> p = LinearProblem(np.eye(4), [1.0, 0, 0, 0], set_size=3, n_agents=2, n_best=1)
        >>> mine = draw_sets(1, 4, np.random.default_rng(5), np.empty((2, 3), np.int64))
        >>> bool((mine == p.draw_sets(np.random.default_rng(5))).all())
        True
        >>> table = generator_table([np.random.default_rng(5)])  # kept: rows are addresses
        >>> out = draw_sets(1, 4, generator_at(table, 0), np.empty((2, 3), np.int64))
        >>> bool((out == mine).all())
        True
    """
    _sets_from(n_best, n_pool, rng, out)
    return out


@njit(cache=True, nogil=True, inline="always")
def _fill_sets(n_best: int, n_pool: int, source: Any, out: IntArray) -> Any:  # pragma: no cover
    """:func:`draw_sets`' draws from ``source`` (a stream, or a source drawn in place:
    :func:`~fedbandit_env.rng_kernels.stream_below`); returns the source after them. An
    agent's slot of the best vector and its row wait in its first two entries (``K >=
    2``) until its others are drawn: the draws' order needs all slots, then all best
    rows, then the others (``LinearProblem.draw_sets``)."""
    n, k = out.shape
    if n_best < 0:  # grouped: one group of k consecutive rows per agent
        for i in range(n):
            g, source = stream_below(source, n_pool // k)
            for j in range(k):
                out[i, j] = g * k + j
        return source
    if n_best == 0:
        for i in range(n):
            for j in range(k):
                out[i, j], source = stream_below(source, n_pool)
        return source
    for i in range(n):
        out[i, 0], source = stream_below(source, k)
    for i in range(n):
        out[i, 1], source = stream_below(source, n_best)
    for i in range(n):
        s, best = out[i, 0], out[i, 1]
        for j in range(k):
            if j != s:
                v, source = stream_below(source, n_pool - n_best)
                out[i, j] = n_best + v
        out[i, s] = best
    return source


def _sets_from(n_best: int, n_pool: int, rng: Any, out: IntArray) -> None:  # pragma: no cover
    """:func:`_fill_sets` from ``rng``: through a stream where it is a PCG64 row, in place
    otherwise (compiled only)."""
    raise NotImplementedError


@overload(_sets_from)
def _overload_sets_from(n_best: Any, n_pool: Any, rng: Any, out: Any) -> Any:
    if isinstance(rng, types.UniTuple):  # a row of a generator table

        def from_row(n_best: Any, n_pool: Any, rng: Any, out: Any) -> None:
            if rng[4] != 0:
                close_stream(rng, _fill_sets(n_best, n_pool, open_stream(rng), out))
            else:
                _fill_sets(n_best, n_pool, rng, out)

        return from_row

    def from_generator(n_best: Any, n_pool: Any, rng: Any, out: Any) -> None:
        _fill_sets(n_best, n_pool, in_place(rng), out)

    return from_generator
