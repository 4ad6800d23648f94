"""Instance kinds as a table of named builders (``Scenario.instance``, ``--instance``).

Each row (:class:`InstanceSpec`) says how a scenario's fields become a problem: a fixed
instance from the scenario's seed, drawn instances (a
:class:`~fedbandit_env.problems.ProblemDistribution`, for ``instances="train"`` or
``"held_out"``), whether it is a linear contextual problem, and its own validation. The
package's six kinds are registered here; a family or a user adds one with
:func:`register_instance` (from its own folder, in its registration function), and a
problem object of one's own becomes a kind with :func:`custom_instance`, so a scenario
runs the references on it without touching the core.

Examples:
    >>> {"conflicting", "zhu", "homogeneous", "diabetes", "dubey"} <= set(instance_names())
    True
    >>> instance_names(linear=True)
    ('dubey', 'diabetes_linear')
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbandit_env.problems.distribution import ProblemDistribution

if TYPE_CHECKING:
    from fedbandit_env.scenario.scenario import Scenario

Builder = Callable[["Scenario", Any], Any]
"""``(scenario, seed) -> problem``: ``seed`` an int (a fixed instance) or, for a linear
kind's drawn instances, the env's ``Generator``."""


@dataclass(frozen=True)
class InstanceSpec:
    """One instance kind.

    Attributes:
        name: What ``Scenario(instance=...)`` and ``--instance`` take.
        fixed: ``(scenario, seed) -> problem`` (see :data:`Builder`).
        distribution: ``scenario -> ProblemDistribution`` of a multi-armed kind's drawn
            instances (``None``: every draw is ``fixed`` with the draw's seed).
        linear: A linear contextual problem (``federated_linear_v0``).
        check: ``scenario -> {field: value}``: the kind's own validation, returning the
            fields it fixes (``dim`` of the diabetes records); raises ``ValueError``.
        description: One line for listings.

    Examples:
        >>> from fedbandit_env.problems import MABProblem
        >>> spec = InstanceSpec("two", lambda s, seed: MABProblem([[0.2, 0.8], [0.6, 0.4]]))
        >>> spec.linear, spec.fixed(None, 0).n_agents
        (False, 2)
    """

    name: str
    fixed: Builder
    distribution: Callable[[Scenario], ProblemDistribution] | None = None
    linear: bool = False
    check: Callable[[Scenario], dict[str, Any]] | None = None
    description: str = ""


_KINDS: dict[str, InstanceSpec] = {}


def register_instance(spec: InstanceSpec) -> InstanceSpec:
    """Add (or replace) an instance kind.

    Examples:
        >>> from fedbandit_env.problems import MABProblem
        >>> pair = InstanceSpec("pair", lambda s, seed: MABProblem([[0.1, 0.9]] * 2))
        >>> _ = register_instance(pair)
        >>> "pair" in instance_names()
        True
        >>> deregister_instance("pair")
    """
    if not isinstance(spec, InstanceSpec):
        raise TypeError(f"register_instance takes an InstanceSpec, got {type(spec).__name__}")
    _KINDS[spec.name] = spec
    _cached_distribution.cache_clear()
    return spec


def deregister_instance(name: str) -> None:
    """Remove an instance kind (tests, notebooks)."""
    if name not in _KINDS:
        raise ValueError(f"instance {name!r} is not registered")
    del _KINDS[name]
    _cached_distribution.cache_clear()


def instance_kinds() -> dict[str, InstanceSpec]:
    """Every instance kind (the plugins' too), in registration order."""
    from fedbandit_env.registry import policy_ids

    policy_ids()  # loads the plugins, which may register instance kinds
    return dict(_KINDS)


def instance_names(linear: bool | None = None) -> tuple[str, ...]:
    """The kinds' names (``linear``: only the linear, or only the multi-armed, ones)."""
    return tuple(k for k, s in instance_kinds().items() if linear is None or s.linear == linear)


def instance_spec(name: str) -> InstanceSpec:
    """The kind named ``name``, or a ``ValueError`` listing the known ones."""
    kinds = instance_kinds()
    if name not in kinds:
        raise ValueError(f"instance must be one of {tuple(kinds)}, got {name!r}")
    return kinds[name]


def custom_instance(problem: Any, name: str) -> str:
    """Register one's own problem (a ``MABProblem``, a ``LinearProblem``, or a
    ``ProblemDistribution`` for drawn instances) as the instance kind ``name``; returns
    ``name``, for ``Scenario(instance=...)``. Sweep workers in other processes know it
    only if the module that registers it is imported there too (``--import``).

    Examples:
        >>> from fedbandit_env.problems import MABProblem
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> mine = MABProblem([[0.1, 0.9, 0.5], [0.8, 0.2, 0.5]])
        >>> s = Scenario(n_agents=2, n_arms=3, horizon=10, instance=custom_instance(mine, "mine"))
        >>> s.problem() is mine
        True
        >>> deregister_instance("mine")
    """
    from fedbandit_env.problems.linear import LinearProblem

    if isinstance(problem, ProblemDistribution):
        dist = problem
        spec = InstanceSpec(
            name,
            lambda s, seed: dist.sample(np.random.SeedSequence(seed)),
            lambda s: dist,
            description=f"{dist.name} (a user's distribution)",
        )
    elif isinstance(problem, LinearProblem):
        spec = InstanceSpec(name, lambda s, seed: problem, linear=True, description="a user's")
    elif hasattr(problem, "local_means") and hasattr(problem, "global_means"):
        spec = InstanceSpec(name, lambda s, seed: problem, description="a user's problem")
    else:
        raise TypeError(
            "custom_instance takes a MABProblem, a LinearProblem or a ProblemDistribution, "
            f"got {type(problem).__name__}"
        )

    def check(s: Scenario) -> dict[str, Any]:
        n, m = _shape(problem)
        if (s.n_agents, s.n_arms) != (n, m):
            raise ValueError(
                f"instance {name!r} has {n} agents and {m} arms, the scenario "
                f"n_agents={s.n_agents}, n_arms={s.n_arms}"
            )
        return {}

    return register_instance(
        InstanceSpec(spec.name, spec.fixed, spec.distribution, spec.linear, check, spec.description)
    ).name


def _shape(problem: Any) -> tuple[int, int]:
    if isinstance(problem, ProblemDistribution):
        probe = problem.sample(np.random.SeedSequence(0))
        return int(probe.n_agents), int(probe.n_arms)
    if hasattr(problem, "set_size"):  # linear: arms are the decision-set size
        return int(problem.n_agents), int(problem.set_size)
    return int(problem.n_agents), int(problem.n_arms)


def drawn(scenario: Scenario) -> ProblemDistribution:
    """The distribution of a multi-armed scenario's drawn instances, cached (building one
    draws a probe instance; the fast path asks at every trial)."""
    return _cached_distribution(scenario)


@functools.lru_cache(maxsize=64)
def _cached_distribution(scenario: Scenario) -> ProblemDistribution:
    spec = instance_spec(scenario.instance)
    if spec.distribution is None:
        return ProblemDistribution(
            lambda rng: spec.fixed(scenario, int(rng.integers(2**31))),
            f"{spec.name}(N={scenario.n_agents},M={scenario.n_arms})",
        )
    return spec.distribution(scenario)


# ------------------------------------------------------------------ the package's kinds
def _conflicting(s: Scenario, seed: Any) -> Any:
    from fedbandit_env.problems.mab import conflicting

    return conflicting(s.n_agents, s.n_arms, s.conflict_fraction, s.gap, seed, s.noise, s.sigma)


def _biased(s: Scenario, seed: Any) -> Any:
    from fedbandit_env.problems.mab import biased

    return biased(s.n_agents, s.n_arms, s.gap, seed, s.noise, s.sigma)


def _zhu(s: Scenario, seed: Any) -> Any:
    from fedbandit_env.problems.mab import zhu_synthetic

    return zhu_synthetic(s.n_agents, s.n_arms, seed, s.noise, s.sigma)


def _homogeneous(s: Scenario, seed: Any) -> Any:
    from fedbandit_env.problems.mab import homogeneous

    return homogeneous(s.n_agents, s.n_arms, seed, s.noise, s.sigma)


def _diabetes(s: Scenario, seed: Any) -> Any:
    from fedbandit_env.problems.diabetes import diabetes

    return diabetes(s.n_agents)


def _diabetes_drawn(s: Scenario) -> ProblemDistribution:
    from fedbandit_env.problems.diabetes import diabetes

    n = s.n_agents
    return ProblemDistribution(  # random hospital splits of the records
        lambda rng: diabetes(n, split="random", seed=int(rng.integers(2**31))),
        f"diabetes(N={n})",
        {"split": "random"},
    )


def _check_diabetes(s: Scenario) -> dict[str, Any]:
    if s.n_arms != 5 or s.noise != "bernoulli":
        raise ValueError(
            "the diabetes instance has 5 arms (Zhu et al.'s medication groups) and Bernoulli "
            f"rewards (readmission), got n_arms={s.n_arms}, noise={s.noise!r}"
        )
    return {}


def _dubey(s: Scenario, seed: Any) -> Any:
    from fedbandit_env.problems.linear import dubey_synthetic

    return dubey_synthetic(
        s.n_agents,
        s.dim,
        s.n_arms,
        seed,
        noise=s.noise,  # type: ignore[arg-type]
        sigma=s.sigma,
        heterogeneity=s.heterogeneity,
    )


def _diabetes_linear(s: Scenario, seed: Any) -> Any:
    from fedbandit_env.problems.diabetes import diabetes_linear

    if isinstance(seed, np.random.Generator):  # drawn instances: other hospitals, patients
        return diabetes_linear(s.n_agents, seed=int(seed.integers(2**31)), split="random")
    return diabetes_linear(s.n_agents, seed=seed)


def _check_diabetes_linear(s: Scenario) -> dict[str, Any]:
    from fedbandit_env.problems.diabetes import DIABETES_DIM

    if s.dim not in (0, DIABETES_DIM) or s.n_arms != 5 or s.noise != "bernoulli":
        raise ValueError(
            f"the diabetes_linear instance has dim {DIABETES_DIM}, decision sets of 5 "
            f"(the medications) and Bernoulli rewards, got dim={s.dim}, "
            f"n_arms={s.n_arms}, noise={s.noise!r}"
        )
    return {"dim": DIABETES_DIM}


def _conflicting_drawn(s: Scenario) -> ProblemDistribution:
    return ProblemDistribution.conflicting(
        s.n_agents, s.n_arms, s.conflict_fraction, s.gap, s.noise, s.sigma
    )


for _spec in (
    InstanceSpec(
        "conflicting",
        _conflicting,
        _conflicting_drawn,
        description="a share of agents locally misled (conflict_fraction, gap)",
    ),
    InstanceSpec(
        "biased",
        _biased,
        lambda s: ProblemDistribution.biased(s.n_agents, s.n_arms, s.gap, s.noise, s.sigma),
        description="global means plus zero-sum agent biases (the learning default: no "
        "one-agent shortcut)",
    ),
    InstanceSpec(
        "zhu",
        _zhu,
        lambda s: ProblemDistribution.zhu(s.n_agents, s.n_arms, s.noise, s.sigma),
        description="Zhu et al.'s synthetic instance",
    ),
    InstanceSpec(
        "homogeneous",
        _homogeneous,
        lambda s: ProblemDistribution.homogeneous(s.n_agents, s.n_arms, s.noise, s.sigma),
        description="every agent sees the global means",
    ),
    InstanceSpec(
        "diabetes",
        _diabetes,
        _diabetes_drawn,
        check=_check_diabetes,
        description="Zhu et al.'s hospital records (UCI diabetes), 5 arms",
    ),
    InstanceSpec(
        "dubey",
        _dubey,
        linear=True,
        description="Dubey & Pentland's synthetic linear contextual problem",
    ),
    InstanceSpec(
        "diabetes_linear",
        _diabetes_linear,
        linear=True,
        check=_check_diabetes_linear,
        description="the hospital records as a linear contextual problem (d = 40)",
    ),
):
    register_instance(_spec)


__all__ = [
    "Builder",
    "InstanceSpec",
    "custom_instance",
    "deregister_instance",
    "drawn",
    "instance_kinds",
    "instance_names",
    "instance_spec",
    "register_instance",
]
