"""Local and cooperative Thompson sampling as vector policies: every agent of ``B`` envs in
one compiled step (:func:`~baselines.thompson.kernels.thompson_step`).

They are the family's fast path (``baselines/thompson/fast.py``): the core rolls them out
in compiled code (``MABCore.rollout``) with no messages (``local_ts``) or with
Broadcast's, RandomEdgeGossip's or NeighbourGossip's (``coop_ts``, ``coop_ts_relay``), in
place of the trial
loop the family had. Each plays, trial for trial, what the per-agent policies
(:class:`~baselines.thompson.CooperativeTS`, :class:`~baselines.thompson.LocalTS`, which
the registry plays on the PettingZoo path) play: their options, their posterior (the one
rule, :func:`~baselines.thompson.policies.resolve_posterior`), their tables (a row per
graph neighbour when holding, degree x M) and each agent's draws from the generator
:class:`~fedbandit_env.policies.IndependentTeam` gives it
(``tests/families/test_thompson_vector.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.thompson.kernels import MOMENT, moment_cell, thompson_alone, thompson_step
from baselines.thompson.policies import (
    SHARES,
    CooperativeTS,
    private_extra_variance,
    resolve_posterior,
)
from fedbandit_env.core.kernels import WireChanges
from fedbandit_env.policies import AgentSpec, Requirements
from fedbandit_env.privacy.mechanisms import tree_sum_slack
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


def table_members(agents: Sequence[AgentSpec], share: str | None) -> tuple[IntArray, IntArray]:
    """The rows each agent's table holds, as :class:`~baselines.thompson.CooperativeTS`
    lays them out at reset: every agent's when relaying, its own and its graph
    neighbours' when holding (``degree + 1`` rows), its own alone; in increasing sender
    order, so the draws add up in the per-agent policy's order. Returns ``(members (N,
    S), own (N,))`` (``-1`` pads a shorter row; ``own[i]``: agent ``i``'s own row).

    Examples:
        >>> ring = [AgentSpec(i, 4, 2, 10, neighbors=((i - 1) % 4, (i + 1) % 4))
        ...         for i in range(4)]
        >>> members, own = table_members(ring, "hold")
        >>> members.tolist(), own.tolist()
        ([[0, 1, 3], [0, 1, 2], [1, 2, 3], [0, 2, 3]], [0, 1, 1, 2])
        >>> table_members(ring, None)[0].tolist()
        [[0], [1], [2], [3]]
    """
    n = len(agents)
    if share == "relay":
        return np.tile(np.arange(n, dtype=np.int64), (n, 1)), np.arange(n, dtype=np.int64)
    if share is None:
        return np.arange(n, dtype=np.int64)[:, None], np.zeros(n, dtype=np.int64)
    held = [np.unique(np.array([a.index, *a.neighbors], dtype=np.int64)) for a in agents]
    width = max(h.size for h in held)
    members = np.full((n, width), -1, dtype=np.int64)
    own = np.zeros(n, dtype=np.int64)
    for i, h in enumerate(held):
        members[i, : h.size] = h
        own[i] = int(np.searchsorted(h, agents[i].index))
    return members, own


class ThompsonVector(VectorPolicy):
    """Cooperative (``share`` ``"hold"`` or ``"relay"``) or local (``share=None``)
    Thompson sampling for every agent of every env, with the options of
    :class:`~baselines.thompson.CooperativeTS` (which checks them).

    Under ``PrivateRewards`` (``epsilon``) it reads the pulled arm's private mean, as the
    per-agent policy does (``kernel_observes``): its compiled step rolls out through
    ``VecPrivateRewards`` (dyadic trees), or plays through :meth:`act` on the vector
    env's layers.

    Args:
        share: ``"hold"``, ``"relay"`` or ``None`` (alone).
        posterior: ``"auto"``, ``"beta"``, ``"gaussian"`` or ``"moment"``.
        scale: Noise scale of the Gaussian posterior.
        epsilon: Rewards through ``PrivateRewards(epsilon)`` (``None``: raw).
        sensitivity: ``PrivateRewards``' clip width.

    Examples:
        >>> agents = tuple(AgentSpec(i, 3, 2, 10, message_dim=4, neighbors=((i + 1) % 3,
        ...                (i + 2) % 3), reward_bounds=(0.0, 1.0)) for i in range(3))
        >>> policy = ThompsonVector("hold")
        >>> policy.reset(VectorSpec(2, agents), [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32), "messages": np.zeros((2, 3, 4),
        ...        np.float32), "mask": np.zeros((2, 3, 3), np.int8)}
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages.shape
        ((2, 3), (2, 3, 4))
    """

    def __init__(
        self,
        share: str | None = "hold",
        posterior: str = "auto",
        scale: float | None = None,
        epsilon: float | None = None,
        sensitivity: float = 1.0,
    ) -> None:
        self.template = CooperativeTS(share, posterior, scale, epsilon, sensitivity)
        self.share = share
        self.kernel_talks = share is not None
        self.kernel_observes = None if self.template.epsilon is None else "private_mean"
        self.name = "local_ts" if share is None else f"coop_ts_{share}"

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """The per-agent policy's: its messages and ``PrivateRewards(epsilon)`` if private."""
        return self.template.requirements(n_agents, n_arms)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty tables; the posterior resolved from the env's reward range; each agent's
        generator (:func:`~fedbandit_env.vector.policy.agent_generators`)."""
        template, agents = self.template, spec.agents
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        need = template.message_dim(n, m)
        if spec.message_dim < need:
            raise ValueError(
                f"CooperativeTS(share={self.share!r}) sends {need} numbers a step; the env "
                f"carries {spec.message_dim}"
            )
        first = agents[0]
        extra, private = 0.0, None
        if template.epsilon is not None:
            extra = private_extra_variance(first.horizon, template.epsilon, template.sensitivity)
            if first.private_clip is not None:
                lo, hi = first.private_clip
                private = (lo, hi, tree_sum_slack(first.horizon, template.epsilon, hi - lo))
        self.post = resolve_posterior(template.posterior, first.reward_bounds, template.scale,
                                      extra, self.share is not None, private)  # fmt: skip
        self.members, self.own = table_members(agents, self.share)
        width = self.members.shape[1]
        self.counts, self.sums = np.zeros((b, n, width, m)), np.zeros((b, n, width, m))
        self.stamps = np.zeros((b, n, width))
        cached = self.share == "hold" and self.post.family == MOMENT
        shape = (b, n, width, m) if cached else (1, 1, 1, 1)
        mu0, var0 = moment_cell(0.0, 0.0, self.post.lo, self.post.width)
        self.mom_mu, self.mom_var = np.full(shape, mu0), np.full(shape, var0)
        self._code = -1 if self.share is None else SHARES.index(self.share)
        self._private = template.epsilon is not None
        self._rngs = agent_generators(spec, rngs)  # alive: the table holds their addresses
        self._generators = generator_table(self._rngs)
        self.rejected = np.zeros((b, n), dtype=np.int64)
        self._dim = spec.message_dim
        self._scratch, self._rows = np.zeros(6 * m + n), np.zeros(width, dtype=np.int64)
        self._primed = np.zeros(b, dtype=np.int64)  # the rolled-out step's sent holds its last
        self._changes = WireChanges.of(b, n, spec.message_dim)
        self._unlisted = WireChanges(np.zeros((b, 2, 0), np.int64), np.full(b, -1))  # act's

    def _state(self, strict: bool = True) -> tuple[Any, ...]:
        """The kernel's arguments after the observations; ``strict``: check that every
        sender heard is one a row is held of (a protocol off the graph's edges)."""
        return (self.counts, self.sums, self.stamps, self.mom_mu, self.mom_var, self.members,
                self.own, self._code, self.post, self._private, self._generators,
                self.rejected, strict, self._scratch, self._rows)  # fmt: skip

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Absorb the last pull and what was heard, sample, pull the argmax (and send)."""
        t = int(np.asarray(observations["step"])[0, 0, 0])
        last = np.ascontiguousarray(observations["arm"], dtype=np.int64)
        seen = pulled_rewards(observations, self._private)
        arms = np.empty(last.shape, dtype=np.int64)
        alone: Any = thompson_alone  # numba dispatchers: the state's arity is not typed
        talking: Any = thompson_step
        if self.share is None:
            alone(last, seen, t, *self._state(), arms)
            return arms, None if not self._dim else np.zeros((*last.shape, self._dim))
        heard = np.ascontiguousarray(observations["messages"], dtype=np.float32)
        mask = np.ascontiguousarray(observations["mask"], dtype=np.int8)
        sent = np.zeros((*last.shape, self._dim))
        self._primed[:] = 0  # a fresh sent: whole rows (and the next rollout starts so)
        ok = talking(last, seen, t, heard, mask, *self._state(), self._primed, self._unlisted,
                     arms, sent)  # fmt: skip
        self._primed[:] = 0
        if not ok:
            raise ValueError(
                "cooperative TS's vector form holds a row per graph neighbour; a message "
                "arrived from beyond them (a protocol off the graph's edges): play the "
                "per-agent CooperativeTS"
            )
        return arms, sent

    def kernel(self) -> CompiledAct:
        """:func:`~baselines.thompson.kernels.thompson_step` (or its silent form
        :func:`~baselines.thompson.kernels.thompson_alone`) and the tables; the core
        rolls out only protocols that deliver along the graph's edges, so the held rows'
        senders go unchecked."""
        if self.share is None:
            return thompson_alone, self._state(strict=False)
        return thompson_step, (*self._state(strict=False), self._primed, self._changes)


def coop_ts(
    share: str | None = "hold",
    posterior: str = "auto",
    scale: float | None = None,
    epsilon: float | None = None,
    sensitivity: float = 1.0,
) -> ThompsonVector:
    """``coop_ts`` / ``coop_ts_relay`` (``share``): the registry's options.

    Examples:
        >>> coop_ts().share, coop_ts(share="relay").kernel_talks
        ('hold', True)
    """
    return ThompsonVector(share, posterior, scale, epsilon, sensitivity)


def local_ts(
    posterior: str = "auto", scale: float | None = None, epsilon: float | None = None
) -> ThompsonVector:
    """``local_ts``: Thompson sampling on every agent's own rewards.

    Examples:
        >>> local_ts().kernel_talks
        False
    """
    return ThompsonVector(None, posterior, scale, epsilon)


__all__ = ["ThompsonVector", "coop_ts", "local_ts", "table_members"]
