"""PrivateRewards: what agents see, what it costs, and that it composes."""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env import MABProblem, federated_mab_v0
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import LocalStatistics, PrivateRewards


def _env(horizon: int = 64, message_dim: int = 2, **kw: object) -> PrivateRewards:
    env = federated_mab_v0.parallel_env(horizon=horizon, message_dim=message_dim)
    return PrivateRewards(env, 1.0, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("estimator", ["dyadic", "honaker"])
def test_private_rewards_pass_the_api_and_determinism_checks(estimator: str) -> None:
    check_parallel_env(lambda: _env(estimator=estimator), num_cycles=70)
    check_determinism(lambda: _env(estimator=estimator), seed=4)


def test_private_view_hides_raw_rewards_and_tracks_counts() -> None:
    env = _env(horizon=32, message_dim=0)
    obs, _ = env.reset(seed=0)
    raw_env = env.unwrapped
    total_private = np.zeros(4)
    steps = 0
    while env.agents:
        obs, rewards, _, _, infos = env.step({a: 0 for a in env.agents})
        steps += 1
        for i, a in enumerate(env.possible_agents):
            assert obs[a]["reward"][0] == pytest.approx(rewards[a])
            total_private[i] += rewards[a]
    for i, a in enumerate(env.possible_agents):
        assert obs[a]["counts"].tolist() == [32.0, 0.0, 0.0, 0.0, 0.0]
        # Increments telescope to the released prefix sum, and means are that sum / n.
        assert obs[a]["private_means"][0] == pytest.approx(total_private[i] / 32, rel=1e-5)
        assert obs[a]["private_means"][1] == 0.0
    assert infos["agent_0"]["epsilon"] == pytest.approx(1.0)
    assert env.accountant.epsilon == pytest.approx(1.0)
    assert env.accountant.releases == 6  # T = 32: levels enter at t = 1, 2, 4, 8, 16, 32
    # Bernoulli rewards are 0/1; private increments are not.
    assert not np.allclose(total_private, np.round(total_private))
    assert raw_env.t == 32


@pytest.mark.slow
def test_private_means_are_unbiased() -> None:
    """Mean error of the private mean over 400 seeds is within 4 standard errors."""
    problem = MABProblem([[0.3, 0.7], [0.6, 0.2]])
    errs = []
    for seed in range(400):
        env = PrivateRewards(federated_mab_v0.parallel_env(problem=problem, horizon=16), 2.0)
        obs, _ = env.reset(seed=seed)
        while env.agents:
            obs, *_ = env.step({"agent_0": 1, "agent_1": 1})
        errs.append(obs["agent_0"]["private_means"][1] - 0.7)
    errs_a = np.array(errs)
    assert abs(errs_a.mean()) < 4 * errs_a.std(ddof=1) / np.sqrt(errs_a.size)


def test_composes_with_local_statistics_and_refuses_unbounded_rewards() -> None:
    env = LocalStatistics(_env(horizon=8, message_dim=0))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step({a: 1 for a in env.agents})
    assert {"counts", "means", "private_means"} <= set(obs["agent_0"])
    gauss = federated_mab_v0.parallel_env(problem=MABProblem([[0.1], [0.2]], "gaussian", 1.0))
    with pytest.raises(
        ValueError, match="PrivateRewards privatises rewards, so they need a finite range"
    ):
        PrivateRewards(gauss, 1.0)
    assert PrivateRewards(gauss, 1.0, clip=(-3.0, 4.0)).clip == (-3.0, 4.0)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        _env(horizon=8).__class__(federated_mab_v0.parallel_env(), 0.0)
