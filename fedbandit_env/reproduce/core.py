"""What a reproduction row is, how a claim is judged, and how the report is written.

A *row* is one claim of one figure or table: the paper's words, our setting, our
numbers with 95% bootstrap intervals over trials, and a verdict. Orderings are judged
pair by pair on the bootstrap interval of the difference of the means (trials are the
independent units): a pair is *confirmed* when the interval lies on the claimed side
of 0, *contradicted* when it lies on the other side, *within noise* otherwise.

A verdict is *stable* when the same judgement, made again on each of two disjoint
halves of the trials (the even- and the odd-numbered ones), gives it both times
(:func:`stability`); a verdict that a half of the trials overturns is marked unstable in
the report, whatever the whole gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from fedbandit_env.runner.results import bootstrap_ci
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.type_aliases import FloatArray

Verdict = Literal["reproduced", "partly", "not reproduced", "reading decided", "exact"]
VERDICTS: tuple[str, ...] = ("reproduced", "partly", "not reproduced", "reading decided", "exact")


@dataclass
class Row:
    """One claim of a paper, measured.

    Attributes:
        key: Stable id (``"zhu_fig2a_order"``), used by tests and the report's anchors.
        paper: ``"Zhu et al."``, ``"Li & Song"`` or ``"Dubey & Pentland"``.
        item: The figure or table (``"Fig. 2(a)"``).
        claim: What the paper says, in its words where short.
        setting: Ours: the grid, horizon and trials the numbers come from.
        measured: Our numbers (markdown), with intervals.
        verdict: One of :data:`VERDICTS`.
        why: Why the verdict (and, for a claim that does not reproduce, why not).
        figure: Path of the figure, relative to the report (``""``: none).
        seconds: The compute behind the row: the wall time of measuring it, or, where
            its paper reads trials back from a store, the seconds those trials took when
            they ran (whichever is larger; :func:`~fedbandit_env.reproduce.run_rows`).
        stability: Whether two disjoint halves of the trials give the same verdict
            (:func:`stability`; ``""``: not assessed, e.g. an exact count).

    Examples:
        >>> Row("k", "Zhu et al.", "Fig. 2(a)", "c", "s", "m", "reproduced", "w").verdict
        'reproduced'
    """

    key: str
    paper: str
    item: str
    claim: str
    setting: str
    measured: str
    verdict: Verdict
    why: str
    figure: str = ""
    seconds: float = field(default=0.0, compare=False)
    stability: str = ""

    @property
    def unstable(self) -> bool:
        """Whether a half of the trials overturns the verdict."""
        return self.stability.startswith("unstable")

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def at(curves: RegretCurves, fraction: float = 1.0) -> FloatArray:
    """Per-agent regret of every trial at the recorded step nearest ``fraction * T``.

    Examples:
        >>> c = RegretCurves("p", np.array([5, 10]), np.arange(8.0).reshape(2, 2, 2))
        >>> at(c, 0.5).tolist(), at(c).tolist()
        ([1.0, 5.0], [2.0, 6.0])
    """
    k = int(np.abs(curves.t - fraction * curves.t[-1]).argmin())
    return curves.per_agent[:, k]


def mean_ci(x: FloatArray) -> str:
    """``mean [lo, hi]`` with the 95% bootstrap interval of the mean.

    Examples:
        >>> mean_ci(np.array([1.0, 2.0, 3.0]))
        '2.0 [1.0, 3.0]'
    """
    lo, hi = bootstrap_ci(x)
    return f"{_fmt(float(np.mean(x)))} [{_fmt(lo)}, {_fmt(hi)}]"


def _fmt(v: float) -> str:
    if not np.isfinite(v):
        return str(v)
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.1f}"
    return f"{v:.3g}"


def _resampled_means(x: FloatArray, rng: np.random.Generator, n: int = 4000) -> FloatArray:
    x = np.asarray(x, dtype=np.float64).ravel()
    return x[rng.integers(0, x.size, size=(n, x.size))].mean(axis=1)


def difference_ci(a: FloatArray, b: FloatArray, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of ``mean(a) - mean(b)`` (independent trials).

    Examples:
        >>> lo, hi = difference_ci(np.array([5.0, 6, 7]), np.array([1.0, 2, 3]))
        >>> 2.0 <= lo <= hi <= 6.0
        True
    """
    rng = np.random.default_rng(seed)
    d = _resampled_means(a, rng) - _resampled_means(b, rng)
    lo, hi = np.quantile(d, [0.025, 0.975])
    return float(lo), float(hi)


def ratio_ci(a: FloatArray, b: FloatArray, seed: int = 0) -> tuple[float, float, float]:
    """``mean(a) / mean(b)`` and its 95% bootstrap interval.

    Examples:
        >>> r, lo, hi = ratio_ci(np.array([1.0, 1.2, 0.8]), np.array([2.0, 2.1, 1.9]))
        >>> round(r, 2), lo < r < hi
        (0.5, True)
    """
    rng = np.random.default_rng(seed)
    ratios = _resampled_means(a, rng) / _resampled_means(b, rng)
    lo, hi = np.quantile(ratios, [0.025, 0.975])
    return float(np.mean(a) / np.mean(b)), float(lo), float(hi)


def less(a: FloatArray, b: FloatArray) -> str:
    """Is ``mean(a) < mean(b)``? ``"confirmed"``, ``"contradicted"``, ``"within noise"``,
    or ``"equal"`` (every trial gives the same value to both, as deterministic costs do).

    Examples:
        >>> less(np.array([1.0, 1.1, 0.9]), np.array([3.0, 3.1, 2.9]))
        'confirmed'
        >>> less(np.array([1.0, 3.0]), np.array([2.0, 2.0]))
        'within noise'
    """
    lo, hi = difference_ci(a, b)
    if lo == hi == 0.0:
        return "equal"
    if hi < 0:
        return "confirmed"
    if lo > 0:
        return "contradicted"
    return "within noise"


def parts(confirmed: Sequence[bool]) -> Verdict:
    """The verdict of a claim made of parts: reproduced when every part is confirmed,
    not reproduced when none is, partly otherwise.

    Examples:
        >>> parts([True, True]), parts([True, False]), parts([False])
        ('reproduced', 'partly', 'not reproduced')
    """
    if all(confirmed):
        return "reproduced"
    return "partly" if any(confirmed) else "not reproduced"


def ordering(labels: Sequence[str], values: Sequence[FloatArray]) -> tuple[Verdict, str]:
    """Judge the claim ``values[0] > values[1] > ...`` (regret falls along ``labels``)
    pair by pair; return the verdict and the pairs' outcomes.

    ``reproduced``: every consecutive pair confirmed; ``not reproduced``: none is (or
    one is contradicted); ``partly``: otherwise.

    Examples:
        >>> v, text = ordering(["a", "b"], [np.array([3.0, 3.1]), np.array([1.0, 1.1])])
        >>> v, text
        ('reproduced', 'a > b confirmed')
    """
    outcomes = [less(values[j + 1], values[j]) for j in range(len(values) - 1)]
    text = "; ".join(f"{labels[j]} > {labels[j + 1]} {o}" for j, o in enumerate(outcomes))
    if all(o == "confirmed" for o in outcomes):
        return "reproduced", text
    if "contradicted" in outcomes or not any(o == "confirmed" for o in outcomes):
        return "not reproduced", text
    return "partly", text


def halves(values: Sequence[FloatArray]) -> tuple[list[FloatArray], list[FloatArray]]:
    """Two disjoint halves of the trials of every array: the even- and the odd-numbered
    trials (trial ``j`` of every array stays with trial ``j`` of the others).

    Examples:
        >>> a, b = halves([np.arange(5.0)])
        >>> a[0].tolist(), b[0].tolist()
        ([0.0, 2.0, 4.0], [1.0, 3.0])
    """
    return [np.asarray(v)[0::2] for v in values], [np.asarray(v)[1::2] for v in values]


def stability(judge: Callable[[Sequence[FloatArray]], str], values: Sequence[FloatArray]) -> str:
    """Judge a claim on the whole and again on each half of the trials (:func:`halves`):
    ``"stable: ..."`` when the three verdicts agree, ``"unstable: ..."`` otherwise (with
    the halves' verdicts), ``"not assessed: ..."`` below 4 trials (a half of one trial
    has no interval).

    Examples:
        >>> def judge(v):
        ...     return ordering(["a", "b"], v)[0]
        >>> rng = np.random.default_rng(0)
        >>> stability(judge, [3 + rng.random(8), 1 + rng.random(8)])
        'stable: reproduced on each half of the trials (4 and 4)'
        >>> stability(judge, [np.array([2.0, 1.1, 2.0, 1.0]), np.array([1.0, 2.0, 1.0, 2.1])])
        'unstable: reproduced on the even-numbered trials, not reproduced on the odd-numbered'
    """
    n = min(len(v) for v in values)
    if n < 4:
        return f"not assessed: {n} trials (a half needs at least 2)"
    whole = judge(values)
    first, second = (judge(h) for h in halves(values))
    if first == second == whole:
        return f"stable: {whole} on each half of the trials ({(n + 1) // 2} and {n // 2})"
    return f"unstable: {first} on the even-numbered trials, {second} on the odd-numbered"


def table(labels: Sequence[str], values: Sequence[FloatArray]) -> str:
    """``label: mean [lo, hi]`` for each, joined for a markdown cell.

    Examples:
        >>> table(["a"], [np.array([1.0, 1.0])])
        'a: 1.0 [1.0, 1.0]'
    """
    return "<br>".join(f"{k}: {mean_ci(v)}" for k, v in zip(labels, values, strict=True))


__all__ = [
    "VERDICTS",
    "Row",
    "Verdict",
    "at",
    "difference_ci",
    "halves",
    "less",
    "mean_ci",
    "ordering",
    "parts",
    "ratio_ci",
    "stability",
    "table",
]
