"""The pooled oracle of the linear family: one OFUL over every agent's data.

A central controller reads every agent's chosen vector and reward at every step (no
communication cost, no privacy) and keeps one ``V = lambda I + sum_i sum_t x x^T``:
the pooled reference of every federated linear table, as ``oracle_ucb`` is for the
multi-armed ones. Each agent still chooses from its *own* decision set with the pooled estimate.
Reading chosen: the step's pairs are added in agent order before anyone chooses again,
and the confidence width is OFUL's for the pooled ``V`` (one learner, ``M = 1``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from baselines.linear.policies import LinUCB
from fedbandit_env.policies import AgentSpec, Team
from fedbandit_env.type_aliases import Action, AgentID, Observation, SeedLike


class PooledLinUCB(Team):
    """Centralized OFUL on every agent's data; each agent picks from its own set.

    Args:
        **kwargs: :class:`~baselines.linear.LinUCB`'s options (``regularizer``,
            ``sigma``, ``alpha``, ``norm_bound``, ``beta``).

    Examples:
        >>> from fedbandit_env import federated_linear_v0
        >>> from fedbandit_env.runner.rollout import rollout
        >>> env = federated_linear_v0.parallel_env(n_agents=3, dim=2, horizon=30)
        >>> t, regret, cost = rollout(env, PooledLinUCB(), seed=0)
        >>> regret.shape, float(cost[-1])
        ((3, 30), 0.0)
    """

    name = "pooled_lin_ucb"

    def __init__(self, **kwargs: Any) -> None:
        self.learner = LinUCB(**kwargs)  # checks the options
        self.agents: list[AgentID] = []
        self._last: dict[AgentID, np.ndarray] = {}

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """One learner of the env's dimension, with no data."""
        self.agents = list(env.possible_agents)
        spec = AgentSpec.from_env(env, self.agents[0])
        self.learner.reset(spec, seed)
        self._last = {}

    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """Add every agent's last pair, then choose for each from its own set."""
        pol = self.learner
        for a in self.agents:
            if a in self._last and a in observations:
                pol.observe(self._last[a], float(observations[a]["reward"][0]))
        out: dict[AgentID, Action] = {}
        for a, obs in observations.items():
            pol_obs = {**obs, "step": np.zeros(1)}  # the team has observed already
            out[a] = pol.act(pol_obs)
            self._last[a] = pol.last_x
        return out
