"""What every family's mathematics uses: argmax with uniform ties, ``log t``, first pulls.

Every function here is called both by the per-agent policies (the interactive
PettingZoo path, one call per agent and step) and by the families' batched trial loops
(``baselines/<family>/fast.py``). Because both paths run the very same compiled code on
the same inputs and draw from the same generators in the same order, they agree bit for
bit; ``tests/runner/test_replay.py`` checks it.

Randomness enters only through the ``rng`` argument (a ``numpy.random.Generator``;
numba reproduces NumPy's streams exactly), never through global state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.rng_kernels import GeneratorSlot, integer_below
from fedbandit_env.type_aliases import FloatArray


@njit(cache=True)
def argmax_count(values: FloatArray) -> tuple[int, int]:  # pragma: no cover
    """The first index of the largest value and how many values tie with it.

    Examples:
        >>> argmax_count(np.array([0.3, 0.7, 0.7]))
        (1, 2)
    """
    best = values[0]
    arg = 0
    count = 1
    for k in range(1, values.size):
        v = values[k]
        if v > best:
            best, arg, count = v, k, 1
        elif v == best:
            count += 1
    return arg, count


@njit(cache=True)
def tie_pick(
    values: FloatArray, count: int, rng: np.random.Generator | GeneratorSlot
) -> int:  # pragma: no cover
    """Among the ``count`` indices holding the largest value, one drawn uniformly (one
    ``rng.integers`` draw).

    Examples:
        >>> tie_pick(np.array([0.7, 0.1, 0.7]), 2, np.random.default_rng(0)) in (0, 2)
        True
    """
    best = values[0]  # values.max(), NaN first, written out: it allocates nothing, so a
    for k in range(1, values.size):  # kernel compiled without numba's runtime can call it
        if values[k] > best or values[k] != values[k]:
            best = values[k]
    pick = integer_below(rng, count)
    for k in range(values.size):
        if values[k] == best:
            if pick == 0:
                return k
            pick -= 1
    return -1


@njit(cache=True)
def log_time(t: int) -> float:  # pragma: no cover
    """``log(max(t, 1))``: the ``log t`` of every confidence bound, computed once per step.

    Examples:
        >>> log_time(0), round(log_time(10), 4)
        (0.0, 2.3026)
    """
    return np.log(max(t, 1))


@njit(cache=True)
def first_unpulled(counts: FloatArray) -> int:  # pragma: no cover
    """The lowest-index arm never pulled, or -1 (initial round-robin of the papers).

    Examples:
        >>> first_unpulled(np.array([1.0, 0.0, 0.0])), first_unpulled(np.ones(2))
        (1, -1)
    """
    for k in range(counts.size):
        if counts[k] == 0.0:
            return k
    return -1


@njit(cache=True)
def mean_of(values: FloatArray) -> float:  # pragma: no cover
    """Sequential float64 mean (the oracle's pooled reward of one step).

    Examples:
        >>> mean_of(np.array([1.0, 0.0, 0.5]))
        0.5
    """
    total = 0.0
    for v in values:
        total += v
    return total / values.size


def argmax_random_tie(values: FloatArray, rng: np.random.Generator) -> int:
    """Index of the largest value, ties broken uniformly with one ``rng.integers`` draw
    (none without a tie): :func:`argmax_count`, then :func:`tie_pick` on a tie, which
    hands the generator to compiled code only then (that costs ~10 us a call). Batched
    kernels call the two halves themselves.

    Examples:
        >>> argmax_random_tie(np.array([0.1, 0.7, 0.3]), np.random.default_rng(0))
        1
    """
    arg, count = argmax_count(values)
    return int(arg) if count == 1 else int(tie_pick(values, count, rng))
