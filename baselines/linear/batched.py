"""LinUCB and the non-private fixed-schedule FedUCB in NumPy, batched over agents: the
yardstick of the fast path's speed.

What one writes once past the per-agent loop of :mod:`baselines.linear.naive`: every
agent's ``V^-1`` in one ``(M, d, d)`` stack updated by Sherman-Morrison (``O(d^2)`` a
step, no inversion), the decision sets gathered as an ``(M, K, d)`` array, the widths
and the means by batched ``matmul`` (faster than ``einsum`` for both, measured). It
follows the fast path's readings to the letter (:mod:`baselines.linear.policies`: the
fixed schedule's ``B`` and number of rounds, the one step of latency, ``S`` starting
at ``M lambda I``, releases rounded to float32 and summed in agent order), so on the same
seeds it makes the fast path's choices (``tests/families/linear/test_linear_batched.py``;
the fast path scores in float32, so a near-tie of about 1e-7 may split them);
``examples/linear_speed.py`` times both.

Examples:
    >>> from fedbandit_env.problems.linear import dubey_synthetic
    >>> arms, regret = batched_trial(dubey_synthetic(3, dim=2, seed=0), horizon=20, env_seed=0)
    >>> arms.shape, regret.shape
    ((20, 3), (3,))
"""

from __future__ import annotations

import math

import numpy as np

from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.seeding import linear_env_generators
from fedbandit_env.type_aliases import FloatArray, IntArray


def batched_trial(
    problem: LinearProblem,
    horizon: int,
    env_seed: int,
    batch: int | None = None,
    regularizer: float = 1.0,
    sigma: float = 0.5,
    alpha: float = 0.1,
    norm_bound: float = 1.0,
) -> tuple[IntArray, FloatArray]:
    """Play one trial of ``lin_ucb`` (``batch=None``) or ``fedlin_ucb_fixed`` with
    ``batch`` observations between rounds; return every agent's choice ``(T, M)`` (an
    index of its decision set) and its cumulative pseudo-regret ``(M,)``.

    The fixed schedule holds ``max(1, (T - 1) // B)`` rounds
    (``TreePrivateLinUCB._calibrate``); the width is OFUL's radius of Proposition 2 with
    ``rho_min = rho_max = lambda`` (``confidence_width``).
    """
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon!r}")
    if batch is not None and batch < 1:
        raise ValueError(f"batch must be >= 1 or None, got {batch!r}")
    n, d = problem.n_agents, problem.dim
    federated = batch is not None
    reward_rng, _, sets_rng = linear_env_generators(env_seed)
    features = problem.features.astype(np.float32).astype(np.float64)
    lam0 = n * regularizer if federated else regularizer
    m_agents = n if federated else 1
    rounds = max(1, (max(horizon, 2) - 1) // batch) if batch else 0
    inv = np.broadcast_to(np.eye(d) / lam0, (n, d, d)).copy()
    log_det = np.full(n, d * math.log(lam0))
    s_vec, u = np.zeros((n, d)), np.zeros((n, d))
    e = d + 1
    leaf, total = np.zeros((n, e, e)), np.zeros((n, e, e))
    since, done = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    last_x, seen = np.zeros((n, d)), np.zeros(n)
    arms = np.zeros((horizon, n), dtype=np.int64)
    regret = np.zeros(n)
    server: FloatArray | None = None
    tail = 2.0 * math.log(2.0 / alpha) - d * math.log(m_agents * regularizer)
    radius = norm_bound * math.sqrt(m_agents * regularizer)
    index = np.arange(n)
    for step in range(1, horizon + 1):
        sets = problem.draw_sets(sets_rng)
        if step > 1:
            if server is not None:  # a round ended the last step: commit, then adopt S
                done += 1
                total += leaf
                leaf[:] = 0.0
                inv[:] = np.linalg.inv(server[:d, :d])
                log_det[:] = np.linalg.slogdet(server[:d, :d])[1]
                s_vec[:] = server[:d, d]
                u[:] = 0.0
                since[:] = 0
            vx = np.einsum("nab,nb->na", inv, last_x)  # Sherman-Morrison, all agents
            q = np.einsum("na,na->n", last_x, vx)
            inv -= vx[:, :, None] * vx[:, None, :] / (1.0 + q)[:, None, None]
            log_det += np.log1p(q)
            u += seen[:, None] * last_x
            if federated:
                z = np.concatenate([last_x, seen[:, None]], axis=1)
                leaf += z[:, :, None] * z[:, None, :]
                since += 1
        theta = np.einsum("nab,nb->na", inv, s_vec + u)
        beta = sigma * np.sqrt(np.maximum(tail + log_det, 0.0)) + radius
        x = features[sets]  # (M, K, d)
        width = np.sqrt(np.maximum(np.einsum("nkd,nkd->nk", np.matmul(x, inv), x), 0.0))
        means = np.matmul(x, theta[:, :, None])[:, :, 0]
        k = np.argmax(means + beta[:, None] * width, axis=1)
        arms[step - 1] = k
        rows = sets[index, k]
        last_x = x[index, k]
        y = problem.sample(rows, reward_rng)
        seen = y.astype(np.float32).astype(np.float64)
        regret += problem.gaps(sets, rows)
        server = None
        if batch is not None and bool(((since >= batch) & (done < rounds)).any()):
            release = total + leaf
            release[:, np.arange(d), np.arange(d)] += regularizer
            acc = np.zeros((e, e))
            for r in release.astype(np.float32).astype(np.float64):  # agent order
                acc += r
            server = acc.astype(np.float32).astype(np.float64)
    return arms, regret


__all__ = ["batched_trial"]
