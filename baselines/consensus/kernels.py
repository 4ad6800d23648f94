"""Consensus bandits' mathematics, written once for the policies and the batched loop.

An agent's state is a few ``(2M,)`` vectors laid out as ``[counts..., sums...]``. One
communication round replaces an agent's vector by its row of the consensus matrix
``P = I - L / (d_max + 1)`` applied to its own and its neighbours' vectors
(:func:`mix_row`: weight ``1 - deg_i / (d_max + 1)`` on its own, ``1 / (d_max + 1)`` on
each neighbour's, added in increasing neighbour order, the order both paths use).

DDUCB's accelerated rounds are Chebyshev iterations (Martinez-Rubio, Kanade and
Rebeschini 2019, Alg. 2): after ``r`` rounds an agent holds ``T_r(P / lambda) y_0 /
T_r(1 / lambda)`` (``T_r`` the Chebyshev polynomial, ``lambda = |lambda_2(P)|``),
computed by the normalised three-term recursion of :func:`chebyshev_coefficients` so
that nothing grows with ``r``.

Examples:
    >>> import numpy as np
    >>> out = np.zeros(2)
    >>> mix_row(np.array([3.0, 0.0]), np.array([[0.0, 0.0], [0.0, 3.0]], np.float32),
    ...         np.array([1]), 1, 1.0 / 3.0, out).round(6).tolist()
    [2.0, 1.0]
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from fedbandit_env.core.kernels import UNCOUNTED
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


@njit(cache=True, nogil=True, inline="always")
def mix_row(
    own: FloatArray,
    received: Float32Array,
    neighbours: IntArray,
    degree: int,
    weight: float,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """One round of ``P``'s row: ``out = (1 - degree * weight) own + weight sum_j
    received[j]`` over ``neighbours[:degree]`` (what they sent, as float32), in the
    order given.

    Examples:
        >>> out = np.zeros(1)
        >>> mix_row(np.array([1.0]), np.array([[4.0]], np.float32), np.array([0]), 1,
        ...         0.5, out).tolist()
        [2.5]
    """
    keep = 1.0 - degree * weight
    for k in range(own.size):
        out[k] = keep * own[k]
    for d in range(degree):
        j = neighbours[d]
        for k in range(own.size):
            out[k] += weight * float(received[j, k])
    return out


def chebyshev_coefficients(lam: float, rounds: int) -> tuple[FloatArray, FloatArray]:
    """``(a, b)`` of the normalised Chebyshev recursion ``y_{r+1} = a[r] P y_r - b[r]
    y_{r-1}`` (``y_1 = P y_0``: ``a[0] = 1``, ``b[0] = 0``), from ``w_0 = 1``, ``w_1 =
    1 / lambda``, ``w_{r+1} = 2 w_r / lambda - w_{r-1}``: ``a[r] = 2 w_r / (lambda
    w_{r+1})``, ``b[r] = w_{r-1} / w_{r+1}``. The mean of the vectors is kept
    (``a[r] - b[r] = 1``).

    Examples:
        >>> a, b = chebyshev_coefficients(0.5, 3)
        >>> a.round(4).tolist(), b.round(4).tolist(), float(round(a[2] - b[2], 12))
        ([1.0, 1.1429, 1.0769], [0.0, 0.1429, 0.0769], 1.0)
    """
    a, b = np.ones(rounds), np.zeros(rounds)
    if rounds > 1 and not 0.0 < lam < 1.0:
        raise ValueError(f"Chebyshev mixing needs 0 < |lambda_2| < 1, got {lam!r}")
    w_prev, w = 1.0, 1.0 / lam if rounds > 1 else 1.0
    for r in range(1, rounds):
        w_next = 2.0 * w / lam - w_prev
        a[r] = 2.0 * w / (lam * w_next)
        b[r] = w_prev / w_next
        w_prev, w = w, w_next
    return a, b


@njit(cache=True, nogil=True, inline="always")
def chebyshev_step(
    mixed: FloatArray, previous: FloatArray, a: float, b: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """``out = a mixed - b previous`` (``mixed = P y_r``; ``out`` may be ``mixed``).

    Examples:
        >>> chebyshev_step(np.array([2.0]), np.array([1.0]), 1.5, 0.5, np.zeros(1)).tolist()
        [2.5]
    """
    for k in range(mixed.size):
        out[k] = a * mixed[k] - b * previous[k]
    return out


@njit(cache=True, nogil=True, inline="always")
def ucb_arm(
    state: FloatArray, n_arms: int, log_s: float, width2: float, extra: float
) -> int:  # pragma: no cover
    """The first arm of largest ``sums / counts + sqrt(width2 (counts + extra) log_s /
    counts^2)`` over ``state = [counts..., sums...]``: DDUCB's index (Alg. 1: ``extra =
    0``, ``width2 = 2 eta sigma^2 / N``) and coop-UCB2's (``extra = eps_c^i``,
    ``width2 = 2 gamma sigma^2 / N``). An arm of count ``<= 0`` is pulled first.

    Examples:
        >>> ucb_arm(np.array([4.0, 1.0, 2.0, 0.9]), 2, math.log(10.0), 1.0, 0.0)
        1
    """
    best, arm = -math.inf, 0
    for k in range(n_arms):
        n = state[k]
        if n <= 0.0:
            return k
        index = state[n_arms + k] / n + math.sqrt(width2 * (n + extra) * log_s / (n * n))
        if index > best:
            best, arm = index, k
    return arm


def _mixes_at_once(lam: float) -> bool:
    """Check ``|lambda_2|`` (a connected graph has it below 1); ``True`` when it is 0 (one
    round of ``P`` averages exactly: a stage of 1)."""
    if not 0.0 <= lam < 1.0:
        raise ValueError(f"consensus needs a connected graph (|lambda_2| < 1), got {lam!r}")
    return lam <= 0.0


def accelerated_stage(n_agents: int, lam: float, precision: float) -> int:
    """DDUCB's stage length with Chebyshev mixing, ``ceil(ln(2N / eps) / sqrt(2
    ln(1 / |lambda_2|)))`` (at least 1; 1 when ``|lambda_2| = 0``).

    Examples:
        >>> accelerated_stage(100, 1 / 3 + 2 / 3 * math.cos(2 * math.pi / 100), 1 / 22)
        164
    """
    if _mixes_at_once(lam):
        return 1
    return max(1, math.ceil(math.log(2 * n_agents / precision) / math.sqrt(2 * math.log(1 / lam))))


def plain_stage(n_agents: int, lam: float, precision: float) -> int:
    """DDUCB's stage length with plain rounds of ``P``, ``ceil(ln(N / eps) / ln(1 /
    |lambda_2|))`` (at least 1).

    Examples:
        >>> plain_stage(100, 1 / 3 + 2 / 3 * math.cos(2 * math.pi / 100), 1 / 22)
        5847
    """
    if _mixes_at_once(lam):
        return 1
    return max(1, math.ceil(math.log(n_agents / precision) / math.log(1 / lam)))


__all__ = [
    "accelerated_stage",
    "chebyshev_coefficients",
    "chebyshev_step",
    "mix_row",
    "plain_stage",
    "ucb_arm",
]


DDUCB_ACCEL, DDUCB_PLAIN, COOP_UCB2 = 0, 1, 2
"""The variants :func:`consensus_step` plays."""


@njit(cache=True, nogil=True, **UNCOUNTED)
def consensus_step(
    last: IntArray,
    seen: Float32Array,
    t: int,
    heard: Float32Array,
    mask: np.ndarray,
    y: FloatArray,
    y_prev: FloatArray,
    alpha: FloatArray,
    gamma: FloatArray,
    delta: FloatArray,
    stage_at: IntArray,
    scratch: FloatArray,
    graph: tuple[IntArray, IntArray, float, FloatArray],
    rule: tuple[int, int, FloatArray, FloatArray, float, bool],
    arms: IntArray,
    sent: FloatArray,
) -> None:  # pragma: no cover
    """One step of every agent of ``B`` envs, as :class:`~baselines.consensus.DDUCB`'s
    ``act`` (``rule[0]`` :data:`DDUCB_ACCEL` or :data:`DDUCB_PLAIN`) or
    :class:`~baselines.consensus.CoopUCB2`'s (:data:`COOP_UCB2`) plays it: absorb the
    last pull (``last``, the float32 ``seen``), run the step's consensus round on what the
    neighbours sent last step (``heard`` ``(B, N, 2M)`` float32, by sender; every
    neighbour's message arrives under Broadcast), pull into ``arms``, send the state
    (``sent[b, i, :2M]``, zeros after). The state: ``y`` (DDUCB's beta, coop-UCB2's
    ``x + e``), ``y_prev``, ``alpha``, ``gamma``, ``delta`` ``(B, N, 2M)``; the stage's
    round and whether a stage closed (``stage_at``, the same in every env: they depend
    on the step only); ``scratch`` ``(2, 2M)`` holds a round's sums. ``graph =
    (neighbours (N, d_max), degrees (N,), weight, eps_c (N,))``; ``rule = (variant, stage
    C, Chebyshev a, b, width2 = 2 c sigma^2 / N, code_alias)``. The per-agent policies'
    operations in their order, so the same bits
    (``tests/families/consensus/test_consensus.py``).

    Examples:
        >>> b, n, m = 1, 2, 2
        >>> y = [np.zeros((b, n, 2 * m)) for _ in range(5)]
        >>> graph = (np.array([[1], [0]]), np.array([1, 1]), 0.5, np.zeros(2))
        >>> rule = (COOP_UCB2, 1, np.ones(1), np.zeros(1), 0.1, False)
        >>> arms, sent = np.zeros((b, n), np.int64), np.zeros((b, n, 2 * m))
        >>> consensus_step(arms, np.zeros((b, n), np.float32), 0, np.zeros((b, n, 4),
        ...                np.float32), np.zeros((b, n, n), np.int8), *y,
        ...                np.zeros(2, np.int64), np.zeros((2, 4)), graph, rule, arms, sent)
        >>> arms.tolist()  # the first pulls: arm t
        [[0, 0]]
    """
    neighbours, degrees, weight, eps_c = graph
    variant, stage, a, b_coef, width2, alias = rule
    n_envs, n = arms.shape
    size = y.shape[2]
    m = size // 2
    done = t
    mixed, new = scratch[0], scratch[1]
    r_stage = stage_at[0]
    closed = stage_at[1] != 0
    closing = variant != COOP_UCB2 and done > m and r_stage + 1 == stage
    for b in range(n_envs):
        wire = heard[b]
        for i in range(n):
            if variant == COOP_UCB2:  # CoopUCB2.act
                if done > 0:
                    mix_row(y[b, i], wire, neighbours[i], degrees[i], weight, mixed)
                    for k in range(size):
                        y[b, i, k] = mixed[k]
                    y[b, i, last[b, i]] += 1.0
                    y[b, i, m + last[b, i]] += float(seen[b, i])
                if done < m:
                    arms[b, i] = done
                else:
                    arms[b, i] = ucb_arm(y[b, i], m, math.log(done - m + 1), width2, eps_c[i])
            else:
                if done > 0:  # DDUCB.act: absorb the last pull
                    a_i, u = last[b, i], float(seen[b, i])
                    if done <= m:
                        y[b, i, a_i] += 1.0
                        y[b, i, m + a_i] += u
                    else:
                        gamma[b, i, a_i] += 1.0
                        gamma[b, i, m + a_i] += u
                        alpha[b, i, a_i] += 1.0 / n
                        alpha[b, i, m + a_i] += u / n
                        if alias and closed and variant == DDUCB_ACCEL:
                            delta[b, i, a_i] += 1.0 / n
                            delta[b, i, m + a_i] += u / n
                if done == m:
                    for k in range(size):
                        alpha[b, i, k] = y[b, i, k] / m
                elif done > m:  # DDUCB._round
                    mix_row(y[b, i], wire, neighbours[i], degrees[i], weight, mixed)
                    if variant == DDUCB_ACCEL:
                        chebyshev_step(mixed, y_prev[b, i], a[r_stage], b_coef[r_stage], new)
                        for k in range(size):
                            y_prev[b, i, k] = y[b, i, k]
                            y[b, i, k] = new[k]
                    else:
                        for k in range(size):
                            y[b, i, k] = mixed[k]
                    if closing:
                        for k in range(size):
                            if variant == DDUCB_ACCEL:
                                delta[b, i, k] += y[b, i, k]
                                alpha[b, i, k] = delta[b, i, k]
                                y[b, i, k] = gamma[b, i, k]
                                y_prev[b, i, k] = 0.0
                            else:
                                alpha[b, i, k] = y[b, i, k]
                                y[b, i, k] += gamma[b, i, k]
                                if alias:
                                    alpha[b, i, k] = y[b, i, k]
                            gamma[b, i, k] = 0.0
                if done < m:
                    arms[b, i] = done
                else:
                    c_s = m + n * (done - m) if done < m + stage else n * (done - stage)
                    arms[b, i] = ucb_arm(alpha[b, i], m, math.log(max(c_s, 1)), width2, 0.0)
            for k in range(size):
                sent[b, i, k] = y[b, i, k]
            for k in range(size, sent.shape[2]):
                sent[b, i, k] = 0.0
    if variant != COOP_UCB2 and done > m:
        stage_at[0] = 0 if closing else r_stage + 1
        stage_at[1] = 1 if closed or closing else 0
