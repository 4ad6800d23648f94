"""Instance distributions: a fresh instance per reset seed, pinned problems, disjoint
train and held-out instance seeds, and both paths playing the same instances."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.cli import main
from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.problems import MABProblem, conflicting
from fedbandit_env.problems.distribution import ProblemDistribution
from fedbandit_env.registry import make
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.seeding import instance_seed, trial_seeds
from fedbandit_env.testing import check_determinism, check_parallel_env


def _env(split: str = "train") -> FederatedMABEnv:
    return FederatedMABEnv(ProblemDistribution.conflicting(4, 3), horizon=5, split=split)


def test_every_reset_seed_draws_its_own_instance_and_replays_it() -> None:
    env = _env()
    means = {}
    for seed in range(20):
        _, infos = env.reset(seed=seed)
        means[seed] = env.problem.local_means.copy()
        assert infos["agent_0"]["instance"] == int(instance_seed(seed).generate_state(1)[0])
    distinct = {m.tobytes() for m in means.values()}
    assert len(distinct) == 20
    env.reset(seed=7)
    np.testing.assert_array_equal(env.problem.local_means, means[7])
    # regret is scored against the episode's own instance
    env.reset(seed=3)
    _, _, _, _, infos = env.step({a: 0 for a in env.agents})
    assert infos["agent_0"]["regret"] == pytest.approx(float(env.problem.gaps[0]))


def test_train_and_held_out_instances_differ_for_the_same_episode_seed() -> None:
    train, held = _env("train"), _env("held_out")
    for seed in range(10):
        train.reset(seed=seed)
        held.reset(seed=seed)
        assert (train.problem.local_means != held.problem.local_means).any()
    assert instance_seed(3, "train").spawn_key != instance_seed(3, "held_out").spawn_key


def test_seedless_resets_draw_fresh_instances() -> None:
    env = _env()
    env.reset(seed=0)
    first = env.problem.local_means.copy()
    env.reset()
    assert (env.problem.local_means != first).any()


def test_a_pinned_problem_is_played_and_checked() -> None:
    env = _env()
    pinned = conflicting(4, 3, seed=123)
    env.reset(seed=0, options={"problem": pinned})
    assert env.problem is pinned
    with pytest.raises(ValueError, match="must have 4 agents, 3 arms"):
        env.reset(seed=0, options={"problem": conflicting(4, 5, seed=1)})
    fixed = federated_mab_v0.parallel_env(problem=conflicting(4, 3, seed=0), horizon=3)
    fixed.reset(seed=0, options={"problem": pinned})
    assert fixed.unwrapped.problem is pinned
    with pytest.raises(ValueError, match="options\\['problem'\\] must be a MABProblem"):
        fixed.reset(seed=0, options={"problem": MABProblem(np.zeros((4, 2)))})


def test_a_user_sampler_and_bad_samplers() -> None:
    def sampler(rng: np.random.Generator) -> MABProblem:
        return MABProblem(rng.random((3, 2)))

    check_parallel_env(lambda: FederatedMABEnv(ProblemDistribution(sampler, "uniform"), horizon=4))
    check_determinism(lambda: FederatedMABEnv(ProblemDistribution(sampler), horizon=4))
    with pytest.raises(TypeError, match="must return a MABProblem, got int"):
        ProblemDistribution(lambda rng: 3)
    with pytest.raises(TypeError, match="sampler must be a callable"):
        ProblemDistribution(3)  # type: ignore[arg-type]
    shapes = iter([(3, 2), (3, 2), (3, 5)])
    changing = ProblemDistribution(lambda rng: MABProblem(rng.random(next(shapes))))
    changing.sample(0)
    with pytest.raises(ValueError, match="must have 3 agents, 2 arms"):
        changing.sample(1)
    with pytest.raises(ValueError, match="split must be one of"):
        FederatedMABEnv(ProblemDistribution(sampler), split="test")


@pytest.mark.parametrize("policy", ["local_ucb", "gossip_ucb", "fed_ucb", "cdp_mab"])
def test_both_paths_play_the_same_held_out_instances(policy: str) -> None:
    scenario = Scenario(n_agents=4, n_arms=3, horizon=200, instances="held_out")
    needs = make(policy).requirements(4, 3)
    interactive = run_trials(
        lambda: scenario.make_env(needs),
        lambda: make(policy),
        n_trials=3,
        seed=5,
        record_every=50,
        progress=False,
    )
    fast = run_fast(policy, scenario, 3, seed=5, record_every=50, progress=False)
    np.testing.assert_allclose(fast.regret, interactive.regret)
    assert fast.comm_cost.tolist() == interactive.comm_cost.tolist()


def test_held_out_trials_play_their_own_instances() -> None:
    scenario = Scenario(n_agents=4, n_arms=3, horizon=400, instance="zhu", instances="held_out")
    curves = run_fast("random", scenario, 10, seed=0, record_every=400, progress=False)
    # a random player's expected regret is T times the instance's mean gap: the measured
    # regret must follow each trial's own instance (instances differ a lot, noise little)
    expected = [
        400 * scenario.problem_for(env_seed).gaps.mean() for env_seed, _ in trial_seeds(0, 10)
    ]
    measured = curves.regret[:, :, -1].mean(axis=1)
    assert np.std(expected) > 10
    assert np.corrcoef(expected, measured)[0, 1] > 0.95
    assert Scenario(instances="held_out").to_dict()["instances"] == "held_out"
    assert "instances" not in Scenario().to_dict()  # stored sweep keys still match
    with pytest.raises(ValueError, match="instances must be one of"):
        Scenario(instances="test")


def test_bench_held_out_records_the_instances_it_played(tmp_path: Path) -> None:
    argv = ["bench", "--policies", "random,local_ucb", "--agents", "4", "--arms", "3"]
    argv += ["--horizon", "50", "--trials", "3", "--no-plot", "--no-progress"]
    assert main([*argv, "--held-out", "--out", str(tmp_path / "h")]) == 0
    record = json.loads((tmp_path / "h" / "config.json").read_text())["instances"]
    expected = [
        int(instance_seed(e, "held_out").generate_state(1)[0]) for e, _ in trial_seeds(0, 3)
    ]
    assert record == {"split": "held_out", "distribution": "biased(N=4,M=3)", "ids": expected}
    # the env reports the same id at reset
    env = Scenario(n_agents=4, n_arms=3, instances="held_out").make_env()
    _, infos = env.reset(seed=trial_seeds(0, 3)[1][0])
    assert infos["agent_0"]["instance"] == expected[1]
    assert main([*argv, "--out", str(tmp_path / "f")]) == 0
    fixed = json.loads((tmp_path / "f" / "config.json").read_text())["instances"]
    assert fixed == {"split": "fixed", "seed": 0}


def test_rounds_with_drawn_instances_need_the_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--policies", "cdp_mab", "--rounds", "3", "--held-out", "--out", str(tmp_path)]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "--rounds with --instances held_out needs --min-gap" in capsys.readouterr().err


# ------------------------------------------------------------ the instance table
def test_ones_own_problem_runs_the_references_on_both_paths() -> None:
    """No monkeypatching: a problem object becomes an instance kind, and a scenario runs
    on it through the fast path and the PettingZoo path alike."""
    from fedbandit_env.runner.evaluate import evaluate
    from fedbandit_env.scenario.instances import custom_instance, deregister_instance

    mine = MABProblem([[0.9, 0.1, 0.5], [0.2, 0.8, 0.5], [0.1, 0.3, 0.9]])
    name = custom_instance(mine, "mine")
    try:
        s = Scenario(n_agents=3, n_arms=3, horizon=60, instance=name, graph="ring")
        assert s.problem() is mine and s.problem_for(5) is mine
        fast = evaluate("local_ucb", s, trials=2, progress=False)
        slow = evaluate("local_ucb", s, trials=2, progress=False, interactive=True)
        assert fast.meta["path"] == "fast" and np.array_equal(fast.regret, slow.regret)
        with pytest.raises(ValueError, match="has 3 agents and 3 arms"):
            Scenario(n_agents=4, n_arms=3, instance=name)
    finally:
        deregister_instance("mine")
    with pytest.raises(ValueError, match="instance must be one of"):
        Scenario(instance="mine")


def test_a_users_distribution_gives_drawn_instances() -> None:
    from fedbandit_env.scenario.instances import custom_instance, deregister_instance

    dist = ProblemDistribution.homogeneous(3, 4, "bernoulli", 1.0)
    name = custom_instance(dist, "my_dist")
    try:
        s = Scenario(n_agents=3, n_arms=4, horizon=20, instance=name, instances="held_out")
        a, b = s.problem_for(1), s.problem_for(2)
        assert s.distribution() is dist and not np.array_equal(a.local_means, b.local_means)
    finally:
        deregister_instance("my_dist")
    with pytest.raises(TypeError, match="custom_instance takes"):
        custom_instance([[0.1, 0.2]], "bad")
