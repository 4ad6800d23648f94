"""The centralized oracle: one UCB1 over every agent's observations.

It is the best a cooperative algorithm can hope for, so it is a :class:`Team`, not a
per-agent policy: a central controller reads every agent's own reward each step (no
graph, no privacy) and moves all agents together.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from baselines.common.kernels import argmax_random_tie, first_unpulled, mean_of
from baselines.ucb.kernels import oracle_index
from fedbandit_env.policies import AgentSpec, Team
from fedbandit_env.seeding import team_generators
from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, SeedLike


class OracleUCB(Team):
    """Centralized UCB1 on pooled observations, every agent pulling the same arm.

    All agents pull one arm per step, so a step's average reward is an unbiased sample
    of the arm's *global* mean ``mu[k] = mean_i mu[i, k]`` (pooling agents that pull
    different arms would mix their local biases into the estimate).  The index is UCB1
    on the ``N * n_k`` pooled rewards: ``xbar_k + scale * sqrt(2 log(N t) / (N n_k))``.
    Arms are tried once each, in order, first.

    Args:
        scale: Multiplier of the bonus (see :class:`~baselines.LocalUCB1`).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=4)
        >>> team = OracleUCB()
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)
        {'agent_0': 0, 'agent_1': 0, 'agent_2': 0}
    """

    name = "oracle_ucb"

    def __init__(self, scale: float = 1.0) -> None:
        if not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale!r}")
        self.scale = float(scale)
        self.counts: FloatArray = np.zeros(0)
        self.sums: FloatArray = np.zeros(0)
        self.n_agents = 0
        self.t = 0
        self.rng = np.random.default_rng()
        self.message_len = 0

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Clear the pooled statistics."""
        spec = AgentSpec.from_env(env, env.possible_agents[0])
        self.n_agents, self.message_len = spec.n_agents, spec.message_dim
        self.counts = np.zeros(spec.n_arms)
        self.sums = np.zeros(spec.n_arms)
        self.t = 0
        self.rng = team_generators(seed, 1)[0]  # never an env stream (seeding's table)

    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """Pool last step's rewards, then send every agent to the best index."""
        first = next(iter(observations.values()), None)
        if first is not None and first["step"][0] > 0:
            arm = int(first["arm"])
            rewards = np.array([o["reward"][0] for o in observations.values()], dtype=np.float64)
            self.sums[arm] += mean_of(rewards)
            self.counts[arm] += 1.0
            self.t += 1
        choice = int(first_unpulled(self.counts))
        if choice < 0:
            index = oracle_index(
                self.sums,
                self.counts,
                self.t,
                self.n_agents,
                self.scale,
                np.empty(self.counts.size),
            )
            choice = argmax_random_tie(index, self.rng)
        if self.message_len:
            msg = np.zeros(self.message_len, dtype=np.float32)
            return {a: {"arm": choice, "message": msg} for a in observations}
        return dict.fromkeys(observations, choice)
