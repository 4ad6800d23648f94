"""What ``fedbandit bench`` and ``sweep`` say and record about a scenario: its
instances and information setting."""

from __future__ import annotations

import argparse
from typing import Any

from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.seeding import instance_seed, trial_seeds
from fedbandit_env.settings import SETTINGS


def describe_instances(scenario: Scenario, problem: Any) -> str:
    """How ``fedbandit bench`` and ``sweep`` describe a scenario's instances.

    Examples:
        >>> s = Scenario(n_agents=4, n_arms=3, instances="held_out")
        >>> describe_instances(s, s.problem())
        'held-out instances of biased(N=4,M=3)'
    """
    if scenario.instances != "fixed":
        split = scenario.instances.replace("_", "-")
        return f"{split} instances of {distribution_name(scenario)}"
    if scenario.linear:
        return (
            f"{scenario.instance} instance (d={problem.dim}, K={problem.set_size} vectors a "
            f"set from a pool of {problem.n_features})"
        )
    return (
        f"{scenario.instance} instance ({len(problem.conflicting_agents)} misled agents, "
        f"min gap {problem.min_gap:.3f})"
    )


def distribution_name(scenario: Scenario) -> str:
    """The name of the instance distribution a scenario draws from.

    Examples:
        >>> distribution_name(Scenario(n_agents=3, n_arms=9, instance="dubey", dim=3))
        'dubey(N=3,d=3,K=9)'
    """
    return scenario.distribution_name


def problem_record(problem: Any) -> dict[str, Any]:
    """What ``config.json`` keeps of the problem: the means and best arm of a multi-armed
    one, the parameters of a linear one.

    Examples:
        >>> sorted(problem_record(Scenario(n_agents=2, n_arms=3).problem()))
        ['best_arm', 'global_means', 'local_means']
    """
    if hasattr(problem, "theta"):
        return {"theta": problem.theta.tolist(), "pool_size": problem.n_features}
    return {
        "local_means": problem.local_means.tolist(),
        "global_means": problem.global_means.tolist(),
        "best_arm": problem.best_arm,
    }


def describe_setting(scenario: Scenario) -> str:
    """``", setting NAME (epsilon=E)"`` for the bench's scenario line (``""``: none).

    Examples:
        >>> describe_setting(Scenario(setting="gossip+private", epsilon=2.0))[:40]
        ', setting gossip+private (epsilon=2.0): '
    """
    if scenario.setting is None:
        return ""
    info = SETTINGS[scenario.setting]
    eps = f" (epsilon={scenario.epsilon})" if info.private else ""
    return f", setting {info.name}{eps}: {info.description}"


def check_drawn_instances(scenario: Scenario, args: argparse.Namespace) -> None:
    """Options that need one known instance are refused with drawn instances.

    Raises:
        ValueError: ``--rounds`` without ``--min-gap`` (each drawn instance has its own
            smallest gap, which the policies may not read).
    """
    rounds, min_gap = getattr(args, "rounds", 0), getattr(args, "min_gap", None)
    if scenario.instances != "fixed" and rounds and min_gap is None:
        raise ValueError(
            f"--rounds with --instances {scenario.instances} needs --min-gap: each drawn "
            "instance has its own smallest gap"
        )


def instance_record(scenario: Scenario, seed: int, trials: int) -> dict[str, Any]:
    """Which instances the trials played, for ``config.json``: the split, and with drawn
    instances the distribution and each trial's instance id (the ``instance`` the env
    reports at reset).

    Examples:
        >>> instance_record(Scenario(), 0, 3)
        {'split': 'fixed', 'seed': 0}
        >>> rec = instance_record(Scenario(n_agents=4, n_arms=3, instances="held_out"), 0, 3)
        >>> rec["distribution"], len(rec["ids"])
        ('biased(N=4,M=3)', 3)
    """
    if scenario.instances == "fixed":
        return {"split": "fixed", "seed": scenario.seed}
    ids = [
        int(instance_seed(env_seed, scenario.instances).generate_state(1)[0])
        for env_seed, _ in trial_seeds(seed, trials)
    ]
    return {"split": scenario.instances, "distribution": distribution_name(scenario), "ids": ids}


__all__ = [
    "check_drawn_instances",
    "describe_instances",
    "describe_setting",
    "distribution_name",
    "instance_record",
    "problem_record",
]
