"""The index family's per-step mathematics, compiled: the receivers' screen of what they
heard, the held table's update and the index itself, for every agent of ``B`` envs in one
call (issue 62: a family's fast path is a compiled step over the vector env's arrays).

Each kernel states in NumPy terms what it computes, and computes it in the same floating
point order, so :class:`~baselines.index.policies.IndexPolicy`'s trials are the same to the
bit as its former NumPy statement (checked before and after on every setting the family
runs in; ``tests/families/index/test_index.py``):

- :func:`honest_rows` is ``IndexPolicy._honest``'s check of a ``[counts, sums]`` row;
- :func:`keep_heard` folds the honest rows a receiver heard into its held table
  (``held[b, i, s] = post[b, slots[i, s]]`` where heard, a row's local posterior),
  counts the dropped ones, and says when a sender beyond the table's columns was heard
  (the table must widen first);
- :func:`local_posteriors` is each row's local posterior (the module docstring's
  ``m_j, v_j``),
  computed once per sender when its row arrives and held instead of the row, so a step
  adds held posteriors without a division;
- :func:`team_index` averages the own and held local posteriors (the module docstring of
  :mod:`baselines.index.policies`) and pulls the argmax, ties to the lowest arm.

The Gaussian draws stay NumPy's (``Generator.standard_normal`` per env, in blocks), so
the draws are those of any batch size.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import FloatArray, IntArray

NO_NOISE = 0
"""Noise code of :func:`team_index`: raw sums (no noise variance)."""
TREE_NOISE = 1
"""Noise code: ``extra`` added to the variance of every row with a pull (the tree's)."""
GIVEN_NOISE = 2
"""Noise code: the noise variances are given per row and arm (a subclass's form)."""


@njit(cache=True, nogil=True, error_model="numpy")
def honest_rows(
    counts: FloatArray,
    sums: FloatArray,
    t: int,
    check_sums: bool,
    lo: float,
    hi: float,
    rounding: float,
    sum_slack: float,
    out: np.ndarray,
) -> None:  # pragma: no cover
    """``out[b, s]``: whether sender ``s``'s row (``counts[b, s]``, ``sums[b, s]``, ``M``
    each) is one an honest agent can send after ``t`` steps: every number finite, the
    counts non-negative whole numbers adding up to at most ``t`` and, with ``check_sums``,
    every sum within ``[lo n - slack, hi n + slack]``, ``slack = rounding * max(n, 1) +
    sum_slack``.

    Examples:
        >>> counts, sums = np.array([[[1.0, 0.0], [1.0, 0.0]]]), np.array([[[0.5, 0], [7, 0]]])
        >>> out = np.zeros((1, 2), bool)
        >>> honest_rows(counts, sums, 1, True, 0.0, 1.0, 1e-6, 0.0, out)
        >>> out.tolist()
        [[True, False]]
    """
    b_count, n, m = counts.shape
    for b in range(b_count):
        for s in range(n):
            ok = True
            total = 0.0
            for a in range(m):
                c, v = counts[b, s, a], sums[b, s, a]
                if not (math.isfinite(c) and math.isfinite(v)):
                    ok = False
                    break
                if c < 0.0 or c != math.floor(c):
                    ok = False
                    break
                total += c
                if check_sums:
                    slack = rounding * max(c, 1.0) + sum_slack
                    if not (v >= lo * c - slack and v <= hi * c + slack):
                        ok = False
                        break
            out[b, s] = ok and total <= t


@njit(cache=True, nogil=True, error_model="numpy")
def keep_heard(
    mask: np.ndarray,
    honest: np.ndarray,
    slots: IntArray,
    allowed: np.ndarray,
    post: FloatArray,
    held: FloatArray,
    heard: np.ndarray,
    rejected: IntArray,
) -> bool:  # pragma: no cover
    """Fold what every receiver heard into its held table; ``False`` (nothing changed)
    if an honest sender outside ``allowed`` ``(N, N)`` was heard, ``True`` once done.

    ``mask`` ``(B, N, N)`` (receiver, sender) says who heard whom, ``honest`` ``(B, N)``
    which senders' rows pass :func:`honest_rows`; a heard dishonest row counts in
    ``rejected[b, i]``, an honest one's local posterior ``post[b, sender]``
    (:func:`local_posteriors`) replaces column ``s`` of ``held[b, i]`` ``(B, N, S, W)``
    where ``slots[i, s]`` is the sender, and sets ``heard[b, i, s]``.

    Examples:
        >>> mask = np.array([[[0, 1], [1, 0]]], np.int8)
        >>> post = np.array([[[1.0, 2.0], [3.0, 4.0]]])
        >>> held, heard = np.zeros((1, 2, 1, 2)), np.zeros((1, 2, 1), bool)
        >>> rejected, honest = np.zeros((1, 2), np.int64), np.array([[True, False]])
        >>> slots, allowed = np.array([[1], [0]]), ~np.eye(2, dtype=bool)
        >>> keep_heard(mask, honest, slots, allowed, post, held, heard, rejected)
        True
        >>> held[0, 1, 0].tolist(), heard.tolist(), rejected.tolist()
        ([1.0, 2.0], [[[False], [True]]], [[1, 0]])
    """
    b_count, n = mask.shape[0], mask.shape[1]
    for b in range(b_count):
        for i in range(n):
            for s in range(n):
                if mask[b, i, s] and honest[b, s] and not allowed[i, s]:
                    return False
    width = held.shape[3]
    for b in range(b_count):
        for i in range(n):
            for s in range(n):
                if mask[b, i, s] and not honest[b, s]:
                    rejected[b, i] += 1
            for c in range(slots.shape[1]):
                sender = slots[i, c]
                if sender >= 0 and mask[b, i, sender] and honest[b, sender]:
                    for k in range(width):
                        held[b, i, c, k] = post[b, sender, k]
                    heard[b, i, c] = True
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def local_posteriors(
    counts: FloatArray,
    sums: FloatArray,
    alpha: FloatArray,
    mu0: FloatArray,
    var: float,
    noise: int,
    extra: float,
    given: FloatArray,
    out: FloatArray,
) -> None:  # pragma: no cover
    """Each row's local posterior per arm, ``out[b, j] = [m (M), v (M)]``: ``m = (S + alpha
    mu0) / (n + alpha)``, ``v = var / (n + alpha) + noise / (n + alpha)^2`` for counts ``n``
    and sums ``S`` ``(B, J, M)``, ``alpha`` and ``mu0`` per env ``(B,)``; ``noise`` is
    :data:`NO_NOISE`, :data:`TREE_NOISE` (``extra`` where ``n > 0``) or
    :data:`GIVEN_NOISE` (``given`` ``(B, J, M)``).

    Examples:
        >>> out = np.zeros((1, 1, 2))
        >>> local_posteriors(np.full((1, 1, 1), 3.0), np.full((1, 1, 1), 2.0), np.ones(1),
        ...                  np.zeros(1), 0.25, NO_NOISE, 0.0, np.zeros((1, 1, 1)), out)
        >>> out.tolist()  # (2 + 0) / 4, 0.25 / 4
        [[[0.5, 0.0625]]]
    """
    b_count, rows, m = counts.shape
    for b in range(b_count):
        a_b, prior = alpha[b], alpha[b] * mu0[b]
        for j in range(rows):
            for a in range(m):
                n_a = counts[b, j, a]
                pulls = n_a + a_b
                v = var / pulls
                if noise == TREE_NOISE:
                    v = v + (extra if n_a > 0 else 0.0) / (pulls * pulls)
                elif noise == GIVEN_NOISE:
                    v = v + given[b, j, a] / (pulls * pulls)
                out[b, j, a] = (sums[b, j, a] + prior) / pulls
                out[b, j, m + a] = v


@njit(cache=True, nogil=True, inline="always")
def _score(
    mean: float, std: float, bonus: float, draw_scale: float, draws: bool, z: float
) -> float:  # pragma: no cover
    """``mean + std * bonus [+ std * draw_scale * z]``, in the NumPy statement's order."""
    score = mean + std * bonus
    if draws:
        score = score + std * draw_scale * z
    return score


@njit(cache=True, nogil=True)
def _first_argmax(scores: FloatArray) -> int:  # pragma: no cover
    """NumPy's ``argmax``: the first largest entry, or the first NaN."""
    best, best_arm = 0.0, -1
    for a in range(scores.size):
        score = scores[a]
        if math.isnan(score):
            return a
        if best_arm < 0 or score > best:
            best, best_arm = score, a
    return best_arm


@njit(cache=True, nogil=True, error_model="numpy")
def team_index(
    own: FloatArray,
    posterior: FloatArray,
    heard: np.ndarray,
    bonus: FloatArray,
    draw_scale: FloatArray,
    draws: bool,
    z: FloatArray,
    arms: IntArray,
) -> None:  # pragma: no cover
    """Every agent's arm ``arms[b, i]``: the argmax (lowest arm on ties; NumPy's first NaN)
    over arms of ``mean + std * bonus [+ std * draw_scale * z]``, averaging the own row's
    local posterior ``own[b, i] = [m (M), v (M)]`` (:func:`local_posteriors`) with the
    ``K - 1`` held ones, ``posterior[b, i, s]`` where ``heard[b, i, s]``: ``mean = (m_own +
    sum_s m_s) / K``, ``std = sqrt(v_own + sum_s v_s) / K``, the held rows summed in column
    order. ``bonus`` and ``draw_scale`` are per env ``(B,)``.

    Examples:
        >>> own = np.array([[[2.5 / 3, 0.5, 0.1, 0.1]]])  # arm 0 above arm 1
        >>> posterior, heard = np.zeros((1, 1, 0, 4)), np.zeros((1, 1, 0), bool)
        >>> zero, arms = np.zeros(1), np.zeros((1, 1), np.int64)
        >>> team_index(own, posterior, heard, zero, zero, False, own, arms)
        >>> arms.tolist()
        [[0]]
    """
    b_count, n, width = own.shape
    m = width // 2
    slots = posterior.shape[2]
    held_mean, held_var, scores = np.zeros(m), np.zeros(m), np.zeros(m)
    for b in range(b_count):
        for i in range(n):
            k = 1.0
            held_mean[:] = 0.0
            held_var[:] = 0.0
            for c in range(slots):
                if heard[b, i, c]:
                    k += 1.0
                    for a in range(m):
                        held_mean[a] += posterior[b, i, c, a]
                        held_var[a] += posterior[b, i, c, m + a]
            for a in range(m):
                mean = (own[b, i, a] + held_mean[a]) / k
                std = math.sqrt(own[b, i, m + a] + held_var[a]) / k
                scores[a] = _score(mean, std, bonus[b], draw_scale[b], draws, z[b, i, a])
            arms[b, i] = _first_argmax(scores)


@njit(cache=True, nogil=True, error_model="numpy")
def server_index(
    own: FloatArray,
    global_mean: FloatArray,
    global_var: FloatArray,
    have: np.ndarray,
    bonus: FloatArray,
    draw_scale: FloatArray,
    draws: bool,
    z: FloatArray,
    arms: IntArray,
) -> None:  # pragma: no cover
    """Every agent's arm under a server: the argmax (lowest arm on ties; NumPy's first
    NaN) of ``mean + std * bonus [+ std * draw_scale * z]`` where ``mean, std^2`` are the
    server's average ``global_mean[b, i], global_var[b, i]`` once agent ``i`` has one
    (``have[b, i]``), else its own local posterior ``own[b, i] = [m (M), v (M)]``.

    Examples:
        >>> own = np.array([[[0.2, 0.9, 0.1, 0.1]]])
        >>> mean, var = np.array([[[0.8, 0.1]]]), np.array([[[0.01, 0.01]]])
        >>> zero, arms = np.zeros(1), np.zeros((1, 1), np.int64)
        >>> server_index(own, mean, var, np.array([[True]]), zero, zero, False, own, arms)
        >>> arms.tolist()  # the server's average, not the own row
        [[0]]
    """
    b_count, n, m = global_mean.shape
    scores = np.zeros(m)
    for b in range(b_count):
        for i in range(n):
            for a in range(m):
                if have[b, i]:
                    mean, std = global_mean[b, i, a], math.sqrt(global_var[b, i, a])
                else:
                    mean, std = own[b, i, a], math.sqrt(own[b, i, m + a])
                scores[a] = _score(mean, std, bonus[b], draw_scale[b], draws, z[b, i, a])
            arms[b, i] = _first_argmax(scores)


@njit(cache=True, nogil=True, error_model="numpy")
def honest_payloads(
    payload: FloatArray,
    top: float,
    check_means: bool,
    low: float,
    high: float,
    out: np.ndarray,
) -> None:  # pragma: no cover
    """``out[b, i]``: whether ``payload[b, i] = [means (M), variances (M)]`` is one an
    honest upload (or an average of uploads) can be: every number finite, every variance
    in ``[0, top]`` and, with ``check_means``, every mean in ``[low, high]`` (the caller
    widens them by its slack).

    Examples:
        >>> payload = np.array([[[0.5, 0.1], [0.5, -0.1]]])
        >>> out = np.zeros((1, 2), bool)
        >>> honest_payloads(payload, 1.0, True, 0.0, 1.0, out)
        >>> out.tolist()  # a negative variance
        [[True, False]]
    """
    b_count, n, width = payload.shape
    m = width // 2
    for b in range(b_count):
        for i in range(n):
            ok = True
            for a in range(m):
                mean, var = payload[b, i, a], payload[b, i, m + a]
                if not (math.isfinite(mean) and math.isfinite(var)):
                    ok = False
                    break
                if not (var >= 0.0 and var <= top):
                    ok = False
                    break
                if check_means and not (mean >= low and mean <= high):
                    ok = False
                    break
            out[b, i] = ok


@njit(cache=True, nogil=True, error_model="numpy")
def flood_average(
    mask: np.ndarray,
    payload: FloatArray,
    payloads: FloatArray,
    origins: np.ndarray,
    global_mean: FloatArray,
    global_var: FloatArray,
    have: np.ndarray,
) -> None:  # pragma: no cover
    """Flooding's completed rounds: receiver ``r`` keeps ``payload[b, s]`` (``[means (M),
    variances (M)]``) of every origin ``s`` it got (``mask[b, r, s]``, honest ones only)
    in ``payloads[b, r, s]``, and its server-free average over every origin held is
    ``global_mean = sum_s means_s / K``, ``global_var = sum_s variances_s / K^2`` (summed
    in origin order); a receiver that got nothing new keeps its average.

    Examples:
        >>> mask = np.array([[[0, 1], [0, 0]]], bool)
        >>> payload = np.array([[[0.0, 0.0], [0.8, 0.04]]])
        >>> payloads, origins = np.zeros((1, 2, 2, 2)), np.zeros((1, 2, 2), bool)
        >>> mean, var, have = np.zeros((1, 2, 1)), np.zeros((1, 2, 1)), np.zeros((1, 2), bool)
        >>> flood_average(mask, payload, payloads, origins, mean, var, have)
        >>> mean[0, :, 0].tolist(), var[0, :, 0].tolist(), have.tolist()
        ([0.8, 0.0], [0.04, 0.0], [[True, False]])
    """
    b_count, n = mask.shape[0], mask.shape[1]
    m = global_mean.shape[2]
    for b in range(b_count):
        for r in range(n):
            new = False
            for s in range(n):
                if mask[b, r, s]:
                    new = True
                    origins[b, r, s] = True
                    for k in range(2 * m):
                        payloads[b, r, s, k] = payload[b, s, k]
            if not new:
                continue
            count = 0
            for s in range(n):
                if origins[b, r, s]:
                    count += 1
            for a in range(m):
                total_mean, total_var = 0.0, 0.0
                for s in range(n):
                    if origins[b, r, s]:
                        total_mean += payloads[b, r, s, a]
                        total_var += payloads[b, r, s, m + a]
                global_mean[b, r, a] = total_mean / count
                global_var[b, r, a] = total_var / (count * count)
            have[b, r] = True


@njit(cache=True, nogil=True, error_model="numpy")
def take_broadcast(
    server: FloatArray,
    arrived: np.ndarray,
    payload_ok: np.ndarray,
    global_mean: FloatArray,
    global_var: FloatArray,
    have: np.ndarray,
    rejected: IntArray,
    waiting: np.ndarray,
) -> None:  # pragma: no cover
    """The server's broadcast ``server[b, i] = [K, means (M), variances (M)]`` where it
    arrived (``arrived[b, i, 0]``): kept as agent ``i``'s average (``global_mean``, and
    ``global_var = variances / K``) if ``K`` is a whole number in ``[1, N]`` and the
    payload passed its check (``payload_ok``), else dropped and counted in ``rejected``;
    either way the agent's round is over (``waiting`` cleared).

    Examples:
        >>> server = np.array([[[2.0, 0.5, 0.2], [7.0, 0.5, 0.2]]])
        >>> arrived, ok = np.ones((1, 2, 1), np.int8), np.ones((1, 2), bool)
        >>> mean, var = np.zeros((1, 2, 1)), np.zeros((1, 2, 1))
        >>> have, waiting = np.zeros((1, 2), bool), np.ones((1, 2), bool)
        >>> rejected = np.zeros((1, 2), np.int64)
        >>> take_broadcast(server, arrived, ok, mean, var, have, rejected, waiting)
        >>> var[0, :, 0].tolist(), rejected.tolist(), waiting.tolist()  # K = 7 > N = 2
        ([0.1, 0.0], [[0, 1]], [[False, False]])
    """
    b_count, n, m = global_mean.shape
    for b in range(b_count):
        for i in range(n):
            if not arrived[b, i, 0]:
                continue
            waiting[b, i] = False  # a dropped result ends the round too (issue 63)
            k = server[b, i, 0]
            if not (k >= 1 and k <= n and k == math.floor(k) and payload_ok[b, i]):
                rejected[b, i] += 1
                continue
            for a in range(m):
                global_mean[b, i, a] = server[b, i, 1 + a]
                global_var[b, i, a] = server[b, i, 1 + m + a] / k
            have[b, i] = True


__all__ = [
    "GIVEN_NOISE",
    "NO_NOISE",
    "TREE_NOISE",
    "flood_average",
    "honest_payloads",
    "honest_rows",
    "keep_heard",
    "local_posteriors",
    "server_index",
    "take_broadcast",
    "team_index",
]
