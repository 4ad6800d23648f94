"""A policy written against arrays: every agent of ``B`` envs in one call.

A :class:`VectorPolicy` reads the vector env's observations (a dict of arrays with leading
shape ``(B, N)``; messages sender-indexed with the delivery ``mask``, as
:class:`~fedbandit_env.vector.FederatedMABVecEnv` gives them) and returns every agent's
arm and message at once::

    arms, messages = policy.act(observations)  # (B, N) ints, (B, N, D) floats or None

It runs on both views of the env: ``fedbandit bench``, ``compare`` and
:func:`~fedbandit_env.runner.evaluate.evaluate` play it on the vector env (trials in
batches, ``meta["path"] == "vector"``), and wherever a stack has no vector form (or with
``interactive=True``) :class:`VectorTeam` plays it on the PettingZoo env with ``B = 1``,
its per-agent observations gathered into the same arrays. Env ``b`` of a batch is trial
``b``'s env and ``rngs[b]`` its generator (:func:`~fedbandit_env.seeding.vector_policy_generator`
of the trial's team seed), so both paths give the same trials, draw for draw.

Register one as any policy: ``registry.register("my_id", MyVectorPolicy)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.policies import AgentSpec, Requirements, Team
from fedbandit_env.seeding import seed_sequence, team_generators, vector_policy_generator
from fedbandit_env.type_aliases import (
    Action,
    AgentID,
    Float32Array,
    FloatArray,
    IntArray,
    Observation,
    SeedLike,
)

VectorObs = dict[str, np.ndarray]
"""A batched observation: key -> array with leading shape ``(B, N)``."""


@dataclass(frozen=True)
class VectorSpec:
    """What a vector policy may know at reset: the number of envs and each agent's public
    facts (:class:`~fedbandit_env.policies.AgentSpec`, the same in every env).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> spec = VectorSpec.from_env(federated_mab_v0.parallel_env(n_agents=3), 8)
        >>> spec.num_envs, spec.n_agents, spec.n_arms, spec.message_dim
        (8, 3, 5, 0)
    """

    num_envs: int
    agents: tuple[AgentSpec, ...]
    team_seeds: tuple[Any, ...] = ()
    """Each env's trial team seed (a ``SeedSequence``), where a trial runner knows it
    (``evaluate``'s vector trials and ``VectorTeam``; empty otherwise): what a policy
    that replays a per-agent team's draws derives its agents' generators from
    (:func:`agent_generators`)."""

    @property
    def n_agents(self) -> int:
        """``N``."""
        return len(self.agents)

    @property
    def n_arms(self) -> int:
        """``M``."""
        return self.agents[0].n_arms

    @property
    def horizon(self) -> int:
        """``T``."""
        return self.agents[0].horizon

    @property
    def message_dim(self) -> int:
        """``D`` (0: no messages)."""
        return self.agents[0].message_dim

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """The range the ``reward`` observation declares."""
        return self.agents[0].reward_bounds

    @property
    def adjacency(self) -> np.ndarray:
        """The communication graph ``(N, N)`` bool (from each agent's ``neighbors``)."""
        out = np.zeros((self.n_agents, self.n_agents), dtype=bool)
        for i, agent in enumerate(self.agents):
            out[i, list(agent.neighbors)] = True
        return out

    @classmethod
    def from_env(cls, env: ParallelEnv[Any, Any, Any], num_envs: int) -> VectorSpec:
        """The spec of ``num_envs`` copies of the (possibly wrapped) PettingZoo env."""
        agents = tuple(AgentSpec.from_env(env, a) for a in env.possible_agents)
        return cls(int(num_envs), agents)


def agent_generators(
    spec: VectorSpec, rngs: Sequence[np.random.Generator]
) -> list[np.random.Generator]:
    """Every agent's own generator, env by env (``B N`` of them, env ``b``'s agent ``i`` at
    ``b N + i``): those :class:`~fedbandit_env.policies.IndependentTeam` gives its agents
    (:func:`~fedbandit_env.seeding.team_generators` of the trial's team seed) where the
    spec knows the trial seeds, so a vector policy replays a per-agent team draw for
    draw; else ``N`` children spawned from each env's generator ``rngs[b]``.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> from fedbandit_env.seeding import team_generators
        >>> agents = tuple(AgentSpec(i, 2, 3, 10) for i in range(2))
        >>> seeds = tuple(np.random.SeedSequence(s) for s in (5, 6))
        >>> gens = agent_generators(VectorSpec(2, agents, seeds), [])
        >>> len(gens), gens[3].random() == team_generators(seeds[1], 2)[1].random()
        (4, True)
    """
    n = spec.n_agents
    if spec.team_seeds:
        if len(spec.team_seeds) != spec.num_envs:
            raise ValueError(f"need one team seed per env ({spec.num_envs}), got "
                             f"{len(spec.team_seeds)}")  # fmt: skip
        return [g for seed in spec.team_seeds for g in team_generators(seed, n)]
    if len(rngs) != spec.num_envs:
        raise ValueError(f"need one generator per env ({spec.num_envs}), got {len(rngs)}")
    return [np.random.default_rng(child) for rng in rngs for child in rng.spawn(n)]


def pulled_rewards(observations: Mapping[str, Any], private: bool) -> Float32Array:
    """What each agent of a batch reads of its last pull, ``(B, N)`` float32, C-ordered:
    the pulled arm's private mean (``private``: its ``private_means`` at the arm, what a
    policy under ``PrivateRewards`` reads; ``kernel_observes = "private_mean"``), else
    the ``reward`` observation.

    Raises:
        ValueError: ``private`` without ``PrivateRewards`` in the stack.

    Examples:
        >>> obs = {"arm": np.array([[1, 0]]), "reward": np.array([[[0.5], [0.25]]]),
        ...        "private_means": np.array([[[0.1, 0.2], [0.3, 0.4]]], np.float32)}
        >>> pulled_rewards(obs, False).tolist()
        [[0.5, 0.25]]
        >>> pulled_rewards(obs, True).astype(float).round(2).tolist()
        [[0.2, 0.3]]
    """
    if private:
        if "private_means" not in observations:
            raise ValueError("a private policy needs PrivateRewards (no 'private_means')")
        last = np.asarray(observations["arm"], dtype=np.int64)
        means = np.asarray(observations["private_means"])
        seen = np.take_along_axis(means, last[..., None], axis=2)[..., 0]
    else:
        seen = np.asarray(observations["reward"])[..., 0]
    return np.ascontiguousarray(seen, dtype=np.float32)


class VectorPolicy(ABC):
    """Every agent of ``B`` envs, on arrays (see the module docstring).

    Examples:
        >>> class Arm0(VectorPolicy):
        ...     def reset(self, spec, rngs): self.shape = (spec.num_envs, spec.n_agents)
        ...     def act(self, observations): return np.zeros(self.shape, np.int64), None
        >>> from fedbandit_env.registry import PolicySpec
        >>> team = PolicySpec("arm0", Arm0).make()  # a Team: runs on either path
        >>> from fedbandit_env import federated_mab_v0
        >>> env = federated_mab_v0.parallel_env(n_agents=2, n_arms=3, horizon=3)
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)
        {'agent_0': 0, 'agent_1': 0}
    """

    name: str = "vector"
    tuned_on: dict[str, Any] | None = None
    """The scenario (``Scenario.to_dict``) the policy's parameters were tuned or trained
    on, if any: ``evaluate`` warns (``UntrainedConditionsWarning``) when it runs on other
    conditions (setting, instance kind, size, horizon, graph, epsilon)."""

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """What the env must provide (default: nothing; ask for ``message_dim`` to talk)."""
        return Requirements()

    def privacy_epsilon(self, n_agents: int, n_arms: int) -> float | None:
        """The epsilon-DP guarantee of what the policy privatises itself, per agent and
        episode, or ``None`` without a mechanism of its own (default; as
        :meth:`Policy.privacy_epsilon <fedbandit_env.policies.Policy.privacy_epsilon>`).

        Examples:
            >>> class Arm0(VectorPolicy):
            ...     def reset(self, spec, rngs): pass
            ...     def act(self, observations): return np.zeros((1, 1), np.int64), None
            >>> Arm0().privacy_epsilon(4, 3) is None, Arm0().noise_source() is None
            (True, True)
        """
        return None

    def noise_source(self) -> str | None:
        """Where the noise of that mechanism comes from (``"seeded"``, ``"secure"``;
        ``None`` without one; default ``None``)."""
        return None

    @abstractmethod
    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Forget everything; ``rngs[b]`` is env ``b``'s generator for this episode."""

    @abstractmethod
    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Every agent's arm ``(B, N)`` and message ``(B, N, D)`` (``None`` without
        messages) from the newest observations."""

    kernel_talks: bool = False
    """Whether :meth:`kernel`'s step is the talking form (reads what was heard, writes
    what it sends); a silent one plays only envs without messages."""

    kernel_hears_graph: bool = False
    """Whether :meth:`kernel`'s step takes every graph neighbour's public prefix as
    heard each step (Gossip_UCB's count estimates): it is rolled out only where the
    protocol delivers so (Broadcast, random-edge gossip with a public prefix:
    ``Router.prefix_reaches_graph``); elsewhere it plays through :meth:`act`."""

    kernel_rounds: bool = False
    """Whether :meth:`kernel`'s talking step reads the server's broadcast of Li & Song's
    master-worker rounds (``server``, ``server_mask`` in place of ``heard``, ``mask``):
    it is rolled out over ``ServerRounds`` and ``Hybrid`` only, and no other talking step
    is (:func:`~fedbandit_env.core.rounds.rollout_rounds`,
    :func:`~fedbandit_env.core.rounds.rollout_hybrid`)."""

    kernel_hops: bool = False
    """Whether :meth:`kernel`'s talking step is a linear one that reads what each receiver
    got under GammaHops (``heard``, ``slot``, ``mask`` in place of the server's sums:
    receiver ``r``'s message from ``v`` is ``heard[b, slot[r, v], v]``): it is rolled out
    over GammaHops only, and no other talking linear step is
    (:func:`~fedbandit_env.core.hops.rollout_linear_hops`)."""

    kernel_observes: str | None = None
    """What :meth:`kernel`'s step reads as ``last_rewards``: ``None``, the rewards as
    the env's observation holds them; ``"private_mean"``, each pulled arm's private mean
    under ``PrivateRewards`` (its ``private_means`` at the arm), which a rollout plays
    through ``VecPrivateRewards`` (its ``rollout_observes``)."""

    def kernel(self) -> CompiledAct | None:
        """This policy's step as compiled code, where it has one: ``(step, state)`` with
        ``step(last_arms, last_rewards, t, *state, arms)`` a numba function that writes
        every agent's next arm into ``arms`` ``(B, N)`` from the last arms ``(B, N)``
        int64, the last float32 rewards ``(B, N)``, the steps played ``t`` and the
        policy's own arrays ``state`` (updated in place). A policy that talks takes what
        it heard last step and writes what it sends: ``step(last_arms, last_rewards, t,
        heard, mask, *state, arms, sent)`` (``heard`` ``(B, N, D)`` float32 by sender,
        ``mask`` ``(B, N, N)`` int8 as the observations hold them, ``sent`` ``(B, N, D)``
        float64); over ``ServerRounds`` (:attr:`kernel_rounds`) it reads the server's
        broadcast instead, ``server`` ``(B, N, D)`` float32 and ``server_mask`` ``(B, N,
        1)`` int8. Valid after :meth:`reset`, until the next one.

        Where it is not ``None``, trials on a bare NumPy env without messages or with
        Broadcast's or a gossip protocol's (or such an env under ``VecPrivateRewards``,
        for a step that reads what it hands out: :attr:`kernel_observes`) run with no
        Python between steps
        (:meth:`MABCore.rollout <fedbandit_env.core.mab.MABCore.rollout>`: ``run_fast``,
        ``evaluate``), and
        :meth:`act` must be the same step, so both paths play the same trials. Default:
        ``None`` (the policy plays through :meth:`act`).

        Examples:
            >>> class Arm0(VectorPolicy):
            ...     def reset(self, spec, rngs): pass
            ...     def act(self, observations): return np.zeros((1, 1), np.int64), None
            >>> Arm0().kernel() is None
            True
        """
        return None


CompiledAct = tuple[Any, tuple[Any, ...]]
"""A :meth:`VectorPolicy.kernel`: a numba step function and the arrays it keeps."""


def sender_rows(
    inboxes: np.ndarray, mask: np.ndarray, public_mask: np.ndarray | None, public_dim: int
) -> Float32Array:
    """The sender-indexed messages ``(N, D)`` of one env from its receivers' inboxes
    ``(N, N, D)`` (the PettingZoo form; :func:`~fedbandit_env.core.routing.inbox` is the
    inverse): row ``s`` is what a receiver that heard ``s`` got (its public prefix where only
    that reached someone), zeros where nobody heard it.

    Raises:
        ValueError: If two receivers got different copies of one sender's message (a
            stack that delivers per receiver, such as random delays: no single row).

    Examples:
        >>> inboxes = np.zeros((2, 2, 1), np.float32); inboxes[0, 1] = 7.0
        >>> sender_rows(inboxes, np.array([[0, 1], [0, 0]]), None, 0).tolist()
        [[0.0], [7.0]]
    """
    n, _, d = inboxes.shape
    rows = np.zeros((n, d), dtype=np.float32)
    full = np.asarray(mask, dtype=bool)
    _fill(rows, inboxes, full, slice(None))
    if public_mask is not None and public_dim:
        anyone: np.ndarray = np.asarray(full.any(axis=0))
        only = np.asarray(public_mask, dtype=bool) & ~anyone[None, :]
        _fill(rows, inboxes, only, slice(0, public_dim))
    return rows


def _fill(rows: np.ndarray, inboxes: np.ndarray, heard: np.ndarray, part: slice) -> None:
    senders = np.flatnonzero(heard.any(axis=0))
    if not senders.size:
        return
    first = heard.argmax(axis=0)[senders]
    rows[senders, part] = inboxes[first, senders, part]
    receivers, who = np.nonzero(heard)
    if not np.array_equal(inboxes[receivers, who, part], rows[who, part], equal_nan=True):
        raise ValueError(
            "receivers got different copies of one sender's message (a per-receiver "
            "stack, e.g. random delays); a VectorPolicy reads one message per sender"
        )


class VectorTeam(Team):
    """A :class:`VectorPolicy` as a :class:`~fedbandit_env.policies.Team` of the
    PettingZoo env (``B = 1``): each step the agents' observations become the vector
    env's arrays (the inboxes turned sender-indexed, :func:`sender_rows`) and the arrays
    it returns become per-agent actions. :meth:`PolicySpec.make
    <fedbandit_env.registry.PolicySpec.make>` wraps a vector policy in one.

    Args:
        policy: The vector policy.
        name: Its name in results.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> class Arm1(VectorPolicy):
        ...     def reset(self, spec, rngs): self.n = spec.n_agents
        ...     def act(self, observations): return np.ones((1, self.n), np.int64), None
        >>> team = VectorTeam(Arm1())
        >>> env = federated_mab_v0.parallel_env(n_agents=2, n_arms=3, horizon=3)
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)
        {'agent_0': 1, 'agent_1': 1}
    """

    def __init__(self, policy: VectorPolicy, name: str | None = None) -> None:
        if not isinstance(policy, VectorPolicy):
            raise TypeError(f"policy must be a VectorPolicy, got {type(policy).__name__}")
        self.policy = policy
        self.name = name or policy.name
        self._agents: list[AgentID] = []
        self._public = 0
        self._message_dim = 0

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """The vector policy's requirements."""
        return self.policy.requirements(n_agents, n_arms)

    def own_privacy(self, n_agents: int, n_arms: int) -> float | None:
        """The vector policy's own mechanism's epsilon (:meth:`VectorPolicy.privacy_epsilon`)."""
        return self.policy.privacy_epsilon(n_agents, n_arms)

    def noise_source(self) -> str | None:
        """The vector policy's noise source (:meth:`VectorPolicy.noise_source`)."""
        return self.policy.noise_source()

    def rejected_messages(self) -> int:
        """Messages the policy's receivers dropped this episode (its ``rejected``
        attribute, added up; 0 for a policy that does not validate)."""
        return int(np.sum(getattr(self.policy, "rejected", 0)))

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Reset the policy for one env, with the generator the vector path gives it."""
        protocol = getattr(env.unwrapped, "protocol", None)
        spec = VectorSpec.from_env(env, 1)
        if spec.message_dim and protocol is not None and not protocol.per_sender:
            raise ValueError(
                f"the protocol {type(protocol).__name__} hands receivers different copies "
                "of a sender's message; a VectorPolicy reads one message per sender"
            )
        self._agents = list(env.possible_agents)
        self._public = int(getattr(protocol, "public_dim", 0)) if spec.message_dim else 0
        self._message_dim = spec.message_dim
        spec = VectorSpec(1, spec.agents, (seed_sequence(seed),))
        self.policy.reset(spec, [vector_policy_generator(seed)])

    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """Gather the agents' observations into ``(1, N)`` arrays, act, scatter."""
        arms, messages = self.policy.act(self.gather(observations))
        arms = np.asarray(arms).reshape(len(self._agents))
        acting = [(i, a) for i, a in enumerate(self._agents) if a in observations]
        if not self._message_dim:
            return {a: int(arms[i]) for i, a in acting}
        if messages is None:
            raise ValueError("the env expects messages; the vector policy returned None")
        rows = np.asarray(messages, dtype=np.float32).reshape(len(self._agents), -1)
        return {a: {"arm": int(arms[i]), "message": rows[i]} for i, a in acting}

    def gather(self, observations: dict[AgentID, Observation]) -> VectorObs:
        """The vector env's observation ``(1, N, ...)`` from the agents' own. An agent
        missing from ``observations`` (one a learner acts for, as in
        :class:`~fedbandit_env.rl.SingleAgentEnv`) is given a blank observation of the
        step (no pull, nothing heard) and gets no action back: the member for it stays
        idle, as an ``IndependentTeam``'s does."""
        if not observations:
            raise ValueError("no observations: a team acts for at least one agent")
        present = next(iter(observations.values()))
        blank = {k: np.zeros_like(np.asarray(v)) for k, v in present.items()}
        blank["step"] = np.asarray(present["step"])
        per_agent = [observations.get(a, blank) for a in self._agents]
        out: VectorObs = {}
        for key in per_agent[0]:
            out[key] = np.stack([np.asarray(o[key]) for o in per_agent])[None]
        if "messages" in out:
            public = out.get("public_mask")
            out["messages"] = sender_rows(
                out["messages"][0], out["mask"][0], None if public is None else public[0],
                self._public,
            )[None]  # fmt: skip
        return out


__all__ = [
    "CompiledAct",
    "VectorObs",
    "VectorPolicy",
    "VectorSpec",
    "VectorTeam",
    "agent_generators",
    "pulled_rewards",
    "sender_rows",
]
