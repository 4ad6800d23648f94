"""The policy contract: what the runner needs from anything that acts.

Two levels, both tiny (the SMPyBandits habit):

- a :class:`Policy` acts for one agent: ``reset(spec, seed)`` then ``act(observation)``
  per step, returning an arm (or ``{"arm", "message"}`` when it talks);
- a :class:`Team` acts for all agents at once: ``reset(env, seed)`` then
  ``act(observations) -> actions``.  :class:`IndependentTeam` runs one policy per agent,
  each seeing only its own observation; a centralized team (the oracle) is a Team too.

Anything that maps observations to actions, a stable-baselines3 model included, fits
behind one of the two.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.seeding import team_streams
from fedbandit_env.type_aliases import (
    Action,
    AgentID,
    FloatArray,
    IntArray,
    Observation,
    SeedLike,
)


@dataclass(frozen=True)
class AgentSpec:
    """The public facts a per-agent policy may know about its setting.

    Attributes:
        index: This agent's index ``i`` (its name is ``agent_{i}``).
        n_agents: Number of agents ``N``.
        n_arms: Number of arms ``M``.
        horizon: Episode length ``T``.
        message_dim: Length of the message the env expects (0: no messages).
        reward_bounds: The range the ``reward`` observation declares (``(-inf, inf)``
            for unbounded noise, or where the env has no ``reward`` box).
        context_dim: Dimension ``d`` of the decision-set vectors of a linear env (its
            ``contexts`` observation, ``(K, d)``); 0 in a multi-armed env.
        neighbors: The agent's neighbours in the communication graph (indices; empty
            without a graph).
        max_degree: The graph's largest degree (for matrices such as ``I - L / (d_max +
            1)`` that every agent can build from public facts; 0 without a graph).
        comm_row: The agent's row of the network's gossip matrix ``W = I - L / (2|E|)``
            (Zhu et al.; empty without edges).
        lambda_2: ``W``'s second largest eigenvalue (``nan`` without edges).
        consensus_lambda: ``|lambda_2|`` of the consensus matrix ``P = I - L / (d_max +
            1)`` (:attr:`~fedbandit_env.network.Network.consensus_matrix`; DDUCB's stage
            length reads it; ``nan`` without edges). An agent builds its own row of
            ``P`` from ``neighbors`` and ``max_degree``.
        consensus_epsilon: Landgren et al.'s graph constant ``eps_c^i`` of this agent
            (:attr:`~fedbandit_env.network.Network.consensus_epsilon`; ``nan`` without
            edges).
        private_clip: The range the stack's
            :class:`~fedbandit_env.wrappers.PrivateRewards` clips rewards to (a public
            parameter of the mechanism; ``None`` without one): where an honest private
            sum can lie before its noise, which a receiver checks releases against.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = federated_mab_v0.parallel_env(n_agents=3, n_arms=4, horizon=10)
        >>> spec = AgentSpec.from_env(env, "agent_2")
        >>> spec.index, spec.n_agents, spec.n_arms, spec.horizon, spec.message_dim
        (2, 3, 4, 10, 0)
        >>> spec.reward_bounds
        (0.0, 1.0)
        >>> spec.neighbors, spec.degree, round(spec.lambda_2, 4)
        ((0, 1), 2, 0.5)
    """

    index: int
    n_agents: int
    n_arms: int
    horizon: int
    message_dim: int = 0
    reward_bounds: tuple[float, float] = (-np.inf, np.inf)
    context_dim: int = 0
    neighbors: tuple[int, ...] = ()
    max_degree: int = 0
    comm_row: tuple[float, ...] = ()
    lambda_2: float = float("nan")
    consensus_lambda: float = float("nan")
    consensus_epsilon: float = float("nan")
    private_clip: tuple[float, float] | None = None

    @property
    def degree(self) -> int:
        """How many neighbours the agent has."""
        return len(self.neighbors)

    @classmethod
    def from_env(cls, env: ParallelEnv[Any, Any, Any], agent: AgentID) -> AgentSpec:
        """Read the spec of ``agent`` from an env's spaces (works through wrappers)."""
        space = env.action_space(agent)
        message_dim = 0
        if isinstance(space, spaces.Dict):
            message_dim = int(np.prod(space["message"].shape or (0,)))
            space = space["arm"]
        if not isinstance(space, spaces.Discrete):
            raise TypeError(f"expected a Discrete arm space, got {space!r}")
        horizon = int(getattr(env.unwrapped, "horizon", 0))
        bounds = (-np.inf, np.inf)
        obs_space = env.observation_space(agent)
        if isinstance(obs_space, spaces.Dict) and isinstance(
            reward := obs_space.spaces.get("reward"), spaces.Box
        ):
            bounds = (float(reward.low.min()), float(reward.high.max()))
        context_dim = 0
        if isinstance(obs_space, spaces.Dict) and "contexts" in obs_space.spaces:
            context_dim = int((obs_space["contexts"].shape or (0,))[-1])
        index = env.possible_agents.index(agent)
        facts: dict[str, Any] = {}
        network = getattr(env.unwrapped, "network", None)
        adjacency = getattr(network, "adjacency", None)
        if (
            network is not None
            and adjacency is not None
            and len(adjacency) == len(env.possible_agents)
        ):
            facts["neighbors"] = tuple(int(j) for j in np.flatnonzero(adjacency[index]))
            facts["max_degree"] = int(np.asarray(network.degrees).max())
            if network.n_edges:
                facts["comm_row"] = tuple(float(w) for w in network.gossip_matrix[index])
                facts["lambda_2"] = float(network.lambda_2)
                facts["consensus_lambda"] = float(network.consensus_lambda)
                facts["consensus_epsilon"] = float(network.consensus_epsilon[index])
        layer: Any = env
        while layer is not None:  # the PrivateRewards layer's clip range, if any
            if type(layer).__name__ == "PrivateRewards":
                facts["private_clip"] = tuple(float(v) for v in layer.clip)
                break
            layer = getattr(layer, "env", None)
        return cls(
            index=index,
            n_agents=len(env.possible_agents),
            n_arms=int(space.n),
            horizon=horizon,
            message_dim=message_dim,
            reward_bounds=bounds,
            context_dim=context_dim,
            **facts,
        )


@dataclass(frozen=True)
class Requirements:
    """What a policy needs from the env it runs on.

    Attributes:
        message_dim: Length of the message each agent sends (0: none).
        public_dim: Length of the message prefix every neighbour must see each step.
        epsilon: If set, agents must see their rewards only through
            :class:`~fedbandit_env.wrappers.PrivateRewards` with this epsilon.
        protocol: A protocol the policy cannot run without (a name of
            :data:`~fedbandit_env.protocols.PROTOCOLS`, e.g. ``"server"``), or ``None``
            to take the scenario's.
        participation: Participation rate of a ``"server"`` protocol.
        bounded_rewards: The policy privatises its rewards itself (Li & Song's epoch
            means), so it needs them in a known finite range: a scenario with a clip
            range clips them (:class:`~fedbandit_env.wrappers.ClipRewards`) before the
            policy sees them.
        gamma: Hops a message travels under the ``"gamma_hops"`` protocol.

    Examples:
        >>> both = Requirements(message_dim=4, public_dim=2).merge(Requirements(epsilon=1.0))
        >>> both.message_dim, both.public_dim, both.epsilon, both.protocol, both.bounded_rewards
        (4, 2, 1.0, None, False)
    """

    message_dim: int = 0
    public_dim: int = 0
    epsilon: float | None = None
    protocol: str | None = None
    participation: float = 1.0
    bounded_rewards: bool = False
    gamma: int = 1

    def __post_init__(self) -> None:
        from fedbandit_env.protocols import protocol_name

        if self.protocol is not None:  # a former name (a plugin's, a saved one) reads on
            object.__setattr__(self, "protocol", protocol_name(self.protocol))

    def merge(self, other: Requirements) -> Requirements:
        """The requirements of running both (longest messages, smallest epsilon).

        Raises:
            ValueError: If the two need different protocols or participation rates.
        """
        eps = [e for e in (self.epsilon, other.epsilon) if e is not None]
        protocols = {p for p in (self.protocol, other.protocol) if p is not None}
        if len(protocols) > 1:
            raise ValueError(f"policies need different protocols: {sorted(protocols)}")
        if self.protocol and other.protocol and self.participation != other.participation:
            raise ValueError(
                f"policies need different participation rates: {self.participation}, "
                f"{other.participation}"
            )
        return Requirements(
            max(self.message_dim, other.message_dim),
            max(self.public_dim, other.public_dim),
            min(eps) if eps else None,
            protocols.pop() if protocols else None,
            self.participation if self.protocol else other.participation,
            self.bounded_rewards or other.bounded_rewards,
            max(self.gamma, other.gamma),
        )


class Policy(ABC):
    """One agent's decision rule.

    Subclasses implement :meth:`reset` and :meth:`act`; :meth:`requirements` says what
    the env must carry (messages, a public prefix, private rewards), so the runner can
    build an env that fits.

    Examples:
        >>> class AlwaysZero(Policy):
        ...     def reset(self, spec, seed=None): pass
        ...     def act(self, observation): return 0
        >>> AlwaysZero().act({"arm": 0, "reward": [0.0], "step": [0.0]})
        0
    """

    rejected: int = 0
    """Messages (or relayed rows) this agent dropped this episode because no honest sender
    could have sent them (a receiver that validates what it hears counts them here)."""

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """What the env must provide in a setting of this size (default: nothing)."""
        return Requirements()

    def privacy_epsilon(self, n_agents: int, n_arms: int) -> float | None:
        """The epsilon-DP guarantee of the messages this policy privatises itself, or
        ``None`` if it has no mechanism of its own (default).

        Examples:
            >>> FixedArm().privacy_epsilon(n_agents=4, n_arms=3) is None
            True
        """
        return None

    def privacy_delta(self, n_agents: int, n_arms: int) -> float:
        """The ``delta`` of that guarantee (0 for pure epsilon-DP and without a
        mechanism; default 0).

        Examples:
            >>> FixedArm().privacy_delta(n_agents=4, n_arms=3)
            0.0
        """
        return 0.0

    def noise_source(self) -> str | None:
        """Where the noise of this policy's own mechanism comes from: ``"seeded"`` (its
        team stream) or ``"secure"`` (OS entropy; :data:`~fedbandit_env.privacy.Noise`),
        ``None`` without a mechanism of its own (default). The runner reads it so that
        a policy's ``noise`` and the scenario's ``privacy_noise`` are one setting.

        Examples:
            >>> FixedArm().noise_source() is None
            True
        """
        return None

    @abstractmethod
    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Forget everything and prepare for a new episode as agent ``spec.index``."""

    @abstractmethod
    def act(self, observation: Observation) -> Action:
        """Read the newest observation and return this step's action."""


class FixedArm(Policy):
    """Always pulls one arm and sends a zero message: the simplest player, for audits of
    wrappers and protocols whose privacy must not depend on the policy.

    Args:
        arm: The arm pulled at every step.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = federated_mab_v0.parallel_env(n_agents=2, n_arms=3, horizon=2)
        >>> team = IndependentTeam(lambda: FixedArm(2))
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)
        {'agent_0': 2, 'agent_1': 2}
    """

    def __init__(self, arm: int = 0) -> None:
        if isinstance(arm, bool) or not isinstance(arm, int | np.integer) or arm < 0:
            raise ValueError(f"arm must be an int >= 0, got {arm!r}")
        self.arm = int(arm)

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Check that the arm exists."""
        if self.arm >= spec.n_arms:
            raise ValueError(f"arm {self.arm} does not exist: the env has {spec.n_arms} arms")

    def act(self, observation: Observation) -> Action:
        """The fixed arm."""
        return self.arm


class Team(ABC):
    """A joint decision rule for all agents of an env.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> class Zeros(Team):
        ...     def reset(self, env, seed=None): self.agents = env.possible_agents
        ...     def act(self, observations): return {a: 0 for a in observations}
        >>> env = federated_mab_v0.parallel_env(n_agents=2, n_arms=3, horizon=3)
        >>> team = Zeros()
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)
        {'agent_0': 0, 'agent_1': 0}
    """

    name: str = "team"

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """What the env must provide for this team (default: nothing)."""
        return Requirements()

    def own_privacy(self, n_agents: int, n_arms: int) -> float | None:
        """The epsilon of a mechanism the team runs itself (``None``: none; default)."""
        return None

    def privacy_spent(
        self, steps: IntArray, horizon: int, n_agents: int, n_arms: int
    ) -> FloatArray:
        """Each agent's privacy spent by each of ``steps`` (see :func:`privacy_curve`).

        Examples:
            >>> from fedbandit_env.registry import make
            >>> make("fed_ucb", epsilon=1.0).privacy_spent(np.array([1, 8]), 8, 3, 2)
            array([0.25, 1.  ])
        """
        own = self.own_privacy(n_agents, n_arms)
        return privacy_curve(self.requirements(n_agents, n_arms), steps, horizon, own)

    def privacy_delta(self, n_agents: int, n_arms: int) -> float:
        """The ``delta`` beside :meth:`privacy_spent`'s epsilon, per episode: the team's
        own mechanisms' (``PrivateRewards``' tree is pure, 0); deltas add under basic
        composition within an episode, and each episode privatises fresh rewards, so
        trials are not composed (default 0).

        Examples:
            >>> from fedbandit_env.registry import make
            >>> make("private_fedlin_ucb").privacy_delta(3, 25), make("fed_ucb").privacy_delta(3, 2)
            (0.1, 0.0)
        """
        return 0.0

    def rejected_messages(self) -> int:
        """Messages the team's receivers dropped this episode as ones no honest sender can
        send (default 0: a team that does not validate).

        Examples:
            >>> from fedbandit_env.registry import make
            >>> make("coop_ts").rejected_messages()
            0
        """
        return 0

    def noise_source(self) -> str | None:
        """Where the noise of the team's own mechanism comes from (``"seeded"``,
        ``"secure"``; ``None``: no mechanism of its own; default ``None``).

        Examples:
            >>> from fedbandit_env.registry import make
            >>> make("cdp_mab").noise_source(), make("cdp_mab", noise="secure").noise_source()
            ('seeded', 'secure')
            >>> make("fed_ucb").noise_source() is None  # its noise is the setting's wrapper
            True
        """
        return None

    @abstractmethod
    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Prepare for a new episode of ``env`` (already reset)."""

    @abstractmethod
    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """Map every live agent's observation to its action."""


def privacy_curve(
    needs: Requirements, steps: IntArray, horizon: int, own: float | None = None
) -> FloatArray:
    """The epsilon each agent's reward stream has spent by each of ``steps``.

    Readings (basic composition of what leaves an agent):

    - rewards seen only through ``PrivateRewards`` (``needs.epsilon``): the tree
      mechanism's spending (:func:`~fedbandit_env.privacy.tree_epsilon_spent`), which
      grows with ``log2 t`` up to ``needs.epsilon``;
    - a mechanism of the policy's own (``own``, e.g. Li & Song's ``n eps`` Laplace epoch
      means, each reward in exactly one released mean): ``own`` at every step, the
      guarantee of the whole run (an upper bound before the first release);
    - messages with neither: ``inf`` (raw statistics leave the agent);
    - no messages at all: ``0``.

    Examples:
        >>> steps = np.array([1, 4])
        >>> privacy_curve(Requirements(message_dim=3), steps, 4).tolist()
        [inf, inf]
        >>> privacy_curve(Requirements(), steps, 4).tolist()
        [0.0, 0.0]
        >>> privacy_curve(Requirements(message_dim=3), steps, 4, own=2.0).tolist()
        [2.0, 2.0]
    """
    from fedbandit_env.privacy.mechanisms import tree_epsilon_spent

    out = np.zeros(np.asarray(steps).size)
    if needs.epsilon is not None:
        out += tree_epsilon_spent(steps, horizon, needs.epsilon)
    if own is not None:
        out += own
    elif needs.message_dim and needs.epsilon is None:
        out[:] = np.inf
    return out


def _pack(action: Action, message_dim: int) -> Action:
    """Wrap a bare arm as ``{"arm", "message"}`` with a zero message when the env talks."""
    if message_dim and not isinstance(action, dict):
        return {"arm": action, "message": np.zeros(message_dim, dtype=np.float32)}
    return action


class IndependentTeam(Team):
    """One :class:`Policy` per agent; agent ``i`` sees only its own observation.

    Args:
        policies: One policy per agent, or a factory called once per agent at reset.
        name: Label in result tables.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = federated_mab_v0.parallel_env(n_agents=3, n_arms=4, horizon=5)
        >>> team = IndependentTeam(lambda: FixedArm(1))  # a fresh FixedArm(1) per agent
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)
        {'agent_0': 1, 'agent_1': 1, 'agent_2': 1}
    """

    def __init__(
        self,
        policies: Sequence[Policy] | Callable[[], Policy],
        name: str | None = None,
    ) -> None:
        if callable(policies) and not isinstance(policies, Sequence):
            self._factory: Callable[[], Policy] | None = policies
            self.policies: list[Policy] = []
            default = getattr(policies, "__name__", type(policies).__name__)
        else:
            self._factory = None
            self.policies = list(policies)
            if not all(isinstance(p, Policy) for p in self.policies):
                raise TypeError("policies must be Policy instances or a Policy factory")
            default = type(self.policies[0]).__name__ if self.policies else "team"
        self.name = name or default
        self._by_agent: dict[AgentID, Policy] = {}
        self._message_dim = 0
        self._screened = 0  # deliveries screen_inbox dropped this episode

    def _members(self) -> list[Policy]:
        """The members, or one fresh copy from the factory before the first reset."""
        return self.policies or ([self._factory()] if self._factory else [])

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """The merged requirements of the members."""
        members = self._members()
        out = Requirements()
        for p in members:
            out = out.merge(p.requirements(n_agents, n_arms))
        return out

    def own_privacy(self, n_agents: int, n_arms: int) -> float | None:
        """The weakest of the members' own mechanisms (``None``: none has one).

        Examples:
            >>> from fedbandit_env.registry import make
            >>> make("cdp_mab", epsilon=0.5).privacy_spent(np.array([10]), 10, 4, 3).tolist()
            [2.0]
        """
        members = self._members()
        owns = [e for p in members if (e := p.privacy_epsilon(n_agents, n_arms)) is not None]
        return max(owns) if owns else None

    def privacy_delta(self, n_agents: int, n_arms: int) -> float:
        """The largest of the members' ``delta`` (every member runs the same mechanism)."""
        members = self._members()
        return max((p.privacy_delta(n_agents, n_arms) for p in members), default=0.0)

    def rejected_messages(self) -> int:
        """The members' :attr:`Policy.rejected`, added up, and what :func:`screen_inbox`
        dropped before they read it."""
        return sum(int(p.rejected) for p in self.policies) + self._screened

    def noise_source(self) -> str | None:
        """``"secure"`` if a member's mechanism draws from OS entropy, else ``"seeded"``
        if one draws from its stream, else ``None``."""
        sources = {p.noise_source() for p in self._members()} - {None}
        return "secure" if "secure" in sources else (sources.pop() if sources else None)

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Give each agent a fresh policy (or reset the given ones) with its own seed."""
        agents = list(env.possible_agents)
        if self._factory is not None:
            self.policies = [self._factory() for _ in agents]
        elif len(self.policies) != len(agents):
            raise ValueError(
                f"IndependentTeam has {len(self.policies)} policies but the env has "
                f"{len(agents)} agents"
            )
        # team_streams: keys (.., 3, i), never an env stream whatever the two seeds
        seeds: list[SeedLike] = (
            list(team_streams(seed, len(agents))) if seed is not None else [None] * len(agents)
        )
        for agent, policy, s in zip(agents, self.policies, seeds, strict=True):
            spec = AgentSpec.from_env(env, agent)
            policy.reset(spec, s)
        self._by_agent = dict(zip(agents, self.policies, strict=True))
        self._message_dim = AgentSpec.from_env(env, agents[0]).message_dim
        self._screened = 0

    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """Ask each live agent's policy for its action, on its inbox as
        :func:`screen_inbox` leaves it."""
        pol, dim = self._by_agent, self._message_dim
        if dim:
            screened = {}
            for a, obs in observations.items():
                screened[a], dropped = screen_inbox(obs)
                self._screened += dropped
            observations = screened
        return {a: _pack(pol[a].act(obs), dim) for a, obs in observations.items()}


def screen_inbox(observation: Observation) -> tuple[Observation, int]:
    """One agent's observation without what no honest sender can send: a heard message
    (or public prefix) or a server message holding a NaN or an infinity (the env refuses
    any honest agent's, so only a forger's, as the wire carries it, can) is zeroed and
    marked unheard. Returns the observation (the same object when nothing was dropped)
    and how many deliveries were dropped; the screened observation marks the dropped
    senders in ``dropped`` ``(N,)`` (a receiver that must hear every neighbour, such as
    the consensus family, tells a dropped forgery from a lost message by it), and a
    dropped server message in ``server_dropped`` ``(1,)`` (a round's result that never
    comes usable ends the round: the elimination family starts its next epoch).
    :class:`IndependentTeam` screens every member's
    inbox with it, so no per-agent policy computes on a forged NaN or relays one; what is
    finite is each policy's to validate (:attr:`Policy.rejected`).

    Examples:
        >>> obs = {"messages": np.array([[1.0], [np.nan]], np.float32),
        ...        "mask": np.array([1, 1], np.int8)}
        >>> clean, dropped = screen_inbox(obs)
        >>> clean["messages"][:, 0].tolist(), clean["mask"].tolist(), dropped
        ([1.0, 0.0], [1, 0], 1)
        >>> clean["dropped"].tolist()
        [0, 1]
    """
    if not isinstance(observation, dict):
        return observation, 0
    messages, server = observation.get("messages"), observation.get("server")
    rows_ok = messages is None or bool(np.isfinite(messages).all())
    if rows_ok and (server is None or bool(np.isfinite(server).all())):
        return observation, 0
    out = dict(observation)
    dropped = 0
    if messages is not None and not rows_ok:
        bad = ~np.isfinite(messages).all(axis=-1)
        heard = np.asarray(out["mask"], dtype=bool)
        if "public_mask" in out:
            heard = heard | np.asarray(out["public_mask"], dtype=bool)
            out["public_mask"] = np.where(bad, 0, out["public_mask"]).astype(np.int8)
        dropped += int((heard & bad).sum())
        out["dropped"] = (heard & bad).astype(np.int8)
        out["mask"] = np.where(bad, 0, out["mask"]).astype(np.int8)
        out["messages"] = np.where(bad[:, None], 0, messages).astype(np.float32)
    if server is not None and not np.isfinite(server).all():
        sent = int(np.asarray(out["server_mask"]).reshape(-1)[0] != 0)
        dropped += sent
        out["server_dropped"] = np.array([sent], dtype=np.int8)
        out["server"] = np.zeros_like(server)
        out["server_mask"] = np.zeros_like(out["server_mask"])
    return out, dropped
