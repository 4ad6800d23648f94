"""The batched trial loop of decentralized FedUCB (:mod:`baselines.linear.decentralized`)
over the LOCAL protocol: the policy's steps with the same kernels, and the protocol's
delivery rebuilt from the hop distances (the message agent ``v`` sent at step ``s``
is read by an agent ``h`` hops away at step ``s + h``, for ``1 <= h <= gamma``); with
privacy, each agent's trees draw their noise from the agent's team stream, as the
policy's do.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.common.bundles import LinearArrays, Recording
from baselines.linear.kernels import (
    clip_norm,
    confidence_width,
    draw_node_noise,
    mat_vec,
    new_scratch,
    noise_prior,
    rank_one_update,
    rebuild,
    tree_commit,
    tree_release,
    ucb_choice,
)
from fedbandit_env.core.kernels import pull_sets
from fedbandit_env.problems.kernels import draw_sets
from fedbandit_env.type_aliases import IntArray


class DecConstants(NamedTuple):
    """Decentralized FedUCB's numbers: ``lambda``, ``sigma``, ``alpha``, ``S``, a fixed
    width (``-1``: OFUL's), the threshold ``D``, the network's cost a step, and the
    schedule and noise of :class:`~baselines.linear.decentralized.DecFedLinUCB` after a
    reset (``fixed``: the fixed schedule's ``batch`` and ``rounds``; ``private``: the
    trees' ``levels``, node std, ``feature_bound`` and the bounds ``Lambda``, ``H``)."""

    lam: float
    sigma: float
    alpha: float
    norm_bound: float
    fixed_beta: float
    threshold: float
    step_cost: float
    fixed: bool
    batch: int
    rounds: int
    private: bool
    levels: int
    noise_std: float
    feature_bound: float
    gram_bound: float
    vec_bound: float
    joint: bool


@njit(cache=True, nogil=True)
def local_loop(
    problem: LinearArrays,
    rec: Recording,
    fp: DecConstants,
    gamma: int,
    hops: IntArray,
    reward_rng: np.random.Generator,
    sets_rng: np.random.Generator,
    rngs: Any,
    scorer: Any,
) -> None:  # pragma: no cover
    """One trial; ``hops[u, v]`` the hop distance (0: not delivered), ``rngs`` each
    agent's noise generator (used only with privacy)."""
    features = problem.features
    local_means = problem.local_means
    global_means = problem.global_means
    draw_code = problem.draw_code
    set_size = problem.set_size
    noise = problem.noise
    sigma = problem.sigma
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    cost_out = rec.cost_out
    lam = fp.lam
    sig = fp.sigma
    alpha = fp.alpha
    norm_bound = fp.norm_bound
    fixed_beta = fp.fixed_beta
    threshold = fp.threshold
    step_cost = fp.step_cost
    fixed = fp.fixed
    batch = fp.batch
    rounds = fp.rounds
    private = fp.private
    levels = fp.levels
    noise_std = fp.noise_std
    feature_bound = fp.feature_bound
    gram_bound = fp.gram_bound
    vec_bound = fp.vec_bound
    joint = fp.joint
    n, d = local_means.shape[0], features.shape[1]
    e = d + 1
    pool = features.astype(np.float32)  # the scorer's copy (exact: float32 values)
    scratch = new_scratch(d, set_size)
    own = np.zeros((n, gamma, e, e))
    others = np.zeros((n, gamma, n, e, e))
    invs = np.zeros((n, gamma, d, d))
    for i in range(n):
        for g in range(gamma):
            for a in range(d):
                invs[i, g, a, a] = 1.0 / lam
    vecs = np.zeros((n, gamma, d))
    log_dets = np.full((n, gamma), d * math.log(lam))
    refs = log_dets.copy()
    since = np.zeros((n, gamma), dtype=np.int64)
    dirty = np.zeros((n, gamma), dtype=np.bool_)
    pending = np.zeros((n, gamma), dtype=np.bool_)
    got = np.zeros((n, gamma, n), dtype=np.bool_)
    terms = np.zeros((n, gamma, 3))
    terms[:, :, 0], terms[:, :, 1] = lam, lam
    fresh = np.zeros((n, gamma), dtype=np.int64)
    released = np.zeros((n, gamma), dtype=np.int64)
    leaf = np.zeros((n, gamma, e, e))
    acc = np.zeros((n, gamma, levels, e, e))
    node = np.zeros((n, gamma, levels, e, e))
    noise_next = np.zeros((n, gamma, e, e))
    raw = np.empty((e, e))  # a node's standard normals before they are symmetrised
    if private:
        for i in range(n):
            for g in range(gamma):
                draw_node_noise(rngs[i].bit_generator, noise_std, raw, noise_next[i, g])
    release = np.zeros((e, e))
    xc = np.zeros(d)
    history = np.zeros((gamma + 1, n, 3 + e * e), dtype=np.float32)  # sent at step s: s % (g+1)
    last_x, last_g = np.zeros((n, d)), np.zeros(n, dtype=np.int64)
    work, theta, z = np.zeros(d), np.zeros(d), np.zeros(e)
    sets = np.zeros((n, set_size), dtype=np.int64)
    draw_sets(draw_code, features.shape[0], sets_rng, sets)
    arms, rows = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    rewards, seen, cum = np.zeros(n), np.zeros(n, dtype=np.float32), np.zeros(n)
    cost, r = 0.0, 0
    for step in range(1, horizon + 1):
        g = (step - 1) % gamma
        slot = step % (gamma + 1)
        for i in range(n):
            if step > 1:
                last, y = last_g[i], float(seen[i])
                x = last_x[i]
                if private:
                    x = clip_norm(last_x[i], feature_bound, xc)
                    y = min(max(y, -1.0), 1.0)
                log_dets[i, last] += rank_one_update(invs[i, last], x, work)
                for a in range(d):
                    vecs[i, last, a] += y * x[a]
                z[:d] = x
                z[d] = y
                for a in range(e):
                    for b in range(e):
                        own[i, last, a, b] += z[a] * z[b]
                if private:  # the tree's next leaf
                    for a in range(e):
                        for b in range(e):
                            leaf[i, last, a, b] += z[a] * z[b]
                fresh[i, last] += 1
                for v in range(n):  # what arrived, in origin order
                    h = hops[i, v]
                    if h < 1 or step - h < 1:
                        continue
                    msg = history[(step - h) % (gamma + 1), v]
                    gg = int(msg[2])
                    if msg[0] > 0.5:
                        pending[i, gg] = True
                    if msg[1] > 0.5:
                        for a in range(e):
                            for b in range(e):
                                others[i, gg, v, a, b] = float(msg[3 + a * e + b])
                        got[i, gg, v] = True
                        dirty[i, gg] = True
            if dirty[i, g]:
                heard = 0
                for v in range(n):
                    heard += 1 if got[i, g, v] else 0
                rho_min, rho_max, kappa, prior = noise_prior(
                    lam, heard, gram_bound, vec_bound, joint
                )
                log_det = rebuild(own[i, g], others[i, g], prior, invs[i, g], vecs[i, g])
                if log_det > -np.inf:
                    log_dets[i, g] = log_det
                    terms[i, g, 0], terms[i, g, 1], terms[i, g, 2] = rho_min, rho_max, kappa
                    refs[i, g], since[i, g] = log_det, 0
                dirty[i, g] = False
            mat_vec(invs[i, g], vecs[i, g], theta)
            beta = fixed_beta
            if beta < 0.0:
                beta = confidence_width(
                    sig, alpha, log_dets[i, g], d, 1, terms[i, g, 0], terms[i, g, 1],
                    terms[i, g, 2], norm_bound,
                )  # fmt: skip
            k = ucb_choice(scorer, pool, sets[i], invs[i, g], theta, beta, scratch)
            arms[i], rows[i] = k, sets[i, k]
            last_x[i] = features[rows[i]]
            last_g[i] = g
            request = False
            if fixed:
                respond = fresh[i, g] >= batch and released[i, g] < rounds
            else:
                request = (log_dets[i, g] - refs[i, g]) * (since[i, g] + 1) > threshold
                if request:
                    refs[i, g], since[i, g] = log_dets[i, g], 0
                else:
                    since[i, g] += 1
                respond = request or pending[i, g]
                pending[i, g] = False
            msg = history[slot, i]
            msg[:] = 0.0
            msg[0] = np.float32(1.0 if request else 0.0)
            msg[1] = np.float32(1.0 if respond else 0.0)
            msg[2] = np.float32(g)
            if respond:
                if private:
                    nth = released[i, g] + 1
                    tree_release(acc[i, g], node[i, g], leaf[i, g], noise_next[i, g], nth, release)
                    tree_commit(acc[i, g], node[i, g], leaf[i, g], noise_next[i, g], nth)
                    draw_node_noise(rngs[i].bit_generator, noise_std, raw, noise_next[i, g])
                    leaf[i, g] = 0.0
                else:
                    release[:] = own[i, g]
                for a in range(e):
                    for b in range(e):
                        msg[3 + a * e + b] = np.float32(release[a, b])
                released[i, g] += 1
                fresh[i, g] = 0
        pull_sets(local_means, rows, noise, sigma, reward_rng, sets, global_means, rewards, cum)
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        cost += step_cost
        if t_arms.shape[0]:
            t_arms[step - 1] = arms
            t_rewards[step - 1] = seen
        if r < steps.size and step == steps[r]:
            out[:, r] = cum
            cost_out[r] = cost
            r += 1
        if step < horizon:
            draw_sets(draw_code, features.shape[0], sets_rng, sets)
