"""HorizonFree: a learner's observation that reads the same at any horizon."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import stable_baselines3 as sb3
import torch as th

from fedbandit_env import federated_mab_v0
from fedbandit_env.rl import AgentVecEnv, LearnerStack
from fedbandit_env.rl.arm_policy import ArmScoringPolicy, arm_policy_kwargs
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import HeldMessages, HorizonFree, LocalStatistics
from fedbandit_env.wrappers.horizon_free import horizon_free_features


def _scaled_observations(horizon: int, setting: str, **stack_kw: Any) -> np.ndarray:
    """What a model is shown over 30 steps of fixed arms, the instance fixed."""
    scenario = Scenario(n_agents=4, n_arms=3, horizon=horizon, setting=setting)
    stack = LearnerStack.for_setting(setting, **stack_kw)
    message_fn = stack.message_fn if stack.share_means else None
    venv = AgentVecEnv(stack.make_env(scenario), message_fn=message_fn, scale=stack.scale)
    venv.seed(0)
    shown = [venv.reset()]
    arms = np.random.default_rng(1).integers(0, 3, size=(30, 4))
    for step in arms:
        obs, *_ = venv.step(step)
        shown.append(obs)
    return np.stack(shown)


@pytest.mark.parametrize("setting", ["local", "neighbours", "gossip"])
def test_a_model_is_shown_the_same_numbers_at_any_horizon(setting: str) -> None:
    short = _scaled_observations(200, setting, horizon_free=True, share_counts=True)
    long = _scaled_observations(20_000, setting, horizon_free=True, share_counts=True)
    np.testing.assert_array_equal(short, long)


def test_the_check_catches_the_statistics_stack() -> None:
    """Power: with raw counts and step, scaled by the horizon, the two differ."""
    short = _scaled_observations(200, "neighbours")
    long = _scaled_observations(20_000, "neighbours")
    assert np.abs(short - long).max() > 0.25  # t = 30: -0.70 of [-1, 1] at T=200, -0.997 at 2e4


def test_nothing_is_lost_and_the_features_are_their_formulas() -> None:
    def make() -> HeldMessages:
        from fedbandit_env.protocols import RandomEdgeGossip

        base = federated_mab_v0.parallel_env(
            n_agents=4, n_arms=3, horizon=50, message_dim=3, protocol=RandomEdgeGossip()
        )
        return HeldMessages(LocalStatistics(base))

    env, twin = HorizonFree(make()), make()
    obs, _ = env.reset(seed=2)
    twin.reset(seed=2)
    rng = np.random.default_rng(0)
    for t in range(1, 41):
        actions = {
            a: {"arm": int(rng.integers(3)), "message": rng.random(3).astype(np.float32)}
            for a in env.agents
        }
        obs, *_ = env.step(actions)
        raw, *_ = twin.step(actions)
        for a in env.agents:
            o, r = obs[a], raw[a]
            assert not {"step", "counts", "age"} & set(o)
            n = np.asarray(r["counts"], dtype=np.float64)
            np.testing.assert_allclose(o["shares"] * np.expm1(o["log_step"][0]), n, rtol=1e-5)
            np.testing.assert_allclose(o["shares"], n / t, rtol=1e-6)
            np.testing.assert_allclose(o["bonus"], np.sqrt(np.log(1 + t) / (1 + n)), rtol=1e-6)
            np.testing.assert_allclose(o["log_age"], np.log1p(r["age"]), rtol=1e-6)
            for key in ("means", "held", "heard", "messages", "mask", "reward", "arm"):
                np.testing.assert_array_equal(o[key], r[key])
            assert env.observation_space(a).contains(o)


def test_features_before_the_first_step() -> None:
    log_step, shares, bonus = horizon_free_features(0, np.zeros((2, 3)))
    assert log_step.tolist() == [0.0] and not shares.any() and not bonus.any()


def test_it_needs_counts() -> None:
    with pytest.raises(TypeError, match="LocalStatistics or PrivateRewards"):
        HorizonFree(federated_mab_v0.parallel_env(n_arms=2, horizon=5))


def test_a_model_trained_over_sampled_lengths_warns_outside_them() -> None:
    stack = LearnerStack(horizon=2000, min_horizon=200, horizon_free=True)
    inside = Scenario(n_agents=3, n_arms=3, horizon=1000)
    outside = Scenario(n_agents=3, n_arms=3, horizon=20_000)
    assert stack.untrained_conditions(inside) == []
    assert stack.untrained_conditions(outside) == [
        "horizon T=20000 (trained at T=200..2000, horizon-free features)"
    ]
    with pytest.raises(ValueError, match="share_counts"):
        LearnerStack(share_counts=True)


def test_the_arms_network_reads_the_same_exploration_terms_either_way() -> None:
    """ArmScoringPolicy on HorizonFree's entries computes the columns it computes from
    raw counts and step (means, 1/sqrt(1+n), UCB1's width, last pull, gap)."""

    def features(**kw: Any) -> np.ndarray:
        scenario = Scenario(n_agents=4, n_arms=3, horizon=300, setting="neighbours")
        stack = LearnerStack.for_setting("neighbours", **kw)
        venv = AgentVecEnv(stack.make_env(scenario), message_fn=stack.message_fn, scale=True)
        model = sb3.PPO(
            ArmScoringPolicy, venv, seed=0, device="cpu", policy_kwargs=arm_policy_kwargs(venv)
        )
        venv.seed(0)
        obs = venv.reset()
        for step in np.random.default_rng(1).integers(0, 3, size=(25, 4)):
            obs, *_ = venv.step(step)
        with th.no_grad():
            return model.policy.features_extractor.arm_inputs(th.as_tensor(obs)).numpy()

    free, counted = features(horizon_free=True), features()
    for column in (0, 2, 3, 4, 5):
        np.testing.assert_allclose(free[..., column], counted[..., column], atol=2e-5)
    np.testing.assert_allclose(free[..., 6], np.log1p(25) / 10, rtol=1e-5)
