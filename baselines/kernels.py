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

from fedbandit_env.rng_kernels import GeneratorSlot, integer_below
from fedbandit_env.type_aliases import BoolArray, FloatArray, IntArray


@njit(cache=True)
def argmax_count(values: FloatArray) -> tuple[int, int]:  # pragma: no cover
    """The first index of the largest value and how many values tie with it.

    Example:
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

    Example:
        >>> tie_pick(np.array([0.7, 0.1, 0.7]), 2, np.random.default_rng(0)) in (0, 2)
        True
    """
    best = values.max()
    pick = integer_below(rng, count)
    for k in range(values.size):
        if values[k] == best:
            if pick == 0:
                return k
            pick -= 1
    return -1


@njit(cache=True)
def argmax_tie(values: FloatArray, rng: np.random.Generator) -> int:  # pragma: no cover
    """Index of the largest value; ties broken uniformly with one ``rng.integers`` draw
    (no draw without a tie). Batched kernels call its two halves, :func:`argmax_count`
    and :func:`tie_pick`, so that they touch an agent's generator only on a tie.

    Example:
        >>> argmax_tie(np.array([0.1, 0.7, 0.3]), np.random.default_rng(0))
        1
    """
    arg, count = argmax_count(values)
    if count == 1:
        return arg
    return tie_pick(values, count, rng)


@njit(cache=True)
def log_time(t: int) -> float:  # pragma: no cover
    """``log(max(t, 1))``: the ``log t`` of every confidence bound, computed once per step.

    Example:
        >>> log_time(0), round(log_time(10), 4)
        (0.0, 2.3026)
    """
    return np.log(max(t, 1))


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
    sums: FloatArray, counts: FloatArray, log_t: float, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """UCB1 (Auer et al. 2002): ``sums / n + scale * sqrt(2 log t / n)``, into ``out``.

    Example:
        >>> ucb1_index(np.array([1.0, 2.0]), np.array([1.0, 4.0]), 0.0, 1.0, np.empty(2)).tolist()
        [1.0, 0.5]
    """
    for k in range(counts.size):
        out[k] = sums[k] / counts[k] + scale * np.sqrt(2.0 * log_t / counts[k])
    return out


@njit(cache=True)
def oracle_index(
    sums: FloatArray, counts: FloatArray, t: int, n_agents: int, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """Pooled UCB1 of the oracle: ``xbar + scale * sqrt(2 log(N t) / (N n))``, into ``out``.

    ``log(N t)`` is computed here (it is called once per step, by one controller).

    Example:
        >>> oracle_index(np.array([0.5]), np.array([1.0]), 1, 1, 1.0, np.empty(1)).tolist()
        [0.5]
    """
    log_nt = np.log(max(n_agents * t, 1))
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
    theta: FloatArray,
    counts: FloatArray,
    log_t: float,
    n_agents: int,
    alpha_1: float,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """Lines 9-10 of Algorithm 1 with eq. (11): ``theta + sqrt(2 N log(t) / n + alpha_1)``.

    Example:
        >>> gossip_ucb_index(np.zeros(2), np.array([1.0, 4.0]), 0.0, 3, 0.25, np.empty(2)).tolist()
        [0.5, 0.5]
    """
    for k in range(counts.size):
        out[k] = gossip_ucb_value(theta[k], counts[k], log_t, n_agents, alpha_1)
    return out


@njit(cache=True)
def gossip_ucb_value(
    theta: float, count: float, log_t: float, n_agents: int, alpha_1: float
) -> float:  # pragma: no cover
    """One arm of :func:`gossip_ucb_index` (the batched path evaluates arms one by one).

    Non-decreasing in ``log_t`` also in floating point (every operation is a correctly
    rounded, monotone function of it), which lets the batched path bound an arm's index
    at a later time and skip arms that cannot win.

    Example:
        >>> gossip_ucb_value(0.0, 4.0, 0.0, 3, 0.25)
        0.5
    """
    return theta + gossip_ucb_width(count, log_t, n_agents, alpha_1)


@njit(cache=True)
def gossip_ucb_width(
    count: float, log_t: float, n_agents: int, alpha_1: float
) -> float:  # pragma: no cover
    """The confidence width of eq. (11), ``sqrt(2 N log(t) / n + alpha_1)``: the index is
    ``theta + width`` (:func:`gossip_ucb_value` adds exactly this), so the batched path
    can keep an arm's width while only its estimate moves.

    Example:
        >>> gossip_ucb_width(4.0, 0.0, 3, 0.25)
        0.5
    """
    return np.sqrt(2.0 * n_agents * log_t / count + alpha_1)


@njit(cache=True)
def fed_ucb_index(
    theta: FloatArray,
    counts: FloatArray,
    log_t: float,
    n_agents: int,
    horizon: int,
    epsilon: float,
    alpha_1: float,
    calibrated: bool,
    c_privacy: float,
    sensitivity: float,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """Line 9 of Algorithm 4 with eq. (12), as printed or calibrated.

    Printed: ``alpha_1 + sqrt(2N (c N log^2(T) log(t) log(n) / (n^2 eps^2) + 1/n) log t)``
    with ``c = c_privacy`` (128 in the paper). Calibrated: the privacy term is the tree
    noise's variance bound ``2 L b^2 / n^2``, ``L = floor(log2 T) + 1``,
    ``b = L * sensitivity / eps``. ``eps = inf`` removes the privacy term.

    Example:
        >>> idx = fed_ucb_index(np.zeros(1), np.array([100.0]), log_time(1000), 3, 1024, 1.0, 0.0,
        ...                     True, 128.0, 1.0, np.empty(1))
        >>> round(float(idx[0]), 3)
        3.383
    """
    levels, b, log_h2 = fed_ucb_constants(horizon, epsilon, sensitivity)
    for k in range(counts.size):
        out[k] = fed_ucb_value(
            theta[k], counts[k], log_t, n_agents, epsilon, alpha_1, calibrated, c_privacy,
            levels, b, log_h2,
        )  # fmt: skip
    return out


@njit(cache=True)
def fed_ucb_constants(
    horizon: int, epsilon: float, sensitivity: float
) -> tuple[int, float, float]:  # pragma: no cover
    """The per-run constants of eq. (12): tree levels ``L``, Laplace scale ``b`` and
    ``log^2 T``.

    Example:
        >>> fed_ucb_constants(1024, 1.0, 1.0)[:2]
        (11, 11.0)
    """
    levels = 0
    h = horizon
    while h > 0:
        levels += 1
        h >>= 1
    return levels, levels * sensitivity / epsilon, np.log(horizon) ** 2


@njit(cache=True)
def fed_ucb_value(
    theta: float,
    count: float,
    log_t: float,
    n_agents: int,
    epsilon: float,
    alpha_1: float,
    calibrated: bool,
    c_privacy: float,
    levels: int,
    b: float,
    log_h2: float,
) -> float:  # pragma: no cover
    """One arm of :func:`fed_ucb_index`, with :func:`fed_ucb_constants` precomputed;
    non-decreasing in ``log_t`` (see :func:`gossip_ucb_value`).

    Example:
        >>> levels, b, log_h2 = fed_ucb_constants(1024, 1.0, 1.0)
        >>> v = fed_ucb_value(0.0, 100.0, log_time(1000), 3, 1.0, 0.0, True, 128.0,
        ...                   levels, b, log_h2)
        >>> round(v, 3)
        3.383
    """
    return (
        theta
        + alpha_1
        + fed_ucb_width(count, log_t, n_agents, epsilon, calibrated, c_privacy, levels, b, log_h2)
    )


@njit(cache=True)
def fed_ucb_width(
    count: float,
    log_t: float,
    n_agents: int,
    epsilon: float,
    calibrated: bool,
    c_privacy: float,
    levels: int,
    b: float,
    log_h2: float,
) -> float:  # pragma: no cover
    """The square root of eq. (12): the index is ``(theta + alpha_1) + width``, which is
    exactly what :func:`fed_ucb_value` computes; non-decreasing in ``log_t``.

    Example:
        >>> levels, b, log_h2 = fed_ucb_constants(1024, 1.0, 1.0)
        >>> w = fed_ucb_width(100.0, log_time(1000), 3, 1.0, True, 128.0, levels, b, log_h2)
        >>> w == fed_ucb_value(0.0, 100.0, log_time(1000), 3, 1.0, 0.0, True, 128.0,
        ...                    levels, b, log_h2)
        True
    """
    n = count
    if calibrated:
        privacy = 2.0 * levels * b * b / (n * n)
    else:
        privacy = c_privacy * n_agents * log_h2 * log_t * np.log(n) / (n * n * epsilon**2)
    return np.sqrt(2.0 * n_agents * (privacy + 1.0 / n) * log_t)


@njit(cache=True)
def forced_count(counts: FloatArray, n_tilde: FloatArray, n_agents: int) -> int:  # pragma: no cover
    """Line 6: how many arms violate local consistency, ``n_k < n~_k - N``.

    Example:
        >>> forced_count(np.array([1.0, 9.0]), np.array([9.0, 9.0]), 3)
        1
    """
    count = 0
    for k in range(counts.size):
        if inconsistent(counts[k], n_tilde[k], n_agents):
            count += 1
    return count


@njit(cache=True)
def inconsistent(count: float, n_tilde: float, n_agents: int) -> bool:  # pragma: no cover
    """Line 6 for one arm: ``n_k < n~_k - N`` (the batched path keeps the count of these
    up to date entry by entry instead of rescanning every arm).

    Example:
        >>> inconsistent(1.0, 9.0, 3), inconsistent(6.0, 9.0, 3)
        (True, False)
    """
    return count < n_tilde - n_agents


@njit(cache=True)
def forced_pick(
    counts: FloatArray, n_tilde: FloatArray, n_agents: int, count: int, rng: np.random.Generator
) -> int:  # pragma: no cover
    """Line 13: one of the ``count`` inconsistent arms, uniformly: one ``integers`` draw
    ``pick``, then the ``pick``-th inconsistent arm in index order. (The batched path
    writes this loop out on its ``(N, M)`` state; ``tests/test_replay.py`` holds the two
    to the same arms.)

    Example:
        >>> forced_pick(np.array([1.0, 9.0]), np.array([9.0, 9.0]), 3, 1, np.random.default_rng(0))
        0
    """
    pick = integer_below(rng, count)
    for k in range(counts.size):
        if inconsistent(counts[k], n_tilde[k], n_agents):
            if pick == 0:
                return k
            pick -= 1
    return -1


@njit(cache=True)
def forced_arm(
    counts: FloatArray, n_tilde: FloatArray, n_agents: int, rng: np.random.Generator
) -> int:  # pragma: no cover
    """Lines 6 and 13: an arm drawn uniformly from ``{k : n_k < n~_k - N}``, or -1 (and no
    draw) when the agent is consistent.

    Example:
        >>> forced_arm(np.array([1.0, 9.0]), np.array([9.0, 9.0]), 3, np.random.default_rng(0))
        0
        >>> forced_arm(np.array([9.0, 9.0]), np.array([9.0, 9.0]), 3, np.random.default_rng(0))
        -1
    """
    count = forced_count(counts, n_tilde, n_agents)
    if count == 0:
        return -1
    return forced_pick(counts, n_tilde, n_agents, count, rng)


@njit(cache=True)
def update_n_tilde(
    counts: FloatArray, sent: FloatArray, senders: BoolArray, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """Line 5: ``n~(t+1) = max(n(t), max_j n~_j(t))`` over the rows ``j`` of ``sent`` with
    ``senders[j]``, into ``out``.

    Example:
        >>> sent = np.array([[2.0, 5.0], [1.0, 4.0], [9.0, 9.0]])
        >>> update_n_tilde(np.array([3.0, 1.0]), sent, np.array([True, True, False]),
        ...                np.empty(2)).tolist()
        [3.0, 5.0]
    """
    m = counts.size
    for k in range(m):
        out[k] = counts[k]
    for j in range(senders.size):
        if senders[j]:
            for k in range(m):
                if sent[j, k] > out[k]:
                    out[k] = sent[j, k]
    return out


@njit(cache=True, error_model="numpy")
def gossip_update(
    theta: FloatArray,
    row: int,
    sent: FloatArray,
    partners: IntArray,
    n_partners: int,
    arm: int,
    change: float,
) -> None:  # pragma: no cover
    """Lines 20/22, in place on row ``row`` of ``theta``: average it with the rows
    ``partners[row, :n_partners]`` of ``sent`` (indices, in increasing order; none: no
    averaging), then add the change of the local mean. Rows, not slices: the batched
    path passes its ``(N, M)`` state as it is (a sliced row is a reference-counted view,
    costly per step); one agent passes ``theta.reshape(1, -1)``.

    Only the pulled ``arm``'s mean changes in a step (Algorithm 1 line 15; Algorithm 4
    line 17), by ``change = xbar_arm(t) - xbar_arm(t-1)``; every other arm's change is
    exactly 0, so ``theta_k + (xbar_k(t) - xbar_k(t-1))`` is ``theta_k`` itself. With
    several partners the average is over the agent and all of them, summed in index
    order (both paths add in the same order, so they agree to the last bit). Taking the
    partners as indices makes a step cost ``O(p M)`` for ``p`` partners (usually 0 or 1
    under random-edge gossip), not ``O(N M)``.

    Example:
        >>> theta = np.array([[0.2, 0.3]])
        >>> gossip_update(theta, 0, np.array([[0.6, 0.5], [9.0, 9.0]]), np.array([[0]]), 1,
        ...               0, 0.1)
        >>> theta.round(6).tolist()
        [[0.5, 0.4]]
    """
    p = n_partners
    if p:
        for k in range(theta.shape[1]):
            total = theta[row, k]
            for c in range(p):
                total += sent[partners[row, c], k]
            theta[row, k] = total / (1 + p)
    theta[row, arm] = theta[row, arm] + change


# ----------------------------------------------------------- Li & Song's elimination
@njit(cache=True)
def elim_delta(r: int, rounds: int, min_gap: float) -> float:  # pragma: no cover
    """Algorithm 1 line 3: ``Delta_r = 2^-r``; with at most ``rounds = R`` rounds (Sec.
    IV-B) ``Delta_r = Delta^(r/R)``, ``Delta`` the smallest gap (assumed known).

    Example:
        >>> elim_delta(3, 0, 0.0), round(elim_delta(1, 2, 0.01), 6)
        (0.125, 0.1)
    """
    if rounds <= 0:
        return 2.0 ** (-r)
    return min_gap ** (r / rounds)


@njit(cache=True)
def epoch_target(
    r: int,
    n_active: int,
    n_arms: int,
    n_up: int,
    horizon: int,
    epsilon: float,
    delta_r: float,
) -> float:  # pragma: no cover
    """Algorithm 1 line 4 (``S^p`` of Sec. IV-B with ``n_up = ceil(pM)``):
    ``S(r) = max{8 log(8|I| r^2 T) / (n Delta_r^2), 8 r sqrt(2 log(8 K r^2 T)) / (n^1.5 eps
    Delta_r)}``; the second term vanishes without privacy (``epsilon = inf``).

    Example:
        >>> round(epoch_target(1, 10, 10, 5, 1000, np.inf, 0.5), 3)
        72.255
    """
    first = 8.0 * np.log(8.0 * n_active * r * r * horizon) / (n_up * delta_r * delta_r)
    if not np.isfinite(epsilon):
        return first
    second = (
        8.0
        * r
        * np.sqrt(2.0 * np.log(8.0 * n_arms * r * r * horizon))
        / (n_up**1.5 * epsilon * delta_r)
    )
    return max(first, second)


@njit(cache=True)
def elim_radius(
    r: int,
    n_active: int,
    n_arms: int,
    n_up: int,
    horizon: int,
    epsilon: float,
    s_r: float,
) -> float:  # pragma: no cover
    """Algorithm 1 line 5: ``C(r) = sqrt(log(8|I| r^2 T) / (2 n S(r))) + r sqrt(8 log(8 K
    r^2 T)) / (n^1.5 eps S(r))`` (second term 0 without privacy).

    Example:
        >>> round(elim_radius(1, 10, 10, 5, 1000, np.inf, 72.255), 4)
        0.125
    """
    c = np.sqrt(np.log(8.0 * n_active * r * r * horizon) / (2.0 * n_up * s_r))
    if np.isfinite(epsilon):
        c += r * np.sqrt(8.0 * np.log(8.0 * n_arms * r * r * horizon)) / (n_up**1.5 * epsilon * s_r)
    return c


@njit(cache=True)
def epoch_total(s_r: float, previous: int) -> int:  # pragma: no cover
    """Pulls per active arm up to the end of epoch ``r``: ``ceil(S(r))``, kept at least one
    above the previous epoch's (our integer reading of ``S(r) - S(r-1)`` pulls).

    Example:
        >>> epoch_total(28.4, 0), epoch_total(3.0, 29)
        (29, 30)
    """
    return max(int(np.ceil(s_r)), previous + 1)


@njit(cache=True)
def running_private_mean(
    ybar: FloatArray, yhat: FloatArray, active: BoolArray, previous: int, total: int
) -> FloatArray:  # pragma: no cover
    """Eq. (6) in place: ``ybar <- (S(r-1) ybar + (S(r) - S(r-1)) yhat) / S(r)`` on the active
    arms (``yhat`` holds one value per active arm, in arm order).

    Example:
        >>> running_private_mean(np.array([0.5, 0.0]), np.array([1.0]),
        ...                      np.array([True, False]), 1, 2).tolist()
        [0.75, 0.0]
    """
    j = 0
    for k in range(ybar.size):
        if active[k]:
            ybar[k] = (previous * ybar[k] + (total - previous) * yhat[j]) / total
            j += 1
    return ybar


@njit(cache=True)
def eliminate(values: FloatArray, active: BoolArray, radius: float) -> int:  # pragma: no cover
    """Algorithm 1 lines 13-15 in place: drop every active arm with ``max - value >= 2C``;
    returns how many remain.

    Example:
        >>> act = np.ones(3, bool)
        >>> eliminate(np.array([0.9, 0.5, 0.8]), act, 0.1), act.tolist()
        (2, [True, False, True])
    """
    best = -np.inf
    for k in range(values.size):
        if active[k] and values[k] > best:
            best = values[k]
    left = 0
    for k in range(values.size):
        if active[k]:
            if best - values[k] >= 2.0 * radius:
                active[k] = False
            else:
                left += 1
    return left


@njit(cache=True)
def argmax_active(values: FloatArray, active: BoolArray) -> int:  # pragma: no cover
    """The first active arm with the largest value.

    Example:
        >>> argmax_active(np.array([0.9, 0.5, 0.8]), np.array([False, True, True]))
        2
    """
    arg = -1
    best = -np.inf
    for k in range(values.size):
        if active[k] and (arg < 0 or values[k] > best):
            arg, best = k, values[k]
    return arg


@njit(cache=True)
def local_best(sums: FloatArray, counts: FloatArray, active: BoolArray) -> int:  # pragma: no cover
    """Local exploitation (Algorithm 2 line 3): the first active arm with the largest local
    empirical mean (unpulled arms count as mean 0).

    Example:
        >>> local_best(np.array([1.0, 3.0, 5.0]), np.array([2.0, 4.0, 5.0]),
        ...            np.array([True, True, False]))
        1
    """
    arg = -1
    best = -np.inf
    for k in range(sums.size):
        if active[k]:
            v = sums[k] / counts[k] if counts[k] > 0 else 0.0
            if arg < 0 or v > best:
                arg, best = k, v
    return arg
