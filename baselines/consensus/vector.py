"""DDUCB and coop-UCB2 as vector policies: every agent of ``B`` envs in one compiled step
(:func:`~baselines.consensus.kernels.consensus_step`).

They are the family's fast path (``baselines/consensus/fast.py``): the core rolls them
out with Broadcast's messages in compiled code (``MABCore.rollout``), in place of the
trial loop the family had. Each plays, trial for trial, what the per-agent policies
(:class:`~baselines.consensus.DDUCB`, :class:`~baselines.consensus.CoopUCB2`, which the
registry plays on the PettingZoo path) play: their options, their readings and their
graph facts, read from the same :class:`~fedbandit_env.policies.AgentSpec`
(``tests/families/consensus/test_consensus.py`` replays every registered variant).
Neither draws random numbers of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.consensus.kernels import (
    COOP_UCB2,
    DDUCB_ACCEL,
    DDUCB_PLAIN,
    chebyshev_coefficients,
    consensus_step,
)
from baselines.consensus.policies import DDUCB, CoopUCB2, consensus_facts, consensus_sigma
from fedbandit_env.policies import Requirements
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import CompiledAct, VectorObs, VectorPolicy, VectorSpec


class ConsensusVector(VectorPolicy):
    """A consensus bandit (``template``: a :class:`~baselines.consensus.DDUCB` or a
    :class:`~baselines.consensus.CoopUCB2`, whose options it plays) for every agent of
    every env.

    Args:
        template: The per-agent policy whose options and readings it plays.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> agents = tuple(AgentSpec(i, 3, 2, 10, message_dim=4, neighbors=((i + 1) % 3,
        ...                (i + 2) % 3), max_degree=2, consensus_lambda=0.0,
        ...                consensus_epsilon=0.0) for i in range(3))
        >>> policy = ConsensusVector(CoopUCB2())
        >>> policy.reset(VectorSpec(2, agents), [np.random.default_rng(0)] * 2)
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32), "messages": np.zeros((2, 3, 4),
        ...        np.float32), "mask": np.zeros((2, 3, 3), np.int8)}
        >>> arms, messages = policy.act(obs)
        >>> arms.tolist(), messages.shape
        ([[0, 0, 0], [0, 0, 0]], (2, 3, 4))
    """

    kernel_talks = True

    def __init__(self, template: DDUCB | CoopUCB2) -> None:
        self.template = template
        self.name = "coop_ucb2" if isinstance(template, CoopUCB2) else "dducb"

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """The per-agent policy's: ``2M`` numbers a step to every neighbour (Broadcast)."""
        return self.template.requirements(n_agents, n_arms)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Read the graph facts as every agent's policy reads its own; forget the state."""
        agents, n, m = spec.agents, spec.n_agents, spec.n_arms
        if spec.message_dim < 2 * m:
            raise ValueError(
                f"{type(self.template).__name__} sends {2 * m} numbers a step; the env "
                f"carries {spec.message_dim}"
            )
        facts = [consensus_facts(agent) for agent in agents]  # raises without a graph
        width = max(len(f[0]) for f in facts)
        neighbours = np.full((n, width), -1, dtype=np.int64)
        for i, (mine, _, _, _) in enumerate(facts):
            neighbours[i, : mine.size] = mine
        degrees = np.array([f[0].size for f in facts], dtype=np.int64)
        weight, lam = facts[0][1], facts[0][2]
        sigma = consensus_sigma(self.template.sigma_arg, spec.reward_bounds)
        t = self.template
        if isinstance(t, CoopUCB2):
            eps_c = np.array([t.constant_of(i, n, f[3]) for i, f in enumerate(facts)])
            rule: tuple[Any, ...] = (COOP_UCB2, 1, np.ones(1), np.zeros(1),
                                     2.0 * t.gamma * sigma**2 / n, False)  # fmt: skip
        else:
            eps_c = np.zeros(n)
            stage = t.stage_length(n, lam)
            a, b = np.ones(1), np.zeros(1)  # plain rounds: unread
            if t.accelerated:
                a, b = chebyshev_coefficients(lam, stage)
            variant = DDUCB_ACCEL if t.accelerated else DDUCB_PLAIN
            rule = (variant, stage, a, b, 2.0 * t.eta * sigma**2 / n, bool(t.code_alias))
        self._graph = (neighbours, degrees, float(weight), eps_c)
        self._rule = rule
        shape = (spec.num_envs, n, 2 * m)
        self._state = tuple(np.zeros(shape) for _ in range(5))  # y, y_prev, alpha, gamma, delta
        self._stage_at = np.zeros(2, dtype=np.int64)
        self._scratch = np.zeros((2, 2 * m))
        self._shape, self._dim = (spec.num_envs, n), spec.message_dim

    def kernel(self) -> CompiledAct:
        """:func:`~baselines.consensus.kernels.consensus_step` and the state."""
        state = (*self._state, self._stage_at, self._scratch, self._graph, self._rule)
        return consensus_step, state

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray]:
        """Absorb the last pull, run the step's round, pull, send (every neighbour's
        message must have arrived, as the per-agent policies require)."""
        t = int(np.asarray(observations["step"])[0, 0, 0])
        mask = np.ascontiguousarray(observations["mask"], dtype=np.int8)
        neighbours, degrees = self._graph[0], self._graph[1]
        if t > 0:
            for i in range(self._shape[1]):
                if not mask[:, i, neighbours[i, : degrees[i]]].all():
                    raise ValueError(
                        f"{type(self.template).__name__} mixes with every neighbour every "
                        "step; a neighbour's message is missing (run it where Broadcast "
                        "delivers all)"
                    )
        last = np.ascontiguousarray(observations["arm"], dtype=np.int64)
        seen = np.ascontiguousarray(np.asarray(observations["reward"])[..., 0], np.float32)
        heard = np.ascontiguousarray(observations["messages"], dtype=np.float32)
        arms = np.empty(self._shape, dtype=np.int64)
        sent = np.zeros((*self._shape, self._dim))
        step, state = self.kernel()
        step(last, seen, t, heard, mask, *state, arms, sent)
        return arms, sent


def dducb(**options: Any) -> ConsensusVector:
    """``dducb`` (and its variants): :class:`~baselines.consensus.DDUCB`'s options.

    Examples:
        >>> dducb(accelerated=False).template.accelerated
        False
    """
    return ConsensusVector(DDUCB(**options))


def coop_ucb2(**options: Any) -> ConsensusVector:
    """``coop_ucb2``: :class:`~baselines.consensus.CoopUCB2`'s options.

    Examples:
        >>> coop_ucb2(gamma=2.0).template.gamma
        2.0
    """
    return ConsensusVector(CoopUCB2(**options))


__all__ = ["ConsensusVector", "coop_ucb2", "dducb"]
