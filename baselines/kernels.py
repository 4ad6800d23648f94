"""The reference algorithms' mathematics, written once, compiled with numba.

Every function here is called both by the per-agent policies (the interactive
PettingZoo path, one call per agent and step) and by the batched kernels of
:mod:`baselines.fast` (one loop over trials, agents and steps). Because both paths run
the very same compiled code on the same inputs and draw from the same generators in
the same order, they agree bit for bit; ``tests/test_replay.py`` checks it.

Randomness enters only through the ``rng`` argument (a ``numpy.random.Generator``;
numba reproduces NumPy's streams exactly), never through global state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import FloatArray, IntArray


@njit(cache=True)
def argmax_tie(values: FloatArray, rng: np.random.Generator) -> int:  # pragma: no cover
    """Index of the largest value; ties broken uniformly with one ``rng.integers`` draw.

    Example:
        >>> argmax_tie(np.array([0.1, 0.7, 0.3]), np.random.default_rng(0))
        1
    """
    best = values.max()
    count = 0
    for k in range(values.size):
        if values[k] == best:
            count += 1
    if count == 1:
        return int(np.argmax(values))
    pick = rng.integers(0, count)
    for k in range(values.size):
        if values[k] == best:
            if pick == 0:
                return k
            pick -= 1
    return -1


@njit(cache=True)
def pick_uniform(candidates: IntArray, rng: np.random.Generator) -> int:  # pragma: no cover
    """A uniformly random element of ``candidates`` (one ``rng.integers`` draw).

    Example:
        >>> pick_uniform(np.array([4, 7, 9]), np.random.default_rng(3))
        9
    """
    return int(candidates[rng.integers(0, candidates.size)])


@njit(cache=True)
def first_unpulled(counts: FloatArray) -> int:  # pragma: no cover
    """The lowest-index arm never pulled, or -1 (initial round-robin of the papers).

    Example:
        >>> first_unpulled(np.array([1.0, 0.0, 0.0])), first_unpulled(np.ones(2))
        (1, -1)
    """
    for k in range(counts.size):
        if counts[k] == 0.0:
            return k
    return -1


@njit(cache=True)
def ucb1_index(
    sums: FloatArray, counts: FloatArray, t: int, scale: float
) -> FloatArray:  # pragma: no cover
    """UCB1 (Auer et al. 2002): ``sums / n + scale * sqrt(2 log t / n)``.

    Example:
        >>> ucb1_index(np.array([1.0, 2.0]), np.array([1.0, 4.0]), 1, 1.0).tolist()
        [1.0, 0.5]
    """
    log_t = np.log(max(t, 1))
    out = np.empty(counts.size)
    for k in range(counts.size):
        out[k] = sums[k] / counts[k] + scale * np.sqrt(2.0 * log_t / counts[k])
    return out


@njit(cache=True)
def oracle_index(
    sums: FloatArray, counts: FloatArray, t: int, n_agents: int, scale: float
) -> FloatArray:  # pragma: no cover
    """Pooled UCB1 of the oracle: ``xbar + scale * sqrt(2 log(N t) / (N n))``.

    Example:
        >>> oracle_index(np.array([0.5]), np.array([1.0]), 1, 1, 1.0).tolist()
        [0.5]
    """
    log_nt = np.log(max(n_agents * t, 1))
    out = np.empty(counts.size)
    for k in range(counts.size):
        out[k] = sums[k] / counts[k] + scale * np.sqrt(2.0 * log_nt / (n_agents * counts[k]))
    return out


@njit(cache=True)
def mean_of(values: FloatArray) -> float:  # pragma: no cover
    """Sequential float64 mean (the oracle's pooled reward of one step).

    Example:
        >>> mean_of(np.array([1.0, 0.0, 0.5]))
        0.5
    """
    total = 0.0
    for v in values:
        total += v
    return total / values.size


@njit(cache=True)
def gossip_ucb_index(
    theta: FloatArray, counts: FloatArray, t: int, n_agents: int, alpha_1: float
) -> FloatArray:  # pragma: no cover
    """Lines 9-10 of Algorithm 1 with eq. (11): ``theta + sqrt(2 N log(t) / n + alpha_1)``.

    Example:
        >>> gossip_ucb_index(np.zeros(2), np.array([1.0, 4.0]), 1, 3, 0.25).tolist()
        [0.5, 0.5]
    """
    log_t = np.log(max(t, 1))
    out = np.empty(counts.size)
    for k in range(counts.size):
        out[k] = theta[k] + np.sqrt(2.0 * n_agents * log_t / counts[k] + alpha_1)
    return out


@njit(cache=True)
def fed_ucb_index(
    theta: FloatArray,
    counts: FloatArray,
    t: int,
    n_agents: int,
    horizon: int,
    epsilon: float,
    alpha_1: float,
    calibrated: bool,
    c_privacy: float,
    sensitivity: float,
) -> FloatArray:  # pragma: no cover
    """Line 9 of Algorithm 4 with eq. (12), as printed or calibrated.

    Printed: ``alpha_1 + sqrt(2N (c N log^2(T) log(t) log(n) / (n^2 eps^2) + 1/n) log t)``
    with ``c = c_privacy`` (128 in the paper). Calibrated: the privacy term is the tree
    noise's variance bound ``2 L b^2 / n^2``, ``L = floor(log2 T) + 1``,
    ``b = L * sensitivity / eps``. ``eps = inf`` removes the privacy term.

    Example:
        >>> idx = fed_ucb_index(np.zeros(1), np.array([100.0]), 1000, 3, 1024, 1.0, 0.0,
        ...                     True, 128.0, 1.0)
        >>> round(float(idx[0]), 3)
        3.383
    """
    log_t = np.log(max(t, 1))
    levels = 0
    h = horizon
    while h > 0:
        levels += 1
        h >>= 1
    b = levels * sensitivity / epsilon
    log_h2 = np.log(horizon) ** 2
    out = np.empty(counts.size)
    for k in range(counts.size):
        n = counts[k]
        if calibrated:
            privacy = 2.0 * levels * b * b / (n * n)
        else:
            privacy = c_privacy * n_agents * log_h2 * log_t * np.log(n) / (n * n * epsilon**2)
        out[k] = theta[k] + alpha_1 + np.sqrt(2.0 * n_agents * (privacy + 1.0 / n) * log_t)
    return out


@njit(cache=True)
def consistency_set(
    counts: FloatArray, n_tilde: FloatArray, n_agents: int
) -> IntArray:  # pragma: no cover
    """Line 6: the arms with ``n < n~ - N``, which the agent must pull first.

    Example:
        >>> consistency_set(np.array([1.0, 9.0]), np.array([9.0, 9.0]), 3).tolist()
        [0]
    """
    return np.flatnonzero(counts < n_tilde - n_agents)


@njit(cache=True)
def update_n_tilde(
    counts: FloatArray, neighbour_n_tilde: FloatArray
) -> FloatArray:  # pragma: no cover
    """Line 5: ``n~(t+1) = max(n(t), max_j n~_j(t))`` over the rows heard from.

    Example:
        >>> update_n_tilde(np.array([3.0, 1.0]), np.array([[2.0, 5.0], [1.0, 4.0]])).tolist()
        [3.0, 5.0]
    """
    out = counts.copy()
    for j in range(neighbour_n_tilde.shape[0]):
        for k in range(counts.size):
            if neighbour_n_tilde[j, k] > out[k]:
                out[k] = neighbour_n_tilde[j, k]
    return out


@njit(cache=True)
def gossip_update(
    theta: FloatArray, partner_theta: FloatArray, xbar_new: FloatArray, xbar_old: FloatArray
) -> FloatArray:  # pragma: no cover
    """Lines 20/22: average with the partners' rows (if any), then add the mean's change.

    With several partners the average is over the agent and all of them.

    Example:
        >>> gossip_update(np.array([0.2]), np.array([[0.6]]), np.array([0.5]), np.array([0.4]))
        array([0.5])
    """
    p = partner_theta.shape[0]
    out = np.empty(theta.size)
    for k in range(theta.size):
        total = theta[k]
        for j in range(p):
            total += partner_theta[j, k]
        out[k] = total / (1 + p) + xbar_new[k] - xbar_old[k]
    return out
