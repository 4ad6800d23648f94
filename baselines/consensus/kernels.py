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

from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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
