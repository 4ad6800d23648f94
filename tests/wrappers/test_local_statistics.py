"""LocalStatistics and the wrapper base."""

from __future__ import annotations

import numpy as np
import pytest

from baselines import make_team
from fedbandit_env import federated_mab_v0
from fedbandit_env.runner import rollout
from fedbandit_env.wrappers import LocalStatistics, ParallelWrapper


def test_local_statistics_match_the_agents_own_history() -> None:
    env = LocalStatistics(federated_mab_v0.parallel_env(n_agents=3, n_arms=4, horizon=50))
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    counts, sums = np.zeros((3, 4)), np.zeros((3, 4))
    while env.agents:
        obs, rewards, *_ = env.step({a: int(rng.integers(4)) for a in env.agents})
        for i, a in enumerate(env.possible_agents):
            counts[i, int(obs[a]["arm"])] += 1
            sums[i, int(obs[a]["arm"])] += rewards[a]
            assert env.observation_space(a).contains(obs[a])
    for i, a in enumerate(env.possible_agents):
        np.testing.assert_array_equal(obs[a]["counts"], counts[i])
        means = np.divide(sums[i], counts[i], out=np.zeros(4), where=counts[i] > 0)
        np.testing.assert_allclose(obs[a]["means"], means, rtol=1e-6)
    obs, _ = env.reset(seed=1)
    assert obs["agent_0"]["counts"].sum() == 0


def test_wrapped_env_gives_the_same_regret_as_the_bare_env() -> None:
    bare = rollout(federated_mab_v0.parallel_env(horizon=100), make_team("local_ucb"), seed=3)
    wrapped = rollout(
        LocalStatistics(federated_mab_v0.parallel_env(horizon=100)), make_team("local_ucb"), seed=3
    )
    np.testing.assert_array_equal(bare[1], wrapped[1])


def test_wrappers_reject_bad_input_and_hide_private_attributes() -> None:
    with pytest.raises(TypeError, match="ParallelEnv"):
        ParallelWrapper("env")  # type: ignore[arg-type]
    env = ParallelWrapper(federated_mab_v0.parallel_env(horizon=3))
    assert env.horizon == 3
    with pytest.raises(AttributeError, match="private attribute"):
        _ = env._reward_rng
