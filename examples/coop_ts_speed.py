"""The cooperative Thompson-type policies' cost per agent-step against Gossip_UCB's, in
one run.

Li & Song's scale by default (N = 50, M = 100, homogeneous instances, ``neighbours``):
every policy plays the same trials after a warm-up trial; printed are each one's
microseconds per agent-step and the ratio to Gossip_UCB (in ``neighbours`` on the same
graph), for coop_ts with its default (moment) sampler, with Beta draws, and the relaying
form (compiled loops; issue 52's target: at most 10x), and for the index family on the
vector env: tuned_ts in ``neighbours`` and server_ts in ``server`` and ``flooding``
(issue 62's target: at most 10x on a ring and on Erdos-Renyi, with held tables of
degree x M).

    python examples/coop_ts_speed.py
    python examples/coop_ts_speed.py --graph ring
    python examples/coop_ts_speed.py --agents 10 --arms 10 --horizon 5000
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace
from typing import Any

from fedbandit_env.runner.evaluate import UntrainedConditionsWarning, evaluate
from fedbandit_env.scenario import Scenario


def cost(policy: str, options: dict[str, Any] | None, scenario: Scenario, trials: int) -> float:
    """Seconds per agent-step of ``policy`` (after one warm-up trial)."""
    evaluate(policy, scenario, options, trials=1, record_every=scenario.horizon)
    start = time.perf_counter()
    evaluate(policy, scenario, options, trials=trials, record_every=scenario.horizon)
    return (time.perf_counter() - start) / (trials * scenario.n_agents * scenario.horizon)


def main() -> None:
    """Print the costs and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--arms", type=int, default=100)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--graph", default="complete", help="complete, ring, erdos_renyi, ...")
    args = parser.parse_args()
    scenario = Scenario(
        n_agents=args.agents, n_arms=args.arms, horizon=args.horizon, setting="neighbours",
        instance="homogeneous", graph=args.graph,
    )  # fmt: skip
    base = cost("gossip_ucb", None, scenario, args.trials)
    print(f"N={args.agents}, M={args.arms}, T={args.horizon}, graph {args.graph}, "
          f"{args.trials} trials, one run")  # fmt: skip
    print(f"gossip_ucb                  {base * 1e6:9.1f} us per agent-step")
    for label, policy, options, setting in (
        ("coop_ts (moment, default)", "coop_ts", None, "neighbours"),
        ("coop_ts (beta)", "coop_ts", {"posterior": "beta"}, "neighbours"),
        ("coop_ts_relay (moment)", "coop_ts_relay", None, "neighbours"),
        ("tuned_ts", "tuned_ts", None, "neighbours"),
        ("server_ts (server)", "server_ts", None, "server"),
        ("server_ts (flooding)", "server_ts", None, "flooding"),
    ):
        with warnings.catch_warnings():  # tuned_ts away from its tuned conditions
            warnings.simplefilter("ignore", UntrainedConditionsWarning)
            c = cost(policy, options, replace(scenario, setting=setting), args.trials)
        print(f"{label:<27} {c * 1e6:9.1f} us per agent-step  {c / base:7.1f}x gossip_ucb")


if __name__ == "__main__":
    main()
