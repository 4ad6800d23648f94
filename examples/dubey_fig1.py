"""Dubey & Pentland (NeurIPS 2020), Fig. 1: centralized FedUCB on three axes, with the
corrected private variant on the same axes.

(A) per-agent regret at the horizon against epsilon (delta = 0.1, d = 10, n = O(M log T))
    for M in {10, 20, 50, 100};
(B) per-agent regret curves for M = 100 at three communication levels, n = O(M^1.5)
    (Wang et al.'s threshold ``D = T log(MT) / (d M)``), O(M log T) (Theorem 1's ``D``)
    and O(MT) (a round every step), private (epsilon = 1) against non-private;
(C) per-agent regret curves against d in {8, 16, 32, 64, 128} (private, epsilon = 1).

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
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.runner.scenario import Scenario

SCALES: dict[str, dict[str, Any]] = {
    "quick": {"T": 300, "T_C": 200, "M": (4, 8), "eps": (1.0, 10.0), "d": (4, 8), "M_B": 8,
              "M_C": 4, "trials": 2},
    "default": {"T": 5000, "T_C": 2000, "M": (10, 20, 50, 100), "eps": (0.1, 0.3, 1.0, 3.0, 10.0),
                "d": (8, 16, 32, 64, 128), "M_B": 100, "M_C": 10, "trials": 3},
    "long": {"T": 50_000, "T_C": 10_000, "M": (10, 100), "eps": (0.1, 1.0, 10.0),
             "d": (8, 32, 128), "M_B": 100, "M_C": 10, "trials": 2},
    "paper": {"T": 10_000_000, "T_C": 1_000_000, "M": (10, 20, 50, 100),
              "eps": (0.1, 0.3, 1.0, 3.0, 10.0), "d": (8, 16, 32, 64, 128), "M_B": 100,
              "M_C": 100, "trials": 100},
}  # fmt: skip


def _scenario(agents: int, dim: int, horizon: int, seed: int) -> Scenario:
    return Scenario(
        n_agents=agents,
        n_arms=min(dim * dim, 100),
        instance="dubey",
        dim=dim,
        horizon=horizon,
        seed=seed,
    )


def _run(pid: str, scenario: Scenario, trials: int, seed: int, **kw: Any) -> RegretCurves:
    every = max(1, scenario.horizon // 50)
    return run_fast(pid, scenario, trials, seed=seed, record_every=every, progress=False, **kw)


def _rounds(c: RegretCurves, scenario: Scenario) -> int:
    """Synchronisation rounds of a run: its cost over ``c1`` per agent per round."""
    cost = float(c.comm_cost[:, -1].mean())
    return max(1, round(cost / (scenario.link_costs[0] * scenario.n_agents)))


def _corrected(
    scenario: Scenario, rounds: int | None, trials: int, seed: int, eps: float
) -> RegretCurves:
    """The corrected variant with ``rounds`` rounds (``None``: its default schedule)."""
    kw = {} if rounds is None else {"batch": max(1, (scenario.horizon - 1) // rounds)}
    return _run("private_fedlin_ucb", scenario, trials, seed, epsilon=eps, **kw)


def guessing(scenario: Scenario) -> float:
    """Expected regret a step of a uniformly random choice: the mean gap of the pool's
    best vectors over its others, times ``(K - 1) / K``."""
    p = scenario.problem()
    best, others = p.global_means[: p.n_best].mean(), p.global_means[p.n_best :].mean()
    return float((best - others) * (p.set_size - 1) / p.set_size)


def panel_a(s: dict[str, Any], seed: int) -> dict[str, Any]:
    """Final per-agent regret against epsilon, for each M."""
    out: dict[str, Any] = {"eps": list(s["eps"]), "published": {}, "corrected": {}, "rounds": {}}
    out["guessing"] = guessing(_scenario(s["M"][0], 10, s["T"], seed)) * s["T"]
    for m in s["M"]:
        scenario = _scenario(m, 10, s["T"], seed)
        pub, cor, rounds = [], [], []
        for eps in s["eps"]:
            c = _run("fedlin_ucb_dp", scenario, s["trials"], seed, epsilon=eps)
            n = _rounds(c, scenario)
            pub.append(float(c.final_per_agent.mean()))
            corrected = _corrected(scenario, None, s["trials"], seed, eps)
            cor.append(float(corrected.final_per_agent.mean()))
            rounds.append(n)
        out["published"][m], out["corrected"][m], out["rounds"][m] = pub, cor, rounds
    return out


def panel_b(s: dict[str, Any], seed: int) -> dict[str, Any]:
    """Per-agent regret curves at three communication levels, private and not."""
    m, horizon = s["M_B"], s["T"]
    scenario = _scenario(m, 10, horizon, seed)
    levels = {
        "O(M^1.5)": {"threshold": horizon * math.log(m * horizon) / (10 * m)},
        "O(M log T)": {},
        "O(MT)": {"threshold": 1e-12},
    }
    out: dict[str, Any] = {"guessing": guessing(scenario)}
    for name, kw in levels.items():
        pub = _run("fedlin_ucb_dp", scenario, s["trials"], seed, epsilon=1.0, **kw)
        plain = _run("fedlin_ucb", scenario, s["trials"], seed, **kw)
        cor = _corrected(scenario, _rounds(pub, scenario), s["trials"], seed, 1.0)
        out[name] = {
            "t": pub.t.tolist(),
            "private": pub.per_agent.mean(axis=0).tolist(),
            "non_private": plain.per_agent.mean(axis=0).tolist(),
            "corrected": cor.per_agent.mean(axis=0).tolist(),
            "rounds": {"private": _rounds(pub, scenario), "non_private": _rounds(plain, scenario)},
        }
    return out


def panel_c(s: dict[str, Any], seed: int) -> dict[str, Any]:
    """Per-agent regret curves against the dimension (private, epsilon = 1)."""
    out: dict[str, Any] = {"guessing": guessing(_scenario(s["M_C"], s["d"][0], s["T_C"], seed))}
    for d in s["d"]:
        scenario = _scenario(s["M_C"], d, s["T_C"], seed)
        pub = _run("fedlin_ucb_dp", scenario, s["trials"], seed, epsilon=1.0)
        cor = _corrected(scenario, None, s["trials"], seed, 1.0)
        out[d] = {
            "t": pub.t.tolist(),
            "private": pub.per_agent.mean(axis=0).tolist(),
            "corrected": cor.per_agent.mean(axis=0).tolist(),
            "final_spread": float(pub.final_per_agent.std()),
        }
    return out


def draw(results: dict[str, Any], path: Path, scale: str) -> None:
    """The three panels, as the paper lays them out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    a, b, c = results["A"], results["B"], results["C"]
    colours = plt.get_cmap("viridis")
    axes[0].axhline(a["guessing"], color="grey", ls="-.", lw=1, label="uniform guessing")
    for j, m in enumerate(a["published"]):
        col = colours(j / max(1, len(a["published"]) - 1))
        axes[0].plot(a["eps"], a["published"][m], "o-", color=col, label=f"M = {m}")
        axes[0].plot(a["eps"], a["corrected"][m], "s--", color=col, alpha=0.7)
    axes[0].set(xscale="log", xlabel="epsilon", ylabel="per-agent regret at T",
                title="(A) privacy budget (solid: as published; dashed: corrected)")  # fmt: skip
    curves_b = {k: v for k, v in b.items() if k != "guessing"}
    curves_c = {k: v for k, v in c.items() if k != "guessing"}
    t_b = next(iter(curves_b.values()))["t"]
    axes[1].plot(t_b, np.array(t_b) * b["guessing"], color="grey", ls="-.", lw=1,
                 label="uniform guessing")  # fmt: skip
    t_c = next(iter(curves_c.values()))["t"]
    axes[2].plot(t_c, np.array(t_c) * c["guessing"], color="grey", ls="-.", lw=1,
                 label="uniform guessing")  # fmt: skip
    for j, (name, row) in enumerate(curves_b.items()):
        col = f"C{j}"
        axes[1].plot(row["t"], row["private"], "-", color=col, label=f"n = {name}")
        axes[1].plot(row["t"], row["non_private"], "--", color=col)
        axes[1].plot(row["t"], row["corrected"], ":", color=col)
    title_b = "(B) communication (solid: private, dashed: non-private, dotted: corrected)"
    axes[1].set(xlabel="t", ylabel="per-agent regret", title=title_b)
    for j, (d, row) in enumerate(curves_c.items()):
        col = colours(j / max(1, len(curves_c) - 1))
        axes[2].plot(row["t"], row["private"], "-", color=col, label=f"d = {d}")
        axes[2].plot(row["t"], row["corrected"], ":", color=col)
    axes[2].set(xlabel="t", ylabel="per-agent regret",
                title="(C) dimension (solid: as published; dotted: corrected)")  # fmt: skip
    for ax in axes:
        ax.legend(fontsize=8)
        ax.title.set_fontsize(9)
    fig.suptitle(f"Dubey & Pentland Fig. 1, reproduced at the {scale!r} scale", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the three panels, write ``dubey_fig1.json`` and ``dubey_fig1.png``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
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
