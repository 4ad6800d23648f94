"""``VecPrivateRewards``' mechanism checked directly, quickly (issue 63, item 4): rewards
outside the clip range are clipped before the tree sums them, and the noise of every
(env, agent) stream is independent of every other's and of its own earlier episodes.

The audits of ``test_vector_audit.py`` keep their rewards inside the clip range in the
quick suite, and replay tests compare the vector env with the PettingZoo one (a shared
stream can replay bit for bit if both share it), so neither sees an unclipped kernel or
noise drawn twice. These tests do, and ``tests/privacy/mutations.py`` holds the
weakenings they must catch (``vector_no_clip``, ``sub_env_noise_shared``,
``agent_noise_shared``).
"""

from __future__ import annotations

import numpy as np

from fedbandit_env.problems import MABProblem
from fedbandit_env.vector import FederatedMABVecEnv
from fedbandit_env.vector.wrappers import VecPrivateRewards


def test_rewards_outside_the_clip_range_are_clipped_before_the_tree() -> None:
    """Arm 0 always pays 1 and arm 1 always 0 (Bernoulli means 1 and 0); the clip range
    is ``[0.25, 0.75]``, so agents pulling arm 0 must release private means around 0.75
    and those pulling arm 1 around 0.25. The private sum at ``T = 16`` carries the noise
    of at most ``L`` tree nodes, each ``Laplace(scale)``: its standard deviation is at most
    ``sqrt(2 L) scale``, that of a mean over ``2 B`` streams ``sqrt(2 L) scale / (T
    sqrt(2 B))``; the tolerance is 6 of those. Unclipped, the means would be 1 and 0,
    11 of them away."""
    b, n, horizon = 512, 4, 16
    problem = MABProblem(np.tile([1.0, 0.0], (n, 1)))
    venv = VecPrivateRewards(
        FederatedMABVecEnv(problem, horizon=horizon, num_envs=b), 1.0, clip=(0.25, 0.75)
    )
    obs, _ = venv.reset(seed=list(range(b)))
    arms = np.tile(np.arange(n) % 2, (b, 1))  # agents 0, 2 pull arm 0; agents 1, 3 arm 1
    released = np.zeros((b, n))
    for _ in range(horizon):
        obs, increments, *_ = venv.step(arms)
        released += increments
    means = np.take_along_axis(obs["private_means"], arms[..., None], axis=2)[..., 0]
    np.testing.assert_allclose(released / horizon, means, atol=1e-5)  # float32 views
    tol = 6 * np.sqrt(2 * venv.levels) * venv.scale / (horizon * np.sqrt(2 * b))
    assert tol < 0.25 / 1.5  # the test has power against the unclipped means
    high, low = float(means[:, 0::2].mean()), float(means[:, 1::2].mean())
    assert abs(high - 0.75) < tol, (high, tol)
    assert abs(low - 0.25) < tol, (low, tol)


def test_every_env_and_agent_draws_independent_noise() -> None:
    """Every reward is 0 and every episode one step long, so each release is the noise of
    one leaf, ``Laplace(scale)``: ``K`` episodes give each of the ``B N`` (env, agent)
    streams ``K`` draws that must be independent and identically distributed. Pairwise
    sample correlations of independent streams have standard deviation ``1 / sqrt(K)``
    (1/16 here); the largest of the ``B N (B N - 1) / 2`` must stay below 8 of them (two
    streams sharing noise read 1). The lag-one correlation of each stream says the
    episodes' noise is fresh. The pooled variance must be ``2 scale^2`` within 6 of its
    standard errors, ``sqrt((kurtosis - 1) / n)`` with the Laplace's kurtosis 6 (half
    the noise reads a quarter of it)."""
    b, n, episodes = 24, 4, 256
    venv = VecPrivateRewards(
        FederatedMABVecEnv(MABProblem(np.zeros((n, 2))), horizon=1, num_envs=b), 1.0
    )
    venv.reset(seed=list(range(b)))
    arms = np.zeros((b, n), dtype=int)
    draws = []
    for _ in range(2 * episodes):  # a step, then the autoreset, in turn
        obs, increments, *_ = venv.step(arms)
        if obs["counts"].sum() > 0:
            draws.append(np.asarray(increments, dtype=np.float64).reshape(b * n))
    x = np.stack(draws, axis=1)  # (B N streams, K draws)
    assert x.shape == (b * n, episodes)
    bound = 8 / np.sqrt(episodes)
    r = np.corrcoef(x)
    np.fill_diagonal(r, 0.0)
    worst = np.unravel_index(np.abs(r).argmax(), r.shape)
    assert np.abs(r).max() < bound, f"streams {worst} (env, agent = divmod(i, {n})): {r[worst]}"
    lag = np.array([np.corrcoef(s[:-1], s[1:])[0, 1] for s in x])
    assert np.abs(lag).max() < 8 / np.sqrt(episodes - 1), lag
    ratio = x.var() / (2 * venv.scale**2)
    assert abs(ratio - 1) < 6 * np.sqrt(5 / x.size), ratio
