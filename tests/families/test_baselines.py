"""Baselines: contract, reproducibility, and how their regret grows.

Growth test: for a curve ``R(t)``, compare the increment over the last quarter of the
horizon with a quarter of the total, ``q = (R(T) - R(3T/4)) / (R(T) / 4)``.  A linear
curve gives ``q ~ 1``; a logarithmic one ``c log t`` gives
``q = log(4/3) / (log(T) / 4) = 0.14`` at ``T = 4000``.  The thresholds 0.8 and 0.5 sit
between the two with room for the early exploration phase of both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baselines import LocalUCB1, OracleUCB, RandomPolicy, make_team
from fedbandit_env import FederatedMABEnv, federated_mab_v0, registry
from fedbandit_env.policies import AgentSpec, IndependentTeam
from fedbandit_env.problems import conflicting
from fedbandit_env.runner import RegretCurves, run_trials
from fedbandit_env.scenario.scenario import Scenario

T = 4000
PROBLEM = conflicting(6, 4, conflict_fraction=0.5, gap=0.2, seed=3)


def _curves(policy: str, trials: int = 4) -> RegretCurves:
    return run_trials(
        lambda: FederatedMABEnv(PROBLEM, horizon=T),
        lambda: make_team(policy),
        n_trials=trials,
        seed=2024,
        record_every=T // 4,
        progress=False,
    )


def _last_quarter_ratio(reg: np.ndarray) -> np.ndarray:
    return (reg[..., -1] - reg[..., -2]) / (reg[..., -1] / 4)


@pytest.mark.slow
def test_local_ucb_regret_grows_linearly_on_misled_agents() -> None:
    c = _curves("local_ucb")
    misled = PROBLEM.conflicting_agents
    assert misled.size == 3
    q = _last_quarter_ratio(c.regret[:, misled, :])
    assert np.all(q > 0.8), q
    # Each misled agent loses at least the global gap of its decoy on most late steps.
    decoy_gap = PROBLEM.gaps[PROBLEM.local_best_arms[misled]]
    late = c.regret[:, misled, -1] - c.regret[:, misled, -2]
    assert np.all(late > 0.8 * decoy_gap * T / 4), (late, decoy_gap)


@pytest.mark.slow
def test_oracle_regret_grows_logarithmically_within_the_ucb1_bound() -> None:
    c = _curves("oracle_ucb")
    q = _last_quarter_ratio(c.per_agent)
    assert np.all(q < 0.5), q
    # UCB1 on N pooled samples per step: E[n_k] <= 8 ln(NT) / (N gap_k^2) + 1 + pi^2/3.
    n, gaps = PROBLEM.n_agents, PROBLEM.gaps[PROBLEM.gaps > 0]
    bound = np.sum(8 * np.log(n * T) / (n * gaps) + (1 + np.pi**2 / 3) * gaps)
    assert c.final_per_agent.mean() <= bound, (c.final_per_agent, bound)


@pytest.mark.slow
def test_oracle_far_below_local_far_below_random() -> None:
    oracle, local, rand = (
        _curves(p, trials=2).final_per_agent.mean() for p in ("oracle_ucb", "local_ucb", "random")
    )
    assert oracle < 0.1 * local < 0.1 * rand * 10


def _env_for(policy: str, horizon: int, instance: str = "conflicting") -> Any:
    linear = registry.spec(policy).family == "linear"
    scenario = Scenario(
        n_agents=4,
        n_arms=5,
        horizon=horizon,
        instance="dubey" if linear else instance,  # type: ignore[arg-type]
        dim=3 if linear else 0,
    )
    return scenario.make_env(make_team(policy).requirements(4, 5))


@pytest.mark.slow
@pytest.mark.parametrize("policy", registry.policy_ids())
def test_every_baseline_is_reproducible_and_seed_sensitive(policy: str) -> None:
    # Elimination: past the first round, on close arms, so that noise can change the outcome.
    horizon, instance = (3000, "zhu") if policy.endswith("dp_mab") else (200, "conflicting")

    def run(seed: int) -> np.ndarray:
        return run_trials(
            lambda: _env_for(policy, horizon, instance),
            lambda: make_team(policy),
            2,
            seed=seed,
            progress=False,
        ).regret

    a, b = run(1), run(1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, run(2))


@pytest.mark.parametrize("policy", ["local_ucb", "oracle_ucb", "random"])
def test_silent_baselines_run_on_envs_that_carry_messages(policy: str) -> None:
    c = run_trials(
        lambda: federated_mab_v0.parallel_env(horizon=30, message_dim=3),
        lambda: make_team(policy),
        1,
        progress=False,
    )
    assert c.regret.shape == (1, 4, 30)


def test_local_ucb_pulls_each_arm_once_then_follows_its_index() -> None:
    pol = LocalUCB1()
    pol.reset(AgentSpec(index=0, n_agents=2, n_arms=3, horizon=10), seed=0)
    rewards = {0: 1.0, 1: 0.0, 2: 0.0}
    obs = {"arm": 0, "reward": np.zeros(1), "step": np.zeros(1)}
    arms = []
    for t in range(6):
        arm = pol.act(obs)
        arms.append(arm)
        obs = {"arm": arm, "reward": np.array([rewards[arm]]), "step": np.array([t + 1.0])}
    assert arms[:3] == [0, 1, 2]
    np.testing.assert_allclose(pol.index(), pol.means + np.sqrt(2 * np.log(pol.t) / pol.counts))
    assert arms[3] == 0


def test_policy_arguments_are_validated() -> None:
    with pytest.raises(ValueError, match="scale must be > 0"):
        LocalUCB1(scale=0.0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        OracleUCB(scale=-1.0)
    with pytest.raises(ValueError, match="unknown policy id 'ucb'"):
        make_team("ucb")
    with pytest.raises(ValueError, match="2 policies but the env has 4 agents"):
        env = federated_mab_v0.parallel_env(horizon=3)
        env.reset(seed=0)
        IndependentTeam([RandomPolicy(), RandomPolicy()]).reset(env, seed=0)
