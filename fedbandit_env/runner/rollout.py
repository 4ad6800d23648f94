"""Run teams on envs and collect regret curves.

Seeding: one ``SeedSequence(seed)`` per experiment, spawned once per trial and again
into an env seed and a team seed, so every (configuration, seed) pair reproduces and
trials are independent streams.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv
from tqdm.auto import tqdm

from fedbandit_env.policies import Team
from fedbandit_env.scenario.trial import record_steps
from fedbandit_env.seeding import spawn, split_trial_seed
from fedbandit_env.type_aliases import FloatArray, IntArray, SeedLike


@dataclass
class RegretCurves:
    """Cumulative pseudo-regret of one policy over trials.

    Attributes:
        policy: Policy label.
        t: Recorded steps, shape ``(R,)``.
        regret: Per-agent cumulative pseudo-regret, shape ``(trials, N, R)``.
        seconds: Wall time of each trial.
        meta: Free-form extras (lambda_2, epsilon, ...).
        comm_cost: Cumulative communication cost of the whole network at the recorded
            steps, shape ``(trials, R)`` (``c1`` per server link, ``c2`` per peer link).
        privacy_spent: The epsilon each agent's rewards have spent by the recorded steps,
            shape ``(R,)`` (:func:`~fedbandit_env.policies.privacy_curve`; ``nan``:
            unknown).
        privacy_delta: The ``delta`` beside that epsilon, per episode (0: pure DP or no
            mechanism; ``nan``: unknown).
        seeds: The trial index of each row of ``regret`` (trial ``j`` of the seed),
            default ``0 .. trials-1``.
        scenario: Label of the scenario (a sweep's grid point; ``""`` for one scenario).
        setting: The information setting every policy of the table ran in
            (:mod:`fedbandit_env.settings`; ``""``: each policy its own).

    Examples:
        >>> c = RegretCurves("x", np.array([1, 2]), np.ones((3, 2, 2)))
        >>> c.group.shape, float(c.final_per_agent.mean())
        ((3, 2), 1.0)
    """

    policy: str
    t: IntArray
    regret: FloatArray
    seconds: FloatArray = field(default_factory=lambda: np.zeros(0))
    meta: dict[str, Any] = field(default_factory=dict)
    comm_cost: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    privacy_spent: FloatArray = field(default_factory=lambda: np.zeros(0))
    privacy_delta: float = float("nan")
    seeds: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    scenario: str = ""
    setting: str = ""

    def __post_init__(self) -> None:
        trials, _, records = self.regret.shape
        if records != self.t.size:
            raise ValueError(f"regret has {records} records but t has {self.t.size} steps")
        if self.comm_cost.size == 0:
            self.comm_cost = np.zeros((trials, records))
        if self.privacy_spent.size == 0:
            self.privacy_spent = np.full(records, np.nan)
        if self.seeds.size == 0:
            self.seeds = np.arange(trials, dtype=np.int64)
        self.seeds = np.asarray(self.seeds, dtype=np.int64)
        if self.comm_cost.shape != (trials, records) or self.privacy_spent.shape != (records,):
            raise ValueError(
                f"comm_cost {self.comm_cost.shape} and privacy_spent "
                f"{self.privacy_spent.shape} must be ({trials}, {records}) and ({records},)"
            )
        if self.seeds.shape != (trials,):
            raise ValueError(f"seeds must have shape ({trials},), got {self.seeds.shape}")

    @property
    def n_trials(self) -> int:
        """Number of trials."""
        return int(self.regret.shape[0])

    @property
    def n_agents(self) -> int:
        """Number of agents."""
        return int(self.regret.shape[1])

    @property
    def per_agent(self) -> FloatArray:
        """Mean over agents of the per-agent regret, shape ``(trials, R)``."""
        return self.regret.mean(axis=1)

    @property
    def group(self) -> FloatArray:
        """Group regret (sum over agents), shape ``(trials, R)``."""
        return self.regret.sum(axis=1)

    @property
    def final_per_agent(self) -> FloatArray:
        """Mean per-agent regret at the horizon, one value per trial."""
        return self.per_agent[:, -1]

    @property
    def late_slope(self) -> FloatArray:
        """Per-agent regret per step over the last quarter of the horizon, per trial.

        About the largest gap for a linear curve, near 0 once learning has converged
        (the value at ``3T/4`` is interpolated between recorded steps).

        Examples:
            >>> t = np.array([50, 100])
            >>> RegretCurves("x", t, np.array([[[5.0, 10.0]]])).late_slope.tolist()
            [0.1]
        """
        horizon = float(self.t[-1])
        at = 0.75 * horizon
        pa = self.per_agent
        start = np.array([np.interp(at, np.r_[0, self.t], np.r_[0.0, row]) for row in pa])
        return (pa[:, -1] - start) / (horizon - at)

    @property
    def final_group(self) -> FloatArray:
        """Group regret at the horizon, one value per trial."""
        return self.group[:, -1]


def rollout(
    env: ParallelEnv[Any, Any, Any],
    team: Team,
    seed: SeedLike = None,
    record_every: int = 1,
) -> tuple[IntArray, FloatArray, FloatArray]:
    """Play one episode of ``team`` on ``env``; return recorded steps, regret and cost.

    Regret is read from ``infos[agent]["cumulative_regret"]``, which the env computes
    against the global means and every wrapper passes through untouched.

    Args:
        env: A reset-able parallel env (possibly wrapped) with a finite horizon.
        team: The joint policy.
        seed: Seeds both the env (an int drawn from it) and the team.
        record_every: Record every ``k`` steps (and at the last step).

    Returns:
        ``(t, regret, comm_cost)``: recorded steps ``(R,)``, per-agent cumulative regret
        ``(N, R)`` and the network's cumulative communication cost ``(R,)``.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.registry import make as make_team
        >>> env = federated_mab_v0.parallel_env(n_agents=2, n_arms=3, horizon=6)
        >>> t, reg, cost = rollout(env, make_team("random"), seed=0, record_every=3)
        >>> t.tolist(), reg.shape, cost.tolist()
        ([3, 6], (2, 2), [0.0, 0.0])
    """
    env_seed, team_ss = split_trial_seed(seed)
    horizon = int(env.unwrapped.horizon)
    steps = record_steps(horizon, record_every)
    agents = list(env.possible_agents)
    out = np.zeros((len(agents), steps.size))
    cost = np.zeros(steps.size)
    observations, _ = env.reset(seed=env_seed)
    team.reset(env, seed=team_ss)
    t, r = 0, 0
    while env.agents:
        observations, _, _, _, infos = env.step(team.act(observations))
        t += 1
        if r < steps.size and t == steps[r]:
            out[:, r] = [infos[a]["cumulative_regret"] for a in agents]
            cost[r] = infos[agents[0]].get("cumulative_comm_cost", 0.0)
            r += 1
    if r != steps.size:
        raise RuntimeError(f"episode ended after {t} steps, before the horizon {horizon}")
    return steps, out, cost


def run_trials(
    make_env: Callable[[], ParallelEnv[Any, Any, Any]],
    make_team: Callable[[], Team],
    n_trials: int,
    seed: int = 0,
    record_every: int = 1,
    label: str | None = None,
    progress: bool = True,
    first_trial: int = 0,
) -> RegretCurves:
    """Run ``n_trials`` independent episodes and stack their regret curves.

    The env and the team are built once and reset per trial; trial ``j`` uses the
    ``j``-th child of ``SeedSequence(seed)``, for ``j`` from ``first_trial`` on.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.registry import make as make_team
        >>> curves = run_trials(lambda: federated_mab_v0.parallel_env(horizon=20),
        ...                     lambda: make_team("local_ucb"), n_trials=2, progress=False)
        >>> curves.regret.shape
        (2, 4, 20)
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    if first_trial < 0:
        raise ValueError(f"first_trial must be >= 0, got {first_trial}")
    env, team = make_env(), make_team()
    name = label or team.name
    runs, seconds, costs, rejected = [], [], [], []
    t: IntArray = np.zeros(0, dtype=np.int64)
    children = spawn(seed, first_trial + n_trials)[first_trial:]
    for child in tqdm(children, desc=name, unit="trial", disable=not progress, leave=False):
        # rollout splits each child as seeding.trial_seeds does (the fast path's seeds)
        start = time.perf_counter()
        t, reg, cost = rollout(env, team, seed=child, record_every=record_every)
        seconds.append(time.perf_counter() - start)
        runs.append(reg)
        costs.append(cost)
        rejected.append(team.rejected_messages())
    n_agents, n_arms = len(env.possible_agents), int(env.unwrapped.n_arms)
    horizon = int(env.unwrapped.horizon)
    env.close()
    curves = RegretCurves(
        name,
        t,
        np.stack(runs),
        np.array(seconds),
        comm_cost=np.stack(costs),
        privacy_spent=team.privacy_spent(t, horizon, n_agents, n_arms),
        privacy_delta=team.privacy_delta(n_agents, n_arms),
        seeds=np.arange(first_trial, first_trial + n_trials),
    )
    # messages the receivers dropped as ones no honest sender can send, per trial
    curves.meta["rejected_messages"] = np.array(rejected, dtype=np.int64)
    return curves
