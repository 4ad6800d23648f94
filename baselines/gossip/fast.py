"""Gossip_UCB and Fed_UCB as one batched trial loop (Zhu et al., Algorithm 1).

The loop plays every agent of a trial with the mathematics of
:mod:`baselines.gossip.kernels` and the env's own draws (rewards, the protocol's edge,
the privacy tree's noise), so it replays the PettingZoo path step for step
(``tests/runner/test_replay.py``). It is about 300 lines because the bookkeeping that makes it
fast must sit inside one compiled function: the lazy argmax (only arms whose cached
bound can beat an exact index are evaluated), the changed-entry lists that replace
whole-array copies of ``n~`` and the messages, and the tree noise of ``PrivateRewards``
drawn inline; split into calls, each array argument would cost atomic reference counts
per agent and step (see :mod:`baselines.common.trial`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.common.bundles import (
    NetworkArrays,
    ProblemArrays,
    Recording,
    Streams,
    network_arrays,
    problem_arrays,
    recording,
)
from baselines.common.kernels import (
    argmax_count,
    log_time,
    tie_pick,
)
from baselines.common.trial import agent_rngs, record_step
from baselines.gossip.faulty import FAULTS, PROTOCOL_CODES, run_faulty_gossip_ucb
from baselines.gossip.kernels import (
    UcbParams,
    fed_ucb_constants,
    gossip_update,
    inconsistent,
    partner_lists,
    tree_levels_of,
    ucb_join,
    ucb_value,
    ucb_width,
    update_n_tilde,
)
from baselines.gossip.policies import resolve_alpha_1
from fedbandit_env.core.kernels import pull_arms
from fedbandit_env.privacy.mechanisms import clip_range, tree_levels
from fedbandit_env.privacy.tree_kernels import (
    tree_add,
    tree_add_listed,
    tree_complete,
    tree_complete_listed,
    tree_prefix_streams,
)
from fedbandit_env.protocols.kernels import neighbour_calls, random_edge_pair
from fedbandit_env.rng_kernels import generator_at, generator_table, integer_below
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import env_generators, wrapper_generator


class GossipParams(NamedTuple):
    """Gossip_UCB's and Fed_UCB's own parameters: ``alpha_1``; Fed_UCB's index (eq. 12),
    whether rewards are private, ``epsilon``, the calibrated confidence, ``c_privacy`` and
    the index's sensitivity; ``PrivateRewards``' clip range, tree scale and estimator;
    where eq. 12 puts ``alpha_1`` (inside the root, or outside as printed)."""

    alpha_1: float
    fed_index: bool
    private: bool
    epsilon: float
    calibrated: bool
    c_privacy: float
    sensitivity: float
    clip_lo: float
    clip_hi: float
    tree_scale: float
    honaker: bool
    alpha_1_inside: bool


@njit(cache=True, nogil=True, error_model="numpy")
def _gossip_trial(
    problem: ProblemArrays,
    network: NetworkArrays,
    params: GossipParams,
    generators: Streams,
    rec: Recording,
) -> None:  # pragma: no cover
    """Gossip_UCB, or Fed_UCB (``fed_index``, eq. 12) with ``PrivateRewards`` (``private``;
    the wrapper stream of ``generators`` is its noise)."""
    mu = problem.mu
    noise = problem.noise
    sigma = problem.sigma
    gaps = problem.gaps
    protocol = network.protocol
    public = network.public
    edges = network.edges
    neighbors = network.neighbors
    degrees = network.degrees
    adjacency = network.adjacency
    peer_cost = network.peer_cost
    alpha_1 = params.alpha_1
    fed_index = params.fed_index
    private = params.private
    epsilon = params.epsilon
    calibrated = params.calibrated
    c_privacy = params.c_privacy
    sensitivity = params.sensitivity
    clip_lo = params.clip_lo
    clip_hi = params.clip_hi
    tree_scale = params.tree_scale
    honaker = params.honaker
    alpha_1_inside = params.alpha_1_inside
    reward_rng = generators.reward
    protocol_rng = generators.protocol
    privacy_rng = generators.wrapper
    agent_table = generators.agents
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    cost_out = rec.cost_out
    n, m = mu.shape
    counts = np.zeros((n, m))
    sums = np.zeros((n, m))
    xbar = np.zeros((n, m))
    theta = np.zeros((n, m))
    index = np.zeros(m)
    n_tilde = np.ones((n, m))
    n_tilde_next = np.ones((n, m))
    sent_nt = np.zeros((n, m))  # messages of the last step, as float32 values
    sent_theta = np.zeros((n, m))
    changed_j = np.zeros(n * m, dtype=np.int64)  # entries of sent_nt that changed
    changed_k = np.zeros(n * m, dtype=np.int64)
    n_changed = 0
    fixed_senders = public or protocol == 0
    pend_i = np.zeros(n * m, dtype=np.int64)  # entries of n~(t+1) changed this step
    pend_k = np.zeros(n * m, dtype=np.int64)
    n_pend = 0
    moved_i = np.zeros(n * m, dtype=np.int64)  # entries of n~(t+1) changed last step,
    moved_k = np.zeros(n * m, dtype=np.int64)  # to be copied into n~(t) this step
    n_moved = 0
    lag = np.zeros(n, dtype=np.int64)  # line 6's count, kept up to date entry by entry
    # Lazy argmax: bound[i, k] is arm k's index at log time l_ref >= log t, with the same
    # theta and count (valid while the epoch matches); an arm whose bound is below an
    # exact index cannot win or tie, so only a few arms are evaluated exactly per step.
    bound = np.zeros((n, m))
    width = np.zeros((n, m))  # its confidence width: counts and l_ref move it, theta not
    bound_epoch = np.full(n, -1, dtype=np.int64)
    epoch = 0
    l_ref = -1.0
    levels_f, b_f, log_h2 = fed_ucb_constants(horizon, epsilon, sensitivity)
    ucb = UcbParams(
        fed_index, n, epsilon, alpha_1, calibrated, c_privacy, levels_f, b_f, log_h2, alpha_1_inside
    )
    flagged = np.zeros((n, m), dtype=np.bool_)  # already in the pending list
    partners = np.zeros((n, n), dtype=np.bool_)  # delivery of the last step
    plist = np.zeros((n, n), dtype=np.int64)  # ... as partner indices, increasing
    pcount = np.zeros(n, dtype=np.int64)
    if protocol == 0:
        partners[:] = adjacency
        partner_lists(partners, plist, pcount)
    pair_u, pair_v = -1, -1  # the edge of random_edge gossip in the last step
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen_reward = np.zeros(n, dtype=np.float32)  # what each agent observed last step
    seen_mean = np.zeros(n, dtype=np.float32)  # private mean of its pulled arm
    cum = np.zeros(n)
    cum_cost = 0.0
    n_edges = edges.shape[0]
    # PrivateRewards state (allocated only when private)
    ns = n * m if private else 1
    levels = tree_levels_of(horizon)
    w_counts = np.zeros((n, m))
    acc = np.zeros((ns, levels))
    seen_tree = np.zeros((ns, levels), dtype=np.bool_)
    node = np.zeros((ns, levels))
    # Each estimator allocates only its own bookkeeping (at N = M = 1000 each array
    # below is about 112 MB): Honaker's variances, or the dyadic tree's lists.
    var = np.zeros((ns if honaker else 1, levels))
    # The dyadic tree visits only the observed streams (measured: N=50, M=100 Fed_UCB
    # 1.27 -> 1.8 M agent-steps/s; N=10, M=10 unchanged within noise).
    listed = 1 if honaker else ns
    touched = np.zeros((levels, listed), dtype=np.int64)
    n_touched = np.zeros(levels, dtype=np.int64)
    live = np.zeros((levels, listed), dtype=np.int64)
    n_live = np.zeros(levels, dtype=np.int64)
    streams = np.zeros(n, dtype=np.int64)
    values = np.zeros(n)
    previous = np.zeros(n)  # private prefix sums of the pulled arms' streams at t - 1
    current = np.zeros(n)  # ... and at t
    r = 0
    for s in range(1, horizon + 1):
        done = s - 1
        log_t = log_time(done - m + 1)
        if done >= m and log_t > l_ref:  # every bound expires: a new reference time
            t_now = done - m + 1
            l_ref = log_time(t_now + max(1, t_now // 512))
            epoch += 1
        for c in range(n_moved):  # n~(t) = n~(t+1) of the last step, entry by entry
            j, kk = moved_i[c], moved_k[c]
            was = inconsistent(counts[j, kk], n_tilde[j, kk], n)
            n_tilde[j, kk] = n_tilde_next[j, kk]
            lag[j] += inconsistent(counts[j, kk], n_tilde[j, kk], n) - was
        if done > m and fixed_senders:
            # Line 5's neighbour part, pushed: each entry that changed on the wire since
            # t-1 raises the rows of its sender's neighbours (the fixed senders), O(deg)
            # per change instead of every agent scanning every change. max is
            # order-free, so the rows are the integers update_n_tilde computes.
            for c in range(n_changed):
                j, kk = changed_j[c], changed_k[c]
                v = sent_nt[j, kk]
                for d in range(degrees[j]):
                    i = neighbors[j, d]
                    if v > n_tilde_next[i, kk]:
                        n_tilde_next[i, kk] = v
                        if not flagged[i, kk]:
                            flagged[i, kk] = True
                            pend_i[n_pend] = i
                            pend_k[n_pend] = kk
                            n_pend += 1
        for i in range(n):
            if done > 0:
                a = arms[i]
                was = inconsistent(counts[i, a], n_tilde[i, a], n)
                counts[i, a] += 1.0
                lag[i] += inconsistent(counts[i, a], n_tilde[i, a], n) - was
                if private:
                    new_mean = float(seen_mean[i])
                else:
                    sums[i, a] += float(seen_reward[i])
                    new_mean = sums[i, a] / counts[i, a]
                change = new_mean - xbar[i, a]
                xbar[i, a] = new_mean
                if done == m:
                    theta[i] = xbar[i]
                elif done > m:
                    gossip_update(theta, i, sent_theta, plist, pcount[i], a, change)
            if done < m:
                arms[i] = done
            else:
                if done == m or not fixed_senders:
                    senders = adjacency[i] if public else partners[i]
                    update_n_tilde(counts[i], sent_nt, senders, n_tilde_next[i])
                    for kk in range(m):
                        if n_tilde_next[i, kk] != sent_nt[i, kk] and not flagged[i, kk]:
                            flagged[i, kk] = True
                            pend_i[n_pend] = i
                            pend_k[n_pend] = kk
                            n_pend += 1
                else:
                    # Line 5 incrementally: n~ and n only grow, so
                    # max(n(t), max_j n~_j(t)) = max(n~(t), n_a(t), the entries that
                    # changed since t-1): the same integers update_n_tilde computes.
                    a = arms[i]
                    if counts[i, a] > n_tilde_next[i, a]:
                        n_tilde_next[i, a] = counts[i, a]
                        if not flagged[i, a]:
                            flagged[i, a] = True
                            pend_i[n_pend] = i
                            pend_k[n_pend] = a
                            n_pend += 1
                    # (the entries neighbours changed were pushed before the loop)
                if bound_epoch[i] != epoch or done == m:  # a new reference time
                    for kk in range(m):
                        width[i, kk] = ucb_width(ucb, counts[i, kk], l_ref)
                        bound[i, kk] = ucb_join(ucb, theta[i, kk], width[i, kk])
                    bound_epoch[i] = epoch
                else:  # the pulled arm's count moved; with a message, every estimate
                    a = arms[i]
                    width[i, a] = ucb_width(ucb, counts[i, a], l_ref)
                    if pcount[i]:
                        for kk in range(m):
                            bound[i, kk] = ucb_join(ucb, theta[i, kk], width[i, kk])
                    else:
                        bound[i, a] = ucb_join(ucb, theta[i, a], width[i, a])
                lagging = lag[i]
                if lagging:  # line 13
                    # forced_pick written out on the rows (a helper taking arrays pays
                    # atomic reference counts per call): the same draw, the same arm.
                    pick = integer_below(generator_at(agent_table, i), lagging)
                    k = -1
                    for kk in range(m):
                        if inconsistent(counts[i, kk], n_tilde[i, kk], n):
                            if pick == 0:
                                k = kk
                                break
                            pick -= 1
                else:  # lines 9-10: argmax_count of the index at log t, lazily
                    # bound[i, kk] (the same formula at a later log time, so at least
                    # the index, operation by operation) rules an arm out as soon as it
                    # is below an exact index already seen. Exact when the maximum is
                    # unique; a tied arm is never ruled out, so the tie count is exact
                    # and a tie recomputes the whole index. Written out here, not as a
                    # helper: arrays passed to a helper are reference-counted atomically
                    # on every call, which was most of the kernel's time (perf).
                    top = 0
                    for kk in range(1, m):  # the most promising arm first
                        if bound[i, kk] > bound[i, top]:
                            top = kk
                    best = ucb_value(ucb, theta[i, top], counts[i, top], log_t)
                    k, ties = top, 1
                    for kk in range(m):
                        if kk != top and bound[i, kk] >= best:
                            v = ucb_value(ucb, theta[i, kk], counts[i, kk], log_t)
                            if v > best:
                                best, k, ties = v, kk, 1
                            elif v == best:
                                ties += 1
                                k = min(k, kk)
                    if ties > 1:  # the whole index, as the policy computes it
                        for kk in range(m):
                            index[kk] = ucb_value(ucb, theta[i, kk], counts[i, kk], log_t)
                        k, ties = argmax_count(index)
                        k = tie_pick(index, ties, generator_at(agent_table, i))
                arms[i] = k
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        # The messages [n~(t+1), theta(t-1)] on the wire (float32). Count estimates: only
        # the entries that changed this step; estimates: only the rows someone receives.
        n_changed = 0
        n_moved = n_pend
        moved_i[:n_pend] = pend_i[:n_pend]
        moved_k[:n_pend] = pend_k[:n_pend]
        for c in range(n_pend):
            i, k = pend_i[c], pend_k[c]
            flagged[i, k] = False
            v = float(np.float32(n_tilde_next[i, k]))
            if v != sent_nt[i, k]:
                sent_nt[i, k] = v
                changed_j[n_changed] = i
                changed_k[n_changed] = k
                n_changed += 1
        n_pend = 0
        if protocol == 1:  # random_edge, kept as a pair: O(1) instead of O(N^2) a step
            if pair_u >= 0:
                partners[pair_u, pair_v] = partners[pair_v, pair_u] = False
                pcount[pair_u] = pcount[pair_v] = 0
            pair_u, pair_v = random_edge_pair(edges, protocol_rng)
            partners[pair_u, pair_v] = partners[pair_v, pair_u] = True
            plist[pair_u, 0], plist[pair_v, 0] = pair_v, pair_u
            pcount[pair_u] = pcount[pair_v] = 1
            links = 1 + n_edges  # the gossip edge, plus every edge for the public counts
        elif protocol == 2:
            neighbour_calls(neighbors, degrees, protocol_rng, partners)
            links = n_edges
            for i in range(n):
                for j in range(i, n):
                    if partners[i, j]:
                        links += 1
        else:
            links = n_edges
        cum_cost += peer_cost * links  # the env's c1 * server_links + c2 * peer_links
        if protocol == 2:
            partner_lists(partners, plist, pcount)
        for j in range(n):
            if pcount[j]:  # someone hears j (deliveries are symmetric)
                for k in range(m):
                    sent_theta[j, k] = float(np.float32(theta[j, k]))
        if private:
            for i in range(n):
                a = arms[i]
                streams[i] = i * m + a
                values[i] = min(max(rewards[i], clip_lo), clip_hi)
                w_counts[i, a] += 1.0
            # Fed_UCB runs on the private means prefix(t) / w; the private rewards
            # prefix(t) - prefix(t-1) are only traced, so prefix(t-1) only then.
            if t_arms.shape[0]:
                tree_prefix_streams(node, s - 1, streams, previous)
            if honaker:  # every level of every stream is revisited: the dense kernels
                tree_add(acc, seen_tree, streams, values)
                tree_complete(acc, seen_tree, node, var, s, tree_scale, True, privacy_rng)
            else:  # the same nodes and draws, visiting only observed streams
                tree_add_listed(acc, seen_tree, streams, values, touched, n_touched)
                tree_complete_listed(
                    acc, seen_tree, node, s, tree_scale, privacy_rng, touched, n_touched,
                    live, n_live,
                )  # fmt: skip
            tree_prefix_streams(node, s, streams, current)
            for i in range(n):
                seen_mean[i] = np.float32(current[i] / w_counts[i, arms[i]])
            if t_arms.shape[0]:
                for i in range(n):
                    seen_reward[i] = np.float32(current[i] - previous[i])
        else:
            for i in range(n):
                seen_reward[i] = np.float32(rewards[i])
        due = r < steps.size and s == steps[r]
        if due:  # the network's cost, at the same steps as the regret
            cost_out[r] = cum_cost
        if due or t_arms.shape[0]:
            r = record_step(arms, seen_reward, cum, out, steps, r, s, t_arms, t_rewards)


def _run_gossip(st: TrialSetup, seeds: tuple[int, Any], fed: bool) -> TrialResult:
    scenario, params = st.scenario, st.params
    net = scenario.network()
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, protocol_rng = env_generators(env_seed)
    n = scenario.n_agents
    epsilon = float(params.get("epsilon", 1.0)) if fed else float("inf")
    private = fed and bool(np.isfinite(epsilon))
    alpha_1 = resolve_alpha_1(params.get("alpha_1"), n)
    lo, hi = 0.0, 1.0
    if private:  # as PrivateRewards(clip=scenario.clip) on the env's declared bounds
        lo, hi = clip_range(scenario.clip, st.reward_bounds, "PrivateRewards")
    sensitivity = float(hi - lo) if private else 1.0
    tree_scale = tree_levels(scenario.horizon) * sensitivity / epsilon if private else 1.0
    cost = np.zeros(st.steps.size)
    rngs = agent_rngs(team_seed, n)  # alive during the call
    _gossip_trial(
        problem_arrays(st),
        network_arrays(
            net,
            PROTOCOL_CODES[scenario.protocol],
            scenario.protocol != "broadcast",
            scenario.link_costs[1],
        ),
        GossipParams(
            alpha_1,
            fed,
            private,
            epsilon,
            params.get("confidence", "calibrated") == "calibrated",
            float(params.get("c_privacy", 128.0)),
            float(params.get("sensitivity", 1.0)),
            float(lo) if private else 0.0,
            float(hi) if private else 1.0,
            tree_scale,
            scenario.estimator == "honaker",
            bool(params.get("alpha_1_inside", True)),
        ),
        Streams(
            reward_rng,
            protocol_rng,
            # PrivateRewards' noise, from the stack plan the PettingZoo path is built from
            st.plan.generator("PrivateRewards", env_seed)
            if private
            else wrapper_generator(env_seed),
            generator_table(rngs),
        ),
        recording(scenario.horizon, st.steps, out, arms, rewards, cost),
    )
    return TrialResult(out, arms, rewards, cost)


def run_gossip_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of Gossip_UCB (the registry's fast entry point of ``gossip_ucb``); with
    message loss or delay, the loop of :mod:`baselines.gossip.faulty`."""
    if st.scenario.loss or st.scenario.delay:
        return run_faulty_gossip_ucb(st, seeds)
    return _run_gossip(st, seeds, fed=False)


run_gossip_ucb.faults = FAULTS  # type: ignore[attr-defined]


def run_fed_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of Fed_UCB under ``PrivateRewards`` (fast entry point of ``fed_ucb``)."""
    return _run_gossip(st, seeds, fed=True)
