"""Gossip_UCB and Fed_UCB as a vector policy: every agent of ``B`` envs in one compiled
step (:func:`~baselines.gossip.kernels.gossip_step`).

It plays, trial for trial, what the per-agent policies
(:class:`~baselines.gossip.GossipUCB`, :class:`~baselines.gossip.FedUCB`, which the
registry plays on the PettingZoo path) play: their options, their readings (``alpha_1``,
eq. 11 / eq. 12) and each agent's draws (forced picks, ties) from the generator
:class:`~fedbandit_env.policies.IndependentTeam` gives it
(``tests/families/gossip/test_gossip_vector.py``). Its compiled step rolls out over
Broadcast and over random-edge gossip with the public prefix of the counts
(``MABCore.rollout``), and over ``VecPrivateRewards`` for Fed_UCB. Rolled out, it keeps
lines 5-6 entry by entry (:class:`~baselines.gossip.kernels.CountBooks`: only the count
estimates that changed are pushed, copied and recounted), as the family's trial loop
does; stepped (``act``: any protocol, faults and forgers included) it recomputes them
whole each step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.gossip.kernels import (
    GossipStepParams,
    UcbParams,
    agent_state,
    count_books,
    fed_ucb_constants,
    gossip_step,
)
from baselines.gossip.policies import FedUCB, GossipUCB, resolve_alpha_1
from fedbandit_env.core.kernels import WireChanges
from fedbandit_env.policies import Requirements
from fedbandit_env.rng_kernels import generator_table
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import (
    CompiledAct,
    VectorObs,
    VectorPolicy,
    VectorSpec,
    agent_generators,
    pulled_rewards,
)


class GossipVector(VectorPolicy):
    """Gossip_UCB (``template``: a :class:`~baselines.gossip.GossipUCB`) or Fed_UCB (a
    :class:`~baselines.gossip.FedUCB`) for every agent of every env, with the template's
    options.

    The count estimates (line 5) are read from the senders of the observations'
    ``public_mask`` (``mask`` where the env has none), as the per-agent policy reads
    them; its compiled step, rolled out, reads them from every graph neighbour, which is
    what Broadcast and random-edge gossip with the public prefix deliver from the first
    step on (``kernel_hears_graph``: it is rolled out there only; neighbour gossip and
    faults play through :meth:`act`).

    Args:
        template: The per-agent policy whose options and readings it plays.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> agents = tuple(AgentSpec(i, 3, 2, 10, message_dim=4, neighbors=((i + 1) % 3,
        ...                (i + 2) % 3)) for i in range(3))
        >>> policy = GossipVector(GossipUCB())
        >>> policy.reset(VectorSpec(2, agents), [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32), "messages": np.zeros((2, 3, 4),
        ...        np.float32), "mask": np.zeros((2, 3, 3), np.int8)}
        >>> arms, messages = policy.act(obs)
        >>> arms.tolist(), messages[0, 0].tolist()
        ([[0, 0, 0], [0, 0, 0]], [1.0, 1.0, 0.0, 0.0])
    """

    kernel_talks = True
    kernel_hears_graph = True

    def __init__(self, template: GossipUCB | FedUCB) -> None:
        self.template = template
        fed = isinstance(template, FedUCB)
        self.private = fed and bool(np.isfinite(template.epsilon))  # type: ignore[union-attr]
        self.kernel_observes = "private_mean" if self.private else None
        self.name = "fed_ucb" if fed else "gossip_ucb"

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """The per-agent policy's: ``2M`` numbers a step, the first ``M`` public
        (Fed_UCB: through ``PrivateRewards(epsilon)``)."""
        return self.template.requirements(n_agents, n_arms)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Start Algorithm 1 (or 4) afresh for every agent of every env."""
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        if spec.message_dim < 2 * m:
            raise ValueError(
                f"{type(self.template).__name__} needs message_dim >= 2 * n_arms = {2 * m}, "
                f"got {spec.message_dim}"
            )
        template, first = self.template, spec.agents[0]
        fed = isinstance(template, FedUCB)
        epsilon = float(template.epsilon) if fed else np.inf  # type: ignore[union-attr]
        sensitivity = float(template.sensitivity) if fed else 1.0  # type: ignore[union-attr]
        levels, scale, log_h2 = fed_ucb_constants(int(first.horizon), epsilon, sensitivity)
        ucb = UcbParams(
            fed,
            n,
            epsilon,
            resolve_alpha_1(template.alpha_1_arg, n),
            fed and template.confidence == "calibrated",  # type: ignore[union-attr]
            float(template.c_privacy) if fed else 128.0,  # type: ignore[union-attr]
            levels,
            scale,
            log_h2,
            bool(template.alpha_1_inside) if fed else True,  # type: ignore[union-attr]
        )
        self.params = GossipStepParams(self.private, ucb)
        self.state = agent_state(b, n, m)  # every agent's rows side by side
        adjacency = np.zeros((n, n), dtype=np.bool_)
        neighbors = np.zeros((n, max(1, max(len(a.neighbors) for a in spec.agents))), np.int64)
        degrees = np.zeros(n, dtype=np.int64)
        for agent in spec.agents:
            adjacency[agent.index, list(agent.neighbors)] = True
            degrees[agent.index] = len(agent.neighbors)
            neighbors[agent.index, : len(agent.neighbors)] = sorted(agent.neighbors)
        self._books = count_books(b, n, m, neighbors, degrees)
        self._graph = np.ascontiguousarray(np.broadcast_to(adjacency, (b, n, n)))
        self._public = self._graph.copy()
        self._generators = agent_generators(spec, rngs)  # alive while the table is used
        self._table = generator_table(self._generators)
        self.bound_epoch = np.full((b, n), -1, dtype=np.int64)
        self._clock = np.array([0.0, -1.0])  # the bounds' epoch and reference log time
        self._index = np.zeros(m)
        self._partners = np.zeros((1, n), dtype=np.int64)
        self._dim = spec.message_dim
        self._changes = WireChanges.of(b, n, spec.message_dim)  # last in the state

    def _state(self, public: np.ndarray, incremental: bool) -> tuple[Any, ...]:
        params = self.params._replace(incremental=incremental)
        return (self.state, public, params, self._table, self.bound_epoch, self._clock,
                self._index, self._partners, *self._books, self._changes)  # fmt: skip

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Absorb the last pull and what was heard, run one step of the algorithm for
        every agent, and send ``[n~(t+1), theta]``."""
        t = int(np.asarray(observations["step"])[0, 0, 0])
        last = np.ascontiguousarray(observations["arm"], dtype=np.int64)
        seen = pulled_rewards(observations, self.private)
        heard = np.ascontiguousarray(observations["messages"], dtype=np.float32)
        mask = np.ascontiguousarray(observations["mask"], dtype=np.int8)
        key = "public_mask" if "public_mask" in observations else "mask"
        self._public[:] = np.asarray(observations[key]) != 0
        arms = np.empty(last.shape, dtype=np.int64)
        sent = np.zeros((*last.shape, self._dim))
        step: Any = gossip_step  # a numba dispatcher: the state's arity is not typed
        step(last, seen, t, heard, mask, *self._state(self._public, False), arms, sent)
        return arms, sent

    def kernel(self) -> CompiledAct:
        """:func:`~baselines.gossip.kernels.gossip_step` and the state; the count
        estimates from every graph neighbour (what the rolled-out protocols deliver), so
        lines 5-6 are kept entry by entry (``incremental``)."""
        return gossip_step, self._state(self._graph, True)


def gossip_ucb(alpha_1: float | None = None) -> GossipVector:
    """``gossip_ucb``: Gossip_UCB with the registry's options.

    Examples:
        >>> gossip_ucb().name
        'gossip_ucb'
    """
    return GossipVector(GossipUCB(alpha_1))


def fed_ucb(
    epsilon: float = 1.0,
    alpha_1: float | None = None,
    confidence: str = "calibrated",
    c_privacy: float = 128.0,
    sensitivity: float = 1.0,
    alpha_1_inside: bool = True,
) -> GossipVector:
    """``fed_ucb``: Fed_UCB with the registry's options.

    Examples:
        >>> fed_ucb(epsilon=2.0).kernel_observes
        'private_mean'
    """
    return GossipVector(
        FedUCB(epsilon, alpha_1, confidence, c_privacy, sensitivity, alpha_1_inside)
    )


__all__ = ["GossipVector", "fed_ucb", "gossip_ucb"]
