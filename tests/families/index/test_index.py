"""The tunable index family and ``fedbandit tune``: the policy plays the same trials on
both views of the env, a generation's candidates side by side play what each plays
alone, the search is seeded and refuses held-out instances, a saved result runs through
``bench`` with a warning off its conditions, and the shipped tuned references beat the
strongest reference of their setting on held-out instances (the issue's claim)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from baselines.index import IndexPolicy, tuned_parameters
from fedbandit_env import registry
from fedbandit_env.cli import main
from fedbandit_env.runner.evaluate import UntrainedConditionsWarning, evaluate
from fedbandit_env.runner.tune import TuneResult, tunable_box, tune, tuned_policy
from fedbandit_env.runner.vector_trials import run_episodes
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.seeding import spawn

SMALL = {"n_agents": 5, "n_arms": 3, "horizon": 40, "instance": "biased"}


@pytest.mark.parametrize(
    ("policy", "setting"),
    [("index_ts", "neighbours"), ("tuned_ts", "gossip"), ("tuned_private_ts", "gossip+private")],
)
def test_both_paths_give_the_same_trials(policy: str, setting: str) -> None:
    eps = 1.0 if setting.endswith("+private") else None
    scenario = Scenario(setting=setting, epsilon=eps, instances="held_out", graph="ring", **SMALL)
    options = {"epsilon": 1.0} if eps else None
    vector = evaluate(policy, scenario, options, trials=4, seed=2, record_every=10)
    pettingzoo = evaluate(policy, scenario, options, trials=4, seed=2, record_every=10,
                          interactive=True)  # fmt: skip
    assert vector.meta["path"] == "vector"
    np.testing.assert_array_equal(vector.regret, pettingzoo.regret)


def test_the_held_table_is_degree_wide_and_plays_the_dense_tables_trials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 62 item 4: a receiver holds a column per sender that can reach it (its
    ring neighbours: two, at any N), and the trials are the dense table's to the bit, on
    a ring and under flooding, whose deliveries from beyond the neighbours widen the
    table (a table that dropped them, or summed in another order, would differ)."""
    from baselines.index import policies
    from fedbandit_env.policies import AgentSpec
    from fedbandit_env.vector.policy import VectorSpec

    for n in (50, 400):
        agents = tuple(AgentSpec(i, n, 3, 10, message_dim=6, neighbors=((i - 1) % n, (i + 1) % n))
                       for i in range(n))  # fmt: skip
        policy = IndexPolicy()
        policy.reset(VectorSpec(2, agents), [np.random.default_rng(b) for b in range(2)])
        assert policy.held.shape == (2, n, 2, 6)
    slots, widened = policies.sender_slots, []
    original_widen = IndexPolicy._widen

    def widen(self: IndexPolicy) -> None:
        widened.append(True)
        original_widen(self)

    monkeypatch.setattr(IndexPolicy, "_widen", widen)
    for extra in ({"setting": "neighbours"}, {"protocol": "gis_flooding"}):
        scenario = Scenario(**SMALL, graph="ring", instances="held_out", **extra)  # type: ignore[arg-type]
        widened.clear()
        compact = evaluate("tuned_ts", scenario, trials=3, progress=False).regret
        assert bool(widened) == ("protocol" in extra)  # flooding reached beyond the ring
        with monkeypatch.context() as m:  # the dense table: a column for every other agent
            m.setattr(policies, "sender_slots", lambda adj: slots(np.zeros_like(adj)))
            dense = evaluate("tuned_ts", scenario, trials=3, progress=False).regret
        assert np.array_equal(compact, dense)


def test_candidates_side_by_side_play_what_each_plays_alone() -> None:
    """Common random numbers: parameters per env, one batch, equal to separate runs."""
    scenario = Scenario(setting="neighbours", instances="train", **SMALL)
    seeds = spawn(5, 3)
    a = {"prior_strength": 0.5, "prior_mean": 0.4, "draw_scale": 1.5, "bonus": 0.0}
    b = {"prior_strength": 3.0, "prior_mean": 0.7, "draw_scale": 0.2, "bonus": 1.0}
    both = {k: np.array([a[k]] * 3 + [b[k]] * 3) for k in a}
    side_by_side = run_episodes(IndexPolicy(**both), scenario, seeds * 2)
    alone = np.concatenate(
        [
            run_episodes(IndexPolicy(**a), scenario, seeds),
            run_episodes(IndexPolicy(**b), scenario, seeds),
        ]
    )
    np.testing.assert_array_equal(side_by_side, alone)
    assert not np.array_equal(side_by_side[:3], side_by_side[3:])  # the parameters matter


def test_the_search_is_seeded() -> None:
    scenario = Scenario(setting="neighbours", instances="train", **SMALL)
    kw = {"generations": 2, "population": 4, "episodes": 3, "progress": False}
    one, two = tune("index_ts", scenario, seed=1, **kw), tune("index_ts", scenario, seed=1, **kw)
    other = tune("index_ts", scenario, seed=2, **kw)
    assert one.parameters == two.parameters and one.history == two.history
    assert one.parameters != other.parameters
    assert one.agent_steps == 2 * 4 * 3 * 5 * 40


def test_the_search_moves_towards_lower_regret() -> None:
    """From a poor start (no prior, no draws, heavy pessimism) the search finds lower
    regret on the same train episodes than it started with."""
    scenario = Scenario(setting="neighbours", instances="train", **SMALL)
    start = {"prior_strength": 0.05, "prior_mean": 0.0, "draw_scale": 0.0, "bonus": -1.0}
    result = tune("index_ts", scenario, generations=6, population=12, episodes=12, seed=0,
                  progress=False)  # fmt: skip
    seeds = spawn(99, 64)
    before = run_episodes(IndexPolicy(**start), scenario, seeds).mean()
    after = run_episodes(IndexPolicy(**result.parameters), scenario, seeds).mean()
    assert after < before


def test_tuning_refuses_what_it_cannot_do() -> None:
    held_out = Scenario(setting="neighbours", instances="held_out", **SMALL)
    with pytest.raises(ValueError, match="train split"):
        tune("index_ts", held_out, generations=1, population=2, episodes=1)
    with pytest.raises(ValueError, match="declares no TUNABLE"):
        tunable_box("coop_ts")
    train = Scenario(setting="neighbours", instances="train", **SMALL)
    with pytest.raises(ValueError, match="population must be"):
        tune("index_ts", train, population=0)
    with pytest.raises(ValueError, match="prior_strength must be > 0"):
        IndexPolicy(prior_strength=np.array([1.0, -1.0]))


def test_a_saved_result_round_trips_and_warns_off_its_conditions(tmp_path: Path) -> None:
    tuned_on = Scenario(setting="neighbours", instances="train", **SMALL)
    path = TuneResult("index_ts", {"bonus": 0.5}, tuned_on.to_dict()).save(tmp_path / "x.json")
    assert TuneResult.load(path).parameters == {"bonus": 0.5}
    same = Scenario(setting="neighbours", instances="held_out", **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec, label = tuned_policy(path, same)  # held-out instances: what it is tuned for
    assert (label, spec.kwargs["bonus"]) == ("tuned:x", 0.5)
    longer = Scenario(setting="neighbours", instances="held_out", **{**SMALL, "horizon": 80})
    with pytest.warns(UntrainedConditionsWarning, match="horizon=80"):
        tuned_policy(path, longer)
    curves = evaluate(f"tuned:{path}", same, trials=2)
    assert curves.policy == "tuned:x" and curves.meta["path"] == "vector"
    with pytest.raises(ValueError, match="takes no options"):
        evaluate(f"tuned:{path}", same, {"deterministic": True}, trials=1)
    (tmp_path / "bad.json").write_text(json.dumps({"parameters": {}}))
    with pytest.raises(ValueError, match="bad.json: not a saved tuning result"):
        TuneResult.load(tmp_path / "bad.json")


def test_the_command_line_tunes_and_benches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = ["--agents", "4", "--arms", "3", "--horizon", "30", "--no-progress"]
    search = ["--budget", "20000", "--population", "4", "--episodes", "4"]
    main(["tune", *small, "--instance", "biased", *search, "--out", str(tmp_path)])
    saved = tmp_path / "neighbours.json"
    out = capsys.readouterr().out
    assert saved.exists() and f"tuned:{saved}" in out and "coop_ts" in out
    bench = ["bench", *small, "--setting", "neighbours", "--held-out", "--instance", "biased"]
    main([*bench, "--trials", "2", "--no-plot", "--policies", f"tuned:{saved},coop_ts",
          "--out", str(tmp_path / "b")])  # fmt: skip
    assert "tuned:neighbours" in (tmp_path / "b" / "regret.csv").read_text()


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--held-out"], "draws train instances"),
        (["--budget", "10"], "below one generation"),
        (["--policy", "coop_ts"], "declares no TUNABLE"),
        (["--setting", "local"], "no policy tagged 'tunable' runs in the 'local' setting"),
        (["--setting", "local", "--policy", "index_ts"], "not meant for the 'local' setting"),
        (["--trials", "3"], "does not read --trials"),
        (["--epsilon", "2"], "changes nothing"),
    ],
)
def test_the_command_line_refuses_in_one_line(
    argv: list[str], match: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["tune", "--horizon", "20", "--no-progress", "--out", str(tmp_path), *argv])
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("fedbandit: error:") and match in last, last
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("name", ["tuned_ts", "tuned_private_ts"])
def test_the_shipped_results_are_the_learning_default(name: str) -> None:
    data = json.loads(
        (Path(__file__).parents[3] / "baselines/index/tuned" / f"{name}.json").read_text()
    )
    s = data["scenario"]
    assert (s["instance"], s["instances"], s["n_agents"], s["n_arms"], s["horizon"]) == (
        "biased", "train", 10, 5, 200,
    )  # fmt: skip
    assert registry.make(name).policy.parameters == tuned_parameters(name)


def _paired(policy: str, reference: str, setting: str, trials: int) -> np.ndarray:
    eps = 1.0 if setting.endswith("+private") else None
    scenario = Scenario(setting=setting, epsilon=eps, instance="biased", instances="held_out",
                        horizon=200)  # fmt: skip

    def options(pid: str) -> dict[str, object] | None:  # what the policy reads (gossip_ucb: none)
        return registry.spec(pid).options({"epsilon": eps}, None) if eps else None

    ours = evaluate(policy, scenario, options(policy), trials=trials, seed=0, record_every=200)
    theirs = evaluate(
        reference, scenario, options(reference), trials=trials, seed=0, record_every=200
    )
    return ours.regret[:, :, -1].mean(axis=1) - theirs.regret[:, :, -1].mean(axis=1)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("policy", "reference", "setting"),
    [
        ("tuned_ts", "coop_ts", "neighbours"),
        ("tuned_ts", "coop_ts", "gossip"),
        ("tuned_private_ts", "private_coop_ts", "gossip+private"),
        ("tuned_private_ts", "gossip_ucb", "gossip+private"),
    ],
)
def test_the_tuned_references_beat_these_references_on_held_out_instances(
    policy: str, reference: str, setting: str
) -> None:
    """At T = 200 on 300 held-out instances the paired difference's 95% bootstrap
    interval lies below 0 (same instances and env seeds for both). In ``gossip+private``
    ``gossip_ucb`` is the strongest other reference (measured: ahead of
    ``private_coop_ts``), and ``tuned_private_ts`` beats it too. In ``gossip`` the
    strongest is ``coop_ts_relay``, and ``tuned_ts`` only ties it (measured 2026-11-27:
    +0.09 [-0.24, +0.44] on these 300 instances), so no claim is made against it."""
    diff = _paired(policy, reference, setting, 300)
    rng = np.random.default_rng(0)
    means = diff[rng.integers(diff.size, size=(4000, diff.size))].mean(axis=1)
    assert np.quantile(means, 0.975) < 0, (diff.mean(), np.quantile(means, [0.025, 0.975]))


@pytest.mark.parametrize("name", ["tuned_ts", "learned_neighbours"])
def test_a_registered_tuned_policy_warns_at_conditions_it_was_not_tuned_for(name: str) -> None:
    """As a ``tuned:`` file does (issue 64): at T = 300 it warns, naming the horizon; at
    its own conditions it does not."""
    if name not in registry.policy_ids():
        pytest.skip(f"{name} is not shipped in this checkout")
    other = Scenario(horizon=300, setting="neighbours", instances="held_out")
    with pytest.warns(UntrainedConditionsWarning, match=r"horizon=300 \(tuned on 200\)"):
        evaluate(name, other, trials=1)
    own = Scenario(horizon=200, setting="neighbours", instances="held_out")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedConditionsWarning)
        evaluate(name, own, trials=1)
