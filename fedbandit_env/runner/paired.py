"""Statistics for paired results: every policy of a bench plays the same instances and
env seeds (trial ``j`` is the same instance for all), so a comparison with a reference
should be paired, and a mean alone hides how often and by how much one wins.

For each policy against the reference (final per-agent regret, lower is better), over
the trials both ran:

- the **paired difference** ``x_j - y_j``: its mean with a percentile bootstrap 95%
  interval (trials resampled in pairs), and the share of trials the policy is lower on;
- the **IQM** of each (the mean of the middle half of the trials: rliable's interquartile
  mean, robust to a few outlying instances, less noisy than the median), each with its
  bootstrap interval, and their difference's interval;
- the **probability of improvement** ``P(X < Y) + P(X = Y) / 2`` over all pairs of a
  policy's and the reference's trials (rliable's definition, the Mann-Whitney statistic,
  for lower-is-better scores), with a bootstrap interval;
- over several tasks (settings, horizons), :func:`aggregate`: the mean probability of
  improvement and the mean IQM ratio to the reference, with stratified intervals.

Agarwal et al. 2021, "Deep reinforcement learning at the edge of the statistical
precipice" (NeurIPS) define IQM and the probability of improvement; the bootstrap here is
their percentile bootstrap over runs with their library's resample count (50,000;
stratified over tasks in :func:`aggregate`). Under :data:`MIN_TRIALS` trials the table
warns.

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

RESAMPLES = 50_000
"""Bootstrap resamples of every interval: rliable's default (``get_interval_estimates``,
``reps=50000``). Each resample is a vector of counts (how often each trial is drawn),
so the mean, the IQM and the probability of improvement of a resample are weighted
sums over the trials sorted once: no resample is sorted, and 50,000 of 1,000 trials
take seconds. Seeded: a table prints the same each time."""
MIN_TRIALS = 20
"""Under this many paired trials ``fedbandit table --against`` warns: a percentile
bootstrap under-covers at small n (rliable's stratified bootstrap needs several runs a
task; with one trial every interval is a point)."""
_CHUNK = 500


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
    a = np.sort(np.asarray(y, dtype=np.float64).ravel())
    b = np.asarray(x, dtype=np.float64).ravel()
    above = a.size - np.searchsorted(a, b, side="right")
    equal = np.searchsorted(a, b, side="right") - np.searchsorted(a, b, side="left")
    return float((above + 0.5 * equal).sum() / (a.size * b.size))


def _counts(rng: np.random.Generator, n: int, reps: int) -> np.ndarray:
    """``(reps, n)`` counts: how often each of ``n`` trials is drawn in each resample of
    ``n`` draws with replacement."""
    draws = rng.integers(0, n, size=(reps, n)) + n * np.arange(reps)[:, None]
    return np.bincount(draws.ravel(), minlength=reps * n).reshape(reps, n)


def _weighted_iqm(ordered: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The IQM of each resample: ``counts`` (``(reps, n)``, in the order of the sorted
    values ``ordered``) expands each value into its copies; the copies in positions
    ``[cut, n - cut)`` are averaged, as :func:`iqm` of the resample would."""
    n = ordered.size
    cut = int(0.25 * n)
    after = np.cumsum(counts, axis=1)
    before = after - counts
    kept = np.clip(np.minimum(after, n - cut) - np.maximum(before, cut), 0, None)
    return np.asarray(kept @ ordered / (n - 2 * cut), dtype=np.float64)


def _places(x: np.ndarray, y_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each ``x_a`` falls among the sorted ``y``: the first index not below it and
    the first above it (the equal ``y`` lie between); found once for every resample."""
    return np.searchsorted(y_sorted, x, side="left"), np.searchsorted(y_sorted, x, side="right")


def _weighted_improvement(
    cx: np.ndarray, places: tuple[np.ndarray, np.ndarray], cy: np.ndarray
) -> np.ndarray:
    """:func:`probability_of_improvement` of each resample (counts ``cx`` over ``x``,
    ``cy`` over the sorted ``y``, ``places`` from :func:`_places`): for each ``x_a`` the
    drawn ``y`` above it count 1, the equal ones 1/2 (weighted by cumulative counts)."""
    lo, hi = places
    cum = np.concatenate([np.zeros((cy.shape[0], 1), dtype=np.int64), np.cumsum(cy, axis=1)], 1)
    # above + equal / 2 = m - (cum[hi] + cum[lo]) / 2, and the x counts sum to n
    below_twice = np.einsum("ra,ra->r", cx, cum[:, hi] + cum[:, lo])
    return np.asarray(1.0 - 0.5 * below_twice / (cx.shape[1] * cy.shape[1]), dtype=np.float64)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [0.025, 0.975])
    return float(lo), float(hi)


def paired(
    x: FloatArray, y: FloatArray, seed: int = 0, resamples: int = RESAMPLES
) -> dict[str, Any]:
    """The paired statistics of ``x`` against ``y`` (trial ``j`` of each on the same
    instance; see the module docstring), each interval a percentile bootstrap of
    ``resamples`` resamples: the mean difference's and the IQMs' resample trials in
    pairs; the probability of improvement resamples each side on its own, as rliable
    does. ``"resampled"`` keeps the probability's and the IQMs' resamples, for
    :func:`aggregate` over settings or horizons (a stratified bootstrap).

    Examples:
        >>> s = paired(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0]))
        >>> s["n"], s["mean_diff"], round(s["lower_share"], 3)
        (3, -1.0, 0.667)
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"paired data need the same trials, got {x.size} and {y.size}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    n = x.size
    d = x - y
    ox, oy = np.argsort(x, kind="stable"), np.argsort(y, kind="stable")
    xs, ys = x[ox], y[oy]
    places = _places(x, ys)
    rng = np.random.default_rng(seed)
    means, iqm_x, iqm_y, improve = [], [], [], []
    for done in range(0, resamples, _CHUNK):
        reps = min(_CHUNK, resamples - done)
        c = _counts(rng, n, reps)  # paired: the same trials for both
        means.append(c @ d / n)
        iqm_x.append(_weighted_iqm(xs, c[:, ox]))
        iqm_y.append(_weighted_iqm(ys, c[:, oy]))
        cy = _counts(rng, n, reps)  # unpaired, as rliable's probability of improvement
        improve.append(_weighted_improvement(c, places, cy[:, oy]))
    ix, iy, pi = np.concatenate(iqm_x), np.concatenate(iqm_y), np.concatenate(improve)
    return {
        "n": int(n),
        "mean_diff": float(d.mean()),
        "mean_diff_ci95": _interval(np.concatenate(means)),
        "lower_share": float(np.mean(d < 0)),
        "iqm": iqm(x),
        "iqm_ci95": _interval(ix),
        "iqm_against": iqm(y),
        "iqm_against_ci95": _interval(iy),
        "iqm_diff_ci95": _interval(ix - iy),
        "prob_improvement": probability_of_improvement(x, y),
        "prob_improvement_ci95": _interval(pi),
        "resampled": {"prob_improvement": pi, "iqm": ix, "iqm_against": iy},
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


def aggregate(tasks: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each policy over several tasks (settings, horizons: the groups of one table), from
    the rows :func:`paired_rows` gave for each against the same reference: rliable's
    aggregate probability of improvement (the mean over tasks of each task's) and the
    mean over tasks of the IQM ratio ``IQM(policy) / IQM(reference)`` (each task
    normalised by its reference, so tasks of different regret scales weigh alike; below
    1 is better), each with a stratified bootstrap 95% interval (every task's trials
    resampled within the task: the resamples :func:`paired` kept, averaged over tasks
    resample by resample); and how many tasks the paired interval says it wins (below
    0), ties, loses. A policy is aggregated over the tasks it ran in.

    Examples:
        >>> a = paired(np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 3.0, 4.0, 5.0]))
        >>> b = paired(np.array([5.0, 6.0, 7.0, 9.0]), np.array([5.0, 6.0, 7.0, 8.0]))
        >>> (row,) = aggregate([[{"policy": "p", **a}], [{"policy": "p", **b}]])
        >>> row["tasks"], row["wins"], row["ties"], row["losses"]
        (2, 1, 1, 0)
    """
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for rows in tasks:
        for r in rows:
            by_policy.setdefault(r["policy"], []).append(r)
    out = []
    for policy, rows in by_policy.items():
        pi = np.mean([r["resampled"]["prob_improvement"] for r in rows], axis=0)
        ratio = np.mean(
            [r["resampled"]["iqm"] / np.maximum(r["resampled"]["iqm_against"], 1e-12)
             for r in rows], axis=0,
        )  # fmt: skip
        point = np.mean([r["iqm"] / max(r["iqm_against"], 1e-12) for r in rows])
        out.append({
            "policy": policy,
            "tasks": len(rows),
            "prob_improvement": float(np.mean([r["prob_improvement"] for r in rows])),
            "prob_improvement_ci95": _interval(pi),
            "iqm_ratio": float(point),
            "iqm_ratio_ci95": _interval(ratio),
            "wins": sum(r["mean_diff_ci95"][1] < 0 for r in rows),
            "ties": sum(r["mean_diff_ci95"][0] <= 0 <= r["mean_diff_ci95"][1] for r in rows),
            "losses": sum(r["mean_diff_ci95"][0] > 0 for r in rows),
        })  # fmt: skip
    out.sort(key=lambda r: -r["prob_improvement"])
    return out


def format_aggregate(rows: Sequence[dict[str, Any]], markdown: bool = False) -> str:
    """The rows of :func:`aggregate` as a table.

    Examples:
        >>> row = {"policy": "p", "tasks": 2, "prob_improvement": 0.6,
        ...        "prob_improvement_ci95": (0.5, 0.7), "iqm_ratio": 0.9,
        ...        "iqm_ratio_ci95": (0.8, 1.0), "wins": 1, "ties": 1, "losses": 0}
        >>> print(format_aggregate([row], markdown=True).splitlines()[2])
        | p | 2 | 0.60 [0.50, 0.70] | 0.90 [0.80, 1.00] | 1 / 1 / 0 |
    """
    head = ["policy", "tasks", "P(improvement) [CI]", "IQM / ref IQM [CI]",
            "wins / ties / losses"]  # fmt: skip
    cells = [
        [
            r["policy"],
            str(r["tasks"]),
            "{:.2f} [{:.2f}, {:.2f}]".format(r["prob_improvement"], *r["prob_improvement_ci95"]),
            "{:.2f} [{:.2f}, {:.2f}]".format(r["iqm_ratio"], *r["iqm_ratio_ci95"]),
            f"{r['wins']} / {r['ties']} / {r['losses']}",
        ]
        for r in rows
    ]
    return _layout(head, cells, markdown)


def _layout(head: list[str], cells: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in cells])
    widths = [max(len(x) for x in col) for col in zip(head, *cells, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), "-" * (sum(widths) + 2 * len(widths) - 2)]
    return "\n".join(line.rstrip() for line in lines + [fmt.format(*c) for c in cells])


def format_paired(rows: Sequence[dict[str, Any]], markdown: bool = False) -> str:
    """The rows of :func:`paired_rows` as a table (fixed width, or Markdown).

    Examples:
        >>> row = {"policy": "a", "against": "b", "n": 3, "mean_diff": -1.0,
        ...        "mean_diff_ci95": (-2.0, 0.5), "lower_share": 0.5, "iqm": 1.0,
        ...        "iqm_ci95": (0.5, 1.5), "iqm_against": 2.0, "iqm_against_ci95": (1.0, 3.0),
        ...        "iqm_diff_ci95": (-1.5, -0.5),
        ...        "prob_improvement": 0.6, "prob_improvement_ci95": (0.4, 0.8)}
        >>> print(format_paired([row], markdown=True).splitlines()[2][:57])
        | a | 3 | -1.00 [-2.00, 0.50] | 50% | 1.00 [0.50, 1.50] |
    """
    head = ["policy", "trials", "paired diff [95% CI]", "lower on", "IQM [CI]",
            "ref IQM [CI]", "IQM diff CI", "P(improvement) [CI]"]  # fmt: skip
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
                "{:.2f} [{:.2f}, {:.2f}]".format(r["iqm"], *r["iqm_ci95"]),
                "{:.2f} [{:.2f}, {:.2f}]".format(r["iqm_against"], *r["iqm_against_ci95"]),
                f"{i_lo:.2f}, {i_hi:.2f}",
                f"{r['prob_improvement']:.2f} [{p_lo:.2f}, {p_hi:.2f}]",
            ]
        )
    return _layout(head, cells, markdown)


__all__ = [
    "MIN_TRIALS",
    "RESAMPLES",
    "aggregate",
    "format_aggregate",
    "format_paired",
    "iqm",
    "paired",
    "paired_rows",
    "probability_of_improvement",
]
