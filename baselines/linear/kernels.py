"""The compiled mathematics of the linear family, called by the per-agent policies and
the batched trial loop alike (one source of truth, two speeds).

- :func:`rank_one_update`: ``V <- V + x x^T`` on the inverse (Sherman-Morrison) and its
  log-determinant (the matrix determinant lemma): ``O(d^2)``, no inversion per step;
- :func:`ucb_choice`: the OFUL choice ``argmax_x <theta_hat, x> + beta ||x||_{V^-1}``
  (Algorithm 1, line 8);
- :func:`confidence_width`: ``beta`` of Proposition 2;
- :func:`spd_inverse`: inverse and log-determinant of a synchronised Gram matrix
  (Cholesky), once per synchronisation;
- :func:`tree_release` / :func:`tree_commit`: PRIVATIZER (Algorithm 2), the binary-tree
  mechanism over synchronisation rounds with symmetrised Gaussian noise on the
  ``(d + 1) x (d + 1)`` matrix ``sum [x y]^T [x y]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import FloatArray, IntArray


@njit(cache=True, nogil=True, inline="always")
def rank_one_update(inv: FloatArray, x: FloatArray, work: FloatArray) -> float:  # pragma: no cover
    """``inv <- (V + x x^T)^-1`` from ``inv = V^-1``; returns ``log(1 + x^T V^-1 x)``, the
    increase of ``log det V``.

    Examples:
        >>> inv = np.eye(2) / 2.0
        >>> inc = rank_one_update(inv, np.array([1.0, 0.0]), np.empty(2))
        >>> np.allclose(inv, np.linalg.inv(np.diag([3.0, 2.0]))), round(inc, 6)
        (True, 0.405465)
    """
    d = x.shape[0]
    q = 0.0
    for a in range(d):
        s = 0.0
        for b in range(d):
            s += inv[a, b] * x[b]
        work[a] = s
        q += x[a] * s
    c = 1.0 / (1.0 + q)
    for a in range(d):
        wa = c * work[a]
        for b in range(d):
            inv[a, b] -= wa * work[b]
    return math.log1p(q)


@njit(cache=True, nogil=True, inline="always")
def ucb_choice(
    features: FloatArray, rows: IntArray, inv: FloatArray, theta: FloatArray, beta: float
) -> int:  # pragma: no cover
    """Position ``k`` of ``argmax_k <theta, x_k> + beta sqrt(x_k^T inv x_k)`` over the
    decision set ``x_k = features[rows[k]]`` (the first on ties).

    The set is gathered transposed (``d x K``) and every sum runs over the ``K`` vectors
    at once, ``inv[a, b] * x_k[b]`` added for all ``k`` in one contiguous loop that the
    compiler vectorizes (a dot product per vector waits on each addition instead:
    measured 5x slower at ``d = 10, K = 100``); ``inv`` is symmetric, so only its upper
    triangle is read (``d (d + 1) / 2`` products per vector, 20% faster). Both paths call
    this, so the order of the sums, hence every bit, is the same on both.

    Examples:
        >>> x = np.array([[1.0, 0.0], [0.0, 2.0]])
        >>> ucb_choice(x, np.arange(2), np.eye(2), np.zeros(2), 1.0)
        1
    """
    d, n = features.shape[1], rows.shape[0]
    xt = np.empty((d + 3, n))  # the set transposed, then quad, mean and y: one allocation
    q, m, y = d, d + 1, d + 2
    for k in range(n):
        r = rows[k]
        for a in range(d):
            xt[a, k] = features[r, a]
        xt[q, k] = 0.0
        xt[m, k] = 0.0
    for a in range(d):  # x^T inv x = 2 sum_a x_a (inv_aa x_a / 2 + sum_{b > a} inv_ab x_b)
        c = 0.5 * inv[a, a]
        for k in range(n):
            xt[y, k] = c * xt[a, k]
        for b in range(a + 1, d):
            c = inv[a, b]
            for k in range(n):
                xt[y, k] += c * xt[b, k]
        t = theta[a]
        for k in range(n):
            xt[q, k] += xt[a, k] * xt[y, k]
            xt[m, k] += t * xt[a, k]
    k_best, best = 0, -np.inf
    for k in range(n):
        score = xt[m, k] + beta * math.sqrt(max(2.0 * xt[q, k], 0.0))
        if score > best:
            k_best, best = k, score
    return k_best


@njit(cache=True, nogil=True, inline="always")
def clip_norm(x: FloatArray, bound: float, out: FloatArray) -> FloatArray:  # pragma: no cover
    """``out = x`` scaled down to norm ``bound`` if it is longer (a sequential sum, the
    same bits on both paths).

    Examples:
        >>> clip_norm(np.array([3.0, 4.0]), 1.0, np.empty(2)).round(6).tolist()
        [0.6, 0.8]
    """
    sq = 0.0
    for a in range(x.shape[0]):
        sq += x[a] * x[a]
    norm = math.sqrt(sq)
    scale = bound / norm if norm > bound else 1.0
    for a in range(x.shape[0]):
        out[a] = x[a] * scale
    return out


@njit(cache=True, nogil=True, inline="always")
def mat_vec(a: FloatArray, v: FloatArray, out: FloatArray) -> FloatArray:  # pragma: no cover
    """``out = a @ v`` (row by row, in a fixed order).

    Examples:
        >>> mat_vec(np.eye(2) * 2, np.array([1.0, 3.0]), np.empty(2)).tolist()
        [2.0, 6.0]
    """
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * v[j]
        out[i] = s
    return out


@njit(cache=True, nogil=True, inline="always")
def confidence_width(
    sigma: float,
    alpha: float,
    log_det: float,
    dim: int,
    n_agents: int,
    rho_min: float,
    rho_max: float,
    kappa: float,
    norm_bound: float,
) -> float:  # pragma: no cover
    """``beta`` of Proposition 2, completed as
    ``sigma sqrt(2 log(2/alpha) + log det V - d log(M rho_min)) + S sqrt(M rho_max) + M kappa``
    (our copy is cut after ``+ S``; this is the completion of Shariff & Sheffet's
    Proposition 4 that the paper extends; with ``M = 1``, ``rho_min = rho_max = lambda``
    and ``kappa = 0`` it is OFUL's radius, Abbasi-Yadkori et al. 2011, Thm 2).

    Examples:
        >>> round(confidence_width(0.5, 0.1, 0.0, 2, 1, 1.0, 1.0, 0.0, 1.0), 4)
        2.2239
    """
    inner = 2.0 * math.log(2.0 / alpha) + log_det - dim * math.log(n_agents * rho_min)
    return (
        sigma * math.sqrt(max(inner, 0.0))
        + norm_bound * math.sqrt(n_agents * rho_max)
        + n_agents * kappa
    )


@njit(cache=True, nogil=True)
def spd_inverse(a: FloatArray, out: FloatArray) -> float:  # pragma: no cover
    """``out = a^-1`` of a symmetric positive definite ``a`` by Cholesky; returns
    ``log det a`` (``-inf`` and ``out`` untouched if ``a`` is not positive definite).

    Examples:
        >>> out = np.empty((2, 2))
        >>> round(spd_inverse(np.array([[4.0, 2.0], [2.0, 3.0]]), out), 6), out.round(3).tolist()
        (2.079442, [[0.375, -0.25], [-0.25, 0.5]])
    """
    d = a.shape[0]
    low = np.zeros((d, d))
    log_det = 0.0
    for j in range(d):
        s = a[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        if s <= 0.0:
            return -np.inf
        low[j, j] = math.sqrt(s)
        log_det += 2.0 * math.log(low[j, j])
        for i in range(j + 1, d):
            s = a[i, j]
            for k in range(j):
                s -= low[i, k] * low[j, k]
            low[i, j] = s / low[j, j]
    inv_low = np.zeros((d, d))  # L^-1 by forward substitution
    for j in range(d):
        inv_low[j, j] = 1.0 / low[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for k in range(j, i):
                s -= low[i, k] * inv_low[k, j]
            inv_low[i, j] = s / low[i, i]
    for i in range(d):  # a^-1 = L^-T L^-1
        for j in range(i, d):
            s = 0.0
            for k in range(j, d):
                s += inv_low[k, i] * inv_low[k, j]
            out[i, j] = s
            out[j, i] = s
    return log_det


@njit(cache=True, nogil=True)
def lowest_level(r: int) -> int:  # pragma: no cover
    """Level of the tree node completed at round ``r`` (the lowest set bit of ``r``).

    Examples:
        >>> [lowest_level(r) for r in (1, 2, 3, 4, 6)]
        [0, 1, 0, 2, 1]
    """
    level = 0
    while (r >> level) & 1 == 0:
        level += 1
    return level


@njit(cache=True, nogil=True)
def symmetric_noise(
    raw: FloatArray, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """``scale (N + N^T) / sqrt(2)`` of standard normal draws ``raw`` (Algorithm 2, line 6).

    Examples:
        >>> raw = np.array([[1.0, 2.0], [0.0, 1.0]])
        >>> symmetric_noise(raw, 1.0, np.empty((2, 2))).round(3).tolist()
        [[1.414, 1.414], [1.414, 1.414]]
    """
    n = raw.shape[0]
    root = math.sqrt(2.0)
    for a in range(n):
        for b in range(n):
            out[a, b] = scale * (raw[a, b] + raw[b, a]) / root
    return out


@njit(cache=True, nogil=True)
def tree_release(
    acc: FloatArray,
    node: FloatArray,
    leaf: FloatArray,
    pending: FloatArray,
    r: int,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """What round ``r``'s release *would* be with ``leaf`` inserted (nothing changes):
    the node completed at round ``r`` (its open block plus ``leaf`` plus the ``pending``
    noise drawn for it) and the nodes of the higher set bits of ``r``. A tree of ``L``
    levels holds rounds ``1 .. 2^L - 1``; any other ``r`` raises ``IndexError`` (never an
    index past the arrays).

    ``acc[l]`` is the exact sum of the open block of level ``l``, ``node[l]`` the noisy
    sum of the last completed one (Chan et al.'s binary counter; Jain et al.'s Alg. 5).

    Examples:
        >>> acc, node = np.zeros((2, 1, 1)), np.zeros((2, 1, 1))
        >>> tree_release(acc, node, np.ones((1, 1)), np.zeros((1, 1)), 1, np.empty((1, 1))).tolist()
        [[1.0]]
    """
    levels, n, _ = acc.shape
    if r < 1 or r >= (1 << levels):
        raise IndexError("tree_release: round outside the tree's capacity 1 .. 2^levels - 1")
    top = lowest_level(r)
    for a in range(n):
        for b in range(n):
            out[a, b] = acc[top, a, b] + leaf[a, b] + pending[a, b]
    for lvl in range(top + 1, levels):
        if (r >> lvl) & 1:
            for a in range(n):
                for b in range(n):
                    out[a, b] += node[lvl, a, b]
    return out


@njit(cache=True, nogil=True)
def tree_commit(
    acc: FloatArray, node: FloatArray, leaf: FloatArray, pending: FloatArray, r: int
) -> None:  # pragma: no cover
    """Insert ``leaf`` as round ``r``: add it to every open block, close the block of
    level ``lowest_level(r)`` with the ``pending`` noise, reopen the levels below.
    Rounds outside ``1 .. 2^L - 1`` raise ``IndexError``, as :func:`tree_release`.

    Examples:
        >>> acc, node = np.zeros((2, 1, 1)), np.zeros((2, 1, 1))
        >>> tree_commit(acc, node, np.ones((1, 1)), np.full((1, 1), 0.5), 1)
        >>> node[:, 0, 0].tolist(), acc[:, 0, 0].tolist()
        ([1.5, 0.0], [0.0, 1.0])
    """
    levels, n, _ = acc.shape
    if r < 1 or r >= (1 << levels):
        raise IndexError("tree_commit: round outside the tree's capacity 1 .. 2^levels - 1")
    top = lowest_level(r)
    for lvl in range(levels):
        for a in range(n):
            for b in range(n):
                acc[lvl, a, b] += leaf[a, b]
    for a in range(n):
        for b in range(n):
            node[top, a, b] = acc[top, a, b] + pending[a, b]
    for lvl in range(top + 1):
        for a in range(n):
            for b in range(n):
                acc[lvl, a, b] = 0.0


@njit(cache=True, nogil=True)
def rebuild(
    own: FloatArray, others: FloatArray, lam: float, inv: FloatArray, vec: FloatArray
) -> float:  # pragma: no cover
    """Decentralized FedUCB's ``V = lambda I + own + sum_j others[j]`` (Gram blocks of the
    ``(d + 1) x (d + 1)`` statistics, summed in this order) into ``inv = V^-1`` and ``vec =
    u``; returns ``log det V`` (``-inf``, ``inv`` and ``vec`` untouched, if ``V`` is not
    positive definite: noise beyond its bound, or a forged statistic).

    Examples:
        >>> own, others = np.zeros((3, 3)), np.zeros((2, 3, 3))
        >>> own[0, 0], own[0, 2], others[1, 1, 1] = 1.0, 0.5, 3.0
        >>> inv, vec = np.empty((2, 2)), np.empty(2)
        >>> round(rebuild(own, others, 1.0, inv, vec), 6), vec.tolist()
        (2.079442, [0.5, 0.0])
        >>> others[0, 0, 0] = -9.0
        >>> rebuild(own, others, 1.0, inv, vec), vec.tolist()
        (-inf, [0.5, 0.0])
    """
    d = own.shape[0] - 1
    gram = np.zeros((d, d))
    u = np.zeros(d)
    for a in range(d):
        gram[a, a] = lam
    for a in range(d):
        u[a] = own[a, d]
        for b in range(d):
            gram[a, b] += own[a, b]
    for j in range(others.shape[0]):
        for a in range(d):
            u[a] += others[j, a, d]
            for b in range(d):
                gram[a, b] += others[j, a, b]
    log_det = spd_inverse(gram, inv)
    if log_det > -np.inf:
        vec[:] = u
    return log_det


@njit(cache=True, nogil=True)
def noise_prior(
    lam: float, heard: int, gram_bound: float, vec_bound: float, joint: bool
) -> tuple[float, float, float, float]:  # pragma: no cover
    """Decentralized private FedUCB's regulariser for an estimator holding ``heard``
    other agents' noisy statistics, each agent's noise bounded by ``gram_bound``
    (``Lambda``, operator norm) and ``vec_bound`` (``H``, the reward vector's norm):
    their sum is bounded by ``k Lambda`` and ``k H`` with ``k = heard`` (``"each"``) or
    ``k = sqrt(heard)`` (``joint``: one Gaussian). Returns ``(rho_min, rho_max, kappa,
    prior)``: ``V``'s prior ``lambda + 2 k Lambda`` (the shift that keeps it positive
    definite), the bounds ``lambda + k Lambda <= prior + noise <= lambda + 3 k Lambda``
    and ``kappa = k H / sqrt(rho_min) >= ||h||_{V^-1}``, the terms of
    :func:`confidence_width` with ``M = 1``. Without noise (``gram_bound = 0``) or
    before anything is heard: ``(lambda, lambda, 0, lambda)``, OFUL's.

    Examples:
        >>> noise_prior(1.0, 4, 2.0, 3.0, True)
        (5.0, 13.0, 2.6832815729997477, 9.0)
        >>> noise_prior(1.0, 0, 2.0, 3.0, True)
        (1.0, 1.0, 0.0, 1.0)
    """
    if heard == 0 or gram_bound == 0.0:
        return lam, lam, 0.0, lam
    k = math.sqrt(heard) if joint else float(heard)
    rho_min = lam + k * gram_bound
    return (
        rho_min,
        lam + 3.0 * k * gram_bound,
        k * vec_bound / math.sqrt(rho_min),
        lam + 2.0 * k * gram_bound,
    )


@njit(cache=True, nogil=True, inline="always")
def add_set_regret(
    sets: IntArray, rows: IntArray, global_means: FloatArray, cum: FloatArray
) -> None:  # pragma: no cover
    """``cum[i] += max_k g[sets[i, k]] - g[rows[i]]``: a step's pseudo-regret against each
    agent's own decision set, as ``LinearProblem.gaps`` (the batched loops' copy).

    Examples:
        >>> cum = np.zeros(1)
        >>> add_set_regret(np.array([[0, 1]]), np.array([0]), np.array([0.2, 0.5]), cum)
        >>> cum.round(6).tolist()
        [0.3]
    """
    for i in range(sets.shape[0]):
        best = -np.inf
        for j in range(sets.shape[1]):
            best = max(best, global_means[sets[i, j]])
        cum[i] += best - global_means[rows[i]]
