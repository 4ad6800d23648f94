"""fedbandit train: a learner for one information setting, on train instances, with an
honest reward by default; evaluated on held-out instances in the same setting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fedbandit_env.cli import main
from fedbandit_env.rl import LearnerStack
from fedbandit_env.rl.train import set_torch_threads, train_model
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario.scenario import Scenario

SMALL = ["--agents", "3", "--arms", "3", "--horizon", "20"]


def _train(out: Path, *extra: str) -> Path:
    argv = ["train", "a2c", *SMALL, "--timesteps", "120", "--no-progress", "--out", str(out)]
    assert main([*argv, *extra]) == 0
    return out / "model.zip"


def test_train_saves_the_setting_the_instances_and_an_honest_reward(tmp_path: Path) -> None:
    path = _train(tmp_path / "m", "--setting", "neighbours")
    stack = LearnerStack.load(path)
    assert (stack.setting, stack.reward, stack.share_means, stack.scale) == (
        "neighbours",
        "own",
        True,
        True,
    )
    assert stack.distribution == "biased(N=3,M=3)" and not stack.privileged  # the default

    def refuse(constant: str) -> None:
        raise AssertionError(f"train.json holds {constant}, which is not JSON")

    record = json.loads((tmp_path / "m" / "train.json").read_text(), parse_constant=refuse)
    assert record["scenario"]["instances"] == "train" and record["torch_threads"] == 1
    # 120 agent-steps of 3 agents at T=20: two whole episodes per agent were logged
    assert record["last_episodes"]["episodes"] == 6
    assert record["last_episodes"]["regret"] > 0 and record["last_episodes"]["comm_cost"] > 0


def test_a_model_is_evaluated_in_its_setting_on_held_out_instances(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _train(tmp_path / "m", "--setting", "local")
    argv = ["bench", "--policies", f"a2c:{path},random", *SMALL, "--trials", "2", "--held-out"]
    assert main([*argv, "--setting", "local", "--no-plot", "--out", str(tmp_path / "b")]) == 0
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    assert config["instances"]["split"] == "held_out"
    row = config["summary"][0]
    assert row["setting"] == "local" and row["reward"] == "own" and "privileged" not in row
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--setting", "gossip", "--no-plot", "--out", str(tmp_path / "c")])
    assert stop.value.code == 2
    assert "trained in the 'local' setting" in capsys.readouterr().err


def test_a_model_benched_with_the_defaults_plays_the_kind_it_was_trained_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 53, item 5: train defaults to ``biased``, bench to ``conflicting``; a model
    trained and benched with the defaults was evaluated on the other kind (warned). Now
    bench takes the listed models' kind unless --instance says otherwise."""
    import warnings

    from fedbandit_env.runner.evaluate import UntrainedConditionsWarning

    path = _train(tmp_path / "m", "--setting", "local")
    argv = ["bench", "--policies", f"a2c:{path},random", *SMALL, "--trials", "1",
            "--setting", "local", "--held-out", "--no-plot"]  # fmt: skip
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedConditionsWarning)
        assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    assert "the saved policies' training kind" in capsys.readouterr().err
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    assert config["scenario"]["instance"] == "biased"
    with pytest.warns(UntrainedConditionsWarning, match="trained on biased"):  # asked for
        main([*argv, "--instance", "conflicting", "--out", str(tmp_path / "c")])


def test_a_privileged_reward_is_recorded_and_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _train(tmp_path / "m", "--reward", "neg_regret")
    assert LearnerStack.load(path).privileged
    capsys.readouterr()
    argv = ["bench", "--policies", f"a2c:{path}", *SMALL, "--trials", "1", "--setting", "local"]
    assert main([*argv, "--no-plot", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "a2c:m*" in out and "a model trained on neg_regret" in out


def test_training_leaves_no_logger_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SB3's ``learn()`` with ``verbose=0`` makes an empty ``SB3-<date>`` folder in the
    temporary directory on every call unless the model has a logger of its own;
    ``fedbandit train`` must not leave them behind."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    _train(tmp_path / "m", "--setting", "local")
    made = lambda: [p for p in scratch.iterdir() if p.name.startswith("SB3-")]  # noqa: E731
    assert made() == []
    import stable_baselines3 as sb3  # power: a model learning without one leaves one

    sb3.A2C("MlpPolicy", "CartPole-v1", n_steps=4, seed=0, device="cpu").learn(4)
    assert len(made()) == 1


@pytest.mark.slow
def test_training_is_reproducible_from_its_seed(tmp_path: Path) -> None:
    import stable_baselines3 as sb3

    scenario = Scenario(n_agents=2, n_arms=3, horizon=10, setting="local")
    stack = LearnerStack.for_setting("local")
    params = []
    for run in ("a", "b"):
        path = train_model("ppo", scenario, stack, 128, tmp_path / run, seed=3)
        model = sb3.PPO.load(path, device="cpu")
        params.append(
            np.concatenate([p.detach().numpy().ravel() for p in model.policy.parameters()])
        )
    np.testing.assert_array_equal(params[0], params[1])


def test_bad_training_requests_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="learners train in local, gossip or neighbours"):
        LearnerStack.for_setting("server")
    scenario = Scenario(n_agents=2, n_arms=2, horizon=5)
    with pytest.raises(ValueError, match="algo must be one of"):
        train_model("sac", scenario, LearnerStack(), 10, tmp_path)
    with pytest.raises(ValueError, match="timesteps must be >= 1"):
        train_model("ppo", scenario, LearnerStack(), 0, tmp_path)
    with pytest.raises(ValueError, match="threads must be an int >= 1 or None, got 0"):
        set_torch_threads(0)


def test_evaluate_refuses_a_model_outside_its_setting(tmp_path: Path) -> None:
    path = _train(tmp_path / "m", "--setting", "local")
    scenario = Scenario(n_agents=3, n_arms=3, horizon=20, setting="neighbours")
    with pytest.raises(ValueError, match="trained in the 'local' setting"):
        evaluate(f"a2c:{path}", scenario, trials=1)


@pytest.mark.slow
def test_training_throughput_runs_in_private_settings_too() -> None:
    from fedbandit_env.rl.throughput import training_throughput

    rates = training_throughput("neighbours+private", timesteps=256, n_agents=2, n_arms=2)
    assert rates["federated"] > 0 and rates["plain"] > 0 and rates["env_share"] < 1


@pytest.mark.slow
def test_recurrent_ppo_trains_on_raw_observations_and_evaluates(tmp_path: Path) -> None:
    argv = ["train", "recurrent_ppo", *SMALL, "--timesteps", "200", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 0
    path = tmp_path / "r" / "model.zip"
    stack = LearnerStack.load(path)
    assert not stack.statistics  # the LSTM keeps its own memory
    scenario = Scenario(n_agents=3, n_arms=3, horizon=20, setting="local", instances="held_out")
    curves = evaluate(f"recurrent_ppo:{path}", scenario, trials=2, record_every=10)
    assert curves.regret.shape == (2, 3, 2)
    # sampled play (the default) replays each trial from its own seed, the LSTM's draws
    # included: trial 1 alone is trial 1 of the pair
    alone = evaluate(f"recurrent_ppo:{path}", scenario, trials=1, first_trial=1, record_every=10)
    np.testing.assert_array_equal(curves.regret[1], alone.regret[0])
    with pytest.raises(ValueError, match="share_means without privacy needs statistics"):
        LearnerStack(share_means=True, statistics=False)


def test_the_team_value_reward_reads_only_what_the_agent_observes() -> None:
    from fedbandit_env.rl.common import learner_rewards, team_value

    scenario = Scenario(n_agents=4, n_arms=3, horizon=30, setting="neighbours", seed=2)
    stack = LearnerStack.for_setting("neighbours", reward="team_value")
    env = stack.make_env(scenario)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(12):
        actions = {
            a: {"arm": int(rng.integers(3)), "message": stack.message_fn(a, obs[a])}
            for a in env.agents
        }
        obs, rewards, *_ = env.step(actions)
        # no infos at all: a reward that peeked at the regret would fail here
        got = learner_rewards("team_value", rewards, {}, env.agents, obs)
        for a, value in zip(env.agents, got, strict=True):
            o = obs[a]
            arm, heard = int(o["arm"]), np.flatnonzero(o["mask"])
            means = [o["means"][arm], *np.asarray(o["messages"])[heard, arm]]
            assert value == pytest.approx(float(np.mean(means)))
            assert value == team_value(o)
    assert len(heard) == 3  # a complete graph: every neighbour's means counted
    # random-edge gossip: the latest message held from each neighbour, not this step's
    held = {"arm": 0, "means": [0.4], "messages": [[9.0], [9.0]], "mask": [1, 1],
            "held": [[0.0], [0.8]], "heard": [0, 1]}  # fmt: skip
    assert team_value(held) == pytest.approx(0.6)
    private = {"arm": 1, "private_means": [0.0, 0.3], "means": [0.0, 9.0]}
    assert team_value(private) == pytest.approx(0.3)  # under privacy: the private means only
    with pytest.raises(ValueError, match="needs the agent's means"):
        team_value({"arm": 0, "reward": [1.0]})
    with pytest.raises(ValueError, match="needs statistics=True"):
        LearnerStack(statistics=False, reward="team_value")


def test_a_model_trained_on_team_value_is_honest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _train(tmp_path / "m", "--setting", "neighbours", "--reward", "team_value")
    stack = LearnerStack.load(path)
    assert stack.reward == "team_value" and not stack.privileged
    capsys.readouterr()
    argv = ["bench", "--policies", f"a2c:{path}", *SMALL, "--trials", "1"]
    assert main([*argv, "--setting", "neighbours", "--no-plot", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "a2c:m " in out and "a2c:m*" not in out


def test_a_model_off_its_training_horizon_or_instances_is_flagged(tmp_path: Path) -> None:
    import warnings

    from fedbandit_env.runner.evaluate import UntrainedConditionsWarning

    path = _train(tmp_path / "m", "--setting", "local")
    assert LearnerStack.load(path).horizon == 20
    spec = f"a2c:{path}"
    trained = Scenario(n_agents=3, n_arms=3, horizon=20, setting="local", instance="biased",
                       instances="held_out")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedConditionsWarning)
        evaluate(spec, trained, trials=1)  # its own horizon and instances: silent
    with pytest.warns(UntrainedConditionsWarning, match=r"horizon T=40 \(trained at T=20\)"):
        evaluate(spec, Scenario(**{**trained.to_dict(), "horizon": 40}), trials=1)
    with pytest.warns(UntrainedConditionsWarning, match="instances conflicting"):
        evaluate(spec, Scenario(**{**trained.to_dict(), "instance": "conflicting"}), trials=1)


def test_former_names_read_as_the_new_ones(tmp_path: Path) -> None:
    """``--reward local`` and ``--protocol local`` were renamed (``own``, ``gamma_hops``)
    so that "local" names one thing; saved stacks and old commands still read."""
    import warnings

    from fedbandit_env.policies import Requirements
    from fedbandit_env.protocols import GammaHops, make_protocol
    from fedbandit_env.rl.common import check_reward
    from fedbandit_env.scenario.scenario import Scenario

    with pytest.warns(DeprecationWarning, match="own"):
        assert check_reward("local") == "own"
    with pytest.warns(DeprecationWarning, match="gamma_hops"):
        assert isinstance(make_protocol("local", gamma=2), GammaHops)
    with pytest.warns(DeprecationWarning) as said:
        assert Scenario(n_agents=3, n_arms=2, protocol="local").protocol == "gamma_hops"
    assert len([w for w in said if "gamma_hops" in str(w.message)]) == 1  # said once
    with pytest.warns(DeprecationWarning):
        assert Requirements(protocol="local").protocol == "gamma_hops"
    with pytest.warns(DeprecationWarning):
        from fedbandit_env.protocols import LocalProtocol  # the class's former name
    assert LocalProtocol is GammaHops
    from fedbandit_env.rl.stack import sidecar

    path = _train(tmp_path / "m", "--setting", "neighbours", "--reward", "local")
    side = sidecar(path)
    fields = json.loads(side.read_text())
    fields["reward"] = "local"  # a stack saved before the renaming
    side.write_text(json.dumps(fields))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading our own old file is not the user's fault
        assert LearnerStack.load(path).reward == "own"
