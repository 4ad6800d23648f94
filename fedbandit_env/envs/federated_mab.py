"""The federated multi-armed bandit as a PettingZoo ``ParallelEnv``.

=================  ===========================================================================
Import             ``from fedbandit_env import federated_mab_v0``
Make               ``federated_mab_v0.parallel_env(problem=..., network=..., horizon=...)``
                   or ``pettingzoo.make("parallel", "fedbandit/federated_mab-v0", ...)``
Agents             ``agent_0 .. agent_{N-1}``, all act every step
Action space       ``Discrete(M)`` (the arm); with ``message_dim = D > 0``:
                   ``Dict(arm=Discrete(M), message=Box(lo, hi, (D,), float32))``
Observation space  ``Dict(arm=Discrete(M), reward=Box(r_lo, r_hi, (1,)), step=Box(0, T, (1,)))``
                   and, with messages, ``messages=Box(lo, hi, (N, D))`` indexed by sender
                   and ``mask=MultiBinary(N)`` (1 where that sender's message arrived);
                   with a protocol whose ``public_dim > 0`` also ``public_mask=MultiBinary(N)``
                   (1 where only the sender's public prefix arrived, e.g. gossip counts);
                   with a server protocol also ``server=Box(-inf, inf, (D,))`` (what the
                   server sent: ``[n_aggregated, aggregate...]``) and
                   ``server_mask=MultiBinary(1)``
Reset observation  ``arm = 0``, ``reward = 0``, ``step = 0``, no messages: nothing pulled yet
Rewards            The agent's own *local* reward, drawn around ``mu[i, arm]``
Infos              ``regret``: pseudo-regret increment ``max_k mu[k] - mu[arm]`` against the
                   *global* means; ``cumulative_regret``; ``peer_links``/``server_links``:
                   links the protocol used this step (whole network); ``comm_cost``:
                   their cost ``c1 * server_links + c2 * peer_links`` (Li & Song) and
                   ``cumulative_comm_cost``
Truncation         All agents at ``step == horizon``; never terminated
Arguments          ``problem`` (:class:`~fedbandit_env.problems.MABProblem`), ``network``
                   (:class:`~fedbandit_env.network.Network` or networkx graph; default
                   complete), ``protocol`` (default :class:`~fedbandit_env.protocols.Broadcast`),
                   ``horizon``, ``message_dim``, ``message_bounds``, ``link_costs``,
                   ``render_mode``
=================  ===========================================================================

Order of events in ``step(actions)``: every agent pulls its arm and sends its message;
the env draws the local rewards (one generator per episode, spawned from the seed); the
protocol routes the messages (its own spawned generator); each agent observes its own
arm and reward and what was delivered to it.  Messages sent at step ``t`` are therefore
seen when choosing the action of step ``t + 1``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import networkx as nx
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from fedbandit_env.core.mab import MABCore
from fedbandit_env.core.routing import Routed
from fedbandit_env.envs.actions import ActionParser
from fedbandit_env.envs.checks import check_wiring
from fedbandit_env.envs.infos import reset_infos, step_infos
from fedbandit_env.envs.messages import message_entries
from fedbandit_env.envs.render import render_network, render_text
from fedbandit_env.envs.spaces import action_space, joint_state, observation_space, state_space
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.distribution import ProblemDistribution
from fedbandit_env.problems.mab import MABProblem
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.seeding import SPLITS, instance_seed
from fedbandit_env.type_aliases import (
    Action,
    AgentID,
    FloatArray,
    Observation,
    StepResult,
)
from fedbandit_env.validation import check_reset_options


class FederatedMABEnv(ParallelEnv[AgentID, Observation, Action]):
    """N agents each pull one of M arms per step and see locally biased rewards.

    See the module docstring for the spaces, rewards, infos and arguments.

    Args:
        problem: The reward model (local means and noise).
        network: Communication graph over the ``problem.n_agents`` agents; a
            :class:`Network`, a networkx graph, or ``None`` for the complete graph.
        protocol: Delivery rule for messages (default :class:`Broadcast`).
        horizon: Number of steps ``T`` before truncation (>= 1).
        message_dim: Length ``D`` of the message each agent sends per step; 0 disables
            messages (the action is then just the arm).
        message_bounds: ``(low, high)`` of every message entry; messages outside raise.
        link_costs: ``(c1, c2)``: cost of one server-agent link and of one agent-agent
            link per step (Li & Song's experiments: ``c1 = 25`` or ``50``, ``c2 = 1``).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns a string), ``"human"``
            (prints it) or ``"rgb_array"`` (a picture of the step: the graph, each agent
            coloured by its arm, an arrow for every message heard; needs matplotlib).

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> env = FederatedMABEnv(conflicting(4, 3, seed=0), horizon=5)
        >>> obs, infos = env.reset(seed=42)
        >>> sorted(obs["agent_0"])
        ['arm', 'reward', 'step']
        >>> obs, rewards, terms, truncs, infos = env.step({a: 1 for a in env.agents})
        >>> int(obs["agent_0"]["arm"]), float(obs["agent_0"]["step"][0])
        (1, 1.0)
        >>> round(infos["agent_0"]["regret"], 6) == round(float(env.problem.gaps[1]), 6)
        True
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "federated_mab_v0",
        "is_parallelizable": True,
    }

    def __init__(
        self,
        problem: MABProblem | ProblemDistribution,
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
        self.distribution: ProblemDistribution | None = None
        if isinstance(problem, ProblemDistribution):
            self.distribution = problem
            problem = problem.sample(instance_seed(0, split))  # until the first reset
        if not isinstance(problem, MABProblem):
            raise TypeError(
                "problem must be a MABProblem or a ProblemDistribution, "
                f"got {type(problem).__name__}"
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
        network, protocol, (lo, hi) = w.network, w.protocol, w.message_bounds
        self.horizon, self.message_dim, self.link_costs = w.horizon, w.message_dim, w.link_costs
        self.problem = problem
        self.network = network
        self.protocol = protocol
        self.message_bounds = (lo, hi)
        self.render_mode = render_mode
        self.n_agents = n
        self.n_arms = problem.n_arms
        self.possible_agents: list[AgentID] = [f"agent_{i}" for i in range(n)]
        self.agents: list[AgentID] = []
        self._actions = ActionParser(
            self.possible_agents, self.n_arms, self.message_dim, self.message_bounds
        )
        self._live: set[AgentID] = set()
        # The env is a view of the batched core with one env (fedbandit_env.vector): the
        # same code draws instances, rewards and messages for both.
        self._core = MABCore(
            self.distribution or problem,
            network,
            [protocol],
            self.horizon,
            self.message_dim,
            (lo, hi),
            self.link_costs,
            split,
        )
        self._instance: int | None = None
        # one space object per agent, so that seeding one agent's space leaves the others'
        spec = (self.n_arms, self.horizon, problem.reward_bounds, self.message_dim, (lo, hi))
        self._obs_spaces = {a: observation_space(n, *spec, protocol) for a in self.possible_agents}
        self._state_space = state_space(n, self.n_arms, problem.reward_bounds, self.horizon)
        self._act_spaces: dict[AgentID, spaces.Space[Any]] = {
            a: action_space(self.n_arms, self.message_dim, (lo, hi)) for a in self.possible_agents
        }

    # ------------------------------------------------------------------ spaces
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
            >>> from fedbandit_env import federated_mab_v0
            >>> env = federated_mab_v0.parallel_env(message_dim=1)
            >>> env.unwrapped.admit_forgers(["agent_1"])
        """
        self._actions.admit_forgers(agents)

    # ------------------------------------------------------------------ seeding
    @property
    def np_random(self) -> np.random.Generator:
        """The env's master generator (seeded by ``reset(seed=...)``)."""
        core = self._core
        if core.masters[0] is None:
            core.masters[0], _ = seeding.np_random()
        master = core.masters[0]
        assert master is not None
        return master

    @property
    def t(self) -> int:
        """Steps taken in this episode."""
        return self._core.t

    @property
    def cumulative_regret(self) -> FloatArray:
        """Per-agent cumulative pseudo-regret so far (a copy)."""
        return self._core.cum_regret[0].copy()

    @property
    def core(self) -> MABCore:
        """The batched core this env is the one-env view of."""
        return self._core

    @property
    def _reward_rng(self) -> np.random.Generator:
        """This episode's reward generator (``seeding.env_generators``' first)."""
        return self._core.reward_rngs[0]

    # ------------------------------------------------------------------ API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Start an episode; ``seed`` reseeds the master generator.

        The reward and protocol generators of the episode are spawned from the master
        generator, so ``reset(seed=s)`` replays an episode exactly and ``reset()``
        continues with fresh draws.
        """
        options = dict(check_reset_options(options))  # before any state changes
        core = self._core
        core.reset([seed], options)
        self.problem = core.problems[0]
        self._instance = core.instances[0]
        self.agents = list(self.possible_agents)
        self._live = set(self.agents)
        return self._observations(None), reset_infos(self.agents, self._instance)

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Pull every agent's arm, route the messages, return the parallel-API tuple."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        arms, messages = self._actions.parse(actions, self.agents, self._live)
        core = self._core
        step = core.step(arms[None], messages[None] if self.message_dim else None)
        observations = self._observations(step.routed)
        done = step.done
        peer, server = int(step.peer_links[0]), int(step.server_links[0])
        agents = self.agents
        # Python floats via tolist() once: indexing NumPy per agent costs ~80 ns a value.
        rew = dict(zip(agents, step.rewards[0].tolist(), strict=True))
        infos = step_infos(agents, step.regret[0].tolist(), core.cum_regret[0].tolist(), peer,
                           server, float(step.cost[0]), float(core.cum_cost[0]),
                           self._instance)  # fmt: skip
        terminations = dict.fromkeys(agents, False)
        truncations = dict.fromkeys(agents, done)
        if done:
            self.agents = []
            self._live = set()
        if self.render_mode == "human":
            print(self._render_text())
        return observations, rew, terminations, truncations, infos

    @property
    def state_space(self) -> spaces.Box:
        """The global state's space (:meth:`state`), for centralized critics."""
        return self._state_space

    def state(self) -> np.ndarray:
        """What every agent observed last, together (:func:`~.spaces.joint_state`).

        Examples:
            >>> env = FederatedMABEnv(MABProblem([[0.2, 0.8], [0.5, 0.5]]), horizon=3)
            >>> _ = env.reset(seed=0); _ = env.step({"agent_0": 1, "agent_1": 0})
            >>> env.state().shape, env.state()[[1, 3, 6]].tolist()
            ((7,), [1.0, 1.0, 1.0])
        """
        core = self._core
        return joint_state(core.last_arms[0], core.last_rewards[0], core.t, self.n_arms)

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text summary of the last step; ``"human"``: print it;
        ``"rgb_array"``: a picture of it (:func:`~fedbandit_env.envs.render.render_network`:
        the graph, each agent coloured by its arm, an arrow for every message heard).

        Examples:
            >>> env = FederatedMABEnv(MABProblem([[0.2, 0.8], [0.5, 0.5]]), horizon=3,
            ...                       render_mode="rgb_array")
            >>> _ = env.reset(seed=0); _ = env.step({"agent_0": 1, "agent_1": 0})
            >>> env.render().shape
            (480, 480, 3)
        """
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            core = self._core
            routed = core.last_routed
            return render_network(
                self.network,
                core.last_arms[0],
                None if routed is None else np.asarray(routed.mask[0], dtype=bool),
                core.t,
                self.horizon,
                self.problem.best_arm,
            )
        text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""

    # ------------------------------------------------------------------ helpers
    def _render_text(self) -> str:
        core = self._core
        last = (core.last_arms[0], core.last_rewards[0], core.cum_regret[0])
        return render_text(self.problem.best_arm, core.t, self.horizon, self.possible_agents, *last)

    def _observations(self, routed: Routed | None) -> dict[AgentID, Observation]:
        core = self._core
        arms = core.last_arms[0].tolist()
        # One fresh array per step for each key, each agent its own row (a view); except
        # the step, the same for everyone: one read-only array shared by all agents
        # (writing to it raises), which saves a view per agent.
        rewards = core.last_rewards[0].astype(np.float32).reshape(-1, 1)
        step = np.full(1, core.t, dtype=np.float32)
        step.flags.writeable = False
        out: dict[AgentID, Observation] = {}
        rows = zip(self.agents, arms, list(rewards), strict=True)
        if not self.message_dim:
            for a, arm, reward in rows:
                out[a] = {"arm": arm, "reward": reward, "step": step}
            return out
        extra = message_entries(routed, self.n_agents, self.message_dim, self.protocol)
        if len(extra) == 2:  # the common case: messages and mask
            for (a, arm, reward), heard, seen in zip(rows, extra["messages"], extra["mask"],
                                                     strict=True):  # fmt: skip
                out[a] = {"arm": arm, "reward": reward, "step": step}
                out[a]["messages"], out[a]["mask"] = heard, seen
            return out
        keys = list(extra)
        for (a, arm, reward), values in zip(rows, zip(*extra.values(), strict=True), strict=True):
            obs: Observation = {"arm": arm, "reward": reward, "step": step}
            obs.update(zip(keys, values, strict=True))
            out[a] = obs
        return out
