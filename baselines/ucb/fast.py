"""The plain baselines' batched trial loops: local UCB1 and KL-UCB, random, the pooled
oracle.

Each loop plays a whole trial for all agents with the same compiled mathematics as the
policies (:mod:`baselines.ucb.kernels`, :mod:`baselines.common.kernels`) and the same
draws as the env, so it replays the PettingZoo path step for step
(``tests/runner/test_replay.py``); the runners are the registry's ``fast_entry_point``s.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from numba import njit

from baselines.common.bundles import ProblemArrays, Recording, problem_arrays, recording
from baselines.common.kernels import (
    argmax_count,
    first_unpulled,
    log_time,
    mean_of,
    tie_pick,
)
from baselines.common.trial import agent_rngs, record_step
from baselines.ucb.kernels import kl_ucb_choice, oracle_index, ucb1_index
from baselines.ucb.policies import kl_range
from fedbandit_env.core.kernels import pull_arms
from fedbandit_env.rng_kernels import generator_at, generator_table, integer_below
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import env_generators, team_generators
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


class LocalIndex(NamedTuple):
    """Which index a local agent plays: ``kl`` (KL-UCB, else UCB1), the bonus ``scale``,
    KL-UCB's ``c`` and reward range ``(lo, width)`` (:func:`baselines.ucb.policies.kl_range`)."""

    kl: bool
    scale: float
    c: float
    lo: float
    width: float


@njit(cache=True, nogil=True)
def _local_index_trial(
    problem: ProblemArrays,
    rec: Recording,
    which: LocalIndex,
    reward_rng: np.random.Generator,
    agent_table: npt.NDArray[np.uint64],
) -> None:  # pragma: no cover
    mu = problem.mu
    noise = problem.noise
    sigma = problem.sigma
    gaps = problem.gaps
    kl = which.kl
    scale = which.scale
    c = which.c
    lo = which.lo
    width = which.width
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    n, m = mu.shape
    counts = np.zeros((n, m))
    sums = np.zeros((n, m))
    index = np.zeros(m)
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen = np.zeros(n, dtype=np.float32)
    cum = np.zeros(n)
    r = 0
    for s in range(1, horizon + 1):
        log_t = log_time(s - 1)
        for i in range(n):
            if s > 1:  # IndexPolicy.observe of the last step (float32 observation)
                counts[i, arms[i]] += 1.0
                sums[i, arms[i]] += float(seen[i])
            k = first_unpulled(counts[i])
            if k < 0:
                if kl:
                    kl_ucb_choice(sums[i], counts[i], log_t, c, lo, width, scale, index)
                else:
                    ucb1_index(sums[i], counts[i], log_t, scale, index)
                k, ties = argmax_count(index)
                if ties > 1:  # touch the agent's generator only on a tie
                    k = tie_pick(index, ties, generator_at(agent_table, i))
            arms[i] = k
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        if t_arms.shape[0] or (r < steps.size and s == steps[r]):
            r = record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


@njit(cache=True, nogil=True)
def _random_trial(
    mu: FloatArray,
    noise: int,
    sigma: float,
    gaps: FloatArray,
    horizon: int,
    steps: IntArray,
    reward_rng: np.random.Generator,
    agent_table: npt.NDArray[np.uint64],
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> None:  # pragma: no cover
    n, m = mu.shape
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen = np.zeros(n, dtype=np.float32)
    cum = np.zeros(n)
    r = 0
    for s in range(1, horizon + 1):
        for i in range(n):
            arms[i] = integer_below(generator_at(agent_table, i), m)
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        if t_arms.shape[0] or (r < steps.size and s == steps[r]):
            r = record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


@njit(cache=True, nogil=True)
def _oracle_trial(
    problem: ProblemArrays,
    rec: Recording,
    scale: float,
    reward_rng: np.random.Generator,
    team_rng: np.random.Generator,
) -> None:  # pragma: no cover
    mu = problem.mu
    noise = problem.noise
    sigma = problem.sigma
    gaps = problem.gaps
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    n, m = mu.shape
    counts = np.zeros(m)
    sums = np.zeros(m)
    index = np.zeros(m)
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen = np.zeros(n, dtype=np.float32)
    cum = np.zeros(n)
    t = 0
    r = 0
    for s in range(1, horizon + 1):
        if s > 1:
            sums[arms[0]] += mean_of(seen.astype(np.float64))
            counts[arms[0]] += 1.0
            t += 1
        k = first_unpulled(counts)
        if k < 0:
            oracle_index(sums, counts, t, n, scale, index)
            k, ties = argmax_count(index)
            if ties > 1:
                k = tie_pick(index, ties, team_rng)
        arms[:] = k
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        if t_arms.shape[0] or (r < steps.size and s == steps[r]):
            r = record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


def _run_local(st: TrialSetup, seeds: tuple[int, Any], which: LocalIndex) -> TrialResult:
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, _ = env_generators(env_seed)
    rngs = agent_rngs(team_seed, st.scenario.n_agents)  # alive during the call
    _local_index_trial(
        problem_arrays(st),
        recording(st.scenario.horizon, st.steps, out, arms, rewards, np.zeros(0)),
        which,
        reward_rng,
        generator_table(rngs),
    )
    return TrialResult(out, arms, rewards)


def run_local_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of local UCB1 (fast entry point of ``local_ucb``)."""
    scale = float(st.params.get("scale", 1.0))
    return _run_local(st, seeds, LocalIndex(False, scale, 0.0, 0.0, 1.0))


def run_kl_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of local KL-UCB (fast entry point of ``kl_ucb``)."""
    lo, width = kl_range(st.reward_bounds)
    scale, c = float(st.params.get("scale", 1.0)), float(st.params.get("c", 0.0))
    return _run_local(st, seeds, LocalIndex(True, scale, c, lo, width))


def run_random(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, _ = env_generators(env_seed)
    rngs = agent_rngs(team_seed, st.scenario.n_agents)  # alive during the call
    _random_trial(
        st.mu,
        st.noise,
        st.sigma,
        st.gaps,
        st.scenario.horizon,
        st.steps,
        reward_rng,
        generator_table(rngs),
        out,
        arms,
        rewards,
    )
    return TrialResult(out, arms, rewards)


def run_oracle(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, _ = env_generators(env_seed)
    scale = float(st.params.get("scale", 1.0))
    _oracle_trial(
        problem_arrays(st),
        recording(st.scenario.horizon, st.steps, out, arms, rewards, np.zeros(0)),
        scale,
        reward_rng,
        team_generators(team_seed, 1)[0],
    )
    return TrialResult(out, arms, rewards)
