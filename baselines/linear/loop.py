"""FedUCB's compiled trial loop (:func:`linear_loop`, the centralized variants; local
LinUCB and the pooled oracle are vector policies, :mod:`baselines.linear.vector`): all
agents of a trial, every step, with the kernels the policies call
(:mod:`baselines.linear.kernels`) in the order the PettingZoo path calls them;
:mod:`baselines.linear.fast` prepares its inputs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.common.bundles import LinearArrays, Recording
from baselines.linear.kernels import (
    clip_norm,
    confidence_width,
    mat_vec,
    new_scratch,
    rank_one_update,
    spd_inverse,
    symmetric_noise,
    tree_commit,
    tree_release,
    ucb_choice,
)
from fedbandit_env.core.kernels import pull_sets
from fedbandit_env.problems.kernels import draw_sets
from fedbandit_env.type_aliases import FloatArray, IntArray


class LinearConstants(NamedTuple):
    """The linear loop's numbers, read from a reset policy (module docstring of
    :mod:`baselines.linear.policies`): ``lambda``, the noise's sub-Gaussian ``sigma``,
    ``alpha``, the norm bound ``S``, a fixed width (``-1``: OFUL's), the sync threshold
    ``D``, ``rho_min``, ``rho_max``, the release's shift, ``kappa``, ``M (rho_max -
    rho_min)``, the noise's std, the feature bound ``L``, the server link's cost and
    ``M``."""

    lam: float
    sigma: float
    alpha: float
    norm_bound: float
    fixed_beta: float
    threshold: float
    rho_min: float
    rho_max: float
    shift: float
    kappa: float
    extra: float
    noise_std: float
    feature_bound: float
    c1: float
    n_rho: int


class LinearSwitches(NamedTuple):
    """Which FedUCB it is: private, adaptive schedule, the fixed schedule's batch, rounds
    and tree levels."""

    private: bool
    adaptive: bool
    batch: int
    rounds: int
    levels: int


@njit(cache=True, nogil=True)
def _sync_to(
    i: int,
    gram: FloatArray,
    vec: FloatArray,
    extra: float,
    inv: FloatArray,
    winv: FloatArray,
    ld: FloatArray,
    ldw: FloatArray,
    lds: FloatArray,
    s: FloatArray,
    u: FloatArray,
    since: IntArray,
) -> None:  # pragma: no cover
    d = vec.shape[0]
    s[i] = vec
    u[i] = 0.0
    lds[i] = spd_inverse(gram, inv[i])
    ld[i] = lds[i]
    shifted = gram.copy()
    for a in range(d):
        shifted[a, a] = gram[a, a] + extra
    ldw[i] = spd_inverse(shifted, winv[i])
    since[i] = 0


@njit(cache=True, nogil=True)
def _draw_pending(
    rng: np.random.Generator, scale: float, pending: FloatArray
) -> None:  # pragma: no cover
    e = pending.shape[0]
    raw = np.empty((e, e))
    for a in range(e):
        for b in range(e):
            raw[a, b] = rng.standard_normal()
    symmetric_noise(raw, scale, pending)


@njit(cache=True, nogil=True)
def linear_loop(
    problem: LinearArrays,
    rec: Recording,
    fp: LinearConstants,
    ip: LinearSwitches,
    reward_rng: np.random.Generator,
    sets_rng: np.random.Generator,
    rngs: Any,
    scorer: Any,
) -> None:  # pragma: no cover
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
    sig = fp.sigma
    alpha = fp.alpha
    norm_bound = fp.norm_bound
    fixed_beta = fp.fixed_beta
    threshold = fp.threshold
    rho_min = fp.rho_min
    rho_max = fp.rho_max
    shift = fp.shift
    kappa = fp.kappa
    extra = fp.extra
    noise_std = fp.noise_std
    feature_bound = fp.feature_bound
    c1 = fp.c1
    n_rho = fp.n_rho
    private = ip.private
    adaptive = ip.adaptive
    batch = ip.batch
    rounds = ip.rounds
    levels = ip.levels
    n, d = local_means.shape[0], features.shape[1]
    e = d + 1
    pool = features.astype(np.float32)  # the scorer's copy (exact: float32 values)
    scratch = new_scratch(d, set_size)
    inv, winv = np.zeros((n, d, d)), np.zeros((n, d, d))
    ld, ldw, lds = np.zeros(n), np.zeros(n), np.zeros(n)
    s_vec, u, last_x = np.zeros((n, d)), np.zeros((n, d)), np.zeros((n, d))
    leaf, total = np.zeros((n, e, e)), np.zeros((n, e, e))
    acc, node = np.zeros((n, levels, e, e)), np.zeros((n, levels, e, e))
    pending, rel = np.zeros((n, e, e)), np.zeros((e, e))
    rnd, since = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    server = np.zeros((e, e))
    work, theta, x, z, su = np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(e), np.zeros(d)
    for i in range(n):
        init = np.zeros((d, d))
        for a in range(d):
            init[a, a] = n_rho * rho_min
        _sync_to(i, init, np.zeros(d), extra, inv, winv, ld, ldw, lds, s_vec, u, since)
        if private:
            _draw_pending(rngs[i], noise_std, pending[i])
    sets = np.zeros((n, set_size), dtype=np.int64)
    draw_sets(draw_code, features.shape[0], sets_rng, sets)
    arms, rows = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    flags = np.zeros(n, dtype=np.bool_)
    rewards, seen, cum = np.zeros(n), np.zeros(n, dtype=np.float32), np.zeros(n)
    synced, cost, r = False, 0.0, 0
    for step in range(1, horizon + 1):
        for i in range(n):
            if step > 1:
                if synced:  # _commit then _sync_to, as FedLinUCB.act
                    rnd[i] += 1
                    if private:
                        tree_commit(acc[i], node[i], leaf[i], pending[i], rnd[i])
                        _draw_pending(rngs[i], noise_std, pending[i])
                    else:
                        total[i] += leaf[i]
                    leaf[i] = 0.0
                    gram = np.ascontiguousarray(server[:d, :d])
                    _sync_to(
                        i,
                        gram,
                        server[:d, d].copy(),
                        extra,
                        inv,
                        winv,
                        ld,
                        ldw,
                        lds,
                        s_vec,
                        u,
                        since,
                    )
                y = float(seen[i])
                if private:
                    clip_norm(last_x[i], feature_bound, x)
                    y = min(max(y, -1.0), 1.0)
                else:
                    for a in range(d):
                        x[a] = last_x[i, a]
                ld[i] += rank_one_update(inv[i], x, work)
                if extra > 0.0:
                    ldw[i] += rank_one_update(winv[i], x, work)
                else:  # W = V: as FedLinUCB.observe
                    ldw[i] = ld[i]
                for a in range(d):
                    u[i, a] += y * x[a]
                z[:d] = x
                z[d] = y
                for a in range(e):
                    for b in range(e):
                        leaf[i, a, b] += z[a] * z[b]
                since[i] += 1
            for a in range(d):
                su[a] = s_vec[i, a] + u[i, a]
            mat_vec(inv[i], su, theta)
            if fixed_beta >= 0.0:
                beta = fixed_beta
            else:
                beta = confidence_width(
                    sig, alpha, ld[i], d, n, rho_min, rho_max, kappa, norm_bound
                )
            k = ucb_choice(scorer, pool, sets[i], inv[i], theta, beta, scratch)
            arms[i], rows[i] = k, sets[i, k]
            for a in range(d):
                last_x[i, a] = features[rows[i], a]
            if adaptive:
                flags[i] = since[i] > 0 and (ldw[i] - lds[i]) * since[i] > threshold
            else:
                flags[i] = since[i] >= batch and rnd[i] < rounds
        pull_sets(local_means, rows, noise, sigma, reward_rng, sets, global_means, rewards, cum)
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        synced = bool(flags.any())
        if synced:  # Synchronize: float32 releases summed in agent order, sent as float32
            acc_sum = np.zeros((e, e))
            for i in range(n):
                if private:
                    tree_release(acc[i], node[i], leaf[i], pending[i], rnd[i] + 1, rel)
                else:
                    rel[:] = total[i] + leaf[i]
                for a in range(d):
                    rel[a, a] += shift
                for a in range(e):
                    for b in range(e):
                        acc_sum[a, b] += float(np.float32(rel[a, b]))
            for a in range(e):
                for b in range(e):
                    server[a, b] = float(np.float32(acc_sum[a, b]))
            cost += c1 * n + 0.0
        if t_arms.shape[0]:
            t_arms[step - 1] = arms
            t_rewards[step - 1] = seen
        if r < steps.size and step == steps[r]:
            out[:, r] = cum
            cost_out[r] = cost
            r += 1
        if step < horizon:
            draw_sets(draw_code, features.shape[0], sets_rng, sets)
