"""Regret plots as the papers draw them: mean over trials with a min-max band, a colour
and line style per policy that no other line of the figure shares, a log regret axis
where the policies' regrets span orders of magnitude, and one legend outside the panels,
best policy first."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.extras import require
from fedbandit_env.files import atomic_path
from fedbandit_env.runner.rollout import RegretCurves


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "plots", "plotting")  # MissingExtra without it
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", "plots", "plotting")


def _save(plt: Any, fig: Any, path: Path, title: str) -> Path:
    """Title, lay out, write the PNG and free the figure."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:  # a half-drawn PNG never replaces a good one
        fig.savefig(tmp, dpi=120, bbox_inches="tight")  # the legend outside included
    plt.close(fig)
    return path


PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#f3c300", "#a1caf1", "#882d17",
    "#8db600", "#1b1f5e", "#f99379", "#c2b280", "#2b3d26", "#00798c", "#c9a0dc",
    "#654522", "#ffd8b1", "#604e97",
)  # fmt: skip
"""The colours policies are drawn in: tab10, then hues of Kelly's maximum-contrast set
that tab10 lacks."""


def policy_colour(policy: str) -> str:
    """The one colour ``policy`` has in every figure: registered ids in registration
    order, any other name (a saved model, a user's label) by a stable hash of its name.

    Examples:
        >>> policy_colour("gossip_ucb") == policy_colour("gossip_ucb")
        True
    """
    from fedbandit_env import registry

    ids = registry.policy_ids()
    base = policy.split(":")[0]
    if base in ids and ":" not in policy:
        return PALETTE[ids.index(base) % len(PALETTE)]
    digest = sum((k + 1) * ord(ch) for k, ch in enumerate(policy))
    return PALETTE[digest % len(PALETTE)]


def figure_colours(policies: Sequence[str]) -> dict[str, str]:
    """One colour per policy of a figure, no two alike while the palette lasts: each
    keeps :func:`policy_colour` unless an earlier policy of the figure holds it, then
    takes the first colour nobody in the figure has (more registered ids than colours
    must not draw two of a figure's lines alike).

    Examples:
        >>> c = figure_colours(["dducb", "coop_ts_relay", "oracle_ucb", "random"])
        >>> len(set(c.values()))
        4
    """
    colours: dict[str, str] = {}
    for policy in dict.fromkeys(policies):
        want = policy_colour(policy)
        taken = set(colours.values())
        if want in taken:
            want = next((c for c in PALETTE if c not in taken), want)
        colours[policy] = want
    return colours


LINESTYLES = ("-", "--", ":", "-.")
"""A figure's line styles: its first ten policies solid, the next ten dashed, ..."""
LOG_SPAN = 20.0
"""``plot_regret`` draws regret on a log axis when the policies' final regrets span more
than this factor (random's thousands would flatten the best policies into the bottom
percent of a linear axis)."""


def figure_styles(policies: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A colour and a line style per policy of a line figure, no two alike and no two
    near: the figure's policies in registration order (other names after, by name) take
    tab10's ten colours, then the same ten dashed, dotted, dash-dotted. The same set of
    policies is drawn alike in every figure.

    Examples:
        >>> s = figure_styles(["random", "coop_ts", "gossip_ucb"])
        >>> len({v for v in s.values()}), s["gossip_ucb"][1]
        (3, '-')
        >>> many = figure_styles([f"m{i}" for i in range(12)])
        >>> sorted({style for _, style in many.values()})
        ['-', '--']
    """
    from fedbandit_env import registry

    ids = registry.policy_ids()
    rank = {p: i for i, p in enumerate(ids)}
    unique = list(dict.fromkeys(policies))
    ordered = sorted(unique, key=lambda p: (p not in rank, rank.get(p, 0), p))
    tab10 = PALETTE[:10]
    return {
        p: (tab10[k % 10], LINESTYLES[(k // 10) % len(LINESTYLES)]) for k, p in enumerate(ordered)
    }


def plot_regret(
    curves: Sequence[RegretCurves],
    path: str | Path,
    title: str = "",
    log_x: bool = False,
    log_y: bool | None = None,
) -> Path:
    """Save a two-panel PNG: per-agent regret (mean over agents) and the network's
    communication cost against the step, with one legend for both outside the panels.

    Each policy is a line (mean over trials) with a shaded band from the smallest to the
    largest trial (the convention of Zhu et al.'s Fig. 2), in a colour and line style no
    other line of the figure has (:func:`figure_styles`). The legend lists the policies
    best first (lowest final regret), each with its final mean regret, so the order of
    the figure is the order of the table. ``log_y=None`` (the default) draws regret on a
    log axis when the final regrets span more than :data:`LOG_SPAN` times, else linear.
    A band narrower than the line is said so in the legend (``spread < line``); a curve
    identical to an earlier one is labelled ``= other`` (CDP-, DDP- and HDP-MAB coincide
    on some instances).

    Examples:
        >>> import tempfile, os, numpy as np
        >>> c = RegretCurves("p", np.array([1, 2]), np.ones((2, 3, 2)))
        >>> plot_regret([c], os.path.join(tempfile.mkdtemp(), "r.png")).suffix
        '.png'
    """
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    finals = {c.policy: float(c.per_agent[:, -1].mean()) if c.per_agent.size else 0.0
              for c in curves}  # fmt: skip
    positive = [v for v in finals.values() if v > 0]
    if log_y is None:
        log_y = bool(positive) and max(positive) > LOG_SPAN * min(positive)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    drawn: list[tuple[str, np.ndarray]] = []
    styles = figure_styles([c.policy for c in curves])
    top = max((float(c.per_agent.max()) for c in curves if c.per_agent.size), default=1.0)
    handles = []
    for c in curves:
        mean = c.per_agent.mean(axis=0)
        low, high = c.per_agent.min(axis=0), c.per_agent.max(axis=0)
        same = next((name for name, m in drawn if np.array_equal(m, mean)), None)
        drawn.append((c.policy, mean))
        label = f"{c.policy}  {finals[c.policy]:.3g}"
        if same is not None:
            label += f" (= {same})"
        if c.per_agent.shape[0] > 1 and float((high - low).max()) < 0.005 * max(top, 1e-12):
            label += " (spread < line)"
        colour, style = styles[c.policy]
        (line,) = axes[0].plot(c.t, mean, style, color=colour, label=label, lw=1.8)
        axes[0].fill_between(c.t, low, high, color=colour, alpha=0.18, lw=0)
        axes[1].plot(c.t, c.comm_cost.mean(axis=0), style, color=colour, lw=1.8)
        handles.append((finals[c.policy], line, label))
    for ax, ylabel in zip(
        axes, ("per-agent regret (mean over agents)", "communication cost (network)"), strict=True
    ):
        ax.set_xlabel("step t")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if log_x:
            ax.set_xscale("log")
    if log_y:
        low_end = min(positive) / 10 if positive else 1.0
        axes[0].set_yscale("symlog", linthresh=max(low_end, 1e-3))  # 0 at t = 0 stays drawn
        axes[0].set_ylabel("per-agent regret (mean over agents, log)")
    costs = [float(c.comm_cost.max()) for c in curves if c.comm_cost.size]
    if any(costs) and max(costs) > 100 * min((x for x in costs if x > 0), default=1.0):
        axes[1].set_yscale("symlog", linthresh=1.0)
    handles.sort(key=lambda h: h[0])
    fig.legend(
        [h[1] for h in handles], [h[2] for h in handles], loc="center left",
        bbox_to_anchor=(1.0, 0.5), fontsize="small", frameon=False,
        title="final regret, best first",
    )  # fmt: skip
    return _save(plt, fig, path, title)


def plot_summary(curves: Sequence[RegretCurves], path: str | Path, title: str = "") -> Path:
    """Save a two-panel PNG comparing scenarios: final per-agent regret (bars: mean over
    seeds, whiskers: smallest to largest seed) and final communication cost, one bar
    per policy in each scenario group.

    Examples:
        >>> import tempfile, os
        >>> cs = [RegretCurves(p, np.array([1]), np.ones((2, 2, 1)), scenario=s)
        ...       for s in ("a", "b") for p in ("x", "y")]
        >>> plot_summary(cs, os.path.join(tempfile.mkdtemp(), "s.png")).suffix
        '.png'
    """
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    scenarios = list(dict.fromkeys(c.scenario for c in curves))
    policies = list(dict.fromkeys(c.policy for c in curves))
    by_key = {(c.scenario, c.policy): c for c in curves}
    width = 0.8 / len(policies)
    colours = figure_colours(policies)
    x = np.arange(len(scenarios))
    fig, axes = plt.subplots(
        1, 2, figsize=(max(9.0, 1.2 * len(scenarios) * (1 + 0.3 * len(policies))), 4.6)
    )
    for k, policy in enumerate(policies):
        found = [(i, by_key[(s, policy)]) for i, s in enumerate(scenarios) if (s, policy) in by_key]
        if not found:
            continue
        pos = np.array([x[i] for i, _ in found]) + (k - (len(policies) - 1) / 2) * width
        final = [c.final_per_agent for _, c in found]
        mean = np.array([f.mean() for f in final])
        err = np.array(
            [
                [m - f.min() for m, f in zip(mean, final, strict=True)],
                [f.max() - m for m, f in zip(mean, final, strict=True)],
            ]
        )
        colour = colours[policy]
        axes[0].bar(pos, mean, width, yerr=err, capsize=2, label=policy, color=colour)
        axes[1].bar(
            pos, [c.comm_cost[:, -1].mean() for _, c in found], width, label=policy, color=colour
        )
    for ax, ylabel in zip(
        axes, ("final per-agent regret", "communication cost (whole network)"), strict=True
    ):
        ax.set_xticks(x, scenarios, rotation=30 if len(scenarios) > 3 else 0, ha="right")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis="y")
    costs = np.array([c.comm_cost[:, -1].mean() for c in curves])
    positive = costs[costs > 0]
    if positive.size and positive.max() > 100 * positive.min():
        axes[1].set_yscale("log")  # e.g. gossip every step next to a few server rounds
    axes[0].legend(fontsize="small")
    return _save(plt, fig, path, title)


def describe(curves: Sequence[RegretCurves], label: str) -> str:
    """A figure title from what a results table knows: the scenario label, N agents,
    horizon T, trials and setting.

    Examples:
        >>> describe([RegretCurves("p", np.array([5]), np.ones((3, 4, 1)), setting="local")], "")
        'N=4 agents, T=5, 3 trials, setting local'
    """
    mine = [c for c in curves if c.scenario == label] or list(curves)
    c = mine[0]
    parts = [f"N={c.regret.shape[1]} agents", f"T={int(c.t[-1])}", f"{c.regret.shape[0]} trials"]
    if c.setting:
        parts.append(f"setting {c.setting}")
    text = ", ".join(parts)
    return f"{label}: {text}" if label else text


def slug(label: str) -> str:
    """A file name for a scenario label.

    Examples:
        >>> slug("graph=ring,epsilon=0.5")
        'graph=ring,epsilon=0.5'
        >>> slug("components=20x5/1x100")
        'components=20x5_1x100'
    """
    return re.sub(r"[^A-Za-z0-9_.,=+-]+", "_", label) or "base"


def find_table(results: str | Path) -> Path:
    """The results table of a folder (sweep: ``results.parquet`` or ``results.csv``;
    bench: ``regret.csv``), or ``results`` itself if it is a file.

    Examples:
        >>> find_table("nowhere")
        Traceback (most recent call last):
        ...
        ValueError: no results at 'nowhere' (a bench or sweep folder, or a .csv/.parquet table)
    """
    path = Path(results)
    if path.is_file():
        return path
    for name in ("results.parquet", "results.csv", "regret.csv"):
        if (path / name).is_file():
            if name.endswith(".parquet"):
                try:
                    import pyarrow  # noqa: F401
                except ImportError:
                    continue
            return path / name
    raise ValueError(
        f"no results at {str(path)!r} (a bench or sweep folder, or a .csv/.parquet table)"
    )


def plot_results(
    results: str | Path,
    out: str | Path | None = None,
    log_x: bool = False,
    log_y: bool | None = None,
) -> list[Path]:
    """Redraw the figures of saved results (``fedbandit plot``).

    One scenario: ``regret.png``. Several (a sweep): ``plots/<scenario>.png`` each, and
    ``summary.png`` comparing them.

    Examples:
        >>> import tempfile, os
        >>> from fedbandit_env.runner.results import write_csv
        >>> d = tempfile.mkdtemp()
        >>> _ = write_csv([RegretCurves("p", np.array([1]), np.ones((1, 2, 1)))],
        ...               os.path.join(d, "regret.csv"))
        >>> [p.name for p in plot_results(d)]
        ['regret.png']
    """
    from fedbandit_env.runner.results import read_csv

    table = find_table(results)
    folder = Path(out) if out is not None else table.parent
    curves = read_csv(table)
    scenarios = list(dict.fromkeys(c.scenario for c in curves))
    if len(scenarios) == 1:
        title = describe(curves, scenarios[0])
        return [plot_regret(curves, folder / "regret.png", title, log_x, log_y)]
    written = [
        plot_regret(
            [c for c in curves if c.scenario == label],
            folder / "plots" / f"{slug(label)}.png",
            describe(curves, label),
            log_x,
            log_y,
        )
        for label in scenarios
    ]
    written.append(plot_summary(curves, folder / "summary.png"))
    return written
