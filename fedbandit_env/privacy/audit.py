"""Black-box privacy audits: lower-bound epsilon from what an observer sees.

An audit runs a mechanism (or a whole env stack) many times on two neighbouring inputs
``d0`` and ``d1``, records what an *observer* sees in each run (the released values; or
another agent's observations, the server's view, the messages an agent sends), and
searches for an event ``E`` of that view whose probabilities violate the claim. An
``(epsilon, delta)``-DP mechanism satisfies, for every event,

    ``P(E | d1) <= exp(epsilon) P(E | d0) + delta``  (and with ``d0``, ``d1`` swapped),

so ``log((P(E | d1) - delta) / P(E | d0))`` with a *lower* confidence bound on the
numerator and an *upper* one on the denominator (exact Clopper-Pearson intervals) is a
lower bound on epsilon that holds with probability ``1 - alpha`` (Jagielski et al.
2020; Nasr et al. 2021). A correct mechanism produces a bound above its claim with
probability at most ``alpha``; a weakened one (too little noise, sensitivity
understated, a tree level missing, noise shared with an observable stream) is caught
once the runs are enough.

The event is found on a *selection* share of the runs and bounded on the rest, so the
search does not bias the bound (:func:`audit_views`). Candidates are thresholds on each
coordinate of the view and unions of the view's cells (each coordinate binned, or taken
as categories when it has few values) in decreasing order of their likelihood ratio:
for a low-dimensional view this finds the likelihood-ratio test, the most powerful one.

Entry points, from the most general:

- :func:`audit_views`: two arrays of views, ``(runs, k)`` each;
- :func:`audit`: a sampler ``(input, seed, runs) -> views`` and two inputs;
- :func:`audit_mechanism`: anything with ``release(values, rng)`` (the Laplace and
  Gaussian mechanisms here, or a user's own), and two neighbouring input arrays;
- :func:`~fedbandit_env.wrappers.audit.audit_env`: an env factory
  ``input -> ParallelEnv``, a team that plays, and an observer ``Episode -> view``;
  :class:`~fedbandit_env.wrappers.audit.ReplaceReward` builds neighbouring inputs by
  changing one agent's reward at one step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from fedbandit_env.seeding import spawn
from fedbandit_env.type_aliases import (
    BoolArray,
    FloatArray,
    SeedLike,
)


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided ``1 - alpha`` confidence interval of a binomial proportion.

    Examples:
        >>> lo, hi = clopper_pearson(50, 100, 0.05)
        >>> round(lo, 3), round(hi, 3)
        (0.398, 0.602)
    """
    from scipy import stats  # imported here: 0.3 s, only audits need it

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
    """Outcome of an audit.

    Attributes:
        epsilon_lb: Lower confidence bound on epsilon (0 if the data show nothing).
        p1: Observed frequency of the event on the input that favours it.
        p0: Observed frequency on the other input.
        trials: Runs per input the bound was computed on.
        alpha: The bound holds with probability at least ``1 - alpha``.
        delta: The ``delta`` of the claim the bound is for.
        event: How the event was chosen (for reports).

    Examples:
        >>> r = AuditResult(0.9, 0.5, 0.2, 1000)
        >>> r.epsilon_lb, r.confidence
        (0.9, 0.99)
    """

    epsilon_lb: float
    p1: float
    p0: float
    trials: int
    alpha: float = 0.01
    delta: float = 0.0
    event: str = ""

    @property
    def confidence(self) -> float:
        """``1 - alpha``."""
        return 1.0 - self.alpha


def _check_alpha_delta(alpha: float, delta: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")


def epsilon_lower_bound(
    event_d1: BoolArray, event_d0: BoolArray, alpha: float = 0.01, delta: float = 0.0
) -> AuditResult:
    """Lower-bound epsilon from event indicators observed on two neighbouring inputs.

    Both directions of the ratio are tried (the event on ``d1`` against ``d0``, and its
    complement on ``d0`` against ``d1``), each bound at level ``alpha / 4`` per side, so
    the whole statement holds with probability at least ``1 - alpha``.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> y1 = 1.0 + rng.laplace(0, 1.0, 200_000)   # Laplace mechanism, epsilon = 1
        >>> y0 = 0.0 + rng.laplace(0, 1.0, 200_000)
        >>> r = epsilon_lower_bound(y1 >= 1.0, y0 >= 1.0)
        >>> 0.9 < r.epsilon_lb <= 1.0
        True
    """
    _check_alpha_delta(alpha, delta)
    e1, e0 = np.asarray(event_d1, bool), np.asarray(event_d0, bool)
    n1, n0 = e1.size, e0.size
    k1, k0 = int(e1.sum()), int(e0.sum())
    a = alpha / 2  # two directions, each with a two-sided interval split below
    best = 0.0
    for num_k, num_n, den_k, den_n in ((k1, n1, k0, n0), (n0 - k0, n0, n1 - k1, n1)):
        lo, _ = clopper_pearson(num_k, num_n, a)
        _, hi = clopper_pearson(den_k, den_n, a)
        if lo - delta > 0 and hi > 0:
            best = max(best, float(np.log((lo - delta) / hi)))
    return AuditResult(best, k1 / n1, k0 / n0, min(n1, n0), alpha, delta)


# ---------------------------------------------------------------------- event search
def _as_views(views: Any) -> FloatArray:
    out = np.asarray(views, dtype=np.float64)
    if out.ndim == 1:
        out = out[:, None]
    if out.ndim != 2 or out.shape[0] < 2:
        raise ValueError(f"views must have shape (runs, k) with runs >= 2, got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError("views must be finite (encode 'nothing seen' as a number)")
    return out


def _column_codes(
    select: FloatArray, column: FloatArray, bins: int
) -> tuple[np.ndarray, int, FloatArray | None]:
    """Codes of ``column`` (categories if the selection share has at most ``bins``
    values, else quantile bins of the selection share), their count, and the bin edges
    (``None`` for categories)."""
    values = np.unique(select)
    if values.size <= bins:
        codes = np.searchsorted(values, column)
        known = (codes < values.size) & (values[np.minimum(codes, values.size - 1)] == column)
        return np.where(known, codes, values.size), values.size + 1, None
    edges = np.unique(np.quantile(select, np.linspace(0, 1, bins + 1)[1:-1]))
    return np.searchsorted(edges, column, side="right"), edges.size + 1, edges


def _candidates(
    sel1: FloatArray, sel0: FloatArray, all1: FloatArray, all0: FloatArray, bins: int
) -> list[tuple[str, BoolArray, BoolArray]]:
    """Candidate events as (description, indicator on all runs of d1, of d0)."""
    pooled = np.concatenate([sel1, sel0])
    both, n1 = np.concatenate([all1, all0]), all1.shape[0]  # encoded once, split below
    k = pooled.shape[1]
    per_column = max(2, int(bins ** (1.0 / k)) if k > 1 else bins)
    cells = np.zeros(both.shape[0], dtype=np.int64)
    out: list[tuple[str, BoolArray, BoolArray]] = []
    n_cells = 1
    for j in range(k):
        codes, size, edges = _column_codes(pooled[:, j], both[:, j], per_column)
        cells, n_cells = cells * size + codes, n_cells * size
        if edges is not None:  # thresholds on a continuous coordinate
            for e in edges:
                above = both[:, j] >= e
                out.append((f"view[{j}] >= {e:.4g}", above[:n1], above[n1:]))
    cells1, cells0 = cells[:n1], cells[n1:]
    s1, s0 = sel1.shape[0], sel0.shape[0]
    count1 = np.bincount(cells1[:s1], minlength=n_cells)
    count0 = np.bincount(cells0[:s0], minlength=n_cells)
    ratio = ((count1 + 0.5) / s1) / ((count0 + 0.5) / s0)
    seen = np.flatnonzero(count1 + count0 > 0)
    order = seen[np.argsort(-ratio[seen], kind="stable")]
    rank = np.full(n_cells, order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    r1, r0 = rank[cells1], rank[cells0]
    steps = np.unique(np.linspace(1, max(order.size - 1, 1), min(64, order.size)).astype(int))
    for top in steps:
        out.append((f"the {top} cells of highest likelihood ratio", r1 < top, r0 < top))
    return out


def audit_views(
    view_d1: Any,
    view_d0: Any,
    *,
    alpha: float = 0.01,
    delta: float = 0.0,
    select: float = 0.3,
    bins: int = 64,
) -> AuditResult:
    """Lower-bound epsilon from an observer's views on two neighbouring inputs.

    The first ``select`` share of each array's runs chooses the event (the candidate
    with the largest bound there); the rest bounds it (:func:`epsilon_lower_bound`),
    so the result holds with probability ``1 - alpha`` whatever the search tried.

    Args:
        view_d1: ``(runs, k)`` (or ``(runs,)``) views on input ``d1``, runs independent.
        view_d0: Views on ``d0``.
        alpha: One minus the confidence of the bound.
        delta: The ``delta`` of the claim being audited (0 for pure DP).
        select: Share of the runs that chooses the event.
        bins: Cells per view (spread over its coordinates; a coordinate with at most
            that many values is taken as categories).

    Examples:
        >>> rng = np.random.default_rng(1)
        >>> r = audit_views(1.0 + rng.laplace(0, 1, 100_000), rng.laplace(0, 1, 100_000))
        >>> 0.8 < r.epsilon_lb <= 1.0
        True
    """
    _check_alpha_delta(alpha, delta)
    if not 0.0 < select < 1.0:
        raise ValueError(f"select must lie in (0, 1), got {select!r}")
    v1, v0 = _as_views(view_d1), _as_views(view_d0)
    if v1.shape[1] != v0.shape[1]:
        raise ValueError(f"views have {v1.shape[1]} and {v0.shape[1]} coordinates")
    s1, s0 = int(select * v1.shape[0]), int(select * v0.shape[0])
    if min(s1, s0, v1.shape[0] - s1, v0.shape[0] - s0) < 1:
        raise ValueError("too few runs to split into a selection and an evaluation share")
    best: tuple[float, str, BoolArray, BoolArray] | None = None
    for name, e1, e0 in _candidates(v1[:s1], v0[:s0], v1, v0, bins):
        score = epsilon_lower_bound(e1[:s1], e0[:s0], alpha, delta).epsilon_lb
        if best is None or score > best[0]:
            best = (score, name, e1, e0)
    assert best is not None
    _, name, e1, e0 = best
    held = epsilon_lower_bound(e1[s1:], e0[s0:], alpha, delta)
    return AuditResult(
        held.epsilon_lb, held.p1, held.p0, held.trials, alpha, delta, f"{name} (held out)"
    )


def gaussian_audit_views(
    view_d1: Any, view_d0: Any, *, alpha: float = 0.01, delta: float = 0.0
) -> AuditResult:
    """Lower-bound epsilon from one-number views of a *Gaussian* mechanism: the view is
    the secret's shift plus Gaussian noise of one variance on both inputs (a Gaussian
    mechanism's releases, summed by the observer), so the pair is ``mu``-GDP with ``mu``
    the shift in noise standard deviations (Dong, Roth & Su 2022), and a lower
    confidence bound on ``mu`` is one on ``epsilon`` at every ``delta``
    (:func:`~fedbandit_env.privacy.gaussian.gdp_epsilon`). Far more powerful than an
    event search at ``delta > 0`` (the event search spends its samples estimating a tail
    probability; this one, a mean and a standard deviation), and tight where the view
    is the mechanism's sufficient statistic.

    The bound: ``(|mean_1 - mean_0| - z se) / s_hi`` with ``se`` the two means' standard
    error and ``s_hi`` an upper bound on the pooled standard deviation (Wilson-Hilferty's
    chi-square quantile), each at level ``alpha / 2``; it holds with probability at least
    ``1 - alpha`` when the assumption holds. Gaussian noise is assumed (use it on a
    Gaussian mechanism's releases only); one variance on both inputs is checked: views
    whose variances differ beyond that level are refused (the secret changes more than
    the mean, as when it changes what is released).

    Raises:
        ValueError: For views that are not one number a run, too few runs, or variances
            that differ.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> r = gaussian_audit_views(1.0 + rng.normal(0, 1, 20_000), rng.normal(0, 1, 20_000),
        ...                          delta=0.1)
        >>> from fedbandit_env.privacy.gaussian import gdp_epsilon
        >>> 0.9 * gdp_epsilon(1.0, 0.1) < r.epsilon_lb <= gdp_epsilon(1.0, 0.1)
        True
    """
    from statistics import NormalDist

    from fedbandit_env.privacy.gaussian import gdp_epsilon

    _check_alpha_delta(alpha, delta)
    v1, v0 = _as_views(view_d1), _as_views(view_d0)
    if v1.shape[1] != 1 or v0.shape[1] != 1:
        raise ValueError(f"a Gaussian audit takes one number a run, got {v1.shape[1]}")
    x1, x0 = v1[:, 0], v0[:, 0]
    n1, n0 = x1.size, x0.size
    if min(n1, n0) < 30:
        raise ValueError(f"a Gaussian audit needs at least 30 runs a side, got {min(n1, n0)}")
    var1, var0 = float(x1.var(ddof=1)), float(x0.var(ddof=1))
    z = NormalDist().inv_cdf(1.0 - alpha / 4)  # two halves of alpha, each two-sided
    spread = math.sqrt(2.0 / (n1 - 1) + 2.0 / (n0 - 1))  # sd of log(var1 / var0)
    if var1 <= 0 or var0 <= 0 or abs(math.log(var1 / var0)) > z * spread:
        raise ValueError(
            f"the views' variances differ ({var1:.4g} against {var0:.4g}): not one Gaussian "
            "shifted by the secret, so this audit does not apply (use audit_views)"
        )
    gap = abs(float(x1.mean()) - float(x0.mean()))
    se = math.sqrt(var1 / n1 + var0 / n0)
    k = n1 + n0 - 2
    pooled = ((n1 - 1) * var1 + (n0 - 1) * var0) / k
    low_q = k * (1.0 - 2.0 / (9 * k) - z * math.sqrt(2.0 / (9 * k))) ** 3  # chi2 quantile
    s_hi = math.sqrt(pooled * k / low_q)
    mu_lb = max(gap - z * se, 0.0) / s_hi
    eps = gdp_epsilon(mu_lb, delta) if mu_lb > 0 and delta > 0 else (math.inf if mu_lb else 0.0)
    event = f"Gaussian shift: mu >= {mu_lb:.4f} (gap {gap:.4g}, sd {math.sqrt(pooled):.4g})"
    return AuditResult(eps, float("nan"), float("nan"), min(n1, n0), alpha, delta, event)


# ---------------------------------------------------------------------- samplers
Sampler = Callable[[Any, np.random.SeedSequence, int], Any]
"""``(input, seed, runs) -> views``: ``runs`` independent runs on ``input``, each reduced
to what the observer sees, as a ``(runs, k)`` array."""


def audit(
    sample: Sampler,
    d0: Any,
    d1: Any,
    *,
    runs: int = 100_000,
    seed: SeedLike = 0,
    alpha: float = 0.01,
    delta: float = 0.0,
    select: float = 0.3,
    bins: int = 64,
    method: str = "events",
) -> AuditResult:
    """Audit any randomized procedure: ``runs`` views on each input, then
    :func:`audit_views` (``method="events"``) or, for a Gaussian mechanism's one-number
    view, :func:`gaussian_audit_views` (``"gaussian"``). The two inputs get independent
    seeds.

    Examples:
        >>> def sample(x, seed, runs):  # a Laplace mechanism, scale 1
        ...     return x + np.random.default_rng(seed).laplace(0.0, 1.0, runs)
        >>> 0.8 < audit(sample, 0.0, 1.0, runs=100_000).epsilon_lb <= 1.0
        True
    """
    if runs < 4:
        raise ValueError(f"runs must be >= 4, got {runs}")
    if method not in ("events", "gaussian"):
        raise ValueError(f"method must be 'events' or 'gaussian', got {method!r}")
    s0, s1 = spawn(seed, 2)
    v1, v0 = sample(d1, s1, runs), sample(d0, s0, runs)
    if method == "gaussian":
        return gaussian_audit_views(v1, v0, alpha=alpha, delta=delta)
    return audit_views(v1, v0, alpha=alpha, delta=delta, select=select, bins=bins)


class Releaser(Protocol):
    """Anything with ``release(values, rng) -> noisy values`` (a mechanism)."""

    def release(self, values: FloatArray, rng: np.random.Generator) -> FloatArray: ...


def audit_mechanism(
    mechanism: Releaser,
    x0: Any,
    x1: Any,
    *,
    runs: int = 200_000,
    seed: SeedLike = 0,
    alpha: float = 0.01,
    delta: float = 0.0,
    project: bool = True,
) -> AuditResult:
    """Audit ``mechanism.release`` on two neighbouring input arrays.

    Each run releases the whole input once (the runs are batched into one ``release``
    call on a ``(runs, *shape)`` array, so the mechanism must treat rows independently,
    as the mechanisms here do). With ``project`` the view is the release projected on
    ``x1 - x0`` (the optimal statistic for a shift under Laplace noise in one coordinate
    and under Gaussian noise); otherwise the whole release is the view.

    Examples:
        >>> from fedbandit_env.privacy import LaplaceMechanism
        >>> r = audit_mechanism(LaplaceMechanism(epsilon=1.0), [0.0, 0.5], [1.0, 0.5])
        >>> 0.8 < r.epsilon_lb <= 1.0
        True
    """
    a0, a1 = np.asarray(x0, dtype=np.float64), np.asarray(x1, dtype=np.float64)
    if a0.shape != a1.shape:
        raise ValueError(f"x0 and x1 must have one shape, got {a0.shape} and {a1.shape}")
    direction = (a1 - a0).ravel()
    if project and not np.any(direction):
        raise ValueError("x0 and x1 are equal: nothing to audit")

    def sample(x: FloatArray, s: np.random.SeedSequence, n: int) -> FloatArray:
        out = mechanism.release(np.broadcast_to(x, (n, *x.shape)).copy(), np.random.default_rng(s))
        flat = np.asarray(out, dtype=np.float64).reshape(n, -1)
        return flat @ direction if project else flat

    return audit(sample, a0, a1, runs=runs, seed=seed, alpha=alpha, delta=delta)
