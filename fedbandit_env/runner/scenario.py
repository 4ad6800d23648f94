"""Scenarios: everything that defines a benchmark setting, as one frozen dataclass."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.network.graph import Network, make_network
from fedbandit_env.problems.mab import (
    MABProblem,
    NoiseKind,
    conflicting,
    homogeneous,
    zhu_synthetic,
)
from fedbandit_env.validation import check_int

InstanceKind = Literal["conflicting", "zhu", "homogeneous"]
INSTANCES: tuple[str, ...] = ("conflicting", "zhu", "homogeneous")


@dataclass(frozen=True)
class Scenario:
    """A federated MAB setting: problem generator, graph and horizon, all seeded.

    Attributes:
        n_agents: Agents ``N``.
        n_arms: Arms ``M``.
        instance: ``"conflicting"`` (:func:`~fedbandit_env.problems.conflicting`),
            ``"zhu"`` (:func:`~fedbandit_env.problems.zhu_synthetic`) or
            ``"homogeneous"``.
        conflict_fraction: Share of misled agents (conflicting instances).
        gap: Guaranteed global gap (conflicting instances).
        noise: Reward noise kind.
        sigma: Gaussian noise scale.
        graph: Graph kind, see :data:`~fedbandit_env.network.GRAPH_KINDS`.
        horizon: Steps ``T``.
        seed: Seed of the instance and of a random graph (not of the runs).

    Example:
        >>> s = Scenario(n_agents=4, n_arms=3, horizon=50)
        >>> env = s.make_env()
        >>> env.n_agents, env.horizon, s.network().n_edges
        (4, 50, 6)
    """

    n_agents: int = 10
    n_arms: int = 5
    instance: InstanceKind = "conflicting"
    conflict_fraction: float = 0.5
    gap: float = 0.1
    noise: NoiseKind = "bernoulli"
    sigma: float = 1.0
    graph: str = "complete"
    horizon: int = 5000
    seed: int = 0

    def __post_init__(self) -> None:
        for name, minimum in (("n_agents", 2), ("n_arms", 1), ("horizon", 1)):
            check_int(name, getattr(self, name), minimum)
        if self.instance not in INSTANCES:
            raise ValueError(f"instance must be one of {INSTANCES}, got {self.instance!r}")

    def problem(self) -> MABProblem:
        """Build the (seeded) reward model."""
        if self.instance == "conflicting":
            return conflicting(
                self.n_agents,
                self.n_arms,
                self.conflict_fraction,
                self.gap,
                self.seed,
                self.noise,
                self.sigma,
            )
        if self.instance == "zhu":
            return zhu_synthetic(self.n_agents, self.n_arms, self.seed, self.noise, self.sigma)
        if self.instance == "homogeneous":
            return homogeneous(self.n_agents, self.n_arms, self.seed, self.noise, self.sigma)
        raise ValueError(f"instance must be one of {INSTANCES}, got {self.instance!r}")

    def network(self) -> Network:
        """Build the (seeded) communication graph."""
        return make_network(self.graph, self.n_agents, seed=self.seed)

    def make_env(self, message_dim: int = 0, **kwargs: Any) -> FederatedMABEnv:
        """Build the env, carrying messages of length ``message_dim``."""
        return FederatedMABEnv(
            self.problem(), self.network(), horizon=self.horizon, message_dim=message_dim, **kwargs
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return asdict(self)
