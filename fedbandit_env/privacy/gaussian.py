"""Gaussian differential privacy (Dong, Roth & Su 2022): exact accounting for Gaussian
mechanisms and their compositions.

A Gaussian mechanism whose sensitivity is ``mu`` noise standard deviations is
``mu``-GDP; ``k`` of them compose to ``sqrt(k) mu``-GDP *exactly* (a tree release that
touches ``m`` nodes is ``sqrt(m) mu``); and ``mu``-GDP is ``(epsilon, delta(epsilon))``-DP
for every ``epsilon`` with Balle & Wang's curve ``delta(eps) = Phi(-eps/mu + mu/2) -
e^eps Phi(-eps/mu - mu/2)``, which no other ``(epsilon, delta)`` pair beats. So
calibrating on ``mu`` gives the least noise for a claimed ``(epsilon, delta)``, and a
black-box audit can be tight.

Examples:
    >>> mu = gdp_mu(1.0, 0.1)
    >>> round(mu, 4), round(gdp_delta(1.0, mu), 6), round(gdp_epsilon(mu, 0.1), 6)
    (0.9209, 0.1, 1.0)
"""

from __future__ import annotations

import math


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _check(name: str, value: float, low: float, high: float) -> float:
    value = float(value)
    if not low < value < high:
        raise ValueError(f"{name} must lie in ({low}, {high}), got {value!r}")
    return value


def gdp_delta(epsilon: float, mu: float) -> float:
    """The ``delta`` at which a ``mu``-GDP mechanism is ``epsilon``-DP.

    Examples:
        >>> round(gdp_delta(0.0, 1.0), 4)   # 2 Phi(mu/2) - 1
        0.3829
    """
    epsilon = float(epsilon)
    mu = _check("mu", mu, 0.0, math.inf)
    return _phi(-epsilon / mu + mu / 2) - math.exp(epsilon) * _phi(-epsilon / mu - mu / 2)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest ``epsilon`` a ``mu``-GDP mechanism satisfies at ``delta``.

    Examples:
        >>> round(gdp_epsilon(2 * gdp_mu(1.0, 0.1), 0.1), 2)   # half the noise
        3.32
    """
    delta = _check("delta", delta, 0.0, 1.0)
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    low, high = 0.0, 1.0
    while gdp_delta(high, mu) > delta:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if gdp_delta(mid, mu) > delta else (low, mid)
    return high


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest ``mu`` whose mechanism is ``(epsilon, delta)``-DP: calibrate a Gaussian
    mechanism's noise as ``sensitivity / gdp_mu(epsilon, delta)``.

    Examples:
        >>> round(gdp_mu(0.5, 1e-5), 4)
        0.1422
    """
    epsilon = _check("epsilon", epsilon, 0.0, math.inf)
    delta = _check("delta", delta, 0.0, 1.0)
    low, high = 0.0, 1.0
    while gdp_delta(epsilon, high) < delta:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if gdp_delta(epsilon, mid) < delta else (low, mid)
    return low


__all__ = ["gdp_delta", "gdp_epsilon", "gdp_mu"]
