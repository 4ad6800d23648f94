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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import networkx as nx
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from fedbandit_env.core.kernels import pull_sets
from fedbandit_env.envs.actions import ActionParser
from fedbandit_env.envs.checks import check_wiring
from fedbandit_env.envs.infos import reset_infos, step_infos
from fedbandit_env.envs.spaces import action_space, joint_state, observation_space, state_space
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.protocols.base import Delivery, Protocol
from fedbandit_env.seeding import SPLITS, env_streams, instance_seed
from fedbandit_env.type_aliases import Action, AgentID, IntArray, Observation, StepResult
from fedbandit_env.validation import check_reset_options

LinearSampler = Callable[[np.random.Generator], LinearProblem]
"""``rng -> LinearProblem``: an instance distribution (one draw per ``reset(seed)``)."""


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
        self.sampler: LinearSampler | None = None
        if callable(problem) and not isinstance(problem, LinearProblem):
            self.sampler = problem
            problem = self._draw(instance_seed(0, split))
        if not isinstance(problem, LinearProblem):
            raise TypeError(
                f"problem must be a LinearProblem or a sampler, got {type(problem).__name__}"
            )
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
        self._np_random: np.random.Generator | None = None
        self._rngs = env_streams(np.random.default_rng(0), linear=True)  # until a reset
        self._t, self._cum_cost = 0, 0.0
        self._cum_regret = np.zeros(n)
        self._sets: IntArray = np.zeros((n, self.n_arms), dtype=np.int64)
        self._last_arms = np.zeros(n, dtype=np.int64)
        self._last_rewards = np.zeros(n)

    def _draw(self, seed: np.random.SeedSequence) -> LinearProblem:
        assert self.sampler is not None
        problem = self.sampler(np.random.default_rng(seed))
        if not isinstance(problem, LinearProblem):
            raise TypeError(f"the sampler must return a LinearProblem, got {problem!r}")
        return problem

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
        return joint_state(self._last_arms, self._last_rewards, self._t, self.n_arms)

    @property
    def decision_sets(self) -> IntArray:
        """This step's decision sets as pool rows ``(N, K)`` (a copy; for tests)."""
        return self._sets.copy()

    def _check_bound(self, problem: LinearProblem, what: str) -> None:
        """Refuse a problem whose contexts would leave the declared ``contexts`` space."""
        top = float(np.abs(problem.features).max())
        if top > self.context_bound:
            raise ValueError(
                f"{what} has a feature coordinate of {top:.4g}, beyond the contexts space's "
                f"bound {self.context_bound:.4g} (set at construction from the first problem's "
                "feature norm, at least 1): normalise the features, or build the env with a "
                "problem whose vectors are the longest"
            )

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Start an episode (see :class:`FederatedLinearEnv` for instances)."""
        options = dict(check_reset_options(options))  # before any state changes
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        self._rngs = env_streams(self._np_random, linear=True)  # rewards, protocol, sets
        self._instance: int | None = None
        pinned = options.get("problem")
        if pinned is not None:
            if not isinstance(pinned, LinearProblem) or (
                pinned.n_agents,
                pinned.set_size,
                pinned.dim,
            ) != (self.n_agents, self.n_arms, self.dim):
                raise ValueError(
                    f"options['problem'] must be a LinearProblem with {self.n_agents} agents, "
                    f"set_size {self.n_arms} and dim {self.dim}, got {pinned!r}"
                )
            self._check_bound(pinned, "options['problem']")
            self.problem = pinned
        elif self.sampler is not None:
            s = int(self._np_random.integers(2**63)) if seed is None else seed
            self.problem = self._draw(instance_seed(s, self.split))
            self._check_bound(self.problem, f"the problem drawn for seed {s}")
            self._instance = s
        if self.message_dim:
            self.protocol.reset(self.network, self._rngs[1])
        self.agents = list(self.possible_agents)
        self._t, self._cum_cost = 0, 0.0
        self._cum_regret = np.zeros(self.n_agents)
        self._last_arms = np.zeros(self.n_agents, dtype=np.int64)
        self._last_rewards = np.zeros(self.n_agents)
        self._last_regret = np.zeros(self.n_agents)
        self._last_heard: np.ndarray | None = None
        self._sets = self.problem.draw_sets(self._rngs[2])
        return self._observations(None), reset_infos(self.agents, self._instance)

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Take every agent's choice, route the messages, show the next decision sets."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        arms, messages = self._actions.parse(actions, self.agents, set(self.agents))
        rows = self._sets[np.arange(self.n_agents), arms]
        rewards, regret = np.empty(self.n_agents), np.zeros(self.n_agents)
        problem = self.problem  # the step of the compiled loops (core.kernels.pull_sets)
        pull_sets(problem.local_means, rows, problem.noise_code, float(problem.sigma),
                  self._rngs[0], self._sets, problem.global_means, rewards, regret)  # fmt: skip
        self._t += 1
        self._cum_regret += regret
        self._last_arms, self._last_rewards, self._last_regret = arms, rewards, regret
        delivery = self.protocol.route(messages, self._t) if self.message_dim else None
        self._last_heard = None if delivery is None else np.asarray(delivery.mask, dtype=bool)
        peer = delivery.peer_links if delivery else 0
        server = delivery.server_links if delivery else 0
        cost = self.link_costs[0] * server + self.link_costs[1] * peer
        self._cum_cost += cost
        done = self._t >= self.horizon
        if not done:
            self._sets = self.problem.draw_sets(self._rngs[2])
        observations = self._observations(delivery)
        agents = self.agents
        infos = step_infos(agents, regret.tolist(), self._cum_regret.tolist(), peer, server,
                           cost, self._cum_cost, self._instance)  # fmt: skip
        rew = dict(zip(agents, rewards.tolist(), strict=True))
        if done:
            self.agents = []
        return observations, rew, dict.fromkeys(agents, False), dict.fromkeys(agents, done), infos

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
        if self.render_mode == "rgb_array":
            from fedbandit_env.envs.render import render_network

            best = self._last_regret <= 1e-12 if self._t else np.zeros(self.n_agents, bool)
            heard = self._last_heard
            if heard is not None and heard.shape != (self.n_agents, self.n_agents):
                heard = None  # a server round: no peer arrows
            return render_network(self.network, self._last_arms, heard, self._t, self.horizon,
                                  best)  # fmt: skip
        last = (self._last_arms, self._last_rewards, self._cum_regret)
        rows = zip(self.possible_agents, *last, strict=True)
        lines = [f"step {self._t}/{self.horizon}"]
        lines += [f"  {a}: chose {k}, reward {r:.3f}, regret {c:.2f}" for a, k, r, c in rows]
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release."""

    def _observations(self, delivery: Delivery | None) -> dict[AgentID, Observation]:
        contexts = self.problem.features[self._sets].astype(np.float32)  # (N, K, d)
        rewards = self._last_rewards.astype(np.float32).reshape(-1, 1)
        step = np.full(1, self._t, dtype=np.float32)
        step.flags.writeable = False
        arms = self._last_arms.tolist()
        out: dict[AgentID, Observation] = {}
        for i, a in enumerate(self.agents):
            out[a] = {"arm": arms[i], "contexts": contexts[i], "reward": rewards[i], "step": step}
        if not self.message_dim:
            return out
        n, d = self.n_agents, self.message_dim
        if self.protocol.has_server:  # agents talk only to the server: no peer inbox
            inbox = np.broadcast_to(np.zeros((1, 1, 1), np.float32), (n, n, d))
            mask = np.broadcast_to(np.zeros((1, 1), np.int8), (n, n))
        elif delivery is None:
            inbox, mask = np.zeros((n, n, d), np.float32), np.zeros((n, n), np.int8)
        else:
            inbox, mask = delivery.inbox.astype(np.float32), delivery.mask.astype(np.int8)
        public = None
        if self.protocol.public_dim:
            pm = None if delivery is None else delivery.public_mask
            public = mask if pm is None else pm.astype(np.int8)
        server = smask = None
        if self.protocol.has_server:
            if delivery is not None and delivery.server is not None:
                server = delivery.server.astype(np.float32)
                smask = np.asarray(delivery.server_mask, dtype=np.int8).reshape(n, 1)
            else:
                server = np.zeros((n, d), np.float32)
                smask = np.zeros((n, 1), np.int8)
        for i, a in enumerate(self.agents):
            obs = out[a]
            obs["messages"], obs["mask"] = inbox[i], mask[i]
            if public is not None:
                obs["public_mask"] = public[i]
            if server is not None and smask is not None:
                obs["server"], obs["server_mask"] = server[i], smask[i]
        return out
