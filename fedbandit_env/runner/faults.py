"""The network's faults of a scenario, as wrappers on top of every policy's env.

A :class:`~fedbandit_env.runner.scenario.Scenario` names its faults by plain fields
(``loss``, ``delay``, ``byzantine``/``attack``, ``crash``/``recover``), so a sweep can
grid over them; :func:`apply_faults` turns them into the wrapper stack, the same for
every policy: :class:`~fedbandit_env.wrappers.Byzantine` (lies before routing),
:class:`~fedbandit_env.wrappers.AgentCrash`,
:class:`~fedbandit_env.wrappers.MessageDelay`, then
:class:`~fedbandit_env.wrappers.MessageLoss`, all above the privacy wrapper (which stays
at depth 0). These runs take the PettingZoo path (``run_fast`` refuses them).

Example:
    >>> from fedbandit_env import federated_mab_v0
    >>> env = federated_mab_v0.parallel_env(horizon=5, message_dim=2)
    >>> faulty = apply_faults(env, {"loss": 0.1, "delay": 2, "byzantine": 0, "crash": 0.0})
    >>> type(faulty).__name__, type(faulty.env).__name__
    ('MessageLoss', 'MessageDelay')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pettingzoo import ParallelEnv

from fedbandit_env.runner.plan import Layer, StackPlan
from fedbandit_env.wrappers.agent_crash import AgentCrash
from fedbandit_env.wrappers.byzantine import Byzantine
from fedbandit_env.wrappers.message_delay import MessageDelay
from fedbandit_env.wrappers.message_loss import MessageLoss

FAULT_DEFAULTS: dict[str, Any] = {
    "loss": 0.0,
    "delay": 0,
    "byzantine": 0,
    "attack": "boost",
    "crash": 0.0,
    "recover": 0.0,
}
"""Every fault field and its no-fault default."""


def has_faults(faults: Mapping[str, Any]) -> bool:
    """Whether any fault is switched on (``attack`` and ``recover`` only qualify others).

    Example:
        >>> has_faults({"loss": 0.0, "delay": 0, "byzantine": 1}), has_faults({"loss": 0.0})
        (True, False)
    """
    return any(faults.get(k, FAULT_DEFAULTS[k]) for k in ("loss", "delay", "byzantine", "crash"))


def fault_layers(faults: Mapping[str, Any]) -> list[Layer]:
    """The layers of the faults ``faults`` switches on, innermost first (see the module
    docstring); each draws from its own wrapper stream.

    Example:
        >>> [x.name for x in fault_layers({"loss": 0.1, "byzantine": 1})]
        ['Byzantine', 'MessageLoss']
    """
    f = {**FAULT_DEFAULTS, **faults}
    layers = []
    if f["byzantine"]:
        n, attack = int(f["byzantine"]), f["attack"]
        layers.append(Layer("Byzantine", lambda e: Byzantine(e, n, attack), True, "", "lie"))
    if f["crash"]:
        crash, recover = float(f["crash"]), float(f["recover"])
        layers.append(
            Layer("AgentCrash", lambda e: AgentCrash(e, crash, recover), True, "", "crash")
        )
    if f["delay"]:
        delay = int(f["delay"])
        layers.append(Layer("MessageDelay", lambda e: MessageDelay(e, delay), True, "", "delay"))
    if f["loss"]:
        loss = float(f["loss"])
        layers.append(Layer("MessageLoss", lambda e: MessageLoss(e, loss), True, "", "lose"))
    return layers


def apply_faults(
    env: ParallelEnv[Any, Any, Any], faults: Mapping[str, Any]
) -> ParallelEnv[Any, Any, Any]:
    """``env`` under the faults ``faults`` switches on (see the module docstring); an env
    without messages has nothing to lose, delay or forge and is returned as it is."""
    if not has_faults(faults):
        return env
    space = env.observation_space(env.possible_agents[0])
    if "mask" not in getattr(space, "spaces", {}):
        return env
    return StackPlan(tuple(fault_layers(faults))).build(env)


__all__ = ["FAULT_DEFAULTS", "apply_faults", "fault_layers", "has_faults"]
