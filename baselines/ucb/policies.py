"""Index policies: a policy supplies an index per arm; the base class does the rest.

The base class keeps the agent's own counts and reward sums from its observations,
pulls every arm once (in order) as the papers' initialisation does, then plays the
arm of largest index, breaking ties uniformly at random with the policy's own seeded
generator.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from baselines.common.kernels import argmax_random_tie, first_unpulled, log_time
from baselines.ucb.kernels import kl_ucb_choice, kl_ucb_index, ucb1_index
from fedbandit_env.policies import AgentSpec, Policy
from fedbandit_env.type_aliases import FloatArray, Observation, SeedLike


class IndexPolicy(Policy):
    """Base of per-agent index policies (SMPyBandits' contract: start, choose, observe).

    Subclasses implement :meth:`index`, using ``self.counts``, ``self.sums`` and
    ``self.t`` (steps observed so far).

    Examples:
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
        return argmax_random_tie(self.choice_index(), self.rng)

    def choice_index(self) -> FloatArray:
        """What :meth:`act` takes the argmax of: :meth:`index`, unless a subclass has a
        cheaper array with the same largest value and the same ties.

        Examples:
            >>> pol = LocalUCB1()
            >>> pol.reset(AgentSpec(index=0, n_agents=1, n_arms=2, horizon=9), seed=0)
            >>> pol.counts[:], pol.sums[:], pol.t = [2.0, 3.0], [1.0, 2.0], 5
            >>> bool(np.all(pol.choice_index() == pol.index()))
            True
        """
        return self.index()

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

    Examples:
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


def kl_range(bounds: tuple[float, float]) -> tuple[float, float]:
    """KL-UCB's ``(lo, width)`` for rewards declared in ``bounds``: the Bernoulli ``kl``
    on the rescaled mean where the range is finite, else ``(0, 0)``: the Gaussian ``kl``.

    Examples:
        >>> kl_range((0.0, 2.0)), kl_range((-np.inf, np.inf))
        ((0.0, 2.0), (0.0, 0.0))
    """
    lo, hi = bounds
    if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
        return float(lo), float(hi - lo)
    return 0.0, 0.0


class LocalKLUCB(IndexPolicy):
    """KL-UCB on the agent's own rewards only (Garivier and Cappe 2011): no communication.

    Index: the largest ``q`` with ``n_k kl(xbar_k, q) <= log t + c log log t``
    (:func:`~baselines.ucb.kernels.kl_ucb_index`), ``t`` the agent's pulls so far. The
    Bernoulli ``kl`` on rewards rescaled from the range the env declares (the bound the
    paper proves for rewards in [0, 1]); the Gaussian ``kl`` of noise ``scale`` where
    the range is unbounded. ``c = 0`` is the paper's recommendation in practice (its
    experiments); its theorem takes ``c = 3``.

    Args:
        c: The ``log log t`` coefficient.
        scale: The noise scale of the Gaussian ``kl`` (unbounded rewards).

    Examples:
        >>> pol = LocalKLUCB()
        >>> pol.reset(AgentSpec(index=0, n_agents=2, n_arms=2, horizon=10,
        ...                     reward_bounds=(0.0, 1.0)), seed=0)
        >>> [pol.act({"arm": a, "reward": np.full(1, a), "step": np.full(1, s)})
        ...  for s, a in enumerate([0, 0, 1])]
        [0, 1, 1]
    """

    def __init__(self, c: float = 0.0, scale: float = 1.0) -> None:
        super().__init__()
        if not (c >= 0 and np.isfinite(c)):
            raise ValueError(f"c must be a finite number >= 0, got {c!r}")
        if not (scale > 0 and np.isfinite(scale)):
            raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
        self.c = float(c)
        self.scale = float(scale)
        self.lo, self.width = 0.0, 1.0

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Clear the statistics, reseed, and read the reward range."""
        super().reset(spec, seed)
        self.lo, self.width = kl_range(spec.reward_bounds)

    def index(self) -> FloatArray:
        """KL-UCB index of every arm."""
        return self._kl(kl_ucb_index)

    def choice_index(self) -> FloatArray:
        """The index where it can change the choice, a smaller value elsewhere
        (:func:`~baselines.ucb.kernels.kl_ucb_choice`): the same arm, ties included.

        Examples:
            >>> pol = LocalKLUCB()
            >>> pol.reset(AgentSpec(index=0, n_agents=1, n_arms=3, horizon=99,
            ...                     reward_bounds=(0.0, 1.0)), seed=0)
            >>> pol.counts[:], pol.sums[:], pol.t = [40.0, 5.0, 5.0], [30.0, 1.0, 1.0], 50
            >>> int(pol.choice_index().argmax()) == int(pol.index().argmax())
            True
        """
        return self._kl(kl_ucb_choice)

    def _kl(self, kernel: Any) -> FloatArray:
        """``kernel`` (the index or the choice) on the agent's statistics."""
        t, n = log_time(self.t), self.counts.size
        out: FloatArray = kernel(
            self.sums, self.counts, t, self.c, self.lo, self.width, self.scale, np.empty(n)
        )
        return out


class RandomPolicy(Policy):
    """Pulls a uniformly random arm every step: the regret ceiling.

    Examples:
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
