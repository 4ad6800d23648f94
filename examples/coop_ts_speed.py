"""Cooperative Thompson sampling's cost per agent-step against Gossip_UCB's, in one run.

Li & Song's scale by default (N = 50, M = 100, homogeneous instances, ``neighbours``):
both policies' compiled loops play the same trials after a warm-up trial; printed are
each one's microseconds per agent-step and the ratio to Gossip_UCB (issue 52's target:
coop_ts at most 10x), for coop_ts with its default (moment) sampler, with Beta draws, and
the relaying form.

    python examples/coop_ts_speed.py
    python examples/coop_ts_speed.py --agents 10 --arms 10 --horizon 5000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from fedbandit_env.runner.evaluate import evaluate
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
    args = parser.parse_args()
    scenario = Scenario(
        n_agents=args.agents, n_arms=args.arms, horizon=args.horizon, setting="neighbours",
        instance="homogeneous",
    )  # fmt: skip
    base = cost("gossip_ucb", None, scenario, args.trials)
    print(f"N={args.agents}, M={args.arms}, T={args.horizon}, {args.trials} trials, one run")
    print(f"gossip_ucb                  {base * 1e6:9.1f} us per agent-step")
    for label, policy, options in (
        ("coop_ts (moment, default)", "coop_ts", None),
        ("coop_ts (beta)", "coop_ts", {"posterior": "beta"}),
        ("coop_ts_relay (moment)", "coop_ts_relay", None),
    ):
        c = cost(policy, options, scenario, args.trials)
        print(f"{label:<27} {c * 1e6:9.1f} us per agent-step  {c / base:7.1f}x gossip_ucb")


if __name__ == "__main__":
    main()
