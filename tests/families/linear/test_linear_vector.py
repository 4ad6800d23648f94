"""Local LinUCB and the pooled linear oracle as vector policies over the linear core
(issue 62 item 2): the rollout, the step through ``act`` and the per-agent team play the
same trials, to the bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit

from baselines.linear.vector import LinUCBVector, lin_ucb, pooled_lin_ucb, vector_trial
from fedbandit_env.core.linear import LinearCore
from fedbandit_env.network.graph import Network
from fedbandit_env.policies import AgentSpec
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
from fedbandit_env.protocols import Broadcast
from fedbandit_env.scenario import Scenario
from fedbandit_env.testing import check_replay
from fedbandit_env.vector import FederatedLinearVecEnv
from fedbandit_env.vector.policy import VectorSpec


def _spec(venv: FederatedLinearVecEnv) -> VectorSpec:
    n, k, horizon, d = venv.n_agents, venv.n_arms, venv.horizon, venv.dim
    return VectorSpec(venv.num_envs, tuple(AgentSpec(i, n, k, horizon, context_dim=d)
                                           for i in range(n)))  # fmt: skip


def _by_act(policy: LinUCBVector, venv: FederatedLinearVecEnv, seed: int,
            python_steps: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Every step's arms ``(B, T, N)`` and the final regret: the first ``python_steps``
    through ``act`` and ``step``, the rest rolled out by the core."""
    obs, _ = venv.reset(seed=seed)
    policy.reset(_spec(venv), [])
    b, n, horizon = venv.num_envs, venv.n_agents, venv.horizon
    arms_seen = np.zeros((b, horizon, n), np.int64)
    for t in range(python_steps):
        arms, _ = policy.act(obs)
        arms_seen[:, t] = arms
        obs, *_ = venv.step(arms)
    regret = venv.core.cum_regret.copy()
    if python_steps < horizon:
        trace = np.zeros((b, horizon, n), np.int64), np.zeros((b, horizon, n), np.float32)
        venv.rollout(*policy.kernel(), np.array([horizon]), np.zeros((b, n, 1)), trace)
        arms_seen[:, python_steps:] = trace[0][:, python_steps:]
        regret = venv.core.cum_regret.copy()
    return arms_seen, regret


def _held_out(rng: np.random.Generator) -> LinearProblem:
    return dubey_synthetic(4, dim=3, set_size=6, seed=int(rng.integers(1000)))


@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("sampled", [False, True])
def test_the_rollout_and_act_play_the_same_trials(pooled: bool, sampled: bool) -> None:
    """All steps through ``act``, all rolled out, and five through ``act`` then the rest
    rolled out (the core hands over the last arms and rewards): the same arms and
    regret in each of three envs, for one fixed instance (one pool for all) and one
    drawn per env (a pool each)."""
    problem: Any = _held_out if sampled else dubey_synthetic(4, dim=3, set_size=6, seed=1)
    venv = FederatedLinearVecEnv(problem, horizon=40, num_envs=3)
    make = pooled_lin_ucb if pooled else lin_ucb
    by_act, regret = _by_act(make(), venv, 5, 40)
    for python_steps in (0, 5):
        arms, again = _by_act(make(), venv, 5, python_steps)
        np.testing.assert_array_equal(arms, by_act)
        assert again.tobytes() == regret.tobytes()
    assert (regret > 0).all() and len({a.tobytes() for a in by_act}) == 3  # three envs


@pytest.mark.parametrize("pid", ["lin_ucb", "pooled_lin_ucb"])
def test_the_compiled_trials_of_drawn_instances_are_the_per_agent_teams(pid: str) -> None:
    """``run_fast``'s trials (a batch of envs, each with the instance its seed draws: a
    pool each) against the per-agent policy (``IndependentTeam(LinUCB)``,
    ``PooledLinUCB``) on the PettingZoo env, through the shipped check."""
    scenario = Scenario(n_agents=3, n_arms=5, horizon=60, instance="dubey", dim=3,
                        instances="held_out")  # fmt: skip
    curves = check_replay(pid, scenario, {}, seed=2, trials=3)
    assert (curves.regret[:, :, -1] > 0).all()


def test_a_batch_of_different_pools_plays_env_by_env() -> None:
    """Instances whose pools differ in size do not stack: the batch plays one env at a
    time, the same trials as alone."""

    def sampler(rng: np.random.Generator) -> LinearProblem:
        pool = 8 + 4 * int(rng.integers(3))
        x = rng.normal(size=(pool, 3)) / 3.0
        return LinearProblem(x, rng.normal(size=(3, 3)) / 3.0, set_size=4, noise="gaussian")

    venv = FederatedLinearVecEnv(sampler, horizon=20, num_envs=4)
    venv.reset(seed=0)
    assert not venv.rolls_out and len({p.n_features for p in venv.core.problems}) > 1
    with pytest.raises(ValueError, match="pools stack"):
        venv.rollout(*_reset(lin_ucb(), venv).kernel(), np.array([20]), np.zeros((4, 3, 1)))
    # through act: env b of the batch is the env alone, seeded 0 + b
    arms, regret = _by_act(lin_ucb(), venv, 0, 20)
    for b in range(4):
        alone = FederatedLinearVecEnv(sampler, horizon=20, num_envs=1)
        arms_alone, regret_alone = _by_act(lin_ucb(), alone, b, 20)
        np.testing.assert_array_equal(arms_alone[0], arms[b])
        assert regret_alone[0].tobytes() == regret[b].tobytes()


def _reset(policy: LinUCBVector, venv: FederatedLinearVecEnv) -> LinUCBVector:
    policy.reset(_spec(venv), [])
    return policy


def test_the_vector_trial_is_the_trial_of_its_env_seed() -> None:
    problem = dubey_synthetic(3, dim=2, set_size=4, seed=3)
    regret, arms, rewards = vector_trial(lin_ucb(), problem, 30, 7, np.array([10, 30]), True)
    venv = FederatedLinearVecEnv(problem, horizon=30, num_envs=1)
    by_act, final = _by_act(lin_ucb(), venv, 7, 30)
    np.testing.assert_array_equal(arms, by_act[0])
    assert regret[:, -1].tobytes() == final[0].tobytes() and rewards.shape == (30, 3)
    assert (regret[:, 0] <= regret[:, 1]).all()
    quiet = vector_trial(lin_ucb(), problem, 30, 7, np.array([30]))
    assert quiet[1].shape == (0, 3) and quiet[0][:, 0].tobytes() == final[0].tobytes()


def test_refusals() -> None:
    problem = dubey_synthetic(3, dim=2, set_size=4, seed=0)
    talking = LinearCore(problem, Network.complete(3), [Broadcast()], horizon=3, message_dim=1)
    talking.reset([0])

    @njit
    def first(last, seen, t, pools, pool_of, sets, arms):  # type: ignore[no-untyped-def]
        arms[:] = 0

    assert not talking.rolls_out
    with pytest.raises(ValueError, match="without messages"):
        talking.rollout(first, (), np.array([3]), np.zeros((1, 3, 1)))
    venv = FederatedLinearVecEnv(problem, horizon=3)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="no layer that observes"):
        venv.rollout(first, (), np.array([3]), np.zeros((1, 3, 1)), observe=(first, (), None))
    mab = VectorSpec(1, tuple(AgentSpec(i, 3, 4, 3) for i in range(3)))
    with pytest.raises(ValueError, match="needs a linear env"):
        lin_ucb().reset(mab, [])
    loud = VectorSpec(1, tuple(AgentSpec(i, 3, 4, 3, 2, context_dim=2) for i in range(3)))
    with pytest.raises(ValueError, match="says nothing"):
        lin_ucb().reset(loud, [])
    with pytest.raises(ValueError, match="regularizer"):
        lin_ucb(regularizer=0.0)


def test_compiled_trials_play_a_batch_that_does_not_roll_out_one_env_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where a batch of envs cannot be rolled out together (pools of different sizes:
    here every batch of more than one env, patched so), ``CompiledTrials`` plays its
    trials one env at a time: the same trials."""
    from fedbandit_env.runner.vector_trials import CompiledTrials
    from fedbandit_env.scenario.trial import TrialSetup
    from fedbandit_env.seeding import trial_seeds

    scenario = Scenario(n_agents=3, n_arms=5, horizon=25, instance="dubey", dim=3)
    st = TrialSetup.build(scenario, np.array([25]), True, {})
    seeds = trial_seeds(6, 3)
    runner = CompiledTrials("baselines.linear.vector:lin_ucb")
    together = runner.run_batch(st, seeds)
    monkeypatch.setattr(LinearCore, "rolls_out", property(lambda core: core.n_envs == 1))
    alone = runner.run_batch(st, seeds)
    for a, b in zip(together, alone, strict=True):
        assert a.regret.tobytes() == b.regret.tobytes()
        np.testing.assert_array_equal(a.arms, b.arms)
