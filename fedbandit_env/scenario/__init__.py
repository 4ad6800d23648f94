"""Everything that defines a benchmark setting, below both the runner and the learners:
the :class:`Scenario` (problem generator, graph, horizon, information setting, faults),
its instance kinds, its network faults, the stack plan its envs are built from, and the
trial contract both speeds share (:mod:`fedbandit_env.scenario.trial`).

Examples:
    >>> from fedbandit_env.scenario import Scenario
    >>> Scenario(n_agents=3, n_arms=2, horizon=10, setting="neighbours").plan().names
    ()
"""

from fedbandit_env.scenario.plan import Layer, StackPlan
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.scenario.trial import TrialResult, TrialRunner, TrialSetup, record_steps

__all__ = [
    "Layer",
    "Scenario",
    "StackPlan",
    "TrialResult",
    "TrialRunner",
    "TrialSetup",
    "record_steps",
]
