"""The compiled per-sender step of :class:`~fedbandit_env.wrappers.team_posterior.PosteriorState`
on NumPy.

``PosteriorState`` is written once against the array API and runs so on a torch device.
On NumPy, where every delivery is the graph's broadcast (its per-sender layout), a step
of ``B`` envs as whole-array operations makes a dozen ``(B, N, 3, M)`` temporaries; these
kernels do the same arithmetic cell by cell, in the floating-point order of the array
statement (sums over senders from the first, sender by sender, as NumPy reduces a
non-contiguous axis), so the features are the same bits
(``tests/wrappers/test_posterior_kernels.py`` holds them to the array statement on
random streams with forged rows, complete and sparse graphs, raw and private priors):

- :func:`receive_senders`: each sender's row screened as an honest agent's
  (``honest_rows``), its local posterior kept where it is, the rejections counted per
  receiver;
- :func:`fold_own` and :func:`pack_rows`: each agent's pull into its own row, and the
  rows every agent sends (``PosteriorState.fold`` and ``message``);
- :func:`team_features`: every feature of ``POSTERIOR_FEATURES`` but the two
  logarithms of counts, which the caller takes with NumPy's ``log1p`` from the pooled
  counts written here (the same function, hence the same bits, as the array statement).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from fedbandit_env.core.kernels import ARITHMETIC
from fedbandit_env.type_aliases import BoolArray, Float32Array, FloatArray, IntArray


@njit(cache=True, nogil=True, inline="always")
def _local(
    count: float, total: float, strength: float, prior_sum: float, variance: float, extra: float
) -> tuple[float, float]:  # pragma: no cover
    """One row's local posterior mean and variance of one arm (``PosteriorState._local``;
    ``prior_sum`` is ``strength * mean``)."""
    pulls = count + strength
    mean = (total + prior_sum) / pulls
    var = variance / pulls
    if extra:
        var = var + (1.0 if count > 0 else 0.0) * (extra / (pulls * pulls))
    return mean, var


@njit(cache=True, nogil=True, **ARITHMETIC)
def receive_senders(
    rows: Float32Array,
    mask: np.ndarray,
    t: int,
    screen: tuple[bool, float, float, float, float],
    prior: tuple[float, float, float, float],
    last: FloatArray,
    ever: BoolArray,
    rejected: IntArray,
) -> None:  # pragma: no cover
    """Hold what every sender broadcast: ``rows`` ``(B, N, 2M)`` (counts, then sums),
    ``mask`` ``(B, N, N)`` which receiver got which sender's row. A row is honest as in
    ``honest_rows`` (``screen``: whether the reward range is finite, ``lo``, ``hi``, the
    relative pad and the privacy slack); an honest row's local posterior replaces
    ``last[b, s]`` (``(count, mean, variance)`` per arm) and sets ``ever[b, s]``; each
    receiver's ``rejected`` counts the dishonest rows that reached it. In place.

    Examples:
        >>> rows = np.array([[[1, 0, 0.5, 0], [2, 0, 9.0, 0]]], np.float32)  # 2 senders
        >>> mask = np.array([[[0, 1], [1, 0]]], np.int8)
        >>> last, ever = np.zeros((1, 2, 3, 2)), np.zeros((1, 2), np.bool_)
        >>> rejected = np.zeros((1, 2), np.int64)
        >>> receive_senders(rows, mask, 3, (True, 0.0, 1.0, 3e-6, 0.0),
        ...                 (1.0, 0.5, 0.25, 0.0), last, ever, rejected)
        >>> ever.tolist(), rejected.tolist(), last[0, 0, 1].tolist()
        ([[True, False]], [[1, 0]], [0.5, 0.5])
    """
    n_envs, n, width = rows.shape
    m = width // 2
    ranged, lo, hi, pad, poison = screen
    strength, prior_sum, variance, extra = prior
    honest = np.empty(n, dtype=np.bool_)
    for b in range(n_envs):
        spoiled = False
        for s in range(n):
            total = 0.0
            ok = True
            for a in range(m):
                c = np.float64(rows[b, s, a])
                ok &= c == abs(math.floor(c))  # no short cut: no branch a cell
                total += c
            ok &= total <= t
            for a in range(m):
                c, v = np.float64(rows[b, s, a]), np.float64(rows[b, s, m + a])
                if ranged:
                    slack = pad * max(c, 1.0)
                    if extra:
                        slack = slack + poison
                    ok &= bool(v >= lo * c - slack) & bool(v <= hi * c + slack)
                else:
                    ok &= math.isfinite(v)
            honest[s] = ok
            spoiled = spoiled or not ok
            if ok:
                ever[b, s] = True
                for a in range(m):
                    c, v = np.float64(rows[b, s, a]), np.float64(rows[b, s, m + a])
                    mean, var = _local(c, v, strength, prior_sum, variance, extra)
                    last[b, s, 0, a] = c
                    last[b, s, 1, a] = mean
                    last[b, s, 2, a] = var
        if not spoiled:
            continue
        for r in range(n):
            for s in range(n):
                if s != r and mask[b, r, s] != 0 and not honest[s]:
                    rejected[b, r] += 1


@njit(cache=True, nogil=True, **ARITHMETIC)
def team_features(
    counts: FloatArray,
    sums: FloatArray,
    last: FloatArray,
    ever: BoolArray,
    lists: IntArray,
    complete: bool,
    prior: tuple[float, float, float, float],
    log_step: float,
    pooled: FloatArray,
    out: Float32Array,
) -> None:  # pragma: no cover
    """``POSTERIOR_FEATURES`` of every agent and arm into ``out`` ``(B, N, M, F)``, all
    but ``log_pooled`` and ``log_own`` (columns 4 and 5: the pooled counts go to
    ``pooled`` ``(B, N, M)`` instead), from the agents' own ``counts`` and ``sums`` and
    each sender's newest honest posterior (``last``, ``ever``). On a ``complete`` graph a
    receiver's held sums are the senders' total less its own row; otherwise the sum over
    its neighbour list ``lists[r]`` (the value ``N`` pads a list: a row of zeros).

    Examples:
        >>> counts, sums = np.ones((1, 2, 1)), np.ones((1, 2, 1))
        >>> last = np.zeros((1, 2, 3, 1)); last[0, :, 0], last[0, :, 1] = 1.0, 0.75
        >>> last[0, :, 2] = 0.125
        >>> out, pooled = np.zeros((1, 2, 1, 10), np.float32), np.zeros((1, 2, 1))
        >>> team_features(counts, sums, last, np.ones((1, 2), np.bool_),
        ...               np.array([[1], [0]]), True, (1.0, 0.5, 0.25, 0.0), 0.0, pooled, out)
        >>> out[0, 0, 0, 1], pooled[0, 0, 0], out[0, 0, 0, 9]  # mean, pooled, coverage
        (np.float32(0.75), np.float64(2.0), np.float32(1.0))
    """
    n_envs, n, m = counts.shape
    strength, prior_sum, variance, extra = prior
    cells = n * m
    x = np.empty((n, 3, m))
    w = np.empty(n)
    total = np.empty((3, m))
    held = np.empty((3, cells))  # per (receiver, arm) cell: what the receiver holds
    rows = np.empty(cells)
    mean = np.empty(cells)
    std = np.empty(cells)
    own_mean = np.empty(cells)
    own_var = np.empty(cells)
    best = np.empty(cells)
    gap = np.empty(cells)
    z = np.empty(cells)
    f32 = np.float32
    flat_counts = counts.reshape(n_envs, cells)
    flat_sums = sums.reshape(n_envs, cells)
    flat_pooled = pooled.reshape(n_envs, cells)
    flat_out = out.reshape(n_envs, cells, out.shape[3])
    for b in range(n_envs):
        for s in range(n):
            w[s] = 1.0 if ever[b, s] else 0.0
            for k in range(3):
                for a in range(m):
                    x[s, k, a] = w[s] * last[b, s, k, a]
        w_total = w[0]
        for s in range(1, n):
            w_total += w[s]
        if complete:  # the senders' total, sender by sender from the first
            for k in range(3):
                for a in range(m):
                    total[k, a] = x[0, k, a]
            for s in range(1, n):
                for k in range(3):
                    for a in range(m):
                        total[k, a] += x[s, k, a]
        for r in range(n):
            if complete:
                heard = w_total - w[r]
                for k in range(3):
                    for a in range(m):
                        held[k, r * m + a] = total[k, a] - x[r, k, a]
            else:  # the neighbour list, from its first entry (N: a row of zeros)
                first = lists[r, 0]
                heard = w[first] if first < n else 0.0
                for k in range(3):
                    for a in range(m):
                        held[k, r * m + a] = x[first, k, a] if first < n else 0.0
                for j in range(1, lists.shape[1]):
                    s = lists[r, j]
                    heard += w[s] if s < n else 0.0
                    for k in range(3):
                        for a in range(m):
                            held[k, r * m + a] += x[s, k, a] if s < n else 0.0
            for a in range(m):
                rows[r * m + a] = 1.0 + heard
        # the receivers' cells in flat loops over contiguous float64, then the strided
        # float32 stores (the divisions dominate: five a cell, which numba leaves scalar)
        for i in range(cells):
            pulls = flat_counts[b, i] + strength
            own_mean[i] = (flat_sums[b, i] + prior_sum) / pulls
            own_var[i] = variance / pulls
        if extra:
            for i in range(cells):
                c = flat_counts[b, i]
                pulls = c + strength
                own_var[i] = own_var[i] + (1.0 if c > 0 else 0.0) * (extra / (pulls * pulls))
        for i in range(cells):
            mean[i] = (own_mean[i] + held[1, i]) / rows[i]
            std[i] = math.sqrt(own_var[i] + held[2, i]) / rows[i]
            flat_pooled[b, i] = flat_counts[b, i] + held[0, i]
        for r in range(n):  # np.max over arms: a NaN wins
            top = mean[r * m]
            for a in range(1, m):
                value = mean[r * m + a]
                if not (math.isnan(top) or value <= top):
                    top = value
            for a in range(m):
                best[r * m + a] = top
        for i in range(cells):
            gap[i] = mean[i] - best[i]
            z[i] = gap[i] / std[i]
        for r in range(n):
            coverage = f32(rows[r * m] / n)
            for a in range(m):
                i = r * m + a
                flat_out[b, i, 0] = f32(z[i])  # (no view per cell: a view costs
                flat_out[b, i, 1] = f32(mean[i])  # atomic reference counts)
                flat_out[b, i, 2] = f32(std[i])
                flat_out[b, i, 3] = f32(gap[i])
                flat_out[b, i, 6] = f32(own_mean[i])
                flat_out[b, i, 7] = f32(own_mean[i] - mean[i])
                flat_out[b, i, 8] = f32(log_step)
                flat_out[b, i, 9] = coverage


@njit(cache=True, nogil=True)
def fold_own(
    counts: FloatArray, sums: FloatArray, arms: IntArray, rewards: np.ndarray
) -> None:  # pragma: no cover
    """``counts[b, i, arms[b, i]] += 1`` and ``sums[b, i, arms[b, i]] += rewards[b, i]``
    (as float64), in place: ``PosteriorState.fold``'s indexed update (one cell per
    agent), the same additions.

    Examples:
        >>> counts, sums = np.zeros((1, 2, 2)), np.zeros((1, 2, 2))
        >>> fold_own(counts, sums, np.array([[1, 0]]), np.array([[0.5, 1.0]], np.float32))
        >>> counts[0].tolist(), sums[0].tolist()
        ([[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.5], [1.0, 0.0]])
    """
    n_envs, n = arms.shape
    for b in range(n_envs):
        for i in range(n):
            a = arms[b, i]
            counts[b, i, a] += 1.0
            sums[b, i, a] += np.float64(rewards[b, i])


@njit(cache=True, nogil=True)
def pack_rows(
    counts: FloatArray, sums: FloatArray, out: Float32Array
) -> Float32Array:  # pragma: no cover
    """``out[b, i] = float32(concat(counts[b, i], sums[b, i]))``: the ``(B, N, 2M)`` rows
    every agent sends (``PosteriorState.message``).

    Examples:
        >>> pack_rows(np.ones((1, 1, 2)), np.full((1, 1, 2), 0.5),
        ...           np.empty((1, 1, 4), np.float32)).tolist()
        [[[1.0, 1.0, 0.5, 0.5]]]
    """
    n_envs, n, m = counts.shape
    for b in range(n_envs):
        for i in range(n):
            for a in range(m):
                out[b, i, a] = np.float32(counts[b, i, a])
                out[b, i, m + a] = np.float32(sums[b, i, a])
    return out


__all__ = ["fold_own", "pack_rows", "receive_senders", "team_features"]
