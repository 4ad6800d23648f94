"""Dubey & Pentland (NeurIPS 2020), Fig. 1: centralized FedUCB on three axes, with the
corrected private variant on the same axes.

The three panels (privacy budget, communication, dimension) and their deviations from
the paper are :mod:`baselines.papers.dubey`'s; this script runs them at a scale
and writes ``dubey_fig1.json`` and ``dubey_fig1.png``.

Scales: ``quick`` (seconds; CI runs it), ``default`` (about 5 minutes on 2 cores),
``long`` (T = 5e4, about 20 minutes), ``tenth`` (T = 1e6, 10 trials, (C) with the
paper's ``K = d^2``: about 17 CPU-hours; give it ``--store`` so that it resumes) and
``paper`` (T = 1e7, 100 trials: the paper's, weeks on 2 cores; not run here). Deviations
from the paper's set-up, on purpose: T is 5e3 (A, B) and 2e3 (C) at the default scale,
not 1e6-1e7, with 3 trials, not 100; in (C) the decision sets have ``K = min(d^2, 100)``
vectors (``K = d^2 = 16384`` at d = 128 costs 0.5 s an agent-step), M = 10 agents; the
decision sets come from a pool (``fedbandit_env.problems.linear``). "Corrected" is
``private_fedlin_ucb``: in (A) and (C) with its default schedule (a round every
``ceil(sqrt(T))`` steps), in (B) with the number of rounds the published run made.

    python examples/dubey_fig1.py                    # default scale
    python examples/dubey_fig1.py --scale quick --out /tmp/fig1
    python examples/dubey_fig1.py --scale tenth --store runs/dubey_tenth --jobs 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from baselines.papers.dubey import SCALES, Runner, draw, panel_a, panel_b, panel_c


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the three panels, write ``dubey_fig1.json`` and ``dubey_fig1.png``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/dubey_fig1"))
    parser.add_argument(
        "--store", type=Path, default=None, help="keep finished trials in STORE/runs; resumes"
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs}")
    s = SCALES[args.scale]
    start = time.perf_counter()
    run = Runner(args.store, args.jobs)
    results: dict[str, Any] = {}
    for name, panel in (("A", panel_a), ("B", panel_b), ("C", panel_c)):
        print(f"panel {name} ...", flush=True)
        results[name] = panel(s, args.seed, run)
    results["seconds"] = time.perf_counter() - start
    results["cpu_seconds"] = run.seconds
    results["scale"] = {"name": args.scale, **{k: v for k, v in s.items()}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dubey_fig1.json").write_text(json.dumps(results, indent=1, default=str))
    draw(results, args.out / "dubey_fig1.png", args.scale)
    a = results["A"]
    print("(A) final per-agent regret, as published / corrected, by epsilon", a["eps"])
    for m in a["published"]:
        pub = " ".join(f"{v:7.1f}" for v in a["published"][m])
        cor = " ".join(f"{v:7.1f}" for v in a["corrected"][m])
        print(f"  M={m:<4} {pub}   |   {cor}   rounds {a['rounds'][m]}")
    for name, row in results["B"].items():
        if name == "guessing":
            continue
        print(
            f"(B) n = {name:<11} private {row['private'][-1]:7.1f}  non-private "
            f"{row['non_private'][-1]:7.1f}  corrected {row['corrected'][-1]:7.1f}  "
            f"rounds {row['rounds']}"
        )
    for d, row in results["C"].items():
        if d == "guessing":
            continue
        print(
            f"(C) d = {d:<4} private {row['private'][-1]:7.1f}  "
            f"corrected {row['corrected'][-1]:7.1f}"
        )
    print(
        f"wrote {args.out / 'dubey_fig1.png'} in {results['seconds']:.0f} s "
        f"(the trials' own time: {run.seconds / 3600:.2f} CPU-hours)"
    )
    return results


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
