"""Audits of whole env stacks: play an env on two neighbouring inputs, observe, bound.

:func:`audit_env` runs an env factory ``input -> ParallelEnv`` with a team that plays
it, hands each run's :class:`Episode` to an *observer* function (what another agent, or
the server, sees), and bounds epsilon from the two sets of views with
:func:`~fedbandit_env.privacy.audit.audit_views`. :class:`ReplaceReward` builds the
neighbouring inputs: one agent's reward replaced at one step; :class:`ReplaceContexts`
one agent's decision set (a linear env's data are ``(x, y)`` pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.privacy.audit import AuditResult, audit
from fedbandit_env.seeding import spawn, split_trial_seed
from fedbandit_env.type_aliases import (
    Action,
    AgentID,
    FloatArray,
    Observation,
    SeedLike,
    StepResult,
)
from fedbandit_env.wrappers.base import ParallelWrapper


@dataclass
class Episode:
    """What one run of an env stack produced, step by step, for an observer function.

    Attributes:
        observations: ``observations[t]`` maps each agent to what it observed after
            step ``t`` (``t = 0``: after ``reset``).
        actions: ``actions[t]`` maps each agent to its action at step ``t + 1`` (arm
            and, where the env carries messages, the message it *sent*).
        infos: ``infos[t]`` as ``observations`` (``infos[0]`` from ``reset``).

    Examples:
        >>> Episode().steps
        0
    """

    observations: list[dict[AgentID, Observation]] = field(default_factory=list)
    actions: list[dict[AgentID, Action]] = field(default_factory=list)
    infos: list[dict[AgentID, dict[str, Any]]] = field(default_factory=list)

    @property
    def steps(self) -> int:
        """Steps played."""
        return len(self.actions)


TeamLike = Any
"""A :class:`~fedbandit_env.policies.Team`, or a callable returning one per run."""


def play(env: ParallelEnv[AgentID, Observation, Action], team: Any, seed: SeedLike) -> Episode:
    """Play one seeded episode (env and team seeded as the runners seed a trial) and
    record it.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.policies import FixedArm, IndependentTeam
        >>> ep = play(federated_mab_v0.parallel_env(horizon=3), IndependentTeam(FixedArm), 0)
        >>> ep.steps, len(ep.observations), ep.actions[0]["agent_0"]
        (3, 4, 0)
    """
    env_seed, team_seed = split_trial_seed(seed)
    obs, infos = env.reset(seed=env_seed)
    team.reset(env, seed=team_seed)
    episode = Episode([obs], [], [infos])
    while env.agents:
        actions = team.act(obs)
        obs, _, _, _, infos = env.step(actions)
        episode.actions.append(actions)
        episode.observations.append(obs)
        episode.infos.append(infos)
    return episode


def audit_env(
    make_env: Callable[[Any], ParallelEnv[AgentID, Observation, Action]],
    d0: Any,
    d1: Any,
    team: TeamLike,
    observe: Callable[[Episode], Sequence[float] | FloatArray],
    *,
    runs: int = 5000,
    seed: SeedLike = 0,
    alpha: float = 0.01,
    delta: float = 0.0,
    select: float = 0.3,
    bins: int = 64,
    method: str = "events",
) -> AuditResult:
    """Audit a whole env stack end to end through the PettingZoo API.

    Each run builds ``make_env(d)``, plays one episode with ``team`` (env and team
    seeded from the run's own seed), and keeps ``observe(episode)``: what the observer
    sees, as a short vector of numbers. An observer is another agent (its observations:
    messages received, masks), the server (the messages sent), or a coalition of them;
    the secret is what differs between ``d0`` and ``d1`` (e.g. one agent's reward at one
    step, :class:`ReplaceReward`).

    Args:
        make_env: Builds the env stack for an input.
        d0: One input.
        d1: Its neighbour.
        team: The agents' policies (or a factory of them, called once per run).
        observe: The observer's view of an episode.
        runs: Runs per input.
        seed: Seed of the audit.
        alpha: One minus the confidence of the bound.
        delta: The ``delta`` of the claim being audited.
        select: Share of the runs that chooses the event.
        bins: Cells per view (see :func:`audit_views`).
        method: ``"events"`` (any mechanism) or ``"gaussian"`` (a Gaussian mechanism's
            one-number view: :func:`~fedbandit_env.privacy.audit.gaussian_audit_views`).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.problems import MABProblem
        >>> from fedbandit_env.policies import FixedArm, IndependentTeam
        >>> from fedbandit_env.wrappers import PrivateRewards
        >>> def make_env(secret):  # agent 0's reward at step 1 is the secret
        ...     base = federated_mab_v0.parallel_env(problem=MABProblem([[0.0], [0.0]]), horizon=1)
        ...     return PrivateRewards(ReplaceReward(base, "agent_0", 1, secret), epsilon=1.0)
        >>> seen = lambda ep: [ep.observations[1]["agent_0"]["private_means"][0]]
        >>> r = audit_env(make_env, 0.0, 1.0, IndependentTeam(FixedArm), seen, runs=2000)
        >>> 0.3 < r.epsilon_lb <= 1.0
        True
    """
    factory = team if callable(team) and not hasattr(team, "act") else (lambda: team)

    def sample(data: Any, s: np.random.SeedSequence, n: int) -> FloatArray:
        env = make_env(data)
        rows = []
        for child in spawn(s, n):
            rows.append(np.asarray(observe(play(env, factory(), child)), dtype=np.float64))
        return np.array(rows)

    return audit(
        sample, d0, d1, runs=runs, seed=seed, alpha=alpha, delta=delta, select=select,
        bins=bins, method=method,
    )  # fmt: skip


def _check_target(env: ParallelEnv[AgentID, Observation, Action], agent: Any, step: Any) -> None:
    """The agent and step a neighbouring-input wrapper changes must exist."""
    if agent not in env.possible_agents:
        raise ValueError(f"agent must be one of {env.possible_agents}, got {agent!r}")
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 1:
        raise ValueError(f"step must be an int >= 1, got {step!r}")


class ReplaceReward(ParallelWrapper):
    """One agent's reward at one step replaced by a given value: neighbouring inputs.

    Two stacks that differ only in ``value`` (and are seeded alike) see reward streams
    that differ in exactly one item, the unit of privacy of every mechanism here. Put it
    directly on the env, *under* the wrappers being audited; the observation's
    ``reward`` and the reward ``step`` returns are both replaced.

    Args:
        env: A parallel env whose observations hold ``reward``.
        agent: Whose reward.
        step: At which step (``1 .. horizon``).
        value: The reward it gets then.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = ReplaceReward(federated_mab_v0.parallel_env(horizon=2), "agent_1", 1, 0.25)
        >>> _ = env.reset(seed=0)
        >>> obs, rewards, *_ = env.step({a: 0 for a in env.agents})
        >>> rewards["agent_1"], float(obs["agent_1"]["reward"][0])
        (0.25, 0.25)
    """

    vector_form = "fedbandit_env.vector.wrappers.audit:VecReplaceReward"

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        agent: AgentID,
        step: int,
        value: float,
    ) -> None:
        super().__init__(env)
        _check_target(env, agent, step)
        self.agent, self.step_index, self.value = agent, int(step), float(value)
        self._t = 0

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env and the step count."""
        self._t = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step; at the chosen step, replace the agent's reward."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self._t += 1
        if self._t == self.step_index and self.agent in obs:
            rewards = {**rewards, self.agent: self.value}
            o = obs[self.agent]
            obs = {**obs, self.agent: {**o, "reward": np.array([self.value], np.float32)}}
        return obs, rewards, terms, truncs, infos


class ReplaceContexts(ParallelWrapper):
    """One agent's decision set at one step replaced by given vectors: neighbouring
    inputs of a linear env, whose data are the pairs ``(x, y)`` (Dubey & Pentland's
    Definition 1). The env still draws the reward of the vector it had put there, so the
    two inputs differ in that one pair only.

    Args:
        env: A parallel env whose observations hold ``contexts`` ``(K, d)``.
        agent: Whose decision set.
        step: The step it is shown for (``1 .. horizon``: the set the agent chooses from
            at that step).
        contexts: The ``(K, d)`` vectors it sees instead.

    Examples:
        >>> from fedbandit_env import federated_linear_v0
        >>> base = federated_linear_v0.parallel_env(n_agents=2, dim=2, set_size=3, horizon=2)
        >>> env = ReplaceContexts(base, "agent_0", 1, np.zeros((3, 2)))
        >>> obs, _ = env.reset(seed=0)
        >>> mine, other = (float(np.abs(obs[a]["contexts"]).sum()) for a in env.agents)
        >>> mine, other > 0
        (0.0, True)
    """

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        agent: AgentID,
        step: int,
        contexts: Any,
    ) -> None:
        super().__init__(env)
        _check_target(env, agent, step)
        shape = env.observation_space(agent)["contexts"].shape
        value = np.asarray(contexts, dtype=np.float32)
        if value.shape != shape:
            raise ValueError(f"contexts must have shape {shape}, got {value.shape}")
        self.agent, self.step_index, self.contexts = agent, int(step), value
        self._t = 0

    def _replace(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        if self._t + 1 == self.step_index and self.agent in obs:
            obs = {**obs, self.agent: {**obs[self.agent], "contexts": self.contexts.copy()}}
        return obs

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env and the step count; replace the first set if asked."""
        self._t = 0
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._replace(obs), infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step; replace the set shown for the chosen step."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self._t += 1
        return self._replace(obs), rewards, terms, truncs, infos
