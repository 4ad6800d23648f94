"""DDUCB and coop-UCB2 as one batched trial loop.

The loop plays every agent of a trial with the kernels of
:mod:`baselines.consensus.kernels` (the policies call the same ones) and the env's
reward draws, so it replays the PettingZoo path step for step
(:func:`fedbandit_env.testing.check_replay`): the same operations in the same order,
what every agent sent last step kept as the float32 the wire carries. Neither policy
draws random numbers of its own.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.common.bundles import ProblemArrays, Recording, problem_arrays, recording
from baselines.common.trial import record_step
from baselines.consensus.kernels import chebyshev_coefficients, chebyshev_step, mix_row, ucb_arm
from baselines.consensus.policies import DDUCB, CoopUCB2, consensus_sigma
from fedbandit_env.core.kernels import pull_arms
from fedbandit_env.protocols import make_protocol
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import env_generators
from fedbandit_env.type_aliases import FloatArray, IntArray

DDUCB_ACCEL, DDUCB_PLAIN, COOP_UCB2 = 0, 1, 2
"""The loop's variants."""


class ConsensusParams(NamedTuple):
    """The graph facts (neighbour table, degrees, the weight ``1 / (d_max + 1)``, each
    agent's ``eps_c``), the variant, DDUCB's stage and Chebyshev coefficients, the
    width's ``2 c sigma^2 / N`` and the link cost."""

    neighbours: IntArray
    degrees: IntArray
    weight: float
    eps_c: FloatArray
    variant: int
    stage: int
    a: FloatArray
    b: FloatArray
    width2: float
    link_cost: float
    code_alias: bool


@njit(cache=True, nogil=True)
def _consensus_trial(
    problem: ProblemArrays,
    params: ConsensusParams,
    reward_rng: np.random.Generator,
    rec: Recording,
) -> None:  # pragma: no cover
    mu = problem.mu
    noise = problem.noise
    sigma = problem.sigma
    gaps = problem.gaps
    neighbours = params.neighbours
    degrees = params.degrees
    weight = params.weight
    eps_c = params.eps_c
    variant = params.variant
    stage = params.stage
    a = params.a
    b = params.b
    width2 = params.width2
    link_cost = params.link_cost
    alias = params.code_alias
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    cost_out = rec.cost_out
    n, m = mu.shape
    size = 2 * m
    y = np.zeros((n, size))  # DDUCB's beta under consensus; coop-UCB2's x + e
    y_prev = np.zeros((n, size))
    alpha = np.zeros((n, size))
    gamma = np.zeros((n, size))
    delta = np.zeros((n, size))
    wire = np.zeros((n, size), dtype=np.float32)  # what each agent sent last step
    mixed = np.zeros(size)
    new = np.zeros(size)
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen = np.zeros(n, dtype=np.float32)
    cum = np.zeros(n)
    links = degrees.sum() // 2  # Broadcast: every edge carries a message each step
    cum_cost = 0.0
    r_stage = 0
    closed = False
    r = 0
    for s in range(1, horizon + 1):
        done = s - 1
        closing = False
        for i in range(n):
            if variant == COOP_UCB2:  # CoopUCB2.act
                if done > 0:
                    mix_row(y[i], wire, neighbours[i], degrees[i], weight, mixed)
                    for k in range(size):
                        y[i, k] = mixed[k]
                    y[i, arms[i]] += 1.0
                    y[i, m + arms[i]] += float(seen[i])
                if done < m:
                    arms[i] = done
                else:
                    arms[i] = ucb_arm(y[i], m, math.log(done - m + 1), width2, eps_c[i])
                continue
            if done > 0:  # DDUCB.act: absorb the last pull
                a_i, u = arms[i], float(seen[i])
                if done <= m:
                    y[i, a_i] += 1.0
                    y[i, m + a_i] += u
                else:
                    gamma[i, a_i] += 1.0
                    gamma[i, m + a_i] += u
                    alpha[i, a_i] += 1.0 / n
                    alpha[i, m + a_i] += u / n
                    if alias and closed and variant == DDUCB_ACCEL:
                        delta[i, a_i] += 1.0 / n
                        delta[i, m + a_i] += u / n
            if done == m:
                for k in range(size):
                    alpha[i, k] = y[i, k] / m
            elif done > m:  # DDUCB._round
                mix_row(y[i], wire, neighbours[i], degrees[i], weight, mixed)
                if variant == DDUCB_ACCEL:
                    chebyshev_step(mixed, y_prev[i], a[r_stage], b[r_stage], new)
                    for k in range(size):
                        y_prev[i, k] = y[i, k]
                        y[i, k] = new[k]
                else:
                    for k in range(size):
                        y[i, k] = mixed[k]
                if r_stage + 1 == stage:
                    closing = True
                    for k in range(size):
                        if variant == DDUCB_ACCEL:
                            delta[i, k] += y[i, k]
                            alpha[i, k] = delta[i, k]
                            y[i, k] = gamma[i, k]
                            y_prev[i, k] = 0.0
                        else:
                            alpha[i, k] = y[i, k]
                            y[i, k] += gamma[i, k]
                            if alias:
                                alpha[i, k] = y[i, k]
                        gamma[i, k] = 0.0
            if done < m:
                arms[i] = done
            else:
                c_s = m + n * (done - m) if done < m + stage else n * (done - stage)
                arms[i] = ucb_arm(alpha[i], m, math.log(max(c_s, 1)), width2, 0.0)
        if variant != COOP_UCB2 and done > m:
            r_stage = 0 if closing else r_stage + 1
            closed = closed or closing
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        for i in range(n):
            seen[i] = np.float32(rewards[i])
            for k in range(size):
                wire[i, k] = np.float32(y[i, k])
        cum_cost += link_cost * links
        due = r < steps.size and s == steps[r]
        if due:
            cost_out[r] = cum_cost
        if due or t_arms.shape[0]:
            r = record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


def _run(st: TrialSetup, seeds: tuple[int, Any], variant: int) -> TrialResult:
    # the policies name Broadcast (Requirements.protocol): the env delivers every
    # neighbour's message every step whatever protocol the scenario names
    scenario, params = st.scenario, st.params
    env_seed, _ = seeds
    out, arms, rewards = st.buffers()
    reward_rng, _ = env_generators(env_seed)
    net = scenario.network()
    make_protocol("broadcast").check_network(net)  # as the PettingZoo path's env refuses
    n = scenario.n_agents
    if net.n_edges == 0:
        raise ValueError("consensus bandits need a communication graph with edges")
    lam = float(net.consensus_lambda)
    eps_c = np.ascontiguousarray(net.consensus_epsilon, dtype=np.float64)
    sigma = consensus_sigma(params.get("sigma"), st.reward_bounds)
    stage, a, b, alias = 1, np.ones(1), np.zeros(1), False
    if variant == COOP_UCB2:
        coop_keys = ("gamma", "sigma", "graph_constants")
        policy = CoopUCB2(**{k: params[k] for k in coop_keys if k in params})
        width2 = 2.0 * policy.gamma * sigma**2 / n
        eps_c = np.array([policy.constant_of(i, n, e) for i, e in enumerate(eps_c)])
    else:
        keys = ("accelerated", "precision", "eta", "sigma", "stage", "code_alias")
        dd = DDUCB(**{k: params[k] for k in keys if k in params})
        variant = DDUCB_ACCEL if dd.accelerated else DDUCB_PLAIN
        stage = dd.stage_length(n, lam)
        if dd.accelerated:
            a, b = chebyshev_coefficients(lam, stage)
        width2 = 2.0 * dd.eta * sigma**2 / n
        alias = dd.code_alias
    cost = np.zeros(st.steps.size)
    _consensus_trial(
        problem_arrays(st),
        ConsensusParams(
            net.neighbors,
            net.degrees,
            1.0 / (float(net.degrees.max()) + 1.0),
            eps_c,
            variant,
            stage,
            a,
            b,
            width2,
            float(scenario.link_costs[1]),
            alias,
        ),
        reward_rng,
        recording(scenario.horizon, st.steps, out, arms, rewards, cost),
    )
    return TrialResult(out, arms, rewards, cost)


def run_dducb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of DDUCB (fast entry point of ``dducb`` and ``dducb_plain``; the variant
    from its options)."""
    return _run(st, seeds, DDUCB_ACCEL)


def run_coop_ucb2(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of coop-UCB2 (fast entry point of ``coop_ucb2``)."""
    return _run(st, seeds, COOP_UCB2)


__all__ = [
    "COOP_UCB2",
    "DDUCB_ACCEL",
    "DDUCB_PLAIN",
    "ConsensusParams",
    "run_coop_ucb2",
    "run_dducb",
]
