"""The federated linear contextual bandit as a PettingZoo ``ParallelEnv``.

=================  ===========================================================================
Import             ``from fedbandit_env import federated_linear_v0``
Make               ``federated_linear_v0.parallel_env(problem=..., protocol=..., horizon=...)``
                   or ``pettingzoo.make("parallel", "fedbandit/federated_linear-v0", ...)``
Agents             ``agent_0 .. agent_{N-1}``, all act every step
Action space       ``Discrete(K)``: the index of the chosen vector in this step's decision
                   set; with ``message_dim = D > 0``: ``Dict(arm=Discrete(K),
                   message=Box(lo, hi, (D,)))``, as in ``federated_mab_v0``
Observation space  ``contexts=Box(-L, L, (K, d), float32)`` (``L``: the first problem's
                   largest feature norm, at least 1): the decision set to choose
                   from *now*; ``arm``, ``reward``, ``step``: the last choice and its
                   reward; with messages, ``messages``/``mask`` (and ``server``/
                   ``server_mask`` for a server protocol such as
                   :class:`~fedbandit_env.protocols.Synchronize`), as in
                   ``federated_mab_v0``
Rewards            ``y = <x, theta_i> + noise`` (Bernoulli or Gaussian), the agent's own
Infos              ``regret``: ``max_{x' in D[i, t]} <x', theta> - <x, theta>`` against the
                   *global* ``theta`` and the agent's own decision set (Dubey & Pentland's
                   pseudo-regret); ``cumulative_regret``; ``peer_links``, ``server_links``,
                   ``comm_cost``, ``cumulative_comm_cost`` as in ``federated_mab_v0``
Truncation         All agents at ``step == horizon``; never terminated
=================  ===========================================================================

Order of events in ``step(actions)``: every agent picks a vector of the decision set it
was shown and sends its message; the env draws the rewards, routes the messages, and
draws the next decision sets, shown in the new observation. Generators of an episode
(spawned from ``reset(seed)``): rewards (child 0), protocol (child 1), decision sets
(child 2).

The env is a view of :class:`~fedbandit_env.core.linear.LinearCore` with one env (its
:attr:`~FederatedLinearEnv.core`): the core draws the instance, the decision sets, the
rewards and the messages, and this class turns its arrays into a dict per agent, as
``FederatedMABEnv`` does over ``MABCore``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import networkx as nx
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.core.linear import LinearCore, LinearSampler, ProblemCheck, first_problem
from fedbandit_env.core.routing import Routed
from fedbandit_env.envs.actions import ActionParser
from fedbandit_env.envs.checks import check_wiring
from fedbandit_env.envs.infos import reset_infos, step_infos
from fedbandit_env.envs.messages import message_entries
from fedbandit_env.envs.spaces import action_space, joint_state, observation_space, state_space
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.seeding import SPLITS
from fedbandit_env.type_aliases import Action, AgentID, IntArray, Observation, StepResult
from fedbandit_env.validation import check_reset_options


def check_contexts(problem: LinearProblem, bound: float, what: str) -> None:
    """Refuse a problem whose contexts would leave a ``contexts`` space of bound ``bound``
    (``what`` names it in the message).

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> check_contexts(dubey_synthetic(2, dim=2, seed=0), 1.0, "the problem")
    """
    top = float(np.abs(problem.features).max())
    if top > bound:
        raise ValueError(
            f"{what} has a feature coordinate of {top:.4g}, beyond the contexts space's "
            f"bound {bound:.4g} (set at construction from the first problem's "
            "feature norm, at least 1): normalise the features, or build the env with a "
            "problem whose vectors are the longest"
        )


def check_pinned_problem(pinned: Any, core: LinearCore, check: ProblemCheck) -> None:
    """Refuse a reset's ``options["problem"]`` (``None``: none pinned) that is no
    :class:`~fedbandit_env.problems.linear.LinearProblem` of ``core``'s agents, set size
    and dimension, or that ``check`` refuses (the view's bound on the contexts,
    :func:`check_contexts`).

    Examples:
        >>> from fedbandit_env import federated_linear_v0
        >>> core = federated_linear_v0.parallel_env().unwrapped.core
        >>> try:
        ...     check_pinned_problem(3, core, core.check)
        ... except ValueError as e:
        ...     print(str(e)[:52])
        options['problem'] must be a LinearProblem with 4 ag
    """
    if pinned is None:
        return
    shape = (core.n_agents, core.set_size, core.dim)
    got = (
        (pinned.n_agents, pinned.set_size, pinned.dim)
        if isinstance(pinned, LinearProblem)
        else None
    )
    if got != shape:
        raise ValueError(
            f"options['problem'] must be a LinearProblem with {shape[0]} agents, "
            f"set_size {shape[1]} and dim {shape[2]}, got {pinned!r}"
        )
    check(pinned, "options['problem']")


class FederatedLinearEnv(ParallelEnv[AgentID, Observation, Action]):
    """N agents each choose one vector of a decision set per step (linear rewards).

    See the module docstring for the spaces, rewards, infos and order of events.

    Args:
        problem: A :class:`~fedbandit_env.problems.linear.LinearProblem`, or a sampler
            ``rng -> LinearProblem`` that draws a fresh instance at every
            ``reset(seed=s)`` (from ``instance_seed(s, split)``, as ``federated_mab_v0``
            does with a distribution); ``reset(options={"problem": p})`` pins one.
        network: Communication graph (default complete).
        protocol: Delivery rule of messages (default broadcast to neighbours).
        horizon: Steps ``T`` per episode.
        message_dim: Message length ``D`` (0: no messages).
        message_bounds: ``(low, high)`` of every message entry.
        link_costs: ``(c1, c2)``: cost of a server link and of a peer link.
        split: ``"train"`` or ``"held_out"``: which instance seeds a sampler draws from.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> env = FederatedLinearEnv(dubey_synthetic(3, dim=2, seed=0), horizon=4)
        >>> obs, _ = env.reset(seed=0)
        >>> obs["agent_0"]["contexts"].shape, sorted(obs["agent_0"])
        ((4, 2), ['arm', 'contexts', 'reward', 'step'])
        >>> obs, rew, *_, infos = env.step({a: 0 for a in env.agents})
        >>> infos["agent_0"]["regret"] >= 0.0
        True
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array"],
        "name": "federated_linear_v0",
        "is_parallelizable": True,
    }

    def __init__(
        self,
        problem: LinearProblem | LinearSampler,
        network: Network | nx.Graph | None = None,
        protocol: Protocol | None = None,
        horizon: int = 1000,
        message_dim: int = 0,
        message_bounds: tuple[float, float] = (-np.inf, np.inf),
        link_costs: tuple[float, float] = (25.0, 1.0),
        render_mode: str | None = None,
        split: str = "train",
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
        self.split = split
        source = problem
        problem, self.sampler = first_problem(source, split)  # a draw: until a reset
        n = problem.n_agents
        w = check_wiring(
            n,
            network,
            protocol,
            horizon,
            message_dim,
            message_bounds,
            link_costs,
            render_mode,
            self.metadata["render_modes"],
        )
        network, protocol, (lo, hi), (c1, c2) = (
            w.network,
            w.protocol,
            w.message_bounds,
            w.link_costs,
        )
        self.horizon, self.message_dim = w.horizon, w.message_dim
        self.problem, self.network, self.protocol = problem, network, protocol
        self.link_costs, self.message_bounds, self.render_mode = (c1, c2), (lo, hi), render_mode
        self.n_agents, self.n_arms, self.dim = n, problem.set_size, problem.dim
        self.possible_agents: list[AgentID] = [f"agent_{i}" for i in range(n)]
        self.agents: list[AgentID] = []
        self._actions = ActionParser(self.possible_agents, self.n_arms, self.message_dim, (lo, hi))
        # every coordinate of a context lies within its norm: L = the construction
        # problem's feature_bound, at least 1 (the shipped kinds draw their features in
        # the unit ball), so that the problems drawn at reset lie inside too
        bound = self.context_bound = max(1.0, float(problem.feature_bound))
        spec = (self.n_arms, self.horizon, problem.reward_bounds, self.message_dim, (lo, hi))
        self._obs_spaces = {}
        for a in self.possible_agents:
            space = observation_space(n, *spec, protocol)
            space.spaces["contexts"] = spaces.Box(
                -bound, bound, (self.n_arms, self.dim), np.float32
            )
            self._obs_spaces[a] = space
        self._act_spaces = {
            a: action_space(self.n_arms, self.message_dim, (lo, hi)) for a in self.possible_agents
        }
        self._state_space = state_space(n, self.n_arms, problem.reward_bounds, self.horizon)
        # The env is a view of the linear core with one env: the same code draws the
        # instances, decision sets, rewards and messages for any number of envs.
        self._core = LinearCore(source, network, [protocol], self.horizon, self.message_dim,
                                (lo, hi), (c1, c2), split, self._check_bound)  # fmt: skip
        self._instance: int | None = None

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The observation space of ``agent`` (the same object on every call)."""
        return self._obs_spaces[agent]

    def action_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The action space of ``agent`` (the same object on every call)."""
        return self._act_spaces[agent]

    def admit_forgers(self, agents: list[AgentID]) -> None:
        """Carry ``agents``' messages as the wire would, whatever their values (float32:
        NaN, infinities, overflow), for a Byzantine wrapper's liars; any other agent's
        malformed message still raises (:meth:`ActionParser.admit_forgers
        <fedbandit_env.envs.actions.ActionParser.admit_forgers>`).

        Examples:
            >>> from fedbandit_env import federated_linear_v0
            >>> env = federated_linear_v0.parallel_env(message_dim=1)
            >>> env.unwrapped.admit_forgers(["agent_1"])
        """
        self._actions.admit_forgers(agents)

    @property
    def state_space(self) -> spaces.Box:
        """The space of :meth:`state` (each agent's last choice and reward, the step)."""
        return self._state_space

    def state(self) -> np.ndarray:
        """What every agent observed last, together (:func:`~.spaces.joint_state`)."""
        core = self._core
        return joint_state(core.last_arms[0], core.last_rewards[0], core.t, self.n_arms)

    @property
    def core(self) -> LinearCore:
        """The :class:`~fedbandit_env.core.linear.LinearCore` this env is the view of (one
        env).

        Examples:
            >>> from fedbandit_env import federated_linear_v0
            >>> federated_linear_v0.parallel_env().unwrapped.core.n_envs
            1
        """
        return self._core

    @property
    def decision_sets(self) -> IntArray:
        """This step's decision sets as pool rows ``(N, K)`` (a copy; for tests)."""
        return self._core.sets[0].copy()

    def _check_bound(self, problem: LinearProblem, what: str) -> None:
        """Refuse a problem whose contexts would leave the declared ``contexts`` space."""
        check_contexts(problem, self.context_bound, what)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Start an episode (see :class:`FederatedLinearEnv` for instances)."""
        options = dict(check_reset_options(options))  # before any state changes
        check_pinned_problem(options.get("problem"), self._core, self._check_bound)
        core = self._core
        core.reset([seed], options)
        self.problem, self._instance = core.problems[0], core.instances[0]
        self.agents = list(self.possible_agents)
        return self._observations(None), reset_infos(self.agents, self._instance)

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Take every agent's choice, route the messages, show the next decision sets."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        arms, messages = self._actions.parse(actions, self.agents, set(self.agents))
        core = self._core
        step = core.step(arms[None], messages[None] if self.message_dim else None)
        observations = self._observations(step.routed)
        peer, server = int(step.peer_links[0]), int(step.server_links[0])
        agents = self.agents
        infos = step_infos(agents, step.regret[0].tolist(), core.cum_regret[0].tolist(), peer,
                           server, float(step.cost[0]), float(core.cum_cost[0]),
                           self._instance)  # fmt: skip
        rew = dict(zip(agents, step.rewards[0].tolist(), strict=True))
        if step.done:
            self.agents = []
        return (observations, rew, dict.fromkeys(agents, False),
                dict.fromkeys(agents, step.done), infos)  # fmt: skip

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the step, each agent's last choice, reward and cumulative regret;
        ``"rgb_array"``: a picture of it (:func:`~fedbandit_env.envs.render.render_network`:
        the graph, each agent coloured by the index it chose in its decision set and
        ringed when that was its set's best, an arrow for every message heard).

        Examples:
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> env = FederatedLinearEnv(dubey_synthetic(3, set_size=4, dim=2, seed=0),
            ...                          horizon=3, render_mode="rgb_array")
            >>> _ = env.reset(seed=0); _ = env.step({a: 0 for a in env.agents})
            >>> env.render().shape
            (480, 480, 3)
        """
        if self.render_mode is None:
            return None
        core = self._core
        if self.render_mode == "rgb_array":
            from fedbandit_env.envs.render import render_network

            best = core.last_regret[0] <= 1e-12 if core.t else np.zeros(self.n_agents, bool)
            routed = core.last_routed
            heard = None if routed is None else np.asarray(routed.mask[0], dtype=bool)
            return render_network(self.network, core.last_arms[0], heard, core.t, self.horizon,
                                  best)  # fmt: skip
        last = (core.last_arms[0], core.last_rewards[0], core.cum_regret[0])
        rows = zip(self.possible_agents, *last, strict=True)
        lines = [f"step {core.t}/{self.horizon}"]
        lines += [f"  {a}: chose {k}, reward {r:.3f}, regret {c:.2f}" for a, k, r, c in rows]
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release."""

    def _observations(self, routed: Routed | None) -> dict[AgentID, Observation]:
        core = self._core
        contexts = core.contexts()  # (N, K, d)
        rewards = core.last_rewards[0].astype(np.float32).reshape(-1, 1)
        step = np.full(1, core.t, dtype=np.float32)
        step.flags.writeable = False
        arms = core.last_arms[0].tolist()
        out: dict[AgentID, Observation] = {}
        for i, a in enumerate(self.agents):
            out[a] = {"arm": arms[i], "contexts": contexts[i], "reward": rewards[i], "step": step}
        if not self.message_dim:
            return out
        extra = message_entries(routed, self.n_agents, self.message_dim, self.protocol)
        if len(extra) == 2:  # the common case: messages and mask
            for a, heard, seen in zip(self.agents, extra["messages"], extra["mask"], strict=True):
                obs = out[a]
                obs["messages"], obs["mask"] = heard, seen
            return out
        keys = list(extra)
        for a, values in zip(self.agents, zip(*extra.values(), strict=True), strict=True):
            out[a].update(zip(keys, values, strict=True))
        return out
