"""A straightforward NumPy LinUCB, the yardstick of the fast path's speed.

What one would write first: a Python loop over agents, ``np.linalg.inv`` and
``np.linalg.slogdet`` of ``V`` at every step, the decision set's widths by ``einsum``.
The same policy as :class:`~baselines.linear.LinUCB` (local, ``batch=None``) or the
non-private fixed-schedule FedUCB (``batch=B``: every ``B`` steps every agent's ``S``
becomes ``M lambda I`` plus all agents' data, without the fast path's one-step latency),
on the same decision sets and rewards; ``examples/linear_speed.py`` times both.

Examples:
    >>> from fedbandit_env.problems.linear import dubey_synthetic
    >>> regret = naive_trial(dubey_synthetic(2, dim=2, seed=0), horizon=20, env_seed=0)
    >>> regret.shape
    (2,)
"""

from __future__ import annotations

import math

import numpy as np

from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.seeding import linear_env_generators
from fedbandit_env.type_aliases import FloatArray


def naive_trial(
    problem: LinearProblem,
    horizon: int,
    env_seed: int,
    batch: int | None = None,
    regularizer: float = 1.0,
    sigma: float = 0.5,
    alpha: float = 0.1,
    norm_bound: float = 1.0,
) -> FloatArray:
    """Play one trial; return each agent's cumulative pseudo-regret."""
    n, d = problem.n_agents, problem.dim
    reward_rng, _, sets_rng = linear_env_generators(env_seed)
    features = problem.features.astype(np.float32).astype(np.float64)
    lam0 = n * regularizer if batch else regularizer
    shared = lam0 * np.eye(d)  # S: synchronised Gram matrix
    shared_b = np.zeros(d)
    own = [np.zeros((d, d)) for _ in range(n)]  # U_i: data since the last round
    own_b = [np.zeros(d) for _ in range(n)]
    regret = np.zeros(n)
    for step in range(1, horizon + 1):
        sets = problem.draw_sets(sets_rng)
        rows = np.empty(n, dtype=np.int64)
        for i in range(n):
            v = shared + own[i]
            inv = np.linalg.inv(v)
            theta = inv @ (shared_b + own_b[i])
            x = features[sets[i]]
            width = np.sqrt(np.einsum("kd,de,ke->k", x, inv, x))
            log_det = np.linalg.slogdet(v)[1]
            inner = 2 * math.log(2 / alpha) + log_det - d * math.log(lam0)
            beta = sigma * math.sqrt(max(inner, 0.0)) + norm_bound * math.sqrt(lam0)
            rows[i] = sets[i, int(np.argmax(x @ theta + beta * width))]
        y = problem.sample(rows, reward_rng)
        regret += problem.gaps(sets, rows)
        for i in range(n):
            x = features[rows[i]]
            own[i] += np.outer(x, x)
            own_b[i] += y[i] * x
        if batch and step % batch == 0:
            shared = shared + sum(own)
            shared_b = shared_b + sum(own_b)
            own = [np.zeros((d, d)) for _ in range(n)]
            own_b = [np.zeros(d) for _ in range(n)]
    return regret


__all__ = ["naive_trial"]
