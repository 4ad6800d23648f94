"""The network's faults of a scenario, as wrappers on top of every policy's env.

A :class:`~fedbandit_env.scenario.scenario.Scenario` names its faults by plain fields
(``loss``, ``delay``, ``byzantine``/``attack``, ``crash``/``recover``), so a sweep can
grid over them; :func:`apply_faults` turns them into the wrapper stack, the same for
every policy: :class:`~fedbandit_env.wrappers.Byzantine` (lies before routing),
:class:`~fedbandit_env.wrappers.AgentCrash`,
:class:`~fedbandit_env.wrappers.MessageDelay`, then
:class:`~fedbandit_env.wrappers.MessageLoss`, all above the privacy wrapper (which stays
at depth 0). These runs take the PettingZoo path (``run_fast`` refuses them).

Examples:
    >>> from fedbandit_env import federated_mab_v0
    >>> env = federated_mab_v0.parallel_env(horizon=5, message_dim=2)
    >>> faulty = apply_faults(env, {"loss": 0.1, "delay": 2, "byzantine": 0, "crash": 0.0})
    >>> type(faulty).__name__, type(faulty.env).__name__
    ('MessageLoss', 'MessageDelay')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pettingzoo import ParallelEnv

from fedbandit_env.scenario.plan import Layer, StackPlan
from fedbandit_env.validation import check_int
from fedbandit_env.wrappers.agent_crash import AgentCrash
from fedbandit_env.wrappers.base import check_probability, vector_form
from fedbandit_env.wrappers.byzantine import BEHAVIOURS, Byzantine
from fedbandit_env.wrappers.message_delay import MessageDelay
from fedbandit_env.wrappers.message_loss import MessageLoss


def _probability(name: str, value: Any, n_agents: int) -> None:
    check_probability(name, value)


def _steps(name: str, value: Any, n_agents: int) -> None:
    check_int(name, value, 0)


def _liars(name: str, value: Any, n_agents: int) -> None:
    if check_int(name, value, 0) >= n_agents:
        raise ValueError(f"{name} must be < n_agents = {n_agents}, got {value}")


def _behaviour(name: str, value: Any, n_agents: int) -> None:
    if value not in BEHAVIOURS:
        raise ValueError(f"{name} must be one of {sorted(BEHAVIOURS)}, got {value!r}")


@dataclass(frozen=True)
class FaultField:
    """One scenario field of a fault: its type, no-fault default, command-line help and
    its check (``check(name, value, n_agents)`` raises a one-line error)."""

    name: str
    kind: type
    default: Any
    help: str
    check: Callable[[str, Any, int], None]
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Fault:
    """One network fault: the field that switches it on, the fields that only qualify it
    (moot while it is off), and its wrapper layer built from the scenario's values.

    Examples:
        >>> [f.switch.name for f in FAULTS]
        ['byzantine', 'crash', 'delay', 'loss']
    """

    switch: FaultField
    layer: Callable[[Mapping[str, Any]], Layer]
    qualifiers: tuple[FaultField, ...] = ()
    off: str = ""
    """Why a qualifier changes nothing while the fault is off (a warning's words)."""

    @property
    def fields(self) -> tuple[FaultField, ...]:
        """The switch, then its qualifiers."""
        return (self.switch, *self.qualifiers)


FAULTS: tuple[Fault, ...] = (
    Fault(
        FaultField(
            "byzantine", int, 0, "the last B agents send --attack lies, scored out (Byzantine)",
            _liars,
        ),
        lambda f: Layer(
            "Byzantine", lambda e: Byzantine(e, int(f["byzantine"]), f["attack"]), True, "",
            "lie", vector=lambda v: vector_form(Byzantine)(v, int(f["byzantine"]), f["attack"]),
        ),
        (FaultField("attack", str, "boost", "--byzantine's lie", _behaviour, BEHAVIOURS),),
        "there are no --byzantine agents",
    ),
    Fault(
        FaultField(
            "crash", float, 0.0,
            "probability an agent crashes at a step (AgentCrash; one-hop only)", _probability,
        ),
        lambda f: Layer(
            "AgentCrash", lambda e: AgentCrash(e, float(f["crash"]), float(f["recover"])),
            True, "", "crash",
            vector=lambda v: vector_form(AgentCrash)(v, float(f["crash"]), float(f["recover"])),
        ),
        (
            FaultField(
                "recover", float, 0.0,
                "probability a crashed agent comes back at a step (0: crash-stop)", _probability,
            ),
        ),
        "no agent can --crash",
    ),
    Fault(
        FaultField("delay", int, 0, "steps every peer message arrives late (MessageDelay)", _steps),
        lambda f: Layer(
            "MessageDelay", lambda e: MessageDelay(e, int(f["delay"])), True, "", "delay",
            vector=lambda v: vector_form(MessageDelay)(v, int(f["delay"])),
        ),
    ),
    Fault(
        FaultField(
            "loss", float, 0.0,
            "probability the network loses a delivered peer message (MessageLoss)", _probability,
        ),
        lambda f: Layer(
            "MessageLoss", lambda e: MessageLoss(e, float(f["loss"])), True, "", "lose",
            vector=lambda v: vector_form(MessageLoss)(v, float(f["loss"])),
        ),
    ),
)  # fmt: skip
"""The network's faults, innermost layer first: the one table the scenario's fields, the
command line's options, the checks, the warnings for moot options, the stack plan and the
fast path's refusals are read from. A new fault is one entry here (plus its
:class:`~fedbandit_env.scenario.scenario.Scenario` field, which a test keeps in step)."""

FAULT_DEFAULTS: dict[str, Any] = {x.name: x.default for f in FAULTS for x in f.fields}
"""Every fault field and its no-fault default."""

FAULT_SWITCHES: tuple[str, ...] = tuple(f.switch.name for f in FAULTS)
"""The fields that switch a fault on (the others only qualify one)."""


def has_faults(faults: Mapping[str, Any]) -> bool:
    """Whether any fault is switched on (``attack`` and ``recover`` only qualify others).

    Examples:
        >>> has_faults({"loss": 0.0, "delay": 0, "byzantine": 1}), has_faults({"loss": 0.0})
        (True, False)
    """
    return any(faults.get(k, FAULT_DEFAULTS[k]) for k in FAULT_SWITCHES)


def check_faults(faults: Mapping[str, Any], n_agents: int) -> None:
    """Refuse a fault field outside its range, in one line naming it.

    Examples:
        >>> check_faults({"byzantine": 3}, n_agents=3)
        Traceback (most recent call last):
        ...
        ValueError: byzantine must be < n_agents = 3, got 3
    """
    for fault in FAULTS:
        for x in fault.fields:
            x.check(x.name, faults.get(x.name, x.default), n_agents)


FAULT_QUALIFIERS: dict[str, tuple[str, str]] = {
    x.name: (f.switch.name, f.off) for f in FAULTS for x in f.qualifiers
}
"""Each qualifying field: the switch without which it changes nothing, and why."""


def fault_layers(faults: Mapping[str, Any]) -> list[Layer]:
    """The layers of the faults ``faults`` switches on, innermost first (see the module
    docstring); each draws from its own wrapper stream.

    Examples:
        >>> [x.name for x in fault_layers({"loss": 0.1, "byzantine": 1})]
        ['Byzantine', 'MessageLoss']
    """
    f = {**FAULT_DEFAULTS, **faults}
    return [fault.layer(f) for fault in FAULTS if f[fault.switch.name]]


def apply_faults(
    env: ParallelEnv[Any, Any, Any], faults: Mapping[str, Any]
) -> ParallelEnv[Any, Any, Any]:
    """``env`` under the faults ``faults`` switches on (see the module docstring); an env
    without messages has nothing to lose, delay or forge and is returned as it is.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = federated_mab_v0.parallel_env(horizon=5, message_dim=2)
        >>> type(apply_faults(env, {"delay": 1})).__name__
        'MessageDelay'
    """
    if not has_faults(faults):
        return env
    space = env.observation_space(env.possible_agents[0])
    if "mask" not in getattr(space, "spaces", {}):
        return env
    return StackPlan(tuple(fault_layers(faults))).build(env)


__all__ = [
    "FAULTS",
    "FAULT_DEFAULTS",
    "FAULT_QUALIFIERS",
    "FAULT_SWITCHES",
    "Fault",
    "FaultField",
    "apply_faults",
    "check_faults",
    "fault_layers",
    "has_faults",
]
