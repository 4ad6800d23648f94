"""One validation of a :class:`~fedbandit_env.scenario.scenario.Scenario`, for both paths.

``Scenario.__post_init__`` calls :func:`check_scenario`, so every option is checked once,
where the scenario is built, before anything runs: the PettingZoo path and the fast path
(which builds no env and skips the env's own checks) see the same refusals. Each error
is one line naming the option, its value and what is allowed.

Examples:
    >>> from fedbandit_env.scenario.scenario import Scenario
    >>> Scenario(link_costs=(-5.0, 1.0))
    Traceback (most recent call last):
    ...
    ValueError: link_costs must be two finite numbers >= 0 (c1, c2), got (-5.0, 1.0)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fedbandit_env.network.graph import check_graph
from fedbandit_env.privacy.mechanisms import NOISES, clip_range
from fedbandit_env.problems.mab import NOISE_KINDS
from fedbandit_env.protocols import PROTOCOLS, protocol_name
from fedbandit_env.scenario.faults import FAULT_DEFAULTS, check_faults
from fedbandit_env.seeding import SPLITS
from fedbandit_env.settings import get_setting
from fedbandit_env.validation import check_int, check_memory, trial_bytes
from fedbandit_env.wrappers.base import check_probability

if TYPE_CHECKING:
    from fedbandit_env.scenario.scenario import Scenario

ESTIMATORS = ("dyadic", "honaker")
"""The tree mechanism's estimators."""
LINEAR_SETTINGS: tuple[str | None, ...] = (None, "local", "sync")
"""The information settings of linear scenarios (``PrivateRewards`` is per-arm: the
``+private`` ones are multi-armed only; the linear family privatises what it sends)."""
INSTANCE_SPLITS: tuple[str, ...] = ("fixed", *SPLITS)
"""``fixed`` (one instance for every trial), or the instance seeds each trial draws from."""


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def _choice(name: str, value: Any, allowed: tuple[str, ...] | list[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")


def check_scenario(s: Scenario) -> dict[str, Any]:
    """Check every field of ``s``; return the normalised values to set on it
    (``components`` as a tuple of ints, ``clip`` as a checked pair).

    Raises:
        ValueError: For a value out of range or an unknown name, naming the field.
        TypeError: For a value of the wrong type, naming the field.
    """
    from fedbandit_env.scenario.instances import instance_names, instance_spec

    fixed: dict[str, Any] = {}
    for name, minimum in (("n_agents", 2), ("n_arms", 1), ("horizon", 1), ("seed", 0)):
        check_int(name, getattr(s, name), minimum)
    check_memory(
        trial_bytes(s.n_agents, s.n_arms),
        f"a trial of N={s.n_agents} agents and M={s.n_arms} arms",
        "lower n_agents (--agents) or n_arms (--arms)",
    )
    _choice("instance", s.instance, instance_names())
    _choice("noise", s.noise, NOISE_KINDS)
    protocol = protocol_name(s.protocol)  # a former name: read as the new one (it warns once)
    if protocol != s.protocol:
        fixed["protocol"] = protocol
    _choice("protocol", protocol, list(PROTOCOLS))
    _choice("estimator", s.estimator, ESTIMATORS)
    _choice("privacy_noise", s.privacy_noise, NOISES)
    _choice("instances", s.instances, INSTANCE_SPLITS)
    sigma = _number("sigma", s.sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {s.sigma!r}")
    check_probability("conflict_fraction", s.conflict_fraction)
    gap = _number("gap", s.gap)
    if not 0.0 < gap < 1.0:
        raise ValueError(f"gap must lie in (0, 1), got {s.gap!r}")
    if s.graph_p is not None:
        check_probability("graph_p", s.graph_p)
    costs = tuple(s.link_costs)
    if len(costs) != 2 or not all(
        not isinstance(c, bool) and isinstance(c, int | float) and math.isfinite(c) and c >= 0
        for c in costs
    ):
        raise ValueError(
            f"link_costs must be two finite numbers >= 0 (c1, c2), got {tuple(s.link_costs)!r}"
        )
    if s.components is not None:
        comps = tuple(check_int("components", c, 1) for c in s.components)
        if sum(comps) != s.n_agents:
            raise ValueError(
                f"components {comps} hold {sum(comps)} agents, but n_agents={s.n_agents}"
            )
        fixed["components"] = comps
    if "components" in fixed:  # components of 1 and 2 agents are a lone agent and an edge
        sizes = sorted({n for n in fixed["components"] if n > 2}) or [None]
    else:
        sizes = [s.n_agents]
    for n in sizes:
        check_graph(s.graph, n)
    if s.clip is not None:
        fixed["clip"] = clip_range(s.clip, (0.0, 1.0), "Scenario")
    if s.epsilon is not None:
        eps = _number("epsilon", s.epsilon)
        if not eps > 0:
            raise ValueError(f"epsilon must be > 0 (inf for no privacy), got {s.epsilon!r}")
    if s.setting is not None:
        info = get_setting(s.setting)
        if info.private and s.epsilon is None:
            raise ValueError(f"setting {s.setting!r} needs an epsilon > 0, got None")
    check_faults({k: getattr(s, k) for k in FAULT_DEFAULTS}, s.n_agents)
    spec = instance_spec(s.instance)
    if spec.check is not None:  # the kind's own rules (beside its builders)
        fixed.update(spec.check(s))
    if spec.linear:
        check_int("dim", fixed.get("dim", s.dim), 2)
        if s.noise not in ("bernoulli", "gaussian"):
            raise ValueError(
                f"linear instances take noise 'bernoulli' or 'gaussian', got {s.noise!r}"
            )
        if s.setting not in LINEAR_SETTINGS:
            raise ValueError(
                f"a linear scenario runs in the settings {LINEAR_SETTINGS[1:]} (or none), "
                f"got setting={s.setting!r}"
            )
    elif s.dim or s.heterogeneity:
        raise ValueError(
            f"dim and heterogeneity apply to linear instances {instance_names(linear=True)}, "
            f"not {s.instance!r}"
        )
    return fixed


__all__ = ["ESTIMATORS", "check_scenario"]
