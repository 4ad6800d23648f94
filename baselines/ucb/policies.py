"""Index policies: a policy supplies an index per arm; the base class does the rest.

The base class keeps the agent's own counts and reward sums from its observations,
pulls every arm once (in order) as the papers' initialisation does, then plays the
arm of largest index, breaking ties uniformly at random with the policy's own seeded
generator.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from baselines.common.kernels import argmax_random_tie, first_unpulled, log_time
from baselines.ucb.kernels import ucb1_index
from fedbandit_env.policies import AgentSpec, Policy
from fedbandit_env.type_aliases import FloatArray, Observation, SeedLike


class IndexPolicy(Policy):
    """Base of per-agent index policies (SMPyBandits' contract: start, choose, observe).

    Subclasses implement :meth:`index`, using ``self.counts``, ``self.sums`` and
    ``self.t`` (steps observed so far).

    Example:
        >>> class Greedy(IndexPolicy):
        ...     def index(self): return self.means
        >>> pol = Greedy()
        >>> pol.reset(AgentSpec(index=0, n_agents=2, n_arms=2, horizon=10), seed=0)
        >>> pol.act({"arm": 0, "reward": np.zeros(1), "step": np.zeros(1)})
        0
        >>> pol.act({"arm": 0, "reward": np.zeros(1), "step": np.ones(1)})
        1
    """

    def __init__(self) -> None:
        self.spec: AgentSpec | None = None
        self.rng = np.random.default_rng()
        self.counts: FloatArray = np.zeros(0)
        self.sums: FloatArray = np.zeros(0)
        self.t = 0

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Clear the statistics and reseed."""
        self.spec = spec
        self.rng = np.random.default_rng(seed)
        self.counts = np.zeros(spec.n_arms)
        self.sums = np.zeros(spec.n_arms)
        self.t = 0

    @property
    def means(self) -> FloatArray:
        """Empirical mean of the agent's own rewards per arm (0 where unpulled)."""
        return np.divide(
            self.sums, self.counts, out=np.zeros_like(self.sums), where=self.counts > 0
        )

    def observe(self, arm: int, reward: float) -> None:
        """Record one pull of ``arm`` with ``reward``."""
        self.counts[arm] += 1.0
        self.sums[arm] += reward
        self.t += 1

    def act(self, observation: Observation) -> int:
        """Absorb the last pull (if any), then choose the next arm."""
        if observation["step"][0] > 0:
            self.observe(int(observation["arm"]), float(observation["reward"][0]))
        first = first_unpulled(self.counts)
        if first >= 0:
            return int(first)
        return argmax_random_tie(self.index(), self.rng)

    @abstractmethod
    def index(self) -> FloatArray:
        """The index of every arm; the largest is pulled."""


class LocalUCB1(IndexPolicy):
    """UCB1 on the agent's own rewards only: no communication.

    Index ``xbar_k + scale * sqrt(2 log t / n_k)``.  On a heterogeneous problem it
    converges to the agent's *locally* best arm, so an agent misled by its local data
    suffers linear regret against the global means: the baseline federated algorithms
    must beat.

    Args:
        scale: Multiplier of the bonus (1 is UCB1 for rewards in [0, 1]; use the noise
            standard deviation for sub-Gaussian rewards).

    Example:
        >>> pol = LocalUCB1()
        >>> pol.reset(AgentSpec(index=0, n_agents=2, n_arms=3, horizon=10), seed=0)
        >>> [pol.act({"arm": a, "reward": np.ones(1), "step": np.full(1, s)})
        ...  for s, a in enumerate([0, 0, 1])]
        [0, 1, 2]
    """

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        if not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale!r}")
        self.scale = float(scale)

    def index(self) -> FloatArray:
        """UCB1 index of every arm (:func:`baselines.ucb.kernels.ucb1_index`)."""
        return ucb1_index(
            self.sums, self.counts, log_time(self.t), self.scale, np.empty(self.counts.size)
        )


class RandomPolicy(Policy):
    """Pulls a uniformly random arm every step: the regret ceiling.

    Example:
        >>> pol = RandomPolicy()
        >>> pol.reset(AgentSpec(index=0, n_agents=2, n_arms=3, horizon=10), seed=1)
        >>> 0 <= pol.act({"arm": 0, "reward": np.zeros(1), "step": np.zeros(1)}) < 3
        True
    """

    def __init__(self) -> None:
        self.rng = np.random.default_rng()
        self.n_arms = 1

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Reseed."""
        self.rng = np.random.default_rng(seed)
        self.n_arms = spec.n_arms

    def act(self, observation: Observation) -> int:
        """A uniformly random arm."""
        return int(self.rng.integers(self.n_arms))
