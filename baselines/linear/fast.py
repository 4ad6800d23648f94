"""The linear family's fast paths, the registry's ``fast_entry_point``s: ``lin_ucb``,
``pooled_lin_ucb`` and centralized FedUCB's variants are vector policies rolled out by the
linear core (:mod:`baselines.linear.vector`,
:class:`~fedbandit_env.runner.vector_trials.CompiledTrials`); the decentralized variants
still run whole trials in the compiled loop of :mod:`baselines.linear.local_loop`.

That loop calls the kernels the policies call (:mod:`baselines.linear.kernels`), takes every
derived constant from a policy reset exactly as on the PettingZoo path (threshold,
schedule, noise, ``rho_min``, ``rho_max``, ``kappa``), draws from the generators the env
and the team would (rewards: env child 0, decision sets: env child 2, each agent's tree
noise: its team stream), and reproduces what crosses the API (float32 contexts,
rewards, releases and server sums), so it replays the PettingZoo path step for step
(``tests/runner/test_replay.py``). Rank-one updates keep a step at ``O(K d^2)`` per agent with
no matrix inversion; a synchronisation inverts once per agent (Cholesky).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import typed

from baselines.common.bundles import linear_arrays, recording
from baselines.linear.decentralized import HEADER, DecFedLinUCB
from baselines.linear.kernels import set_scorer
from baselines.linear.local_loop import DecConstants, local_loop
from fedbandit_env import registry
from fedbandit_env.policies import AgentSpec
from fedbandit_env.runner.vector_trials import CompiledTrials
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import linear_env_generators, team_generators


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


run_fedlin_ucb = CompiledTrials("baselines.linear.vector:fedlin_ucb")
"""The fast path of ``fedlin_ucb`` and its variants (``fedlin_ucb_fixed``,
``fedlin_ucb_dp``, ``private_fedlin_ucb``: the registered options pick the schedule and
the noise): :class:`~baselines.linear.vector.FedLinUCBVector` rolled out by the linear
core, which routes Synchronize's rounds."""

run_fedlin_ucb_fixed = run_fedlin_ucb
"""``fedlin_ucb_fixed``'s fast path (:data:`run_fedlin_ucb`)."""
run_fedlin_ucb_dp = run_fedlin_ucb
"""``fedlin_ucb_dp``'s fast path (:data:`run_fedlin_ucb`)."""
run_private_fedlin_ucb = run_fedlin_ucb
"""``private_fedlin_ucb``'s fast path (:data:`run_fedlin_ucb`)."""


__all__ = [
    "run_dec_fedlin_ucb",
    "run_fedlin_ucb",
    "run_fedlin_ucb_dp",
    "run_fedlin_ucb_fixed",
    "run_lin_ucb",
    "run_pooled_lin_ucb",
    "run_private_dec_fedlin_ucb",
    "run_private_fedlin_ucb",
]
