"""Distributions of problems: an env that draws a fresh instance at every reset.

A learned policy trained on one instance memorises it (which arm is best for whom);
trained on a *distribution* of instances it has to learn a bandit strategy. A
:class:`ProblemDistribution` wraps a sampler ``rng -> MABProblem`` (the generators of
:mod:`fedbandit_env.problems.mab`, or any user callable); every draw must have the same
shape (agents, arms) and reward range, so that the env's spaces do not change.

Where the instance of an episode comes from (:func:`fedbandit_env.seeding.instance_seed`):
``env.reset(seed=s)`` draws it from the stream with spawn key ``(4, split)`` under
``s``, where ``split`` is ``0`` for **train** instances and ``1`` for **held-out** ones.
The two sets of instance seeds are therefore disjoint by construction, whatever
episode seeds training and evaluation use: a policy evaluated with
``split="held_out"`` never sees an instance seed it was trained on. (The instances are
i.i.d. draws of the same distribution; with continuous means two draws coincide with
probability zero.)

Examples:
    >>> dist = ProblemDistribution.conflicting(n_agents=4, n_arms=3)
    >>> a, b = dist.sample(instance_seed(0, "train")), dist.sample(instance_seed(1, "train"))
    >>> a.local_means.shape, bool((a.local_means != b.local_means).any())
    ((4, 3), True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedbandit_env.problems.mab import (
    MABProblem,
    NoiseKind,
    biased,
    conflicting,
    homogeneous,
    zhu_synthetic,
)
from fedbandit_env.seeding import instance_seed
from fedbandit_env.type_aliases import SeedLike

Sampler = Callable[[np.random.Generator], MABProblem]
"""``rng -> MABProblem``: one instance from the generator's draws."""


def _seed(rng: np.random.Generator) -> np.random.SeedSequence:
    """A generator's next draw as the seed of a built-in instance generator."""
    return np.random.SeedSequence(int(rng.integers(2**63)))


@dataclass(frozen=True)
class ProblemDistribution:
    """A distribution over :class:`MABProblem` instances of one shape.

    Args:
        sampler: ``rng -> MABProblem``.
        name: Label for results and saved models (e.g. ``"conflicting(N=10,M=5)"``).
        params: The generator's parameters (recorded with results).

    The first draw (from a fixed seed) fixes the shape and reward range; a later draw
    that differs raises ``ValueError``.

    Examples:
        >>> dist = ProblemDistribution(lambda rng: MABProblem(rng.random((2, 3))), "uniform")
        >>> dist.n_agents, dist.n_arms, dist.reward_bounds
        (2, 3, (0.0, 1.0))
    """

    sampler: Sampler
    name: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not callable(self.sampler):
            raise TypeError(f"sampler must be a callable rng -> MABProblem, got {self.sampler!r}")
        probe = self._draw(np.random.default_rng(0))
        object.__setattr__(self, "_probe", probe)

    def _draw(self, rng: np.random.Generator) -> MABProblem:
        problem = self.sampler(rng)
        if not isinstance(problem, MABProblem):
            raise TypeError(
                f"sampler of {self.name!r} must return a MABProblem, got {type(problem).__name__}"
            )
        return problem

    @property
    def n_agents(self) -> int:
        """Agents of every instance."""
        return int(self._probe.n_agents)  # type: ignore[attr-defined]

    @property
    def n_arms(self) -> int:
        """Arms of every instance."""
        return int(self._probe.n_arms)  # type: ignore[attr-defined]

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """Reward range of every instance."""
        bounds: tuple[float, float] = self._probe.reward_bounds  # type: ignore[attr-defined]
        return bounds

    def check(self, problem: MABProblem) -> MABProblem:
        """``problem`` if it has this distribution's shape and reward range, else an error.

        Examples:
            >>> dist = ProblemDistribution.homogeneous(3, 2)
            >>> dist.check(MABProblem(np.zeros((3, 4))))  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: a problem of 'homogeneous(N=3,M=2)' must have 3 agents, 2 arms ...
        """
        if not isinstance(problem, MABProblem):
            raise TypeError(f"expected a MABProblem, got {type(problem).__name__}")
        shape = (problem.n_agents, problem.n_arms, problem.reward_bounds)
        if shape != (self.n_agents, self.n_arms, self.reward_bounds):
            raise ValueError(
                f"a problem of {self.name!r} must have {self.n_agents} agents, {self.n_arms} "
                f"arms and rewards in {self.reward_bounds}; got {shape[0]}, {shape[1]}, {shape[2]}"
            )
        return problem

    def sample(self, seed: SeedLike) -> MABProblem:
        """The instance of ``seed`` (an ``instance_seed``, an int, or a generator's seed).

        Examples:
            >>> dist = ProblemDistribution.zhu(3, 4)
            >>> bool((dist.sample(5).local_means == dist.sample(5).local_means).all())
            True
        """
        return self.check(self._draw(np.random.default_rng(seed)))

    # ------------------------------------------------------------- the generators
    @classmethod
    def conflicting(
        cls,
        n_agents: int,
        n_arms: int,
        conflict_fraction: float = 0.5,
        gap: float = 0.1,
        noise: NoiseKind = "bernoulli",
        sigma: float = 1.0,
    ) -> ProblemDistribution:
        """Random instances where ``conflict_fraction`` of the agents are misled
        (:func:`~fedbandit_env.problems.conflicting` with a fresh seed each draw)."""

        def sampler(rng: np.random.Generator) -> MABProblem:
            return conflicting(n_agents, n_arms, conflict_fraction, gap, _seed(rng), noise, sigma)

        params: dict[str, Any] = {"n_agents": n_agents, "n_arms": n_arms, "gap": gap}
        params |= {"conflict_fraction": conflict_fraction, "noise": noise, "sigma": sigma}
        return cls(sampler, f"conflicting(N={n_agents},M={n_arms})", params)

    @classmethod
    def zhu(
        cls, n_agents: int, n_arms: int, noise: NoiseKind = "bernoulli", sigma: float = 1.0
    ) -> ProblemDistribution:
        """Zhu et al.'s synthetic instances (:func:`~fedbandit_env.problems.zhu_synthetic`)."""

        def sampler(rng: np.random.Generator) -> MABProblem:
            return zhu_synthetic(n_agents, n_arms, _seed(rng), noise, sigma)

        params = {"n_agents": n_agents, "n_arms": n_arms, "noise": noise, "sigma": sigma}
        return cls(sampler, f"zhu(N={n_agents},M={n_arms})", params)

    @classmethod
    def biased(
        cls,
        n_agents: int,
        n_arms: int,
        gap: float = 0.1,
        noise: NoiseKind = "bernoulli",
        sigma: float = 1.0,
    ) -> ProblemDistribution:
        """Global means plus zero-sum agent biases of a random spread
        (:func:`~fedbandit_env.problems.biased`): the learning default, where no
        single-agent rule knows more than its local best arm.

        Examples:
            >>> ProblemDistribution.biased(4, 3).name
            'biased(N=4,M=3)'
        """

        def sampler(rng: np.random.Generator) -> MABProblem:
            return biased(n_agents, n_arms, gap, _seed(rng), noise, sigma)

        params = {"n_agents": n_agents, "n_arms": n_arms, "gap": gap, "noise": noise,
                  "sigma": sigma}  # fmt: skip
        return cls(sampler, f"biased(N={n_agents},M={n_arms})", params)

    @classmethod
    def homogeneous(
        cls, n_agents: int, n_arms: int, noise: NoiseKind = "bernoulli", sigma: float = 1.0
    ) -> ProblemDistribution:
        """Instances where every agent sees the same means
        (:func:`~fedbandit_env.problems.homogeneous`)."""

        def sampler(rng: np.random.Generator) -> MABProblem:
            return homogeneous(n_agents, n_arms, _seed(rng), noise, sigma)

        params = {"n_agents": n_agents, "n_arms": n_arms, "noise": noise, "sigma": sigma}
        return cls(sampler, f"homogeneous(N={n_agents},M={n_arms})", params)


def draw_instance(
    distribution: ProblemDistribution, seed: int | None, split: str, master: np.random.Generator
) -> tuple[MABProblem, int]:
    """The instance an env draws at ``reset(seed)`` and its id (an int naming its seed).

    With a seed: the instance seed of ``split`` under it (:func:`instance_seed`). Without
    one: the env master generator's next child (keys one entry long, distinct from
    every two-entry key of the seeding table).

    Examples:
        >>> dist = ProblemDistribution.zhu(3, 2)
        >>> p, i = draw_instance(dist, 5, "train", np.random.default_rng(0))
        >>> i == int(instance_seed(5).generate_state(1)[0])
        True
    """
    if seed is not None:
        ss = instance_seed(seed, split)
    else:
        ss = master.bit_generator.seed_seq.spawn(1)[0]  # type: ignore[attr-defined]
    return distribution.sample(ss), int(ss.generate_state(1)[0])


def check_pinned(
    pinned: Any, distribution: ProblemDistribution | None, current: MABProblem
) -> MABProblem:
    """A problem pinned by ``reset(options={"problem": p})``: checked against the
    distribution, or against the env's current problem's shape and reward range.

    Examples:
        >>> current = MABProblem(np.zeros((2, 3)))
        >>> check_pinned(MABProblem(np.ones((2, 3)) / 2), None, current).n_arms
        3
    """
    if distribution is not None:
        return distribution.check(pinned)
    if (
        not isinstance(pinned, MABProblem)
        or pinned.reward_bounds != current.reward_bounds
        or (pinned.n_agents, pinned.n_arms) != (current.n_agents, current.n_arms)
    ):
        raise ValueError(
            f"options['problem'] must be a MABProblem with {current.n_agents} agents, "
            f"{current.n_arms} arms and rewards in {current.reward_bounds}"
        )
    return pinned


__all__ = ["ProblemDistribution", "Sampler", "check_pinned", "draw_instance", "instance_seed"]
