"""The linear family's fast paths, the registry's ``fast_entry_point``s: ``lin_ucb`` and
``pooled_lin_ucb`` are vector policies rolled out by the linear core
(:mod:`baselines.linear.vector`, :class:`~fedbandit_env.runner.vector_trials.CompiledTrials`);
FedUCB's centralized variants still run whole trials in the compiled loop of
:mod:`baselines.linear.loop`, the decentralized ones in :mod:`baselines.linear.local_loop`.

The loop calls the kernels the policies call (:mod:`baselines.linear.kernels`), takes every
derived constant from a policy reset exactly as on the PettingZoo path (threshold,
schedule, noise, ``rho_min``, ``rho_max``, ``kappa``), draws from the generators the env
and the team would (rewards: env child 0, decision sets: env child 2, each agent's tree
noise: its team stream), and reproduces what crosses the API (float32 contexts,
rewards, releases and server sums), so it replays the PettingZoo path step for step
(``tests/runner/test_replay.py``). Rank-one updates keep a step at ``O(K d^2)`` per agent with
no matrix inversion; a synchronisation inverts once per agent (Cholesky).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import typed

from baselines.common.bundles import linear_arrays, recording
from baselines.linear.decentralized import HEADER, DecFedLinUCB
from baselines.linear.kernels import set_scorer
from baselines.linear.local_loop import DecConstants, local_loop
from baselines.linear.loop import LinearConstants, LinearSwitches, linear_loop
from baselines.linear.policies import FedLinUCB, linear_message_dim
from fedbandit_env import registry
from fedbandit_env.policies import AgentSpec
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.runner.vector_trials import CompiledTrials
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import linear_env_generators, team_generators
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


@dataclass
class LinearRun:
    """What the batched loop needs from a policy: its constants after a reset.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> run = LinearRun.of(FedLinUCB(sync="fixed", batch=3), dubey_synthetic(2, dim=2, seed=0),
        ...                    horizon=5)
        >>> run.switches.private, run.switches.batch, run.constants.lam
        (False, 3, 1.0)
    """

    constants: LinearConstants
    switches: LinearSwitches

    @classmethod
    def of(
        cls, policy: FedLinUCB, problem: LinearProblem, horizon: int, c1: float = 25.0
    ) -> LinearRun:
        """Reset a copy of ``policy`` as agent 0 of the env and read its constants."""
        if not isinstance(policy, FedLinUCB):
            raise TypeError(
                f"the linear loop plays FedLinUCB only, got {type(policy).__name__} (LinUCB and "
                "the pooled oracle are vector policies: baselines.linear.vector)"
            )
        dim = linear_message_dim(problem.dim)
        spec = AgentSpec(
            0, problem.n_agents, problem.set_size, horizon, dim, context_dim=problem.dim
        )
        policy.reset(spec, seed=0)

        def get(name: str, default: float = 0.0) -> float:
            return float(getattr(policy, name, default))

        beta = -1.0 if policy.beta is None else policy.beta
        constants = LinearConstants(
            policy.regularizer,
            policy.sigma,
            policy.alpha,
            policy.norm_bound,
            beta,
            get("threshold"),
            get("rho_min"),
            get("rho_max"),
            get("shift"),
            get("kappa"),
            get("extra"),
            get("noise_std"),
            get("feature_bound", 1.0),
            float(c1),
            int(problem.n_agents),
        )
        switches = LinearSwitches(
            policy.epsilon is not None,
            policy.sync == "adaptive",
            int(get("batch", 1)),
            int(get("rounds", 1)),
            int(get("levels", 1)),
        )
        return cls(constants, switches)


def linear_trial(
    policy: FedLinUCB,
    problem: LinearProblem,
    horizon: int,
    env_seed: int,
    team_seed: np.random.SeedSequence,
    steps: IntArray,
    trace: bool = False,
    c1: float = 25.0,
) -> tuple[FloatArray, FloatArray, IntArray, Float32Array]:
    """One trial: per-agent regret ``(N, R)``, cost ``(R,)`` at ``steps`` and, traced,
    every agent's choice and observed reward ``(T, N)``.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> p = dubey_synthetic(2, dim=2, seed=0)
        >>> team_seed = np.random.SeedSequence(2)
        >>> policy = FedLinUCB(sync="fixed", batch=2)
        >>> reg, cost, *_ = linear_trial(policy, p, 6, 1, team_seed, np.array([3, 6]))
        >>> reg.shape, cost.tolist()  # a round after step 3 (2 observations, a step late)
        ((2, 2), [50.0, 100.0])
    """
    run = LinearRun.of(policy, problem, horizon, c1)
    reward_rng, _, sets_rng = linear_env_generators(env_seed)
    n = problem.n_agents
    rngs = typed.List(team_generators(team_seed, n))
    out, cost = np.zeros((n, steps.size)), np.zeros(steps.size)
    t_arms = np.zeros((horizon if trace else 0, n), dtype=np.int64)
    t_rewards = np.zeros((horizon if trace else 0, n), dtype=np.float32)
    linear_loop(
        linear_arrays(problem),
        recording(horizon, steps, out, t_arms, t_rewards, cost),
        run.constants,
        run.switches,
        reward_rng,
        sets_rng,
        rngs,
        set_scorer(problem.dim),
    )
    return out, cost, t_arms, t_rewards


def _run(pid: str, st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """The registry's fast entry point of ``pid``: its spec's options over the user's."""
    env_seed, team_seed = seeds
    policy = FedLinUCB(**{**registry.spec(pid).kwargs, **st.params})
    reg, cost, arms, rewards = linear_trial(
        policy,
        st.problem,
        st.scenario.horizon,
        env_seed,
        team_seed,
        st.steps,
        st.trace,
        c1=st.scenario.link_costs[0],
    )
    return TrialResult(reg, arms, rewards, comm_cost=cost)


def _run_decentralized(pid: str, st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """A decentralized trial: the LOCAL protocol's loop (:mod:`.local_loop`) with the
    constants of a reset :class:`DecFedLinUCB` (``pid``'s options over the user's)."""
    env_seed, team_seed = seeds
    policy = DecFedLinUCB(**{**registry.spec(pid).kwargs, **st.params})
    problem, horizon = st.problem, st.scenario.horizon
    n, gamma = problem.n_agents, policy.gamma
    spec = AgentSpec(0, n, problem.set_size, horizon, HEADER + (problem.dim + 1) ** 2,
                     context_dim=problem.dim)  # fmt: skip
    policy.reset(spec, seed=0)
    network = st.scenario.network()
    dist = network.hop_distances
    hops = np.where((dist >= 1) & (dist <= gamma), dist, 0).astype(np.int64)
    c2 = st.scenario.link_costs[1]  # a peer link a step: LOCAL has no server
    beta = -1.0 if policy.beta is None else policy.beta
    assert policy.threshold is not None
    constants = DecConstants(
        policy.regularizer,
        policy.sigma,
        policy.alpha,
        policy.norm_bound,
        beta,
        policy.threshold,
        c2 * network.n_edges,
        policy.sync == "fixed",
        policy.batch,
        policy.rounds,
        policy.epsilon is not None,
        policy.levels,
        policy.noise_std,
        policy.feature_bound,
        policy.gram_bound,
        policy.vec_bound,
        policy.noise_bound == "joint",
    )
    reward_rng, _, sets_rng = linear_env_generators(env_seed)
    out, cost = np.zeros((n, st.steps.size)), np.zeros(st.steps.size)
    _, t_arms, t_rewards = st.buffers()
    local_loop(
        linear_arrays(problem),
        recording(horizon, st.steps, out, t_arms, t_rewards, cost),
        constants,
        gamma,
        hops,
        reward_rng,
        sets_rng,
        typed.List(team_generators(team_seed, n)),
        set_scorer(problem.dim),
    )
    return TrialResult(out, t_arms, t_rewards, comm_cost=cost)


def run_dec_fedlin_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """``dec_fedlin_ucb``'s trial (decentralized, adaptive requests, no noise)."""
    return _run_decentralized("dec_fedlin_ucb", st, seeds)


def run_private_dec_fedlin_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """``private_dec_fedlin_ucb``'s trial (decentralized, fixed schedule, a GDP tree per
    estimator)."""
    return _run_decentralized("private_dec_fedlin_ucb", st, seeds)


run_lin_ucb = CompiledTrials("baselines.linear.vector:lin_ucb")
"""``lin_ucb``'s fast path: :class:`~baselines.linear.vector.LinUCBVector` rolled out by
the linear core (no trial loop of its own)."""

run_pooled_lin_ucb = CompiledTrials("baselines.linear.vector:pooled_lin_ucb")
"""``pooled_lin_ucb``'s fast path, the same way (the pooled learner of each env)."""


def run_fedlin_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """``fedlin_ucb``'s trial (adaptive, no noise)."""
    return _run("fedlin_ucb", st, seeds)


def run_fedlin_ucb_fixed(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """``fedlin_ucb_fixed``'s trial (fixed schedule, no noise)."""
    return _run("fedlin_ucb_fixed", st, seeds)


def run_fedlin_ucb_dp(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """``fedlin_ucb_dp``'s trial (as published)."""
    return _run("fedlin_ucb_dp", st, seeds)


def run_private_fedlin_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """``private_fedlin_ucb``'s trial (the corrected private variant)."""
    return _run("private_fedlin_ucb", st, seeds)


__all__ = [
    "LinearRun",
    "linear_trial",
    "run_dec_fedlin_ucb",
    "run_fedlin_ucb",
    "run_fedlin_ucb_dp",
    "run_fedlin_ucb_fixed",
    "run_lin_ucb",
    "run_pooled_lin_ucb",
    "run_private_dec_fedlin_ucb",
    "run_private_fedlin_ucb",
]
