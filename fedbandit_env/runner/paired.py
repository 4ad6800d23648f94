"""Statistics for paired results: every policy of a bench plays the same instances and
env seeds (trial ``j`` is the same instance for all), so a comparison with a reference
should be paired, and a mean alone hides how often and by how much one wins.

For each policy against the reference (final per-agent regret, lower is better), over
the trials both ran:

- the **paired difference** ``x_j - y_j``: its mean with a percentile bootstrap 95%
  interval (trials resampled in pairs), and the share of trials the policy is lower on;
- the **IQM** of each (the mean of the middle half of the trials: rliable's interquartile
  mean, robust to a few outlying instances, less noisy than the median), and their
  difference with a bootstrap interval;
- the **probability of improvement** ``P(X < Y) + P(X = Y) / 2`` over all pairs of a
  policy's and the reference's trials (rliable's definition, the Mann-Whitney statistic,
  for lower-is-better scores), with a bootstrap interval.

Agarwal et al. 2021, "Deep reinforcement learning at the edge of the statistical
precipice" (NeurIPS) define IQM and the probability of improvement; the bootstrap here is
their percentile bootstrap over runs (one task).

Examples:
    >>> from fedbandit_env.runner.rollout import RegretCurves
    >>> a = RegretCurves("a", np.array([1]), np.arange(8.0).reshape(8, 1, 1))
    >>> b = RegretCurves("b", np.array([1]), np.arange(8.0).reshape(8, 1, 1) + 1.0)
    >>> row = paired_rows([a, b], "b")[0]
    >>> row["policy"], row["mean_diff"], row["lower_share"], row["prob_improvement"]
    ('a', -1.0, 1.0, 0.6171875)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.type_aliases import FloatArray

RESAMPLES = 4000
"""Bootstrap resamples of the paired difference's interval (seeded: a table prints the
same each time)."""
SLOW_RESAMPLES = 500
"""Bootstrap resamples of the IQM difference's and the probability's intervals (each
resample sorts, or compares all pairs)."""


def iqm(values: FloatArray) -> float:
    """The interquartile mean: the mean of the middle 50% of ``values`` (rliable's, with
    the quarter trimmed at each end rounded down, as ``scipy.stats.trim_mean(x, 0.25)``).

    Examples:
        >>> iqm(np.array([0.0, 1.0, 2.0, 3.0, 100.0, -100.0, 1.5, 2.5]))
        1.75
    """
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    cut = int(0.25 * x.size)
    return float(x[cut : x.size - cut].mean())


def probability_of_improvement(x: FloatArray, y: FloatArray) -> float:
    """``P(X < Y) + P(X = Y) / 2`` over all pairs (lower is better).

    Examples:
        >>> probability_of_improvement(np.array([1.0, 2.0]), np.array([2.0, 3.0]))
        0.875
    """
    a = np.asarray(x, dtype=np.float64).ravel()[:, None]
    b = np.asarray(y, dtype=np.float64).ravel()[None, :]
    return float(np.mean((a < b) + 0.5 * (a == b)))


def _interval(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [0.025, 0.975])
    return float(lo), float(hi)


def paired(x: FloatArray, y: FloatArray, seed: int = 0) -> dict[str, Any]:
    """The paired statistics of ``x`` against ``y`` (trial ``j`` of each on the same
    instance; see the module docstring).

    Examples:
        >>> s = paired(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0]))
        >>> s["n"], s["mean_diff"], round(s["lower_share"], 3)
        (3, -1.0, 0.667)
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"paired data need the same trials, got {x.size} and {y.size}")
    d = x - y
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(RESAMPLES, x.size))
    jdx = rng.integers(0, x.size, size=(RESAMPLES, x.size))
    few = zip(idx[:SLOW_RESAMPLES], jdx[:SLOW_RESAMPLES], strict=True)
    iqm_diffs, improve = [], []
    for i, j in few:
        iqm_diffs.append(iqm(x[i]) - iqm(y[i]))
        improve.append(probability_of_improvement(x[i], y[j]))
    return {
        "n": int(x.size),
        "mean_diff": float(d.mean()),
        "mean_diff_ci95": _interval(d[idx].mean(axis=1)),
        "lower_share": float(np.mean(d < 0)),
        "iqm": iqm(x),
        "iqm_against": iqm(y),
        "iqm_diff_ci95": _interval(np.asarray(iqm_diffs)),
        "prob_improvement": probability_of_improvement(x, y),
        "prob_improvement_ci95": _interval(np.asarray(improve)),
    }


def paired_rows(curves: Sequence[RegretCurves], against: str) -> list[dict[str, Any]]:
    """:func:`paired` for every policy of ``curves`` against the one named ``against``
    (all of one scenario), on the trials both ran (matched by trial index).

    Raises:
        ValueError: If ``against`` is not among the curves, or a policy shares no trial
            with it.
    """
    reference = [c for c in curves if c.policy == against]
    if not reference:
        raise ValueError(
            f"--against {against}: no such policy in these results "
            f"(they hold {sorted({c.policy for c in curves})})"
        )
    ref = reference[0]
    ref_final = dict(zip(ref.seeds.tolist(), ref.final_per_agent.tolist(), strict=True))
    rows = []
    for c in curves:
        if c is ref:
            continue
        mine = dict(zip(c.seeds.tolist(), c.final_per_agent.tolist(), strict=True))
        shared = sorted(set(mine) & set(ref_final))
        if not shared:
            raise ValueError(f"{c.policy} and {against} share no trial (other seeds)")
        x = np.array([mine[s] for s in shared])
        stats = paired(x, np.array([ref_final[s] for s in shared]))
        rows.append({"policy": c.policy, "against": against, **stats})
    rows.sort(key=lambda r: r["mean_diff"])
    return rows


def format_paired(rows: Sequence[dict[str, Any]], markdown: bool = False) -> str:
    """The rows of :func:`paired_rows` as a table (fixed width, or Markdown).

    Examples:
        >>> row = {"policy": "a", "against": "b", "n": 3, "mean_diff": -1.0,
        ...        "mean_diff_ci95": (-2.0, 0.5), "lower_share": 0.5, "iqm": 1.0,
        ...        "iqm_against": 2.0, "iqm_diff_ci95": (-1.5, -0.5),
        ...        "prob_improvement": 0.6, "prob_improvement_ci95": (0.4, 0.8)}
        >>> print(format_paired([row], markdown=True).splitlines()[2])
        | a | 3 | -1.00 [-2.00, 0.50] | 50% | 1.00 vs 2.00 [-1.50, -0.50] | 0.60 [0.40, 0.80] |
    """
    head = ["policy", "trials", "paired diff [95% CI]", "lower on", "IQM vs ref [diff CI]",
            "P(improvement) [CI]"]  # fmt: skip
    cells = []
    for r in rows:
        d_lo, d_hi = r["mean_diff_ci95"]
        i_lo, i_hi = r["iqm_diff_ci95"]
        p_lo, p_hi = r["prob_improvement_ci95"]
        cells.append(
            [
                r["policy"],
                str(r["n"]),
                f"{r['mean_diff']:.2f} [{d_lo:.2f}, {d_hi:.2f}]",
                f"{100 * r['lower_share']:.0f}%",
                f"{r['iqm']:.2f} vs {r['iqm_against']:.2f} [{i_lo:.2f}, {i_hi:.2f}]",
                f"{r['prob_improvement']:.2f} [{p_lo:.2f}, {p_hi:.2f}]",
            ]
        )
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in cells])
    widths = [max(len(x) for x in col) for col in zip(head, *cells, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), "-" * (sum(widths) + 2 * len(widths) - 2)]
    return "\n".join(line.rstrip() for line in lines + [fmt.format(*c) for c in cells])


__all__ = ["format_paired", "iqm", "paired", "paired_rows", "probability_of_improvement"]
