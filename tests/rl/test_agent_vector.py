"""The single-agent Gymnasium view of the vector env: Gymnasium's vector wrappers run on
it, its infos carry ``_key`` masks, and row ``b N + i`` is agent ``i`` of the PettingZoo
env reset with ``seed + b`` (issue 64, item 3)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.wrappers.vector import (
    DictInfoToList,
    NormalizeObservation,
    NormalizeReward,
    RecordEpisodeStatistics,
)

from fedbandit_env.rl import LearnerStack
from fedbandit_env.rl.agent_vector import AgentVectorEnv
from fedbandit_env.scenario.scenario import Scenario

N, M, T, COPIES = 3, 2, 5, 4


def _env(setting: str = "neighbours") -> AgentVectorEnv:
    eps = 1.0 if setting.endswith("+private") else None
    s = Scenario(n_agents=N, n_arms=M, horizon=T, setting=setting, instances="train", epsilon=eps)
    stack = LearnerStack.for_setting(setting, eps)
    return AgentVectorEnv.for_stack(stack, s, copies=COPIES)


def _arms(t: int) -> np.ndarray:
    return (np.arange(COPIES * N) + t) % M


def test_record_episode_statistics_sums_each_agents_rewards_over_its_episode() -> None:
    env = RecordEpisodeStatistics(_env())
    env.reset(seed=3)
    total = np.zeros(COPIES * N)
    for t in range(T):
        _, rewards, terms, truncs, infos = env.step(_arms(t))
        total += rewards
        assert not terms.any() and truncs.all() == (t == T - 1)
    np.testing.assert_allclose(infos["episode"]["r"], total, rtol=1e-6)
    assert infos["episode"]["l"].tolist() == [T] * (COPIES * N)
    assert infos["_episode"].all() and env.episode_count == COPIES * N


def test_the_normalising_wrappers_and_info_conversion_run() -> None:
    env = DictInfoToList(NormalizeObservation(NormalizeReward(_env("gossip+private"))))
    obs, infos = env.reset(seed=0)
    assert obs.shape == (COPIES * N, env.single_observation_space.shape[0])
    assert infos == [{}] * (COPIES * N)
    for t in range(T):
        obs, rewards, _, truncs, infos = env.step(_arms(t))
        assert np.isfinite(obs).all() and np.isfinite(rewards).all()
    assert truncs.all() and len(infos) == COPIES * N
    assert set(infos[0]) == {"cumulative_regret", "comm_cost"}
    obs, rewards, _, truncs, infos = env.step(_arms(0))  # NEXT_STEP: the next episode
    assert not truncs.any() and infos == [{}] * (COPIES * N)


def test_row_b_n_plus_i_is_agent_i_of_the_pettingzoo_env_seeded_seed_plus_b() -> None:
    s = Scenario(n_agents=N, n_arms=M, horizon=T, setting="local", instances="train")
    stack = LearnerStack.for_setting("local")
    env = AgentVectorEnv.for_stack(stack, s, copies=COPIES)
    env.reset(seed=7)
    steps = [env.step(_arms(t)) for t in range(T)]
    final = steps[-1][4]["cumulative_regret"]
    for b in range(COPIES):
        pz = stack.make_env(s)
        pz.reset(seed=7 + b)
        for t in range(T):
            arms = _arms(t)[b * N : (b + 1) * N]
            _, rewards, _, _, infos = pz.step({f"agent_{i}": int(arms[i]) for i in range(N)})
            got = steps[t][1][b * N : (b + 1) * N]
            np.testing.assert_allclose(got, [rewards[f"agent_{i}"] for i in range(N)])
        want = [infos[f"agent_{i}"]["cumulative_regret"] for i in range(N)]
        np.testing.assert_allclose(final[b * N : (b + 1) * N], want)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [({"seed": True}, TypeError, "seed must be an int"),
     ({"options": {"problem": None}}, ValueError, "takes no options")],
)  # fmt: skip
def test_reset_refuses_what_it_cannot_honour(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        _env().reset(**kwargs)
