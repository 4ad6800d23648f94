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


class _Reversed(ParallelWrapper):
    """Hands the observations over in reverse agent order, one agent missing."""

    def step(self, actions):  # type: ignore[no-untyped-def]
        obs, *rest = self.env.step(actions)
        return dict(reversed(list(obs.items())[1:])), *rest


def test_statistics_follow_each_agent_whatever_the_order_and_who_is_missing() -> None:
    """The one-update step indexes rows by agent, not by position."""
    env = LocalStatistics(_Reversed(federated_mab_v0.parallel_env(n_agents=3, n_arms=4, horizon=5)))
    env.reset(seed=0)
    obs, *_ = env.step({"agent_0": 0, "agent_1": 1, "agent_2": 3})
    assert list(obs) == ["agent_2", "agent_1"]
    assert obs["agent_2"]["counts"].tolist() == [0.0, 0.0, 0.0, 1.0]
    assert obs["agent_1"]["counts"].tolist() == [0.0, 1.0, 0.0, 0.0]


def test_folding_one_pull_per_agent_is_the_whole_recompute() -> None:
    """``fold_pulls`` writes only the pulled cells of new copies (issue 62 item 5: the
    step no longer passes over every (agent, arm)); on a random stream its views equal
    the statistics recomputed over every cell (``means`` 0 where never pulled), bit for
    bit, and the views it handed out earlier are not changed. Power: returning the old
    views unchanged fails."""
    from fedbandit_env.wrappers.local_statistics import fold_pulls

    rng = np.random.default_rng(3)
    b, n, m = 4, 5, 6
    counts, sums = np.zeros((b, n, m)), np.zeros((b, n, m))
    c32, m32 = np.zeros((b, n, m), np.float32), np.zeros((b, n, m), np.float32)
    envs, agents = np.arange(b)[:, None], np.arange(n)[None, :]
    handed = []  # (the arrays returned, a snapshot of them)
    for _ in range(40):
        arms = rng.integers(m, size=(b, n))
        seen = rng.normal(size=(b, n)) * 3.0
        c32, m32 = fold_pulls(counts, sums, (envs, agents, arms), seen, c32, m32)
        handed.append(((c32, m32), (c32.copy(), m32.copy())))
        pulled = counts > 0
        whole = np.where(pulled, sums / np.where(pulled, counts, 1.0), 0.0).astype(np.float32)
        np.testing.assert_array_equal(c32, counts.astype(np.float32))
        np.testing.assert_array_equal(m32, whole)
    for (got_counts, got_means), (was_counts, was_means) in handed:
        np.testing.assert_array_equal(got_counts, was_counts)
        np.testing.assert_array_equal(got_means, was_means)
