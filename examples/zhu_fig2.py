"""Reproduce the shape of Zhu et al.'s Fig. 2(a) and 2(b): Fed_UCB's regret for
epsilon in {1, 2, 5, no privacy}, mean over trials with min-max bands.

Settings (paper, Sec. 5.1): means uniform in [0, 1] with every agent ranking the arms
differently; (a) N = 3, M = 5 on the complete graph (lambda_2 = 0.5); (b) N = 10,
M = 10 on a path (lambda_2 = 0.995, the paper's "about 0.99").

Differences from the paper, on purpose:
- rewards are ``clip(mu + N(0, 1), 0, 1)`` (the paper adds unclipped N(0, 1) noise, for
  which no finite sensitivity and hence no epsilon-DP exists); regret uses the exact
  clipped means;
- Fed_UCB uses the calibrated confidence bound (``FedUCB(confidence="calibrated")``;
  eq. 12 as printed exceeds every gap at these horizons; pass ``--confidence paper``);
- runs use the compiled fast path (``--interactive`` for the PettingZoo path; both give
  the same numbers for the same seed); the horizon and trials are yours to choose
  (the paper: T = 1e6, 100 trials).

Run: ``.venv/bin/python examples/zhu_fig2.py --horizon 100000 --trials 20 --out results/fig2``
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fedbandit_env.runner import RegretCurves, plot_regret, write_csv
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario import Scenario

EPSILONS = (1.0, 2.0, 5.0, np.inf)
SETTINGS = {
    "fig2a": {"n_agents": 3, "n_arms": 5, "graph": "complete"},
    "fig2b": {"n_agents": 10, "n_arms": 10, "graph": "path"},
}


def run_setting(
    name: str,
    horizon: int,
    trials: int,
    seed: int,
    confidence: str,
    progress: bool,
    interactive: bool = False,
    workers: int = 1,
) -> list[RegretCurves]:
    """Run Fed_UCB at every epsilon on one of the paper's settings."""
    scenario = Scenario(
        instance="zhu",
        noise="clipped_gaussian",
        sigma=1.0,
        horizon=horizon,
        seed=seed,
        **SETTINGS[name],
    )  # type: ignore[arg-type]
    curves = []
    for eps in EPSILONS:
        label = "no privacy" if np.isinf(eps) else f"epsilon={eps:g}"
        start = time.perf_counter()
        c = evaluate(
            "fed_ucb",
            scenario,
            {"epsilon": eps, "confidence": confidence},
            trials=trials,
            seed=seed,
            record_every=max(1, horizon // 100),
            interactive=interactive,
            workers=workers,
            progress=progress,
            label=label,
        )
        c.meta["wall_s"] = time.perf_counter() - start
        c.meta["lambda_2"] = scenario.network().lambda_2
        curves.append(c)
    return curves


def ratios(curves: list[RegretCurves], at: float = 0.6) -> list[float]:
    """Mean per-agent regret at ``at * T`` of each private curve, relative to epsilon = 1."""
    values = []
    for c in curves[:3]:
        k = int(np.searchsorted(c.t, at * c.t[-1]))
        values.append(float(c.per_agent[:, k].mean()))
    return [v / values[0] for v in values]


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    """Run both settings, save figures and CSVs, print the epsilon ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horizon", type=int, default=10_000)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--confidence", choices=("calibrated", "paper"), default="calibrated")
    p.add_argument("--out", type=Path, default=Path("results/fig2"))
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--interactive", action="store_true", help="use the PettingZoo path")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = p.parse_args(argv)
    out: dict[str, list[float]] = {}
    for name in SETTINGS:
        start = time.perf_counter()
        curves = run_setting(
            name,
            args.horizon,
            args.trials,
            args.seed,
            args.confidence,
            not args.no_progress,
            args.interactive,
            args.workers,
        )
        print(
            f"{name}: {time.perf_counter() - start:.1f} s for {len(EPSILONS)} x "
            f"{args.trials} trials of T={args.horizon} ("
            + ", ".join(f"{c.policy} {c.meta['wall_s']:.1f} s" for c in curves)
            + ")"
        )
        lam = curves[0].meta["lambda_2"]
        s = SETTINGS[name]
        title = (
            f"Fed_UCB, {name}: N={s['n_agents']}, M={s['n_arms']}, {s['graph']} "
            f"(lambda_2={lam:.3f}), T={args.horizon}, {args.trials} trials"
        )
        plot_regret(curves, args.out / f"{name}.png", title=title)
        write_csv(curves, args.out / f"{name}.csv")
        r = ratios(curves)
        out[name] = r
        finals = ", ".join(f"{c.policy}: {c.final_per_agent.mean():.1f}" for c in curves)
        print(f"{name} (lambda_2={lam:.3f}) per-agent regret at T: {finals}")
        print(
            f"{name} regret ratios at t=0.6T for epsilon 1:2:5 = "
            f"{r[0]:.2f} : {r[1]:.2f} : {r[2]:.2f}   (paper: 1 : 0.50 : 0.20)"
        )
    return out


if __name__ == "__main__":
    main()
