"""The fast path: whole trials of the reference algorithms as compiled loops.

Each algorithm has one trial kernel that loops over steps and agents and calls the
same compiled mathematics as its per-agent policy (:mod:`baselines.kernels`), the same
compiled draws as the env (:mod:`fedbandit_env.problems.kernels`,
:mod:`fedbandit_env.protocols.kernels`, :mod:`fedbandit_env.privacy.tree_kernels`), from
generators derived exactly as the interactive path derives them
(:func:`fedbandit_env.seeding.trial_seeds`). Given the same seed the two paths therefore
produce the same arms, rewards and regret at every step (``tests/test_replay.py``).

To get there the kernels also reproduce what crosses the PettingZoo API: observations
and messages are float32, so rewards, private means and gossiped estimates are rounded
to float32 where a policy reads them.

Trials are independent and each has its own generators, so results do not depend on
how many threads run them (``workers``). Kernels are compiled on first use and cached
on disk (numba ``cache=True``).

Adding an algorithm: write its trial kernel from the shared pieces, wrap it in a
function ``(setting, (env_seed, team_seed)) -> TrialResult`` and register it in
:data:`FAST_POLICIES`.

What keeps a kernel fast (each found with ``perf`` and gdb on ``NRT_incref``):

- numba counts references to array views and to the array arguments of a called
  function with *atomic* operations, and LLVM's pruning rarely removes them once the
  callee has a loop or a ``raise``. Inside the per-step and per-agent loops, index the
  ``(N, M)`` state directly; call array-taking helpers once per step for all agents, or
  only when needed (as :func:`_record_step`).
- ``Generator.integers`` allocates a one-element array per scalar draw: draw with
  :func:`fedbandit_env.rng_kernels.integer_below` (NumPy's draw, bit for bit).
- An item of a numba typed list costs ~40 ns: per-agent generators go in as a
  :func:`fedbandit_env.rng_kernels.generator_table`.
- After editing a helper module, run ``make clean-kernels``: numba's disk cache is keyed
  by the file of the cached function, not by the modules it calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, typed
from tqdm.auto import tqdm

from baselines.gossip_ucb import default_alpha_1
from baselines.kernels import (
    argmax_active,
    argmax_count,
    elim_delta,
    elim_radius,
    eliminate,
    epoch_target,
    epoch_total,
    fed_ucb_constants,
    fed_ucb_width,
    first_unpulled,
    gossip_ucb_width,
    gossip_update,
    inconsistent,
    local_best,
    log_time,
    mean_of,
    oracle_index,
    running_private_mean,
    tie_pick,
    ucb1_index,
    update_n_tilde,
)
from baselines.registry import make_team
from fedbandit_env.privacy.mechanisms import clip_range, tree_levels
from fedbandit_env.privacy.tree_kernels import (
    tree_add,
    tree_add_listed,
    tree_complete,
    tree_complete_listed,
    tree_prefix_streams,
)
from fedbandit_env.problems.kernels import sample_rewards
from fedbandit_env.protocols import Flooding, Hybrid, participants, round_schedule
from fedbandit_env.protocols.kernels import (
    choose_subset,
    mean_rows,
    neighbour_calls,
    random_edge_pair,
    weighted_mean_rows,
)
from fedbandit_env.rng_kernels import generator_at, generator_table, integer_below
from fedbandit_env.runner.rollout import RegretCurves, record_steps
from fedbandit_env.runner.scenario import Scenario
from fedbandit_env.seeding import (
    env_generators,
    team_generators,
    trial_seeds,
    wrapper_generator,
)
from fedbandit_env.type_aliases import BoolArray, Float32Array, FloatArray, IntArray

PRIVACY_DEPTH = 0
"""Where ``Scenario.make_env`` puts ``PrivateRewards``: directly on the env, so its noise
is the wrapper stream of depth 0 (:func:`fedbandit_env.seeding.wrapper_generator`)."""

PROTOCOL_CODES = {"broadcast": 0, "random_edge_gossip": 1, "neighbour_gossip": 2}


@dataclass
class TrialResult:
    """One trial of the fast path.

    Attributes:
        regret: Per-agent cumulative pseudo-regret at the recorded steps, ``(N, R)``.
        arms: Arm of every agent at every step, ``(T, N)`` (only when traced).
        rewards: Reward every agent observed, ``(T, N)`` float32 (only when traced):
            the raw reward, or the private increment under privacy.
        comm_cost: The network's cumulative communication cost at the recorded steps
            (``None``: the policy never talks).


    Example:
        >>> TrialResult(np.zeros((2, 1)), np.zeros((0, 2), int), np.zeros((0, 2))).comm_cost is None
        True
    """

    regret: FloatArray
    arms: IntArray
    rewards: Float32Array
    comm_cost: FloatArray | None = None


def _agent_generators(team_seed: np.random.SeedSequence, n: int) -> Any:
    """The generators an ``IndependentTeam`` gives its agents, as a numba list."""
    return typed.List(_agent_rngs(team_seed, n))


def _agent_rngs(team_seed: np.random.SeedSequence, n: int) -> list[np.random.Generator]:
    """The generators an ``IndependentTeam`` gives its agents. Kernels that draw from
    them every step take them as a ``generator_table`` (an item of a numba list costs
    about 40 ns, a row of the table nothing); the caller keeps this list alive."""
    return team_generators(team_seed, n)


def _traces(trace: bool, horizon: int, n: int) -> tuple[IntArray, Float32Array]:
    shape = (horizon, n) if trace else (0, n)
    return np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.float32)


# --------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def _record_step(
    arms: IntArray,
    seen: Float32Array,
    cum: FloatArray,
    out: FloatArray,
    steps: IntArray,
    r: int,
    s: int,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> int:  # pragma: no cover
    """End of step ``s`` when something is kept: trace the arms and the (float32) observed
    rewards if asked, record the regret at the recorded steps. Returns the next record
    index. Every kernel adds the step's gaps to ``cum`` itself and calls this only when
    ``t_arms`` is non-empty or ``s == steps[r]``: a call with array arguments costs
    atomic reference counts, a dozen a step for nothing otherwise."""
    if t_arms.shape[0]:
        t_arms[s - 1] = arms
        t_rewards[s - 1] = seen
    if r < steps.size and s == steps[r]:
        out[:, r] = cum
        return r + 1
    return r


UcbParams = tuple[bool, int, float, float, bool, float, int, float, float]
"""``(fed, N, epsilon, alpha_1, calibrated, c_privacy, levels, b, log^2 T)``: what one
arm's index needs besides its mean, count and ``log t``."""


@njit(cache=True, nogil=True, inline="always")
def _ucb_width(ucb: UcbParams, count: float, log_t: float) -> float:  # pragma: no cover
    """One arm's confidence width: the square root of eq. (11) or eq. (12)."""
    fed, n, epsilon, alpha_1, calibrated, c_privacy, levels, b, log_h2 = ucb
    if fed:
        return fed_ucb_width(count, log_t, n, epsilon, calibrated, c_privacy, levels, b, log_h2)
    return gossip_ucb_width(count, log_t, n, alpha_1)


@njit(cache=True, nogil=True, inline="always")
def _ucb_join(ucb: UcbParams, theta: float, width: float) -> float:  # pragma: no cover
    """One arm's index from its estimate and width, in the order of
    :func:`~baselines.kernels.gossip_ucb_value` and
    :func:`~baselines.kernels.fed_ucb_value` (the same bits)."""
    if ucb[0]:
        return theta + ucb[3] + width
    return theta + width


@njit(cache=True, nogil=True, inline="always")
def _ucb_value(
    ucb: UcbParams, theta: float, count: float, log_t: float
) -> float:  # pragma: no cover
    """One arm's index of Gossip_UCB (eq. 11) or Fed_UCB (eq. 12)."""
    return _ucb_join(ucb, theta, _ucb_width(ucb, count, log_t))


@njit(cache=True, nogil=True)
def partner_lists(
    partners: BoolArray, plist: IntArray, pcount: IntArray
) -> None:  # pragma: no cover
    """Row ``i`` of a delivery mask as the increasing indices ``plist[i, :pcount[i]]``.

    Example:
        >>> plist, pcount = np.zeros((2, 2), np.int64), np.zeros(2, np.int64)
        >>> partner_lists(np.array([[False, True], [True, False]]), plist, pcount)
        >>> plist[0, : pcount[0]].tolist(), pcount.tolist()
        ([1], [1, 1])
    """
    n = partners.shape[0]
    for i in range(n):
        c = 0
        for j in range(n):
            if partners[i, j]:
                plist[i, c] = j
                c += 1
        pcount[i] = c


@njit(cache=True, nogil=True)
def _local_ucb_trial(
    mu: FloatArray,
    noise: int,
    sigma: float,
    gaps: FloatArray,
    horizon: int,
    steps: IntArray,
    scale: float,
    reward_rng: np.random.Generator,
    agent_table: npt.NDArray[np.uint64],
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> None:  # pragma: no cover
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
                ucb1_index(sums[i], counts[i], log_t, scale, index)
                k, ties = argmax_count(index)
                if ties > 1:  # touch the agent's generator only on a tie
                    k = tie_pick(index, ties, generator_at(agent_table, i))
            arms[i] = k
        sample_rewards(mu, arms, noise, sigma, reward_rng, rewards)
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        for i in range(n):  # the step's regret
            cum[i] += gaps[arms[i]]
        if t_arms.shape[0] or (r < steps.size and s == steps[r]):
            r = _record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


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
        sample_rewards(mu, arms, noise, sigma, reward_rng, rewards)
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        for i in range(n):  # the step's regret
            cum[i] += gaps[arms[i]]
        if t_arms.shape[0] or (r < steps.size and s == steps[r]):
            r = _record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


@njit(cache=True, nogil=True)
def _oracle_trial(
    mu: FloatArray,
    noise: int,
    sigma: float,
    gaps: FloatArray,
    horizon: int,
    steps: IntArray,
    scale: float,
    reward_rng: np.random.Generator,
    team_rng: np.random.Generator,
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> None:  # pragma: no cover
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
        sample_rewards(mu, arms, noise, sigma, reward_rng, rewards)
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        for i in range(n):  # the step's regret
            cum[i] += gaps[arms[i]]
        if t_arms.shape[0] or (r < steps.size and s == steps[r]):
            r = _record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


@njit(cache=True, nogil=True, error_model="numpy")
def _gossip_trial(
    mu: FloatArray,
    noise: int,
    sigma: float,
    gaps: FloatArray,
    horizon: int,
    steps: IntArray,
    protocol: int,
    public: bool,
    edges: IntArray,
    neighbors: IntArray,
    degrees: IntArray,
    adjacency: Any,
    alpha_1: float,
    fed_index: bool,
    private: bool,
    epsilon: float,
    calibrated: bool,
    c_privacy: float,
    sensitivity: float,
    clip_lo: float,
    clip_hi: float,
    tree_scale: float,
    honaker: bool,
    reward_rng: np.random.Generator,
    protocol_rng: np.random.Generator,
    privacy_rng: np.random.Generator,
    agent_table: npt.NDArray[np.uint64],
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
    peer_cost: float,
    cost_out: FloatArray,
) -> None:  # pragma: no cover
    """Gossip_UCB, or Fed_UCB (``fed_index``, eq. 12) with ``PrivateRewards`` (``private``)."""
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
    ucb = (fed_index, n, epsilon, alpha_1, calibrated, c_privacy, levels_f, b_f, log_h2)
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
    var = np.zeros((ns, levels))
    # The dyadic tree visits only the observed streams (measured: N=50, M=100 Fed_UCB
    # 1.27 -> 1.8 M agent-steps/s; N=10, M=10 unchanged within noise).
    touched = np.zeros((levels, ns), dtype=np.int64)
    n_touched = np.zeros(levels, dtype=np.int64)
    live = np.zeros((levels, ns), dtype=np.int64)
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
                        width[i, kk] = _ucb_width(ucb, counts[i, kk], l_ref)
                        bound[i, kk] = _ucb_join(ucb, theta[i, kk], width[i, kk])
                    bound_epoch[i] = epoch
                else:  # the pulled arm's count moved; with a message, every estimate
                    a = arms[i]
                    width[i, a] = _ucb_width(ucb, counts[i, a], l_ref)
                    if pcount[i]:
                        for kk in range(m):
                            bound[i, kk] = _ucb_join(ucb, theta[i, kk], width[i, kk])
                    else:
                        bound[i, a] = _ucb_join(ucb, theta[i, a], width[i, a])
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
                    best = _ucb_value(ucb, theta[i, top], counts[i, top], log_t)
                    k, ties = top, 1
                    for kk in range(m):
                        if kk != top and bound[i, kk] >= best:
                            v = _ucb_value(ucb, theta[i, kk], counts[i, kk], log_t)
                            if v > best:
                                best, k, ties = v, kk, 1
                            elif v == best:
                                ties += 1
                                k = min(k, kk)
                    if ties > 1:  # the whole index, as the policy computes it
                        for kk in range(m):
                            index[kk] = _ucb_value(ucb, theta[i, kk], counts[i, kk], log_t)
                        k, ties = argmax_count(index)
                        k = tie_pick(index, ties, generator_at(agent_table, i))
                arms[i] = k
        sample_rewards(mu, arms, noise, sigma, reward_rng, rewards)
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
        for i in range(n):  # the step's regret
            cum[i] += gaps[arms[i]]
        if due or t_arms.shape[0]:
            r = _record_step(arms, seen_reward, cum, out, steps, r, s, t_arms, t_rewards)


@njit(cache=True, nogil=True)
def _elimination_trial(
    mu: FloatArray,
    noise: int,
    sigma: float,
    gaps: FloatArray,
    horizon: int,
    steps: IntArray,
    kind: int,
    n_up: int,
    epsilon: float,
    lo: float,
    hi: float,
    seen_lo: float,
    seen_hi: float,
    rounds: int,
    min_gap: float,
    sched_peer: IntArray,
    sched_server: IntArray,
    component: IntArray,
    n_components: int,
    reward_rng: np.random.Generator,
    protocol_rng: np.random.Generator,
    agent_rngs: Any,
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
    c1: float,
    c2: float,
    cost_out: FloatArray,
) -> None:  # pragma: no cover
    """CDP-MAB (``kind`` 0, server rounds with ``n_up`` uploaders), DDP-MAB (1, GIS
    flooding) or HDP-MAB (2, hybrid): the epoch loop of
    :class:`~baselines.elimination.EliminationPolicy` for all agents in lockstep (they
    share the schedule: every round ends for all at the same step with the same
    aggregate). Link counts per round replay the protocol's own (``sched_*``). The
    observed reward is clipped to ``[seen_lo, seen_hi]`` as ``ClipRewards`` does (the
    scenario's clip range), then to ``[lo, hi]`` as the policy does, whose width
    calibrates the noise (all infinite without privacy: no clipping)."""
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
        sample_rewards(mu, arms, noise, sigma, reward_rng, rewards)
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
        for i in range(n):  # the step's regret
            cum[i] += gaps[arms[i]]
        if due or t_arms.shape[0]:
            r = _record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


@njit(cache=True, nogil=True)
def tree_levels_of(horizon: int) -> int:  # pragma: no cover
    """``floor(log2 T) + 1`` inside compiled code (see ``tree_levels``).

    Example:
        >>> tree_levels_of(8)
        4
    """
    levels = 0
    while horizon > 0:
        levels += 1
        horizon >>= 1
    return levels


# --------------------------------------------------------------------- drivers
@dataclass(frozen=True)
class Setting:
    """What every trial of one ``run_fast`` call shares, built once from the scenario.

    Example:
        >>> from fedbandit_env.runner.scenario import Scenario
        >>> st = Setting.build(Scenario(n_agents=3, n_arms=2, horizon=10), np.array([10]),
        ...                    False, {})
        >>> st.mu.shape, [b.shape for b in st.buffers()]
        ((3, 2), [(3, 1), (0, 3), (0, 3)])
    """

    scenario: Scenario
    mu: FloatArray
    noise: int
    sigma: float
    gaps: FloatArray
    reward_bounds: tuple[float, float]
    steps: IntArray
    trace: bool
    params: dict[str, Any]

    @classmethod
    def build(
        cls, scenario: Scenario, steps: IntArray, trace: bool, params: dict[str, Any]
    ) -> Setting:
        """Generate the problem once (the network is built by the kernels that need it)."""
        p = scenario.problem()
        mu = np.ascontiguousarray(p.local_means)
        bounds = p.reward_bounds
        return cls(scenario, mu, p.noise_code, p.sigma, p.gaps, bounds, steps, trace, params)

    def buffers(self) -> tuple[FloatArray, IntArray, Float32Array]:
        """Fresh regret and trace arrays of one trial."""
        n = self.scenario.n_agents
        arms, rewards = _traces(self.trace, self.scenario.horizon, n)
        return np.zeros((n, self.steps.size)), arms, rewards


def _run_local_ucb(st: Setting, seeds: tuple[int, Any]) -> TrialResult:
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, _ = env_generators(env_seed)
    agent_rngs = _agent_rngs(team_seed, st.scenario.n_agents)  # alive during the call
    scale = float(st.params.get("scale", 1.0))
    _local_ucb_trial(
        st.mu,
        st.noise,
        st.sigma,
        st.gaps,
        st.scenario.horizon,
        st.steps,
        scale,
        reward_rng,
        generator_table(agent_rngs),
        out,
        arms,
        rewards,
    )
    return TrialResult(out, arms, rewards)


def _run_random(st: Setting, seeds: tuple[int, Any]) -> TrialResult:
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, _ = env_generators(env_seed)
    agent_rngs = _agent_rngs(team_seed, st.scenario.n_agents)  # alive during the call
    _random_trial(
        st.mu,
        st.noise,
        st.sigma,
        st.gaps,
        st.scenario.horizon,
        st.steps,
        reward_rng,
        generator_table(agent_rngs),
        out,
        arms,
        rewards,
    )
    return TrialResult(out, arms, rewards)


def _run_oracle(st: Setting, seeds: tuple[int, Any]) -> TrialResult:
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, _ = env_generators(env_seed)
    scale = float(st.params.get("scale", 1.0))
    _oracle_trial(
        st.mu,
        st.noise,
        st.sigma,
        st.gaps,
        st.scenario.horizon,
        st.steps,
        scale,
        reward_rng,
        team_generators(team_seed, 1)[0],
        out,
        arms,
        rewards,
    )
    return TrialResult(out, arms, rewards)


def _run_gossip(st: Setting, seeds: tuple[int, Any], fed: bool) -> TrialResult:
    scenario, params = st.scenario, st.params
    net = scenario.network()
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, protocol_rng = env_generators(env_seed)
    n = scenario.n_agents
    epsilon = float(params.get("epsilon", 1.0)) if fed else float("inf")
    private = fed and bool(np.isfinite(epsilon))
    alpha_1 = params.get("alpha_1")
    alpha_1 = default_alpha_1(n) if alpha_1 is None else float(alpha_1)
    lo, hi = 0.0, 1.0
    if private:  # as PrivateRewards(clip=scenario.clip) on the env's declared bounds
        lo, hi = clip_range(scenario.clip, st.reward_bounds, "PrivateRewards")
    sensitivity = float(hi - lo) if private else 1.0
    tree_scale = tree_levels(scenario.horizon) * sensitivity / epsilon if private else 1.0
    cost = np.zeros(st.steps.size)
    agent_rngs = _agent_rngs(team_seed, n)  # alive during the call
    _gossip_trial(
        st.mu,
        st.noise,
        st.sigma,
        st.gaps,
        scenario.horizon,
        st.steps,
        PROTOCOL_CODES[scenario.protocol],
        scenario.protocol != "broadcast",
        net.edges,
        net.neighbors,
        net.degrees,
        net.adjacency,
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
        reward_rng,
        protocol_rng,
        wrapper_generator(env_seed, PRIVACY_DEPTH),
        generator_table(agent_rngs),
        out,
        arms,
        rewards,
        float(scenario.link_costs[1]),
        cost,
    )
    return TrialResult(out, arms, rewards, cost)


def _run_elimination(st: Setting, seeds: tuple[int, Any], kind: int) -> TrialResult:
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
        st.mu,
        st.noise,
        st.sigma,
        st.gaps,
        scenario.horizon,
        st.steps,
        kind,
        n_up,
        float("inf") if epsilon is None else float(epsilon),
        lo,
        hi,
        seen_lo,
        seen_hi,
        int(rounds or 0),
        float(min_gap or 0.0),
        peer,
        server,
        component,
        n_components,
        reward_rng,
        protocol_rng,
        _agent_generators(team_seed, n),
        out,
        arms,
        rewards,
        float(scenario.link_costs[0]),
        float(scenario.link_costs[1]),
        cost,
    )
    return TrialResult(out, arms, rewards, cost)


FastRunner = Callable[[Setting, tuple[int, Any]], TrialResult]

FAST_POLICIES: dict[str, FastRunner] = {
    "local_ucb": _run_local_ucb,
    "random": _run_random,
    "oracle_ucb": _run_oracle,
    "gossip_ucb": lambda st, seeds: _run_gossip(st, seeds, fed=False),
    "fed_ucb": lambda st, seeds: _run_gossip(st, seeds, fed=True),
    "cdp_mab": lambda st, seeds: _run_elimination(st, seeds, kind=0),
    "ddp_mab": lambda st, seeds: _run_elimination(st, seeds, kind=1),
    "hdp_mab": lambda st, seeds: _run_elimination(st, seeds, kind=2),
}
"""Policy ids with a fast path, and their per-trial runners."""


def run_fast(
    policy_id: str,
    scenario: Scenario,
    n_trials: int,
    seed: int = 0,
    record_every: int = 1,
    label: str | None = None,
    progress: bool = True,
    workers: int = 1,
    trace: bool = False,
    first_trial: int = 0,
    **params: Any,
) -> RegretCurves:
    """Run ``n_trials`` of a reference policy on the fast path.

    Same seeds, same results as :func:`fedbandit_env.runner.run_trials` with the
    policy's team on ``scenario.make_env(...)``, step for step.

    Args:
        policy_id: A key of :data:`FAST_POLICIES`.
        scenario: The setting (problem, graph, protocol, horizon, privacy estimator).
        n_trials: Independent trials.
        seed: Seed of the experiment.
        record_every: Record regret every ``k`` steps (memory independent of ``T``).
        label: Name in results (default ``policy_id``).
        progress: Show a progress bar over trials.
        workers: Threads running trials concurrently (results do not depend on it).
        trace: Also keep every step's arms and observed rewards (``meta["arms"]``,
            ``meta["rewards"]``, shape ``(trials, T, N)``); for tests and debugging.
        first_trial: Run trials ``first_trial .. first_trial + n_trials - 1`` of
            ``seed`` (a sweep's single runs are the same trials as a bench's).
        **params: Policy parameters (``epsilon``, ``alpha_1``, ``scale``,
            ``confidence``, ``c_privacy``; for the elimination family ``participation``,
            ``rounds``, ``min_gap``).

    Example:
        >>> from fedbandit_env.runner.scenario import Scenario
        >>> c = run_fast("local_ucb", Scenario(n_agents=3, n_arms=2, horizon=50), 2,
        ...              record_every=25, progress=False)
        >>> c.regret.shape
        (2, 3, 2)
    """
    if policy_id not in FAST_POLICIES:
        raise ValueError(f"no fast path for {policy_id!r}; fast ids: {sorted(FAST_POLICIES)}")
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    runner = FAST_POLICIES[policy_id]
    steps = record_steps(scenario.horizon, record_every)
    setting = Setting.build(scenario, steps, trace, params)
    if first_trial < 0:
        raise ValueError(f"first_trial must be >= 0, got {first_trial}")
    seeds = trial_seeds(seed, first_trial + n_trials)[first_trial:]

    def one(s: tuple[int, Any]) -> tuple[TrialResult, float]:
        start = time.perf_counter()
        res = runner(setting, s)
        return res, time.perf_counter() - start

    bar = tqdm(
        total=n_trials, desc=label or policy_id, unit="trial", disable=not progress, leave=False
    )
    results: list[tuple[TrialResult, float]] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for res in pool.map(one, seeds):
            results.append(res)
            bar.update()
    bar.close()
    n_records = steps.size
    curves = RegretCurves(
        label or policy_id,
        steps,
        np.stack([r.regret for r, _ in results]),
        np.array([sec for _, sec in results]),
        comm_cost=np.stack(
            [r.comm_cost if r.comm_cost is not None else np.zeros(n_records) for r, _ in results]
        ),
        seeds=np.arange(first_trial, first_trial + n_trials),
        privacy_spent=make_team(policy_id, **params).privacy_spent(
            steps, scenario.horizon, scenario.n_agents, scenario.n_arms
        ),
    )
    curves.meta["path"] = "fast"
    if trace:
        curves.meta["arms"] = np.stack([r.arms for r, _ in results])
        curves.meta["rewards"] = np.stack([r.rewards for r, _ in results])
    return curves
