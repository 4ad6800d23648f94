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
    regret, arms, rewards, _ = vector_trial(lin_ucb(), problem, 30, 7, np.array([10, 30]), True)
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


FEDLIN_VARIANTS = [
    {"sync": "fixed", "batch": 3},
    {"sync": "adaptive", "threshold": 2.0},
    {"sync": "fixed", "batch": 3, "epsilon": 2.0, "calibration": "gdp"},
    {"sync": "adaptive", "threshold": 2.0, "epsilon": 2.0},
]


@pytest.mark.parametrize("options", FEDLIN_VARIANTS)
def test_fedlin_steps_are_the_per_agent_policys_on_any_observations(
    options: dict[str, Any],
) -> None:
    """FedUCB's vector step against ``FedLinUCB`` agent by agent, fed the same random
    observations: decision sets, rewards, and server rounds at random steps, some with
    a sum no honest round gives (not finite in its Gram block or its vector, or not
    positive definite: dropped and counted), some the agent did not flag (the private
    fixed schedule ignores those). Every arm, flag and (in a step where some agent
    flags) upload, and the counts of dropped sums and ignored rounds, are the same."""
    from baselines.linear import FedLinUCB
    from baselines.linear.vector import fedlin_ucb
    from fedbandit_env.seeding import team_generators

    n, k, d, horizon = 3, 4, 2, 40
    width = (d + 1) ** 2 + 1
    seed = np.random.SeedSequence(11)
    agents = tuple(AgentSpec(i, n, k, horizon, width, context_dim=d) for i in range(n))
    singles = [FedLinUCB(**options) for _ in range(n)]
    for i, (policy, rng) in enumerate(zip(singles, team_generators(seed, n), strict=True)):
        policy.reset(agents[i], seed=rng)
    vector = fedlin_ucb(**options)
    vector.reset(VectorSpec(1, agents, (seed,)), [])
    rng = np.random.default_rng(5)
    server, synced = np.zeros(width, np.float32), 0
    flags_seen, forged = 0, 0
    for t in range(horizon):
        contexts = (rng.uniform(-1, 1, (n, k, d)) / np.sqrt(d)).astype(np.float32)
        reward = rng.uniform(-0.5, 1.5, n).astype(np.float32)
        obs = {"contexts": contexts[None], "arm": np.zeros((1, n), np.int64),
               "reward": reward[None, :, None], "step": np.full((1, n, 1), t, np.float32),
               "server": np.broadcast_to(server, (1, n, width)).copy(),
               "server_mask": np.full((1, n, 1), synced, np.int8)}  # fmt: skip
        arms, sent = vector.act(obs)
        moves = [policy.act({"contexts": contexts[i], "reward": reward[i : i + 1],
                             "step": np.array([t], np.float32), "server": server,
                             "server_mask": np.array([synced], np.int8)})
                 for i, policy in enumerate(singles)]  # fmt: skip
        assert arms[0].tolist() == [m["arm"] for m in moves]
        flags = [float(m["message"][0]) for m in moves]
        assert sent[0, :, 0].tolist() == flags
        if any(flags):
            flags_seen += 1
            for i, m in enumerate(moves):
                assert sent[0, i, 1:].tobytes() == m["message"][1:].astype(np.float64).tobytes()
        # the next round: honest-looking, forged, or none, at random
        synced = int(rng.random() < 0.35)
        total = np.eye(d + 1) * n + rng.normal(0, 0.1, (d + 1, d + 1))
        total = (total + total.T) / 2
        if synced and rng.random() < 0.4:  # not finite in S or s, or S not positive definite
            forged += 1
            total[[(0, 0), (0, d), (0, 0)][forged % 3]] = [np.nan, np.nan, -5.0][forged % 3]
        server = np.concatenate([[n], total.ravel()]).astype(np.float32)
    assert vector.rejected[0].tolist() == [p.rejected for p in singles]
    assert vector.ignored_rounds[0].tolist() == [p.ignored_rounds for p in singles]
    assert flags_seen > 0 and forged > 0 and sum(p.rejected for p in singles) > 0


@pytest.mark.parametrize("options", FEDLIN_VARIANTS[::2])
def test_fedlin_rollout_and_act_play_the_same_trials(options: dict[str, Any]) -> None:
    """FedUCB over Synchronize: all steps through ``act`` and the env's router, all
    rolled out by the core (which routes the rounds itself), and seven through ``act``
    then the rest rolled out (a round of the last step handed over): the same arms,
    regret and cost in each of three envs."""
    from baselines.linear.vector import FedLinUCBVector, fedlin_ucb
    from fedbandit_env.protocols import Synchronize

    problem = dubey_synthetic(4, dim=3, set_size=6, seed=1)
    venv = FederatedLinearVecEnv(problem, protocol=Synchronize(), message_dim=17, horizon=40,
                                 num_envs=3)  # fmt: skip
    spec = VectorSpec(3, tuple(AgentSpec(i, 4, 6, 40, 17, context_dim=3) for i in range(4)),
                      tuple(np.random.SeedSequence(s) for s in (1, 2, 3)))  # fmt: skip

    def play(python_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs, _ = venv.reset(seed=5)
        policy: FedLinUCBVector = fedlin_ucb(**options)
        policy.reset(spec, [])
        arms_seen = np.zeros((3, 40, 4), np.int64)
        for t in range(python_steps):
            arms, sent = policy.act(obs)
            arms_seen[:, t] = arms
            obs, *_ = venv.step(arms, sent)
        if python_steps < 40:
            trace = np.zeros((3, 40, 4), np.int64), np.zeros((3, 40, 4), np.float32)
            venv.rollout(*policy.kernel(), np.array([40]), np.zeros((3, 4, 1)), trace)
            arms_seen[:, python_steps:] = trace[0][:, python_steps:]
        return arms_seen, venv.core.cum_regret.copy(), venv.core.cum_cost.copy()

    arms, regret, cost = play(40)
    assert (cost >= 2 * 25.0 * 4).all()  # two rounds or more in every env
    for python_steps in (0, 7):
        again = play(python_steps)
        np.testing.assert_array_equal(again[0], arms)
        assert again[1].tobytes() == regret.tobytes() and again[2].tobytes() == cost.tobytes()


def test_a_rolled_out_message_the_env_refuses_raises_its_error() -> None:
    """A talking step that writes a message outside the env's bounds: the rollout stops
    before that step and raises the env's own error."""
    from fedbandit_env.protocols import Synchronize

    @njit
    def loud(last, seen, t, pools, pool_of, sets, server, synced, arms, sent):  # type: ignore[no-untyped-def]
        arms[:] = 0
        sent[:, :, :] = 0.0
        if t == 3:
            sent[0, 1, 2] = 7.0

    problem = dubey_synthetic(3, dim=2, set_size=4, seed=0)
    venv = FederatedLinearVecEnv(problem, protocol=Synchronize(), message_dim=10, horizon=9,
                                 message_bounds=(-5.0, 5.0))  # fmt: skip
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"messages\[\(0, 1, 2\)\] = 7.0"):
        venv.rollout(loud, (), np.array([9]), np.zeros((1, 3, 1)))
    assert venv.core.t == 3  # the steps before it were played


def test_secure_noise_differs_run_to_run_and_seeded_noise_does_not() -> None:
    from baselines.linear.vector import fedlin_ucb

    problem = dubey_synthetic(3, dim=2, set_size=4, seed=0)
    options = {"sync": "fixed", "batch": 2, "epsilon": 1.0, "calibration": "gdp"}
    regrets = {
        noise: [vector_trial(fedlin_ucb(noise=noise, **options), problem, 30, 4,
                             np.array([30]))[0].tobytes() for _ in range(2)]
        for noise in ("seeded", "secure")
    }  # fmt: skip
    assert regrets["seeded"][0] == regrets["seeded"][1]
    assert regrets["secure"][0] != regrets["secure"][1]


@pytest.mark.parametrize("talking", [False, True])
def test_a_linear_rollout_stops_between_blocks_and_plays_on_the_same(
    monkeypatch: pytest.MonkeyPatch, talking: bool
) -> None:
    """How Ctrl-C ends a batch of compiled trials in flight: the steps played stand, and
    the rest of the episode plays on as it would have (with Synchronize's rounds, the
    server's last sum handed over)."""
    import fedbandit_env.core.linear as core_linear
    from baselines.linear.vector import fedlin_ucb
    from fedbandit_env.core import RolloutStopped
    from fedbandit_env.protocols import Synchronize

    monkeypatch.setattr(core_linear, "ROLLOUT_NUMBERS", 2 * 3 * 5)  # blocks of five steps
    problem = dubey_synthetic(3, dim=2, set_size=5, seed=2)
    wiring: dict[str, Any] = {"protocol": Synchronize(), "message_dim": 10} if talking else {}
    width = 10 if talking else 0
    spec = VectorSpec(2, tuple(AgentSpec(i, 3, 5, 30, width, context_dim=2) for i in range(3)),
                      (np.random.SeedSequence(1), np.random.SeedSequence(2)))  # fmt: skip

    def policy() -> Any:
        made = fedlin_ucb(sync="fixed", batch=1) if talking else lin_ucb()  # a round a step
        made.reset(spec, [])
        return made

    asked: list[int] = []

    def after_two() -> bool:
        asked.append(1)
        return len(asked) > 2

    stopped, whole = (FederatedLinearVecEnv(problem, horizon=30, num_envs=2, **wiring)
                      for _ in range(2))  # fmt: skip
    for venv in (stopped, whole):
        venv.reset(seed=3)
    mine = policy()
    cost = np.zeros((2, 1))
    with pytest.raises(RolloutStopped, match="stopped after 10 of 30 steps"):
        stopped.rollout(*mine.kernel(), np.array([30]), np.zeros((2, 3, 1)), stop=after_two)
    assert stopped.core.t == 10  # two blocks of five steps
    stopped.rollout(*mine.kernel(), np.array([30]), np.zeros((2, 3, 1)), cost_out=cost)
    whole_cost = np.zeros((2, 1))
    whole.rollout(*policy().kernel(), np.array([30]), np.zeros((2, 3, 1)), cost_out=whole_cost)
    assert stopped.core.cum_regret.tobytes() == whole.core.cum_regret.tobytes()
    assert cost.tobytes() == whole_cost.tobytes()
    assert (cost > 0).all() == talking


def test_linear_results_do_not_depend_on_the_number_of_workers() -> None:
    from fedbandit_env.runner.fast import run_fast

    scenario = Scenario(n_agents=3, n_arms=5, horizon=80, instance="dubey", dim=3)
    kw: dict[str, Any] = {"seed": 2, "record_every": 20, "progress": False, "batch": 4}
    one = run_fast("private_fedlin_ucb", scenario, 4, **kw)
    two = run_fast("private_fedlin_ucb", scenario, 4, workers=2, **kw)
    np.testing.assert_array_equal(one.regret, two.regret)
    np.testing.assert_array_equal(one.comm_cost, two.comm_cost)


@pytest.mark.parametrize("talking", [False, True])
def test_a_rolled_out_arm_the_env_refuses_raises_its_error(talking: bool) -> None:
    """A compiled step that picks a vector outside the decision set (it would read past
    the sets): the rollout stops before that step and raises the env's own error."""
    from fedbandit_env.protocols import Synchronize

    @njit
    def silent(last, seen, t, pools, pool_of, sets, arms):  # type: ignore[no-untyped-def]
        arms[:] = 0
        if t == 4:
            arms[0, 2] = sets.shape[2]

    @njit
    def loud(last, seen, t, pools, pool_of, sets, server, synced, arms, sent):  # type: ignore[no-untyped-def]
        silent(last, seen, t, pools, pool_of, sets, arms)

    problem = dubey_synthetic(3, dim=2, set_size=4, seed=0)
    wiring: dict[str, Any] = {"protocol": Synchronize(), "message_dim": 10} if talking else {}
    venv = FederatedLinearVecEnv(problem, horizon=9, **wiring)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"arms must lie in \[0, 4\); arms\[\(0, 2\)\] = 4"):
        venv.rollout(loud if talking else silent, (), np.array([9]), np.zeros((1, 3, 1)))
    assert venv.core.t == 4
