"""A user's own policy, registered in two lines and benchmarked beside the references.

Run it (from the repository root) with::

    fedbandit bench --import examples/my_policy.py --policies eps_greedy,local_ucb,gossip_ucb

or go through a sweep the same way (``fedbandit sweep --import examples/my_policy.py
...``); ``fedbandit list --import examples/my_policy.py`` shows it in the registry. An
installed package would name a registration function in its ``pyproject.toml``
instead (entry point group ``fedbandit_env.policies``).
"""

from __future__ import annotations

import numpy as np

from fedbandit_env import registry
from fedbandit_env.policies import AgentSpec, Policy
from fedbandit_env.type_aliases import Observation, SeedLike


class EpsilonGreedy(Policy):
    """Greedy on the agent's own empirical means, a uniformly random arm with
    probability ``epsilon`` (no communication).

    Args:
        epsilon: Exploration probability, in ``[0, 1]``.

    Examples:
        >>> pol = EpsilonGreedy(epsilon=0.0)
        >>> pol.reset(AgentSpec(index=0, n_agents=2, n_arms=3, horizon=5), seed=0)
        >>> pol.act({"arm": 0, "reward": np.zeros(1), "step": np.zeros(1)})
        0
    """

    def __init__(self, epsilon: float = 0.1) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.rng = np.random.default_rng()
        self.counts = np.zeros(0)
        self.sums = np.zeros(0)

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Forget the statistics; the seed is this agent's own stream."""
        self.rng = np.random.default_rng(seed)
        self.counts = np.zeros(spec.n_arms)
        self.sums = np.zeros(spec.n_arms)

    def act(self, observation: Observation) -> int:
        """Absorb the last reward, then explore or exploit."""
        if observation["step"][0] > 0:
            arm = int(observation["arm"])
            self.counts[arm] += 1.0
            self.sums[arm] += float(observation["reward"][0])
        unpulled = np.flatnonzero(self.counts == 0)
        if unpulled.size:
            return int(unpulled[0])
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.counts.size))
        return int(np.argmax(self.sums / self.counts))


# The two lines: register, then use the id anywhere a reference policy's id goes.
registry.register("eps_greedy", EpsilonGreedy, description="epsilon-greedy, no communication")
