"""Local and cooperative Thompson sampling's fast paths.

:data:`run_local_ts` and :data:`run_coop_ts` are the family's vector policies
(:mod:`baselines.thompson.vector`) rolled out by the core in compiled code
(:class:`~fedbandit_env.runner.vector_trials.CompiledTrials`) where it can: no messages,
or Broadcast's, RandomEdgeGossip's or NeighbourGossip's, raw rewards or private ones
(``VecPrivateRewards`` steps its dyadic trees inside the rollout). Honaker's estimator
still plays on the trial loop below (issue 62: it goes once the rollout carries Honaker's
pass too).

The loop plays every agent of a trial with the kernels of
:mod:`baselines.thompson.kernels` (the policies call the same ones) and the env's own
draws (rewards, the protocol's partners), so it replays the PettingZoo path step for
step (:func:`fedbandit_env.testing.check_replay`). Each agent draws its posterior
samples from its own generator, as :class:`~fedbandit_env.policies.IndependentTeam`
seeds it; messages cross the wire as float32.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.common.bundles import (
    NetworkArrays,
    ProblemArrays,
    Recording,
    network_arrays,
    problem_arrays,
    recording,
)
from baselines.common.trial import agent_generators, record_step
from baselines.thompson.kernels import (
    MOMENT,
    Posterior,
    first_argmax,
    held_rows,
    honest_row,
    merge_relayed,
    moment_cell,
    moment_sample,
    team_sample,
)
from baselines.thompson.policies import (
    SHARES,
    CooperativeTS,
    private_extra_variance,
    resolve_posterior,
)
from fedbandit_env.core.kernels import pull_arms
from fedbandit_env.privacy.mechanisms import clip_range, tree_levels, tree_sum_slack
from fedbandit_env.privacy.tree_kernels import (
    PrivateRewardsParams,
    PrivateRewardsState,
    private_rewards_state,
    private_rewards_step,
)
from fedbandit_env.protocols.kernels import neighbour_calls, random_edge_pair
from fedbandit_env.runner.vector_trials import CompiledTrials
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import env_generators
from fedbandit_env.type_aliases import IntArray

PROTOCOL_CODES = {"broadcast": 0, "random_edge_gossip": 1, "neighbour_gossip": 2}
"""The delivery rules the loop implements, by the scenario's protocol name."""


class ThompsonParams(NamedTuple):
    """The loop's own parameters: ``share`` (-1 alone, 0 hold, 1 relay), the posterior,
    whether rewards go through ``PrivateRewards`` and its constants."""

    share: int
    post: Posterior
    private: bool
    tree: PrivateRewardsParams
    members: IntArray  # (N, S): the senders agent i holds rows of, increasing (-1: none)
    own: IntArray  # (N,): agent i's own row among them


class ThompsonStreams(NamedTuple):
    """The trial's generators: rewards, protocol, ``PrivateRewards``' noise (from the
    stack plan), and each agent's own (a typed list: every agent draws its posterior
    samples from it every step)."""

    reward: np.random.Generator
    protocol: np.random.Generator
    privacy: np.random.Generator
    agents: Any


@njit(cache=True, nogil=True)
def _ts_trial(
    problem: ProblemArrays,
    network: NetworkArrays,
    params: ThompsonParams,
    generators: ThompsonStreams,
    tree: PrivateRewardsState,
    rec: Recording,
) -> None:  # pragma: no cover
    mu = problem.mu
    noise = problem.noise
    sigma = problem.sigma
    gaps = problem.gaps
    protocol = network.protocol
    edges = network.edges
    neighbors = network.neighbors
    degrees = network.degrees
    adjacency = network.adjacency
    peer_cost = network.peer_cost
    share = params.share
    post = params.post
    private = params.private
    tree_params = params.tree
    members = params.members
    own = params.own
    reward_rng = generators.reward
    protocol_rng = generators.protocol
    privacy_rng = generators.privacy
    agents = generators.agents
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    cost_out = rec.cost_out
    n, m = mu.shape
    seen_mean = np.zeros(n, dtype=np.float32)  # private mean of the pulled arm
    width = members.shape[1]  # N relaying; degree + 1 holding; 1 alone
    counts = np.zeros((n, width, m))  # agent i's table: row r is what it holds of members[i, r]
    sums = np.zeros((n, width, m))
    stamps = np.zeros((n, width))
    # holding with the moment sampler: each held row's terms kept beside the table and
    # refreshed where the row changes (moment_sample), not recomputed every step
    cached = share == 0 and post[0] == MOMENT
    lo_r, width_r = post[1], post[2]
    shape = (n, width, m) if cached else (1, 1, 1)
    mom_mu = np.zeros(shape)
    mom_var = np.zeros(shape)
    if cached:
        mu0, var0 = moment_cell(0.0, 0.0, lo_r, width_r)
        mom_mu[:] = mu0
        mom_var[:] = var0
    wide = 2 * m + 1
    wire = np.zeros((n, n if share == 1 else 1, wide))  # what each agent sent last step
    partners = np.zeros((n, n), dtype=np.bool_)  # who heard whom last step
    if protocol == 0:
        partners[:] = adjacency
    pair_u, pair_v = -1, -1
    rows = np.zeros(width, dtype=np.int64)
    draws = np.zeros(m)
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen = np.zeros(n, dtype=np.float32)
    cum = np.zeros(n)
    cum_cost = 0.0
    n_edges = edges.shape[0]
    r = 0
    honest = np.zeros(n, dtype=np.bool_)  # hold: each sender's message checked once a step
    for s in range(1, horizon + 1):
        done = s - 1
        if share == 0 and done > 0:  # every receiver checks it alike (merge_held's check)
            for j in range(n):
                honest[j] = honest_row(wire[j, 0, :m], wire[j, 0, m : 2 * m], done, post)
        for i in range(n):
            me = own[i]
            if done > 0:  # CooperativeTS.absorb, then .listen (senders in order)
                a = arms[i]
                counts[i, me, a] += 1.0
                if private:  # the private prefix sum, private_means[arm] * counts[arm]
                    sums[i, me, a] = float(seen_mean[i]) * counts[i, me, a]
                else:
                    sums[i, me, a] += float(seen[i])
                stamps[i, me] = done
                if cached:
                    mom_mu[i, me, a], mom_var[i, me, a] = moment_cell(
                        counts[i, me, a], sums[i, me, a], lo_r, width_r
                    )
                if share == 0:  # its neighbours' rows only (degree x M)
                    for row in range(width):
                        j = members[i, row]
                        if j >= 0 and j != i and partners[i, j] and honest[j]:
                            for k in range(m):  # merge_held's copy, its check done above
                                counts[i, row, k] = wire[j, 0, k]
                                sums[i, row, k] = wire[j, 0, m + k]
                                if cached:
                                    mom_mu[i, row, k], mom_var[i, row, k] = moment_cell(
                                        counts[i, row, k], sums[i, row, k], lo_r, width_r
                                    )
                            stamps[i, row] = done
                elif share == 1:  # every agent's rows (row j is agent j's)
                    for j in range(n):
                        if partners[i, j]:
                            merge_relayed(counts[i], sums[i], stamps[i], wire[j], i, done, post)
            n_rows = held_rows(stamps[i], me, rows)
            if cached:
                moment_sample(mom_mu[i], mom_var[i], rows, n_rows, post, agents[i], draws)
            else:
                team_sample(counts[i], sums[i], rows, n_rows, post, agents[i], draws)
            arms[i] = first_argmax(draws)
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        if private:  # PrivateRewards: the private mean, and (traced) the increment
            private_rewards_step(
                tree, tree_params, arms, rewards, s, privacy_rng, seen_mean,
                seen if t_arms.shape[0] else seen[:0],
            )  # fmt: skip
        else:
            for i in range(n):
                seen[i] = np.float32(rewards[i])
        if share >= 0:  # this step's messages on the wire (float32), and who hears them
            for j in range(n):
                if share == 0:
                    for k in range(m):
                        wire[j, 0, k] = counts[j, own[j], k]
                        wire[j, 0, m + k] = float(np.float32(sums[j, own[j], k]))
                else:
                    for row in range(n):
                        for k in range(m):
                            wire[j, row, k] = float(np.float32(counts[j, row, k]))
                            wire[j, row, m + k] = float(np.float32(sums[j, row, k]))
                        wire[j, row, 2 * m] = float(np.float32(stamps[j, row]))
            if protocol == 0:
                links = n_edges
            elif protocol == 1:
                if pair_u >= 0:
                    partners[pair_u, pair_v] = partners[pair_v, pair_u] = False
                pair_u, pair_v = random_edge_pair(edges, protocol_rng)
                partners[pair_u, pair_v] = partners[pair_v, pair_u] = True
                links = 1
            else:
                neighbour_calls(neighbors, degrees, protocol_rng, partners)
                links = 0
                for i in range(n):
                    for j in range(i, n):
                        if partners[i, j]:
                            links += 1
            cum_cost += peer_cost * links
        due = r < steps.size and s == steps[r]
        if due:
            cost_out[r] = cum_cost
        if due or t_arms.shape[0]:
            r = record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


def held_members(network: Any, n: int, code: int) -> tuple[IntArray, IntArray]:
    """The rows each agent's table holds, as :class:`CooperativeTS` lays them out: every
    agent's when relaying (``code`` 1), its own and its neighbours' when holding (0;
    ``degree + 1`` rows, not ``N``: the protocols of the fast path deliver along the
    graph's edges only), its own alone (-1); in increasing sender order, so the draws
    add up in the same order as over a full table. Returns ``(members (N, S), own
    (N,))`` (``-1`` pads a shorter row).

    Examples:
        >>> from fedbandit_env.network import Network
        >>> members, own = held_members(Network.ring(4), 4, 0)
        >>> members.tolist(), own.tolist()
        ([[0, 1, 3], [0, 1, 2], [1, 2, 3], [0, 2, 3]], [0, 1, 1, 2])
    """
    if code == 1:
        return np.tile(np.arange(n, dtype=np.int64), (n, 1)), np.arange(n, dtype=np.int64)
    if code == -1:
        return np.arange(n, dtype=np.int64)[:, None], np.zeros(n, dtype=np.int64)
    adjacency = np.asarray(network.adjacency, dtype=bool)
    held = [np.flatnonzero(adjacency[i] | (np.arange(n) == i)).astype(np.int64) for i in range(n)]
    width = max(h.size for h in held)
    members = np.full((n, width), -1, dtype=np.int64)
    own = np.zeros(n, dtype=np.int64)
    for i, h in enumerate(held):
        members[i, : h.size] = h
        own[i] = int(np.searchsorted(h, i))
    return members, own


def _run(st: TrialSetup, seeds: tuple[int, Any], share: str | None) -> TrialResult:
    scenario, params = st.scenario, st.params
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, protocol_rng = env_generators(env_seed)
    options = ("posterior", "scale", "epsilon", "sensitivity")
    policy = CooperativeTS(share, **{k: params[k] for k in options if k in params})
    eps = policy.epsilon
    private = eps is not None
    lo, hi, tree_scale, extra = 0.0, 1.0, 1.0, 0.0
    checked = None  # private sums: the clip range and the tree's slack, for the receivers
    if eps is not None:  # as PrivateRewards(clip=scenario.clip) on the env's declared bounds
        lo, hi = clip_range(scenario.clip, st.reward_bounds, "PrivateRewards")
        tree_scale = tree_levels(scenario.horizon) * float(hi - lo) / eps
        extra = private_extra_variance(scenario.horizon, eps, policy.sensitivity)
        checked = (lo, hi, tree_sum_slack(scenario.horizon, eps, float(hi - lo)))
    post = resolve_posterior(
        policy.posterior, st.reward_bounds, policy.scale, extra, policy.share is not None, checked
    )
    n, m = scenario.n_agents, scenario.n_arms
    code = -1 if share is None else SHARES.index(share)
    if code >= 0:
        if scenario.protocol not in PROTOCOL_CODES:
            raise ValueError(
                f"cooperative Thompson sampling's fast path runs {sorted(PROTOCOL_CODES)}, "
                f"not {scenario.protocol!r}"
            )
        net = scenario.network()
        network = network_arrays(
            net, PROTOCOL_CODES[scenario.protocol], False, scenario.link_costs[1]
        )
    else:  # alone: no graph is read
        none = np.zeros((0, 2), dtype=np.int64)
        network = NetworkArrays(
            -1, False, none, none, np.zeros(0, np.int64), np.zeros((0, 0), np.bool_), 0.0
        )
    members, own = held_members(scenario.network() if code == 0 else None, n, code)
    cost = np.zeros(st.steps.size)
    _ts_trial(
        problem_arrays(st),
        network,
        ThompsonParams(
            code,
            post,
            private,
            PrivateRewardsParams(lo, hi, tree_scale, scenario.estimator == "honaker"),
            members,
            own,
        ),
        ThompsonStreams(
            reward_rng,
            protocol_rng,
            # PrivateRewards' noise, from the stack plan the PettingZoo path is built from
            st.plan.generator("PrivateRewards", env_seed) if private else reward_rng,
            agent_generators(team_seed, n),
        ),
        private_rewards_state(n if private else 0, m, tree_levels(scenario.horizon)),
        recording(scenario.horizon, st.steps, out, arms, rewards, cost),
    )
    return TrialResult(out, arms, rewards, cost if code >= 0 else None)


def loop_local_ts(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of local Thompson sampling on the loop: what :data:`run_local_ts` plays
    where the compiled rollout does not (Honaker's estimator)."""
    return _run(st, seeds, None)


def loop_coop_ts(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of cooperative Thompson sampling on the loop (``share`` and ``epsilon``
    from its options): what :data:`run_coop_ts` plays where the compiled rollout does not
    (Honaker's estimator)."""
    share = st.params.get("share", "hold")
    return _run(st, seeds, None if share is None else str(share))


run_local_ts = CompiledTrials(
    "baselines.thompson.vector:local_ts", fallback="baselines.thompson.fast:loop_local_ts"
)
"""``local_ts``'s fast path: :class:`~baselines.thompson.vector.ThompsonVector` rolled out
by the core (the loop with Honaker's estimator)."""
run_coop_ts = CompiledTrials(
    "baselines.thompson.vector:coop_ts", fallback="baselines.thompson.fast:loop_coop_ts"
)
"""The fast path of ``coop_ts``, ``coop_ts_relay`` and ``private_coop_ts``: the vector
policy rolled out by the core with Broadcast's or a gossip protocol's messages, raw or
private rewards; the loop with Honaker's estimator."""


__all__ = [
    "PROTOCOL_CODES",
    "ThompsonParams",
    "held_members",
    "loop_coop_ts",
    "loop_local_ts",
    "run_coop_ts",
    "run_local_ts",
]
