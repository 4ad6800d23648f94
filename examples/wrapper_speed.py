"""What each learner wrapper costs over the bare env step, measured in one run.

Every stack plays the same fixed arms for ``--episodes`` episodes of ``--horizon`` steps;
a stack's time is its best episode (the least disturbed on a shared machine) and it is
printed as a ratio to the bare env's best episode measured in the same run. The issue's
target: every wrapper within 2x of the bare step.

The *dict floor* is what any PettingZoo parallel env pays for the same step: the five
per-agent dicts (observations with the same entries, rows of fresh arrays; rewards;
terminations; truncations; infos with the same six numbers) built from arrays with no
checking, sampling or bookkeeping. The env's speed is printed as a share of it (the
issue's target: >= 0.5 with messages).

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


class DictFloor:
    """The per-agent dicts of one step and nothing else (see the module's docstring)."""

    def __init__(self, n: int, m: int, messages: bool) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n)]
        self.n, self.m, self.messages = n, m, messages

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset."""

    def step(self, actions: dict[str, Any]) -> tuple[Any, ...]:
        """The five dicts, from fresh arrays."""
        n, agents = self.n, self.possible_agents
        arms = [a["arm"] if self.messages else a for a in actions.values()]
        rewards = list(np.zeros((n, 1), dtype=np.float32))
        step = np.zeros(1, dtype=np.float32)
        if self.messages:
            inbox = list(np.zeros((n, n, self.m), dtype=np.float32))
            mask = list(np.zeros((n, n), dtype=np.int8))
            obs = {
                a: {"arm": arms[i], "reward": rewards[i], "step": step, "messages": inbox[i],
                    "mask": mask[i]}
                for i, a in enumerate(agents)
            }  # fmt: skip
        else:
            obs = {
                a: {"arm": arms[i], "reward": rewards[i], "step": step}
                for i, a in enumerate(agents)
            }
        values = np.zeros(n).tolist()
        return (
            obs,
            dict(zip(agents, values, strict=True)),
            dict.fromkeys(agents, False),
            dict.fromkeys(agents, False),
            {a: {"regret": v, "cumulative_regret": v, "peer_links": 0, "server_links": 0,
                 "comm_cost": v, "cumulative_comm_cost": v}
             for a, v in zip(agents, values, strict=True)},
        )  # fmt: skip


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
        floor = {
            messages: best_episode(
                lambda n, m, t, messages=messages: DictFloor(n, m, messages),
                messages, n, args.arms, args.horizon, args.episodes,
            )
            for messages in (False, True)
        }  # fmt: skip
        bare = times["bare env"]
        print(f"N={n}, M={args.arms}, best of {args.episodes} episodes of T={args.horizon}")
        for name, seconds in times.items():
            line = f"  {name:30s} {seconds * 1e6:8.1f} us/step  {seconds / bare:5.2f}x the bare"
            if name == "HeldMessages":  # a wrapper over the env with messages
                line += f", {seconds / times['env with messages']:.2f}x the env with messages"
            print(line)
            ratios[f"{name} N={n}"] = seconds / bare
        for messages, name in ((False, "bare env"), (True, "env with messages")):
            share = floor[messages] / times[name]
            print(f"  {name} at {share:.2f} of the dict floor ({floor[messages] * 1e6:.1f} us)")
            ratios[f"{name} / floor N={n}"] = share
    return ratios


if __name__ == "__main__":
    main()
