"""Robustness of the reference algorithms to what networks do to messages (issue 17).

Final per-agent regret of Gossip_UCB, our RobustGossipUCB (trim 2), Fed_UCB
(epsilon = 10), DDP-MAB and local UCB1 (no messages: the floor every communicating
policy should beat) against

(a) the message loss rate (:class:`~fedbandit_env.wrappers.MessageLoss`),
(b) the delay of every message in steps (:class:`~fedbandit_env.wrappers.MessageDelay`),
(c) the number of Byzantine agents boosting the worst arm
    (:class:`~fedbandit_env.wrappers.Byzantine`, ``"boost"``; regret of the honest agents).

Every policy runs in one information setting: the gossip family hears every neighbour
each step (``neighbours``; Fed_UCB ``neighbours+private``), DDP-MAB floods
(``flooding``), local UCB1 hears no one; N = 8 agents on the complete graph, M = 4 arms,
the conflicting instance (half the agents misled), Bernoulli rewards. The fault
wrappers sit on top of each policy's env, so all face the same network. Runs take the
PettingZoo path (the fast path does not model faults yet). Learned policies are not in
the figure: they do not send messages yet (issue 14), so a fault changes nothing for
them.

Scales: ``quick`` (T = 600, 2 trials; CI runs it) and ``default`` (T = 3000, 3 trials,
about 10 minutes on 2 cores).

    python examples/robustness.py                     # default scale, results/robustness/
    python examples/robustness.py --scale quick --out /tmp/robustness
    python examples/robustness.py --replot --out docs/figures  # redraw the committed figure
    python examples/robustness.py --replot --out docs/figures --into docs/guides/wrappers.md
        # ... and write its tables into the wrappers guide's generated block
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario import Scenario

POLICIES: dict[str, tuple[str, dict[str, Any]]] = {
    "gossip_ucb": ("neighbours", {}),
    "robust_gossip_ucb": ("neighbours", {"trim": 2}),
    "fed_ucb": ("neighbours+private", {"epsilon": 10.0}),
    "ddp_mab": ("flooding", {}),
    "local_ucb": ("local", {}),
}
"""Each policy, its setting and its options."""
PANELS: dict[str, tuple[str, str]] = {
    "loss": ("message loss rate p", "linear"),
    "delay": ("message delay (steps)", "symlog"),
    "byzantine": ("Byzantine agents (boost the worst arm)", "linear"),
}
SCALES: dict[str, dict[str, Any]] = {
    "quick": {"T": 600, "trials": 2, "loss": (0.0, 0.5, 1.0), "delay": (0, 10),
              "byzantine": (0, 2)},
    "default": {"T": 3000, "trials": 3, "loss": (0.0, 0.25, 0.5, 0.75, 0.9, 1.0),
                "delay": (0, 1, 5, 20, 100, 500), "byzantine": (0, 1, 2, 3)},
}  # fmt: skip
N_AGENTS, N_ARMS = 8, 4


def _point(policy: str, panel: str, value: float, scale: dict[str, Any]) -> dict[str, Any]:
    setting, options = POLICIES[policy]
    scenario = Scenario(
        n_agents=N_AGENTS,
        n_arms=N_ARMS,
        horizon=scale["T"],
        seed=0,
        instance="conflicting",  # the kind the figure and the wrappers guide were made on
        setting=setting,
        epsilon=options.get("epsilon") if setting.endswith("+private") else None,
        **{panel: value},
    )
    start = time.perf_counter()
    curves = evaluate(policy, scenario, options, trials=scale["trials"], record_every=scale["T"])
    final = curves.per_agent[:, -1]
    return {
        "policy": policy,
        "panel": panel,
        "value": value,
        "mean": float(final.mean()),
        "std": float(final.std(ddof=1)) if final.size > 1 else 0.0,
        "trials": final.tolist(),
        "seconds": time.perf_counter() - start,
    }


def run(scale_name: str, jobs: int = 2) -> list[dict[str, Any]]:
    """Every (policy, panel, value) point of the scale, ``jobs`` processes at a time."""
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    scale = SCALES[scale_name]
    tasks = [(p, panel, v) for panel in PANELS for v in scale[panel] for p in POLICIES]
    out = Parallel(n_jobs=jobs, return_as="generator")(
        delayed(_point)(p, panel, v, scale) for p, panel, v in tasks
    )
    return list(tqdm(out, total=len(tasks), desc="robustness", unit="point"))


def plot(points: list[dict[str, Any]], scale_name: str, path: Path) -> None:
    """One panel per fault: final per-agent regret (mean, +-1 sd over trials)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = SCALES[scale_name]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5.2 * len(PANELS), 4.2), sharey=True)
    colours = plt.get_cmap("tab10")
    for ax, (panel, (xlabel, xscale)) in zip(axes, PANELS.items(), strict=True):
        for k, policy in enumerate(POLICIES):
            rows = sorted(
                (p for p in points if p["policy"] == policy and p["panel"] == panel),
                key=lambda p: p["value"],
            )
            x = np.array([r["value"] for r in rows], dtype=float)
            y = np.array([r["mean"] for r in rows])
            sd = np.array([r["std"] for r in rows])
            label = f"{policy} ({POLICIES[policy][0]})"
            ax.errorbar(x, y, yerr=sd, marker="o", ms=4, capsize=3, color=colours(k), label=label)
        if xscale == "symlog":
            ax.set_xscale("symlog", linthresh=1)
        ax.set_yscale("log")  # 20 (working gossip) to 1400 (captured by a liar)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"per-agent regret at T = {scale['T']}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(POLICIES), fontsize=9)
    fig.suptitle(
        f"Robustness to network faults: N = {N_AGENTS}, M = {N_ARMS}, complete graph, "
        f"conflicting instance, T = {scale['T']}, {scale['trials']} trials (±1 sd)"
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def markdown(points: list[dict[str, Any]], scale_name: str) -> str:
    """The figure's numbers as Markdown tables, one per fault: final per-agent regret,
    mean ± sd over the trials, a column per fault level.

    Examples:
        >>> pts = [{"policy": p, "panel": k, "value": v, "mean": 1.0, "std": 0.5}
        ...        for p in POLICIES for k in PANELS for v in SCALES["quick"][k]]
        >>> "| `gossip_ucb` (neighbours) | 1.0 ± 0.5 | 1.0 ± 0.5 |" in markdown(pts, "quick")
        True
    """
    scale = SCALES[scale_name]
    out = [
        f"Final per-agent regret at T = {scale['T']}, mean ± sd over {scale['trials']} "
        f"trials (N = {N_AGENTS}, M = {N_ARMS}, complete graph, conflicting instance; "
        "`python examples/robustness.py`):",
    ]
    for panel, (xlabel, _) in PANELS.items():
        values = scale[panel]
        out += ["", f"**{xlabel}**", "",
                "| policy (setting) | " + " | ".join(f"{v:g}" for v in values) + " |",
                "|---|" + "---|" * len(values)]  # fmt: skip
        for policy in POLICIES:
            at = {p["value"]: p for p in points if (p["policy"], p["panel"]) == (policy, panel)}
            cells = [f"{at[v]['mean']:.1f} ± {at[v]['std']:.1f}" for v in values]
            out.append(f"| `{policy}` ({POLICIES[policy][0]}) | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the scale, print the table, write the figure and the numbers; return them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="default")
    parser.add_argument("--out", type=Path, default=Path("results/robustness"))
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--replot", action="store_true", help="redraw from the saved JSON")
    parser.add_argument(
        "--into", type=Path, default=None, metavar="PAGE",
        help="write the tables into PAGE's generated block 'robustness'",
    )  # fmt: skip
    args = parser.parse_args(argv)
    start = time.perf_counter()
    suffix = "" if args.scale == "default" else f"_{args.scale}"
    table = args.out / f"robustness{suffix}.json"
    points = json.loads(table.read_text())["points"] if args.replot else run(args.scale, args.jobs)
    for panel in PANELS:
        values = SCALES[args.scale][panel]
        print(f"\n{panel:>22} " + " ".join(f"{v:>9g}" for v in values))
        for policy in POLICIES:
            row = {
                p["value"]: p["mean"]
                for p in points
                if (p["policy"], p["panel"]) == (policy, panel)
            }
            print(f"{policy:>22} " + " ".join(f"{row[v]:>9.1f}" for v in values))
    figure = args.out / f"robustness{suffix}.png"
    plot(points, args.scale, figure)
    if args.into is not None:
        from fedbandit_env.files import replace_block, write_text_atomic

        page = replace_block(
            args.into.read_text(encoding="utf-8"), "robustness", markdown(points, args.scale)
        )
        write_text_atomic(args.into, page)
        print(f"wrote the block 'robustness' of {args.into}")
    if args.replot:
        return points
    tmp = table.with_suffix(".json.tmp")
    tmp.write_text(
        json.dumps({"scale": args.scale, **SCALES[args.scale], "points": points}, indent=1)
    )
    tmp.replace(table)
    print(f"\nwrote {figure} and {table} in {time.perf_counter() - start:.0f} s")
    return points


if __name__ == "__main__":
    main()
