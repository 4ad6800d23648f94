"""Li & Song's elimination: epoch sizes, confidence radii, private means, elimination.

Called by :class:`~baselines.elimination.EliminationPolicy` (CDP/DDP/HDP-MAB) and by the
batched loop of :mod:`baselines.elimination.fast`: one source of truth for both paths.
Line numbers are Algorithm 1's (``ALGORITHMS.md`` section 2).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import BoolArray, FloatArray


@njit(cache=True)
def elim_delta(r: int, rounds: int, min_gap: float) -> float:  # pragma: no cover
    """Algorithm 1 line 3: ``Delta_r = 2^-r``; with at most ``rounds = R`` rounds (Sec.
    IV-B) ``Delta_r = Delta^(r/R)``, ``Delta`` the smallest gap (assumed known).

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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
