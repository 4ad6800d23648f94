"""The plain baselines' indices: UCB1 of one agent, and the oracle's pooled UCB1.

Called by the per-agent policies (:class:`~baselines.ucb.LocalUCB1`,
:class:`~baselines.ucb.OracleUCB`, ...) and by the vector policies' compiled steps
(:func:`local_index_step`, :func:`random_step`, :func:`oracle_step`, the ``act`` of
:mod:`baselines.ucb.vector`): one source of truth for both.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from baselines.common.kernels import argmax_count, first_unpulled, log_time, mean_of, tie_pick
from fedbandit_env.core.kernels import UNCOUNTED
from fedbandit_env.rng_kernels import generator_at, integer_below
from fedbandit_env.type_aliases import FloatArray, IntArray


@njit(cache=True, inline="always")  # called by an uncounted step: see UNCOUNTED
def ucb1_index(
    sums: FloatArray, counts: FloatArray, log_t: float, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """UCB1 (Auer et al. 2002): ``sums / n + scale * sqrt(2 log t / n)``, into ``out``.

    Examples:
        >>> ucb1_index(np.array([1.0, 2.0]), np.array([1.0, 4.0]), 0.0, 1.0, np.empty(2)).tolist()
        [1.0, 0.5]
    """
    for k in range(counts.size):
        out[k] = sums[k] / counts[k] + scale * np.sqrt(2.0 * log_t / counts[k])
    return out


@njit(cache=True, inline="always")  # called by an uncounted step: see UNCOUNTED
def oracle_index(
    sums: FloatArray, counts: FloatArray, t: int, n_agents: int, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """Pooled UCB1 of the oracle: ``xbar + scale * sqrt(2 log(N t) / (N n))``, into ``out``.

    ``log(N t)`` is computed here (it is called once per step, by one controller).

    Examples:
        >>> oracle_index(np.array([0.5]), np.array([1.0]), 1, 1, 1.0, np.empty(1)).tolist()
        [0.5]
    """
    log_nt = np.log(max(n_agents * t, 1))
    for k in range(counts.size):
        out[k] = sums[k] / counts[k] + scale * np.sqrt(2.0 * log_nt / (n_agents * counts[k]))
    return out


@njit(cache=True)
def kl_bernoulli(p: float, q: float) -> float:  # pragma: no cover
    """The Bernoulli Kullback-Leibler divergence ``kl(p, q)``, both clamped to
    ``[1e-15, 1 - 1e-15]``.

    Examples:
        >>> round(kl_bernoulli(0.5, 0.75), 6)
        0.143841
    """
    eps = 1e-15
    p = min(max(p, eps), 1.0 - eps)
    q = min(max(q, eps), 1.0 - eps)
    return p * np.log(p / q) + (1.0 - p) * np.log((1.0 - p) / (1.0 - q))


@njit(cache=True)
def kl_upper(p: float, d: float) -> float:  # pragma: no cover
    """The largest ``q`` in ``[p, 1]`` with ``kl(p, q) <= d``, to about ``1e-12``.

    ``q -> kl(p, q)`` is convex and increasing on ``[p, 1)``, so Newton's steps from the
    right (from Pinsker's bound ``p + sqrt(d / 2)``, where ``kl >= d``) stay above the
    root and converge in a few steps; a step that would not halve the bracket (near
    ``q = 1``, where the slope blows up) is a bisection instead.

    Examples:
        >>> q = kl_upper(0.5, 0.143841)
        >>> round(q, 5)
        0.75
    """
    if d <= 0.0:
        return p
    lo = p
    hi = min(1.0, p + np.sqrt(d / 2.0))
    for _ in range(100):
        f = kl_bernoulli(p, hi) - d
        if f <= 0.0:
            return hi
        step = f * hi * (1.0 - hi) / (hi - p)
        if step > 0.0 and hi - step > 0.5 * (lo + hi):
            hi -= step
            if step < 1e-12:
                return hi
        else:
            mid = 0.5 * (lo + hi)
            if kl_bernoulli(p, mid) > d:
                hi = mid
            else:
                lo = mid
            if hi - lo < 1e-12:
                return lo
    return lo


@njit(cache=True, inline="always")  # called by an uncounted step: see UNCOUNTED
def kl_ucb_index(
    sums: FloatArray,
    counts: FloatArray,
    log_t: float,
    c: float,
    lo: float,
    width: float,
    scale: float,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """KL-UCB (Garivier and Cappe 2011): the largest ``q`` with ``n kl(xbar, q) <= log t +
    c log log t``, into ``out``. Rewards in ``[lo, lo + width]`` use the Bernoulli ``kl``
    on the rescaled mean; ``width = 0`` (unbounded rewards) the Gaussian ``kl`` of noise
    ``scale``, whose bound is ``xbar + scale sqrt(2 (log t + c log log t) / n)``.

    Examples:
        >>> kl_ucb_index(np.array([1.0]), np.array([2.0]), np.log(10.0), 0.0, 0.0, 1.0,
        ...              1.0, np.empty(1)).round(4).tolist()
        [0.9743]
    """
    threshold = log_t
    if c != 0.0 and log_t > 1.0:
        threshold += c * np.log(log_t)
    for k in range(counts.size):
        n = counts[k]
        mean = sums[k] / n
        if width > 0.0:
            p = min(max((mean - lo) / width, 0.0), 1.0)
            out[k] = lo + width * kl_upper(p, threshold / n)
        else:
            out[k] = mean + scale * np.sqrt(2.0 * threshold / n)
    return out


@njit(cache=True, inline="always")  # called by an uncounted step: see UNCOUNTED
def kl_ucb_choice(
    sums: FloatArray,
    counts: FloatArray,
    log_t: float,
    c: float,
    lo: float,
    width: float,
    scale: float,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """:func:`kl_ucb_index` where it can change the choice, a value strictly below the
    largest elsewhere: the same largest value and the same ties, at about one root
    search a step instead of one an arm.

    The arm with the largest Pinsker bound ``u_k = p_k + sqrt(d_k / 2)`` (``kl(p, q) >=
    2 (q - p)^2``; :func:`kl_upper`'s search starts there and only moves down, so the
    bound holds in floating point) is solved first. Every other arm ``k`` is then
    compared with the best index ``b`` solved so far: if ``u_k < b``, or if ``b' = b -
    1e-9 > p_k`` and ``kl(p_k, b') > d_k`` (one divergence, since ``q -> kl(p_k, q)``
    increases on ``[p_k, 1]``, its index lies below ``b'``), it cannot be the argmax and
    keeps its rescaled mean (below ``b``); otherwise it is solved. The margin covers the
    root search's error (about ``1e-12``; a Newton step from the right may stop just
    above the root), so an arm the test drops would also have lost to ``b`` among the
    solved indices: the argmax and the arms tying with it are :func:`kl_ucb_index`'s,
    and a tie draw picks the same arm.

    Examples:
        >>> sums, counts = np.array([3.0, 40.0, 1.0]), np.array([6.0, 50.0, 9.0])
        >>> exact = kl_ucb_index(sums, counts, np.log(65.0), 0.0, 0.0, 1.0, 1.0, np.empty(3))
        >>> fast = kl_ucb_choice(sums, counts, np.log(65.0), 0.0, 0.0, 1.0, 1.0, np.empty(3))
        >>> int(fast.argmax()) == int(exact.argmax()) and bool(fast.max() == exact.max())
        True
    """
    if width <= 0.0:
        kl_ucb_index(sums, counts, log_t, c, lo, width, scale, out)
        return out  # the argument itself (numba without its runtime returns only those)
    threshold = log_t
    if c != 0.0 and log_t > 1.0:
        threshold += c * np.log(log_t)
    m = counts.size
    top = 0
    for k in range(m):  # Pinsker's bound of every arm (the start of kl_upper's search)
        p = min(max((sums[k] / counts[k] - lo) / width, 0.0), 1.0)
        out[k] = min(1.0, p + np.sqrt(threshold / counts[k] / 2.0))
        if out[k] > out[top]:
            top = k
    best = -1.0  # the best solved index, on the [0, 1] scale
    for j in range(m):
        k = (top + j) % m  # the largest bound first, then the rest in order
        n = counts[k]
        p = min(max((sums[k] / n - lo) / width, 0.0), 1.0)
        d = threshold / n
        below = best - 1e-9  # kl_upper's roots are within 1e-12 of the true ones
        if j > 0 and (out[k] < best or (below > p and kl_bernoulli(p, below) > d)):
            out[k] = p  # its index is below best: it cannot be chosen
            continue
        out[k] = kl_upper(p, d)
        best = max(best, out[k])
    for k in range(m):
        out[k] = lo + width * out[k]
    return out


@njit(cache=True, nogil=True, **UNCOUNTED)
def local_index_step(
    arm: IntArray,
    reward: np.ndarray,
    t: int,
    counts: FloatArray,
    sums: FloatArray,
    kl: bool,
    scale: float,
    c: float,
    lo: float,
    width: float,
    table: np.ndarray,
    index: FloatArray,
    arms: IntArray,
) -> None:  # pragma: no cover
    """One step of every local index agent of ``B`` envs: fold in the last pull (``arm``
    ``(B, N)``, the float32 ``reward`` ``(B, N)``) when ``t > 0``, then pull the first
    unpulled arm or the largest UCB1 (``kl``: KL-UCB) index of the own ``counts`` and
    ``sums`` ``(B, N, M)``, a tie broken by agent ``(b, i)``'s generator, row ``b N + i``
    of ``table`` (touched only on a tie), as :class:`~baselines.ucb.LocalUCB1` and
    :class:`~baselines.ucb.LocalKLUCB` do. ``index``: ``M`` numbers of work space (the
    step allocates nothing: the core rolls it out without numba's runtime).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> counts, sums = np.ones((1, 1, 2)), np.array([[[0.2, 0.9]]])
        >>> arms = np.zeros((1, 1), np.int64)
        >>> rngs = [np.random.default_rng(0)]  # alive while the table is used
        >>> table = generator_table(rngs)
        >>> local_index_step(arms, np.zeros((1, 1), np.float32), 0, counts, sums, False,
        ...                  1.0, 0.0, 0.0, 1.0, table, np.empty(2), arms)
        >>> arms.tolist()
        [[1]]
    """
    b_count, n = counts.shape[0], counts.shape[1]
    log_t = log_time(t)
    for b in range(b_count):
        for i in range(n):
            if t > 0:  # IndexPolicy.observe of the last step (float32 observation)
                counts[b, i, arm[b, i]] += 1.0
                sums[b, i, arm[b, i]] += float(reward[b, i])
            k = first_unpulled(counts[b, i])
            if k < 0:
                if kl:
                    kl_ucb_choice(sums[b, i], counts[b, i], log_t, c, lo, width, scale, index)
                else:
                    ucb1_index(sums[b, i], counts[b, i], log_t, scale, index)
                k, ties = argmax_count(index)
                if ties > 1:
                    k = tie_pick(index, ties, generator_at(table, b * n + i))
            arms[b, i] = k


@njit(cache=True, nogil=True, **UNCOUNTED)
def random_step(
    arm: IntArray, reward: np.ndarray, t: int, table: np.ndarray, m: int, arms: IntArray
) -> None:  # pragma: no cover
    """Every agent's uniform arm, from its own generator (row ``b N + i`` of ``table``),
    as :class:`~baselines.ucb.RandomPolicy` draws it (the last ``arm``, ``reward`` and
    ``t`` unread: the signature of a vector policy's compiled step).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> arms = np.zeros((1, 2), np.int64)
        >>> rngs = [np.random.default_rng(s) for s in (0, 1)]  # alive while the table is used
        >>> random_step(arms, np.zeros((1, 2), np.float32), 0, generator_table(rngs), 5, arms)
        >>> arms[0, 1] == np.random.default_rng(1).integers(5)
        np.True_
    """
    b_count, n = arms.shape
    for b in range(b_count):
        for i in range(n):
            arms[b, i] = integer_below(generator_at(table, b * n + i), m)


@njit(cache=True, nogil=True, **UNCOUNTED)
def oracle_step(
    arm: IntArray,
    reward: np.ndarray,
    t: int,
    counts: FloatArray,
    sums: FloatArray,
    scale: float,
    table: np.ndarray,
    index: FloatArray,
    seen: FloatArray,
    arms: IntArray,
) -> None:  # pragma: no cover
    """One step of the pooled oracle of ``B`` envs: fold in the last step (the arm every
    agent pulled, ``arm[b, 0]``, and the mean of their float32 rewards) when ``t > 0``,
    then every agent of env ``b`` pulls the first unpulled arm or the largest pooled UCB1
    index (:func:`oracle_index`) of ``counts``, ``sums`` ``(B, M)``, a tie broken by env
    ``b``'s team generator (row ``b`` of ``table``), as :class:`~baselines.ucb.OracleUCB`
    does. ``index`` (``M``) and ``seen`` (``N``): work space (nothing is allocated).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> counts, sums = np.ones((1, 2)), np.array([[0.2, 0.9]])
        >>> arms, rngs = np.zeros((1, 3), np.int64), [np.random.default_rng(0)]
        >>> oracle_step(arms, np.zeros((1, 3), np.float32), 0, counts, sums, 1.0,
        ...             generator_table(rngs), np.empty(2), np.empty(3), arms)
        >>> arms.tolist()
        [[1, 1, 1]]
    """
    b_count, n = arms.shape
    for b in range(b_count):
        if t > 0:
            for i in range(n):
                seen[i] = float(reward[b, i])
            sums[b, arm[b, 0]] += mean_of(seen)
            counts[b, arm[b, 0]] += 1.0
        k = first_unpulled(counts[b])
        if k < 0:
            oracle_index(sums[b], counts[b], t, n, scale, index)
            k, ties = argmax_count(index)
            if ties > 1:
                k = tie_pick(index, ties, generator_at(table, b))
        for i in range(n):
            arms[b, i] = k
