"""Dubey & Pentland (NeurIPS 2020), Fig. 1: centralized FedUCB on three axes, with the
corrected private variant on the same axes.

The three panels (privacy budget, communication, dimension) and their deviations from
the paper are :mod:`baselines.papers.dubey`'s; this script runs them at a scale
and writes ``dubey_fig1.json`` and ``dubey_fig1.png``.

Scales: ``quick`` (seconds; CI runs it), ``default`` (about 5 minutes on 2 cores),
``long`` (T = 5e4, about 20 minutes) and ``paper`` (T = 1e7, 100 trials: the paper's,
days on 2 cores; not run here). Deviations
from the paper's set-up, on purpose: T is 5e3 (A, B) and 2e3 (C) at the default scale,
not 1e6-1e7, with 3 trials, not 100; in (C) the decision sets have ``K = min(d^2, 100)``
vectors (``K = d^2 = 16384`` at d = 128 costs 0.5 s an agent-step), M = 10 agents; the
decision sets come from a pool (``fedbandit_env.problems.linear``). "Corrected" is
``private_fedlin_ucb``: in (A) and (C) with its default schedule (a round every
``ceil(sqrt(T))`` steps), in (B) with the number of rounds the published run made.

    python examples/dubey_fig1.py                    # default scale
    python examples/dubey_fig1.py --scale quick --out /tmp/fig1
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from baselines.papers.dubey import SCALES, draw, panel_a, panel_b, panel_c


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the three panels, write ``dubey_fig1.json`` and ``dubey_fig1.png``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/dubey_fig1"))
    args = parser.parse_args(argv)
    s = SCALES[args.scale]
    start = time.perf_counter()
    results: dict[str, Any] = {}
    for name, panel in (("A", panel_a), ("B", panel_b), ("C", panel_c)):
        print(f"panel {name} ...", flush=True)
        results[name] = panel(s, args.seed)
    results["seconds"] = time.perf_counter() - start
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
    print(f"wrote {args.out / 'dubey_fig1.png'} in {results['seconds']:.0f} s")
    return results


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
