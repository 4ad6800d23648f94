"""Epoch-private index policies (``epoch_private_ts``, ``epoch_private_server_ts``):
releases of disjoint doubling epochs with fresh Laplace noise, the same trials on both
views, an audit from another agent's seat with its power check (half the noise is
caught), and forged rows dropped.

``pytest tests/families/index/test_epoch_private.py -s | grep AUDIT`` prints the bounds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from baselines.index.epoch import EpochIndexPolicy
from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.network.graph import Network
from fedbandit_env.policies import AgentSpec
from fedbandit_env.privacy.audit_log import report
from fedbandit_env.problems import MABProblem
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.vector.policy import VectorSpec, VectorTeam
from fedbandit_env.wrappers.audit import Episode, ReplaceReward, audit_env


@pytest.mark.parametrize(
    ("policy", "setting"),
    [
        ("epoch_private_ts", "neighbours"),
        ("epoch_private_ts", "gossip"),
        ("epoch_private_server_ts", "server"),
        ("epoch_private_server_ts", "hybrid"),
        ("epoch_private_server_ts", "flooding"),
    ],
)
def test_both_paths_give_the_same_trials_and_the_privacy_spent(policy: str, setting: str) -> None:
    scenario = Scenario(n_agents=5, n_arms=3, horizon=200, setting=setting, graph="ring",
                        instances="held_out")  # fmt: skip
    vector = evaluate(policy, scenario, {"epsilon": 0.5}, trials=3, seed=2, record_every=50)
    pettingzoo = evaluate(policy, scenario, {"epsilon": 0.5}, trials=3, seed=2,
                          record_every=50, interactive=True)  # fmt: skip
    assert vector.meta["path"] == "vector"
    np.testing.assert_array_equal(vector.regret, pettingzoo.regret)
    np.testing.assert_array_equal(vector.comm_cost, pettingzoo.comm_cost)
    assert vector.privacy_spent.tolist() == pettingzoo.privacy_spent.tolist() == [0.5] * 4


def _policy(epsilon: float | None, n: int = 2, m: int = 2) -> EpochIndexPolicy:
    policy = EpochIndexPolicy(epsilon=epsilon)
    agents = tuple(AgentSpec(i, n, m, 100, reward_bounds=(0.0, 1.0), message_dim=2 * m)
                   for i in range(n))  # fmt: skip
    policy.reset(VectorSpec(1, agents), [np.random.default_rng(0)])
    return policy


def _play(policy: EpochIndexPolicy, rewards: list[float]) -> list[np.ndarray]:
    """Agent 0 pulls arm 0 with these rewards (agent 1 arm 1, reward 0); the messages
    sent after each pull."""
    sent = []
    for t, r in enumerate([0.0, *rewards]):
        obs = {
            "arm": np.array([[0, 1]]),
            "reward": np.array([[[r], [0.0]]], np.float32),
            "step": np.full((1, 2, 1), t, np.float32),
            "messages": np.zeros((1, 2, 4)),
            "mask": np.zeros((1, 2, 2), np.int8),
        }
        sent.append(policy.act(obs)[1][0, 0].copy())
    return sent[1:]


def test_releases_are_whole_doubling_epochs_of_clipped_rewards() -> None:
    """Without noise: after pulls 1, 3, 7 the counts are 1, 3, 7 and the sums those
    pulls' clipped rewards; the pulls of the open epoch wait."""
    rewards = [0.5, 1.0, 2.0, 0.25, 0.0, 1.0, 0.5, 1.0]  # 2.0 is clipped to 1
    sent = _play(_policy(None), rewards)
    counts = [int(s[0]) for s in sent]
    assert counts == [1, 1, 3, 3, 3, 3, 7, 7]
    clipped = np.clip(rewards, 0, 1)
    assert [s[2] for s in sent] == [clipped[:c].sum() for c in counts]


def test_each_release_carries_fresh_laplace_noise_of_the_right_scale() -> None:
    """With epsilon = 0.5 (scale 2 on rewards in [0, 1]) the noise of the first release,
    over many seeds, has the Laplace scale: mean |noise| = 2 within its sampling error."""
    noise = []
    for seed in range(3000):
        policy = EpochIndexPolicy(epsilon=0.5)
        agents = tuple(AgentSpec(i, 2, 2, 100, reward_bounds=(0.0, 1.0), message_dim=4)
                       for i in range(2))  # fmt: skip
        policy.reset(VectorSpec(1, agents), [np.random.default_rng(seed)])
        noise.append(_play(policy, [0.0])[0][2])
    mad = float(np.mean(np.abs(noise)))
    # |Laplace(2)| is exponential with mean 2 and sd 2: 5 standard errors
    assert abs(mad - 2.0) < 5 * 2.0 / np.sqrt(3000)


class HalfNoise(EpochIndexPolicy):
    """The weakened mechanism: half the noise its epsilon calls for."""

    def reset(self, spec: VectorSpec, rngs: Any) -> None:
        super().reset(spec, rngs)
        self.scale /= 2.0


def _audit(policy: type[EpochIndexPolicy], runs: int) -> Any:
    """Another agent's seat: agent 1 hears agent 0's messages. One arm, rewards 0, T =
    4; agent 0's second reward (the secret: 0 or 1) is in its second epoch (pulls 2-3),
    released in the message of step 3; the view is the two releases (the messages of
    steps 1 and 3)."""

    def make_env(value: float) -> Any:
        base = FederatedMABEnv(MABProblem(np.zeros((2, 1))), Network.complete(2), horizon=4,
                               message_dim=2)  # fmt: skip
        return ReplaceReward(base, "agent_0", 2, value)

    def observe(ep: Episode) -> list[float]:
        first = float(ep.observations[2]["agent_1"]["messages"][0][1])
        second = float(ep.observations[4]["agent_1"]["messages"][0][1])
        return [first, second - first]

    team = lambda: VectorTeam(policy(epsilon=1.0))  # noqa: E731
    return audit_env(make_env, 0.0, 1.0, team, observe, runs=runs, seed=5)


@pytest.mark.slow  # 12,000 runs per input: about 30 s each (CI runs it)
@pytest.mark.parametrize(("policy", "caught"), [(EpochIndexPolicy, False), (HalfNoise, True)])
def test_another_agents_view_audit(policy: type[EpochIndexPolicy], caught: bool) -> None:
    r = _audit(policy, 12_000)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) == caught


def test_forged_rows_are_dropped() -> None:
    """Counts that are not whole epochs (2^r - 1), or sums beyond any noise an honest
    release carries, are dropped and counted."""
    policy = _policy(1.0)
    n = 2
    rows = [([1, 0], [0.5, 0]), ([2, 0], [1.0, 0]), ([1, 0], [1e6, 0]), ([3, 1], [1.0, -0.5])]
    for t, (counts, sums) in enumerate(rows, start=5):
        obs = {
            "arm": np.zeros((1, n), int),
            "reward": np.zeros((1, n, 1), np.float32),
            "step": np.full((1, n, 1), t, np.float32),
            "messages": np.tile(np.array(counts + sums, float), (1, n, 1)),
            "mask": np.array([[[0, 1], [0, 0]]], np.int8),  # agent 0 hears agent 1
        }
        policy.act(obs)
    assert policy.rejected[0].tolist() == [2, 0]  # the 2-pull row and the huge sum
    column = policy.slots[0].tolist().index(1)  # agent 0's column of agent 1's rows
    assert policy.heard[0, 0, column]
    counts, sums = np.array([3.0, 1.0]), np.array([1.0, -0.5])
    alpha, mu0 = float(policy.alpha), float(policy.mu0)  # the module docstring's posterior
    pulls = counts + alpha
    mean = (sums + alpha * mu0) / pulls
    var = policy.var / pulls + policy._noise_variance(counts) / pulls**2
    held = policy.held[0, 0, column]  # the local posterior of the honest row [3, 1, 1, -0.5]
    np.testing.assert_allclose(held, np.concatenate([mean, var]), rtol=1e-12)


@pytest.mark.parametrize("where", ["option", "scenario"])
def test_secure_noise_is_fresh_on_the_vector_path(where: str, entropy: list[int]) -> None:
    """Seeded noise replays; secure noise (the policy's option or the scenario's
    ``privacy_noise``, one setting) draws one fresh generator per env and differs from
    run to run and from the seeded run."""
    scenario = Scenario(n_agents=5, n_arms=3, horizon=200, setting="neighbours")
    seeded = [evaluate("epoch_private_ts", scenario, trials=3).regret for _ in "ab"]
    np.testing.assert_array_equal(*seeded)
    assert not entropy
    options = {"noise": "secure"} if where == "option" else {}
    secure_scenario = replace(scenario, privacy_noise="secure" if where == "scenario" else "seeded")
    secure = [evaluate("epoch_private_ts", secure_scenario, options, trials=3) for _ in "ab"]
    assert all(c.meta["path"] == "vector" for c in secure)
    assert len(entropy) == 2 * 3  # one per env (trial), each run
    assert not np.array_equal(secure[0].regret, secure[1].regret)
    assert not np.array_equal(secure[0].regret, seeded[0])
