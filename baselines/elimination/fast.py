"""CDP-MAB, DDP-MAB and HDP-MAB as one batched trial loop (Li & Song, Algorithm 1).

All agents of a trial share the epoch schedule, so the loop runs them in lockstep with
the mathematics of :mod:`baselines.elimination.kernels` and replays the protocol's own
link counts; it replays the PettingZoo path step for step (``tests/runner/test_replay.py``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.common.bundles import ProblemArrays, Recording, problem_arrays, recording
from baselines.common.trial import agent_generators, record_step
from baselines.elimination.kernels import (
    argmax_active,
    elim_delta,
    elim_radius,
    eliminate,
    epoch_target,
    epoch_total,
    local_best,
    running_private_mean,
)
from fedbandit_env.core.kernels import pull_arms
from fedbandit_env.privacy.mechanisms import clip_range
from fedbandit_env.protocols import Flooding, Hybrid, participants, round_schedule
from fedbandit_env.protocols.kernels import choose_subset, mean_rows, weighted_mean_rows
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import env_generators
from fedbandit_env.type_aliases import IntArray


class EliminationParams(NamedTuple):
    """The elimination loop's own parameters: the variant (``kind`` 0 CDP, 1 DDP, 2 HDP),
    uploaders ``n_up``, ``epsilon`` (``inf``: no privacy), the policy's clip range
    ``[lo, hi]``, the scenario's ``[seen_lo, seen_hi]``, limited ``rounds`` and their
    ``min_gap``."""

    kind: int
    n_up: int
    epsilon: float
    lo: float
    hi: float
    seen_lo: float
    seen_hi: float
    rounds: int
    min_gap: float


class RoundSchedule(NamedTuple):
    """The protocol's links per round (peer and server), each agent's component and
    their number, and the costs ``c1`` (server link) and ``c2`` (peer link)."""

    sched_peer: IntArray
    sched_server: IntArray
    component: IntArray
    n_components: int
    c1: float
    c2: float


@njit(cache=True, nogil=True)
def _elimination_trial(
    problem: ProblemArrays,
    params: EliminationParams,
    schedule: RoundSchedule,
    reward_rng: np.random.Generator,
    protocol_rng: np.random.Generator,
    agent_rngs: Any,
    rec: Recording,
) -> None:  # pragma: no cover
    """CDP-MAB (``kind`` 0, server rounds with ``n_up`` uploaders), DDP-MAB (1, GIS
    flooding) or HDP-MAB (2, hybrid): the epoch loop of
    :class:`~baselines.elimination.EliminationPolicy` for all agents in lockstep (they
    share the schedule: every round ends for all at the same step with the same
    aggregate). Link counts per round replay the protocol's own (``sched_*``). The
    observed reward is clipped to ``[seen_lo, seen_hi]`` as ``ClipRewards`` does (the
    scenario's clip range), then to ``[lo, hi]`` as the policy does, whose width
    calibrates the noise (all infinite without privacy: no clipping)."""
    mu = problem.mu
    noise = problem.noise
    sigma = problem.sigma
    gaps = problem.gaps
    kind = params.kind
    n_up = params.n_up
    epsilon = params.epsilon
    lo = params.lo
    hi = params.hi
    seen_lo = params.seen_lo
    seen_hi = params.seen_hi
    rounds = params.rounds
    min_gap = params.min_gap
    sched_peer = schedule.sched_peer
    sched_server = schedule.sched_server
    component = schedule.component
    n_components = schedule.n_components
    c1 = schedule.c1
    c2 = schedule.c2
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    cost_out = rec.cost_out
    n, m = mu.shape
    private = np.isfinite(epsilon)
    counts = np.zeros((n, m))
    sums = np.zeros((n, m))
    epoch_sums = np.zeros((n, m))
    ybar = np.zeros((n, m))
    sent = np.zeros((n, m))
    yhat = np.zeros(m)
    aggregate = np.zeros(m)
    sink_means = np.zeros((n_components, m))
    sink_counts = np.zeros(n_components)
    members = np.zeros(n, dtype=np.bool_)
    chosen = np.zeros(n, dtype=np.bool_)
    everyone = np.arange(n)
    all_rows = np.ones(n, dtype=np.bool_)
    active = np.ones(m, dtype=np.bool_)
    order = np.arange(m)
    n_order = m
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen = np.zeros(n, dtype=np.float32)
    cum = np.zeros(n)
    cum_cost = 0.0
    phase = 0  # 0 explore, 1 upload, 2 wait, 3 commit
    commit = 0
    r_epoch = 0
    previous = 0
    total = 0
    radius = 0.0
    pos = 0
    explored = False
    rounds_done = 0
    round_start = -1  # step of the upload of the round in flight
    delivered = -1  # step whose observation carries the round's result
    length = sched_peer.size
    start_epoch = True
    r = 0
    for s in range(1, horizon + 1):
        # ---- every agent's act(): record the last reward
        if s > 1:
            for i in range(n):
                a = arms[i]
                rw = min(max(float(seen[i]), lo), hi)
                counts[i, a] += 1.0
                sums[i, a] += rw
                if explored:
                    epoch_sums[i, a] += rw
        if phase == 2 and delivered == s - 1:  # _finish_round
            rounds_done += 1
            eliminate(aggregate, active, radius)
            previous = total
            if rounds > 0 and rounds_done >= rounds:
                phase = 3
                commit = argmax_active(aggregate, active)
            else:
                start_epoch = True
        if start_epoch:  # _start_epoch
            start_epoch = False
            n_active = 0
            for k in range(m):
                if active[k]:
                    order[n_active] = k
                    n_active += 1
            if n_active == 1:
                phase = 3
                commit = order[0]
            else:
                r_epoch += 1
                delta = elim_delta(r_epoch, rounds, min_gap)
                s_r = epoch_target(r_epoch, n_active, m, n_up, horizon, epsilon, delta)
                total = epoch_total(s_r, previous)
                radius = elim_radius(r_epoch, n_active, m, n_up, horizon, epsilon, s_r)
                n_order = n_active
                pos = 0
                epoch_sums[:] = 0.0
                phase = 0
        explored = False
        if phase == 0:
            arm = order[pos % n_order]
            pos += 1
            explored = True
            if pos == n_order * (total - previous):
                phase = 1
            arms[:] = arm
        elif phase == 1:  # _privatise, then exploit
            pulls = total - previous
            scale = ((hi - lo) / pulls) / (n_up * epsilon) if private else 0.0
            for i in range(n):
                j = 0
                for k in range(m):
                    if active[k]:
                        x = epoch_sums[i, k] / pulls
                        yhat[j] = x + agent_rngs[i].laplace(0.0, scale) if private else x
                        j += 1
                running_private_mean(ybar[i], yhat, active, previous, total)
                for k in range(m):
                    sent[i, k] = float(np.float32(ybar[i, k])) if active[k] else 0.0
                arms[i] = local_best(sums[i], counts[i], active)
            phase = 2
            round_start = s
        elif phase == 2:
            for i in range(n):
                arms[i] = local_best(sums[i], counts[i], active)
        else:
            arms[:] = commit
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        # ---- the protocol's route() of this step
        if round_start > 0 and s - round_start < length:
            j = s - round_start
            if kind == 0:
                choose_subset(everyone, n_up, protocol_rng, chosen)
                mean_rows(sent, chosen, aggregate)
                cum_cost += c1 * n_up
            else:
                cum_cost += c1 * sched_server[j] + c2 * sched_peer[j]
            if j == length - 1:
                delivered = s
                round_start = -1
                if kind == 1:
                    mean_rows(sent, all_rows, aggregate)
                elif kind == 2:
                    for q in range(n_components):
                        for i in range(n):
                            members[i] = component[i] == q
                        mean_rows(sent, members, sink_means[q])
                        sink_counts[q] = members.sum()
                    weighted_mean_rows(sink_means, sink_counts, aggregate)
                if kind != 1:  # the server's broadcast is float32 on the wire
                    for k in range(m):
                        aggregate[k] = float(np.float32(aggregate[k]))
        for i in range(n):  # what the policy observes (through ClipRewards when private)
            seen[i] = np.float32(min(max(rewards[i], seen_lo), seen_hi))
        due = r < steps.size and s == steps[r]
        if due:  # the network's cost, at the same steps as the regret
            cost_out[r] = cum_cost
        if due or t_arms.shape[0]:
            r = record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


def _run_elimination(st: TrialSetup, seeds: tuple[int, Any], kind: int) -> TrialResult:
    scenario, params = st.scenario, st.params
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, protocol_rng = env_generators(env_seed)
    n = scenario.n_agents
    epsilon = params.get("epsilon", 1.0)
    rounds = params.get("rounds")
    min_gap = params.get("min_gap")
    if rounds is not None and min_gap is None:
        raise ValueError("rounds needs min_gap (the smallest gap, assumed known)")
    participation = float(params.get("participation", 1.0)) if kind == 0 else 1.0
    n_up = participants(participation, n)
    net = scenario.network()
    component = np.zeros(n, dtype=np.int64)
    n_components = 1
    if kind == 0:
        peer, server = np.zeros(1, dtype=np.int64), np.array([n_up], dtype=np.int64)
    else:
        peer, server = round_schedule(Flooding() if kind == 1 else Hybrid(), net)
        for q, comp in enumerate(net.components):
            component[comp] = q
        n_components = len(net.components)
    lo, hi = seen_lo, seen_hi = -np.inf, np.inf
    if epsilon is not None:  # Scenario.make_env's ClipRewards, then the policy's range
        declared = scenario.clip or st.reward_bounds  # what the policy's spec says
        if scenario.clip is not None:
            seen_lo, seen_hi = scenario.clip
        lo, hi = clip_range(params.get("clip"), declared, ("CDPMAB", "DDPMAB", "HDPMAB")[kind])
    cost = np.zeros(st.steps.size)
    _elimination_trial(
        problem_arrays(st),
        EliminationParams(
            kind,
            n_up,
            float("inf") if epsilon is None else float(epsilon),
            float(lo),
            float(hi),
            float(seen_lo),
            float(seen_hi),
            int(rounds or 0),
            float(min_gap or 0.0),
        ),
        RoundSchedule(
            peer,
            server,
            component,
            int(n_components),
            float(scenario.link_costs[0]),
            float(scenario.link_costs[1]),
        ),
        reward_rng,
        protocol_rng,
        agent_generators(team_seed, n),
        recording(scenario.horizon, st.steps, out, arms, rewards, cost),
    )
    return TrialResult(out, arms, rewards, cost)


def run_cdp_mab(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of CDP-MAB (server rounds; fast entry point of ``cdp_mab``)."""
    return _run_elimination(st, seeds, kind=0)


def run_ddp_mab(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of DDP-MAB (GIS flooding; fast entry point of ``ddp_mab``)."""
    return _run_elimination(st, seeds, kind=1)


def run_hdp_mab(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of HDP-MAB (hybrid; fast entry point of ``hdp_mab``)."""
    return _run_elimination(st, seeds, kind=2)
