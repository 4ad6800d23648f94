"""What each learner wrapper costs over the bare env step, measured in one run.

Every stack plays the same fixed arms for ``--episodes`` episodes of ``--horizon`` steps;
a stack's time is its best episode (the least disturbed on a shared machine) and it is
printed as a ratio to the bare env's best episode measured in the same run. The issue's
target: every wrapper within 2x of the bare step.

    python examples/wrapper_speed.py --agents 10 50
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from fedbandit_env import federated_mab_v0
from fedbandit_env.protocols import Broadcast
from fedbandit_env.wrappers import (
    FlattenObservations,
    HeldMessages,
    HorizonFree,
    LocalStatistics,
    PrivateRewards,
)

Make = Callable[[int, int, int], Any]


def _bare(n: int, m: int, horizon: int, messages: bool = False) -> Any:
    if messages:
        return federated_mab_v0.parallel_env(
            n_agents=n, n_arms=m, horizon=horizon, message_dim=m, protocol=Broadcast()
        )
    return federated_mab_v0.parallel_env(n_agents=n, n_arms=m, horizon=horizon)


STACKS: dict[str, tuple[Make, bool]] = {
    "bare env": (lambda n, m, t: _bare(n, m, t), False),
    "LocalStatistics": (lambda n, m, t: LocalStatistics(_bare(n, m, t)), False),
    "PrivateRewards(1)": (lambda n, m, t: PrivateRewards(_bare(n, m, t), 1.0), False),
    "HorizonFree(LocalStatistics)": (
        lambda n, m, t: HorizonFree(LocalStatistics(_bare(n, m, t))),
        False,
    ),
    "Flatten(LocalStatistics)": (
        lambda n, m, t: FlattenObservations(LocalStatistics(_bare(n, m, t))),
        False,
    ),
    "env with messages": (lambda n, m, t: _bare(n, m, t, True), True),
    "HeldMessages": (lambda n, m, t: HeldMessages(_bare(n, m, t, True)), True),
}


def best_episode(make: Make, messages: bool, n: int, m: int, horizon: int, episodes: int) -> float:
    """Seconds per step of the fastest of ``episodes`` episodes."""
    env = make(n, m, horizon)
    arms = np.random.default_rng(0).integers(0, m, size=(horizon, n))
    agents = list(env.possible_agents)
    message = np.zeros(m, dtype=np.float32)
    plans = [
        {a: ({"arm": int(row[i]), "message": message} if messages else int(row[i]))
         for i, a in enumerate(agents)}
        for row in arms
    ]  # fmt: skip
    best = float("inf")
    for e in range(episodes):
        env.reset(seed=e)
        start = time.perf_counter()
        for actions in plans:
            env.step(actions)
        best = min(best, (time.perf_counter() - start) / horizon)
    return best


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print every stack's step time and its ratio to the bare step, per agent count;
    return the ratios (``"<stack> N=<n>"``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--arms", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=400)
    parser.add_argument("--episodes", type=int, default=5)
    args = parser.parse_args(argv)
    ratios = {}
    for n in args.agents:
        times = {
            name: best_episode(make, messages, n, args.arms, args.horizon, args.episodes)
            for name, (make, messages) in STACKS.items()
        }
        bare = times["bare env"]
        print(f"N={n}, M={args.arms}, best of {args.episodes} episodes of T={args.horizon}")
        for name, seconds in times.items():
            line = f"  {name:30s} {seconds * 1e6:8.1f} us/step  {seconds / bare:5.2f}x the bare"
            if name == "HeldMessages":  # a wrapper over the env with messages
                line += f", {seconds / times['env with messages']:.2f}x the env with messages"
            print(line)
            ratios[f"{name} N={n}"] = seconds / bare
    return ratios


if __name__ == "__main__":
    main()
