"""SB3 on the vector env: the same observations, rewards and episode ends as the
PettingZoo copies of ``AgentVecEnv``, step for step."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import stable_baselines3 as sb3

from fedbandit_env.rl import AgentVecEnv, LearnerStack
from fedbandit_env.rl.vector_sb3 import VectorAgentVecEnv
from fedbandit_env.scenario.scenario import Scenario


def _pair(setting: str, reward: str, copies: int = 3, **kw: Any) -> tuple[Any, Any]:
    eps = 1.0 if setting.endswith("+private") else None
    scenario = Scenario(n_agents=4, n_arms=3, horizon=12, setting=setting, epsilon=eps,
                        instances="train", graph="ring")  # fmt: skip
    stack = LearnerStack.for_setting(setting, eps, reward=reward, **kw)
    message_fn = stack.message_fn if stack.share_means else None
    old = AgentVecEnv([stack.make_env(scenario) for _ in range(copies)], reward=reward,
                      message_fn=message_fn, scale=stack.scale)  # fmt: skip
    new = VectorAgentVecEnv.for_stack(stack, scenario, copies=copies)
    return old, new


@pytest.mark.parametrize("setting", ["local", "neighbours", "gossip", "gossip+private"])
@pytest.mark.parametrize("reward", ["own", "neg_regret", "team", "team_value"])
def test_the_vector_env_shows_sb3_what_the_copies_show(setting: str, reward: str) -> None:
    old, new = _pair(setting, reward, horizon_free=setting == "gossip", share_counts=True)
    assert old.observation_space == new.observation_space and old.num_envs == new.num_envs
    old.seed(7), new.seed(7)
    np.testing.assert_array_equal(old.reset(), new.reset())
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(2 * 12 + 3):  # two episodes and a bit: the resets continue the streams
        arms = rng.integers(3, size=old.num_envs)
        o1, r1, d1, i1 = old.step(arms)
        o2, r2, d2, i2 = new.step(arms)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(d1, d2)
        if reward == "team_value":  # a sum over heard neighbours, in another order
            np.testing.assert_allclose(r1, r2, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(r1, r2)
        if d1.all():
            ends += 1
            for a, b in zip(i1, i2, strict=True):
                np.testing.assert_array_equal(a["terminal_observation"], b["terminal_observation"])
                assert a["TimeLimit.truncated"] == b["TimeLimit.truncated"]
                assert a["cumulative_regret"] == b["cumulative_regret"]
                assert a["cumulative_comm_cost"] == b["cumulative_comm_cost"]
                assert a.get("epsilon") == b.get("epsilon")
    assert ends == 2


def test_ppo_trains_on_the_vector_env() -> None:
    _, venv = _pair("neighbours", "own", copies=4)
    model = sb3.PPO("MlpPolicy", venv, n_steps=16, batch_size=64, seed=0, device="cpu")
    model.learn(total_timesteps=2 * 16 * venv.num_envs)
    assert model.num_timesteps >= 2 * 16 * venv.num_envs


def test_sampled_episode_lengths_cut_every_env_together() -> None:
    scenario = Scenario(n_agents=3, n_arms=3, horizon=40, setting="local", instances="train")
    stack = LearnerStack.for_setting("local")
    venv = VectorAgentVecEnv.for_stack(stack, scenario, copies=2, episode_lengths=(3, 9))
    venv.seed(1)
    venv.reset()
    lengths, t = [], 0
    for _ in range(60):
        _, _, dones, _ = venv.step(np.zeros(venv.num_envs, int))
        t += 1
        assert dones.all() or not dones.any()
        if dones.all():
            lengths.append(t)
            t = 0
    assert all(3 <= n <= 9 for n in lengths) and len(set(lengths)) > 1
    with pytest.raises(ValueError, match="episode_lengths"):
        VectorAgentVecEnv.for_stack(stack, scenario, episode_lengths=(5, 41))
