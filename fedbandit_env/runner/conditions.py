"""The conditions a tuned or trained policy was made for, and the warning when it runs
elsewhere: one comparison for saved models, ``tuned:`` files and the registered
``tuned_*`` / ``learned_*`` references (:func:`fedbandit_env.runner.evaluate.evaluate`
and :mod:`fedbandit_env.runner.tune` both read it; it imports neither).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedbandit_env.scenario.scenario import Scenario


class UntrainedConditionsWarning(UserWarning):
    """A saved model is evaluated at a horizon or on instances it was not trained for."""


CONDITIONS = ("setting", "instance", "n_agents", "n_arms", "horizon", "graph", "epsilon")
"""The scenario fields a tuned or trained policy's conditions are compared on."""


def untuned_conditions(tuned_on: Mapping[str, Any], scenario: Scenario) -> list[str]:
    """How ``scenario`` differs from the scenario a policy was tuned or trained on
    (``Scenario.to_dict``), one phrase per field of :data:`CONDITIONS` that differs, and
    a fixed instance where it was tuned on drawn ones.

    Examples:
        >>> s = Scenario(n_agents=10, n_arms=5, horizon=200, setting="neighbours")
        >>> untuned_conditions({**s.to_dict(), "horizon": 20000}, s)
        ['horizon=200 (tuned on 20000)']
    """
    now = scenario.to_dict()
    differ = [
        f"{key}={now.get(key)!r} (tuned on {tuned_on.get(key)!r})"
        for key in CONDITIONS
        if key in tuned_on and tuned_on.get(key) != now.get(key)
    ]
    if now.get("instances") == "fixed":
        differ.append("a fixed instance (tuned on drawn train instances)")
    return differ


__all__ = ["CONDITIONS", "UntrainedConditionsWarning", "untuned_conditions"]
