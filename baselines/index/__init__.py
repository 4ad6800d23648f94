"""Tunable index policies: Thompson- and UCB-type indices on the average of the local
means an agent holds (its own and its neighbours' counts and sums), with four parameters
that ``fedbandit tune`` searches on the train split.

``policies.py`` holds the policy (a :class:`~fedbandit_env.vector.policy.VectorPolicy`:
all agents of many envs as arrays); ``tuned/`` the results ``fedbandit tune`` saved for
the shipped references. ``baselines.registration`` registers ``index_ts`` and
``index_private_ts`` (the defaults: Thompson sampling on the averaged Gaussian
posterior) and ``tuned_ts`` and ``tuned_private_ts`` (the tuned parameters), reproduced by

    fedbandit tune --setting neighbours       # tuned/tuned_ts.json
    fedbandit tune --setting gossip+private   # tuned/tuned_private_ts.json

(the learning default: N = 10, M = 5, ``biased`` train instances, T = 200; seed 0,
50M agent-steps each).

Examples:
    >>> from baselines.index import IndexPolicy, tuned_ts
    >>> IndexPolicy().requirements(n_agents=3, n_arms=2).message_dim
    4
    >>> tuned_ts().parameters["prior_strength"] > 0
    True
"""

import json
from pathlib import Path
from typing import Any

from baselines.index.policies import PARAMETERS, IndexPolicy

TUNED = Path(__file__).with_name("tuned")
"""The saved tuning results of the shipped references."""


def private_server_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """``private_server_ts``'s constructor arguments from the setting options: the
    setting's ``epsilon`` and the upload ``period``.

    Examples:
        >>> private_server_options({"epsilon": 2.0, "period": 5}, None)
        {'epsilon': 2.0, 'period': 5}
    """
    return {"epsilon": options.get("epsilon", 1.0), "period": options.get("period", 1)}


def tuned_scenario(name: str) -> dict[str, Any]:
    """The scenario ``fedbandit tune`` tuned ``tuned/<name>.json`` on (``Scenario.to_dict``):
    what evaluate compares a run's conditions with (``UntrainedConditionsWarning``).

    Examples:
        >>> tuned_scenario("tuned_ts")["horizon"]
        200
    """
    scenario: dict[str, Any] = json.loads((TUNED / f"{name}.json").read_text())["scenario"]
    return scenario


def tuned_parameters(name: str) -> dict[str, float]:
    """The parameters ``fedbandit tune`` saved in ``tuned/<name>.json``.

    Examples:
        >>> sorted(tuned_parameters("tuned_ts"))
        ['bonus', 'draw_scale', 'prior_mean', 'prior_strength']
    """
    data = json.loads((TUNED / f"{name}.json").read_text())
    return {k: float(v) for k, v in data["parameters"].items()}


def tuned_ts(**kwargs: Any) -> IndexPolicy:
    """``index_ts`` with the parameters tuned in ``neighbours`` (``kwargs`` override).

    Examples:
        >>> tuned_ts().epsilon is None
        True
    """
    policy = IndexPolicy(**{**tuned_parameters("tuned_ts"), **kwargs})
    policy.tuned_on = tuned_scenario("tuned_ts")
    return policy


def tuned_private_ts(epsilon: float = 1.0, **kwargs: Any) -> IndexPolicy:
    """``index_private_ts`` with the parameters tuned in ``gossip+private`` at
    ``epsilon = 1`` (``private_coop_ts``'s privacy).

    Examples:
        >>> tuned_private_ts(epsilon=2.0).epsilon
        2.0
    """
    policy = IndexPolicy(**{**tuned_parameters("tuned_private_ts"), **kwargs}, epsilon=epsilon)
    policy.tuned_on = tuned_scenario("tuned_private_ts")
    return policy


__all__ = [
    "PARAMETERS",
    "TUNED",
    "IndexPolicy",
    "private_server_options",
    "tuned_parameters",
    "tuned_private_ts",
    "tuned_scenario",
    "tuned_ts",
]
