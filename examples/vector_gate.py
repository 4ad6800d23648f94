"""Issue 62's speed gate, in one run: a family's vector form rolled out by the core
(``CompiledTrials``) against the family's own whole-trial loop (its registered fast
path), on the ``fedbandit speed`` grid.

Both play the same trials (checked: the regret curves must be equal, or the script says
so); they are timed in turn after a warm-up call each, best of ``--repeats``, and the
printed ratio is the vector form's speed over the loop's (the gate: at least 0.8 before
the loop may go). Gossip_UCB and Fed_UCB are the families whose loop still stands.

    python examples/vector_gate.py
    python examples/vector_gate.py --policy fed_ucb --workers 2
    python examples/vector_gate.py --size big --horizon 20000
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

import numpy as np

from fedbandit_env import registry
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.vector_trials import CompiledTrials
from fedbandit_env.scenario import Scenario

VECTOR_FORMS = {
    "gossip_ucb": ("baselines.gossip.vector:gossip_ucb", "gossip"),
    "fed_ucb": ("baselines.gossip.vector:fed_ucb", "gossip+private"),
}
"""Each policy whose loop stands beside its vector form: the form's factory and the
setting it is measured in."""

SIZES = {
    "small": ({"n_agents": 10, "n_arms": 10, "graph": "complete"}, 40_000),
    "big": ({"n_agents": 50, "n_arms": 100, "graph": "erdos_renyi", "graph_p": 6 / 49}, 4000),
}
"""The ``fedbandit speed`` grid's two settings and a default horizon for each."""


def timed(runner: Any, scenario: Scenario, trials: int, workers: int) -> tuple[float, Any]:
    """Seconds of one ``run_fast`` call of ``runner`` (a registry spec) and its curves."""
    start = time.perf_counter()
    curves = run_fast(runner, scenario, trials, record_every=scenario.horizon,
                      progress=False, workers=workers)  # fmt: skip
    return time.perf_counter() - start, curves


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Measure and print; returns the loop's and the vector form's best seconds and the
    ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy", choices=sorted(VECTOR_FORMS), default="gossip_ucb")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--horizon", type=int, default=0, help="0: the size's default")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    setting, horizon = SIZES[args.size]
    factory, information = VECTOR_FORMS[args.policy]
    private = {"epsilon": 1.0} if "private" in information else {}
    scenario = Scenario(instance="zhu", noise="clipped_gaussian", setting=information,
                        horizon=args.horizon or horizon, **private, **setting)  # fmt: skip
    loop = registry.spec(args.policy)
    vector = replace(loop, fast_entry_point=CompiledTrials(factory))
    best = {"loop": np.inf, "vector": np.inf}
    curves: dict[str, Any] = {}
    for runner in (loop, vector):  # warm-up: compile or load the caches
        timed(runner, scenario, args.trials, args.workers)
    for _ in range(args.repeats):
        for name, runner in (("loop", loop), ("vector", vector)):
            seconds, curves[name] = timed(runner, scenario, args.trials, args.workers)
            best[name] = min(best[name], seconds)
    same = np.array_equal(curves["loop"].regret, curves["vector"].regret)
    ratio = best["loop"] / best["vector"]
    print(f"{args.policy}, {information}, {args.size} (N={scenario.n_agents}, "
          f"M={scenario.n_arms}, T={scenario.horizon}), {args.trials} trials, "
          f"{args.workers} thread(s), best of {args.repeats}, one run")  # fmt: skip
    print(f"loop {best['loop']:.3f} s, vector form {best['vector']:.3f} s: the vector form "
          f"runs at {ratio:.2f}x the loop's speed (gate: 0.8); same trials: {same}")  # fmt: skip
    return {"loop": best["loop"], "vector": best["vector"], "ratio": ratio, "same": same}


if __name__ == "__main__":
    main()
