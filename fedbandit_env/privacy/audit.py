"""Empirical privacy audits: lower-bound epsilon from samples (Clopper-Pearson).

Run a mechanism many times on two neighbouring inputs, reduce each output to one event
``E``, and bound ``epsilon >= log(P(E | D1) / P(E | D0))`` from below with exact
binomial confidence bounds (lower bound for the numerator, upper for the denominator).
A correct mechanism must never produce a lower bound above its claim; a broken one with
enough samples does. (Jagielski et al. 2020; Nasr et al. 2021.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from fedbandit_env.type_aliases import BoolArray


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided ``1 - alpha`` confidence interval of a binomial proportion.

    Example:
        >>> lo, hi = clopper_pearson(50, 100, 0.05)
        >>> round(lo, 3), round(hi, 3)
        (0.398, 0.602)
    """
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(
            f"need 0 <= successes <= trials and trials >= 1, got {successes}, {trials}"
        )
    lo = (
        0.0
        if successes == 0
        else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    )
    hi = (
        1.0
        if successes == trials
        else float(stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    )
    return lo, hi


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`epsilon_lower_bound`.

    Attributes:
        epsilon_lb: Lower confidence bound on epsilon (0 if the data show nothing).
        p1: Observed frequency of the event on the input that favours it.
        p0: Observed frequency on the other input.
        trials: Samples per input.


    Example:
        >>> AuditResult(0.9, 0.5, 0.2, 1000).epsilon_lb
        0.9
    """

    epsilon_lb: float
    p1: float
    p0: float
    trials: int


def epsilon_lower_bound(
    event_d1: BoolArray, event_d0: BoolArray, alpha: float = 0.01
) -> AuditResult:
    """Lower-bound epsilon from event indicators observed on two neighbouring inputs.

    Both directions of the ratio are tried, each at level ``alpha / 4`` per bound (so
    the whole statement holds with probability at least ``1 - alpha``).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y1 = 1.0 + rng.laplace(0, 1.0, 200_000)   # Laplace mechanism, epsilon = 1
        >>> y0 = 0.0 + rng.laplace(0, 1.0, 200_000)
        >>> r = epsilon_lower_bound(y1 >= 1.0, y0 >= 1.0)
        >>> 0.9 < r.epsilon_lb <= 1.0
        True
    """
    e1, e0 = np.asarray(event_d1, bool), np.asarray(event_d0, bool)
    n1, n0 = e1.size, e0.size
    k1, k0 = int(e1.sum()), int(e0.sum())
    a = alpha / 2  # two directions, each with a two-sided interval split below
    best = 0.0
    for num_k, num_n, den_k, den_n in ((k1, n1, k0, n0), (n0 - k0, n0, n1 - k1, n1)):
        lo, _ = clopper_pearson(num_k, num_n, a)
        _, hi = clopper_pearson(den_k, den_n, a)
        if lo > 0 and hi > 0:
            best = max(best, float(np.log(lo / hi)))
    return AuditResult(best, k1 / n1, k0 / n0, min(n1, n0))
