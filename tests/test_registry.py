"""The policy registry: register/make/spec, plugins, and a user's policy going through
evaluate, bench and sweep exactly like a reference one."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fedbandit_env.entry_points
from fedbandit_env import registry
from fedbandit_env.cli import main
from fedbandit_env.policies import FixedArm, IndependentTeam, Team
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.fast import has_fast_path, run_fast
from fedbandit_env.scenario.scenario import Scenario

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "my_policy.py"


@pytest.fixture
def scratch_ids() -> Iterator[list[str]]:
    """Ids a test registers, removed afterwards so tests stay independent."""
    ids: list[str] = []
    yield ids
    for pid in ids:
        if pid in registry.policy_ids():
            registry.deregister(pid)


def test_reference_policies_are_registered_through_the_entry_point_group() -> None:
    group = fedbandit_env.entry_points.ENTRY_POINT_GROUP
    groups = [ep.value for ep in fedbandit_env.entry_points.entry_points(group=group)]
    assert "baselines.registration:register_policies" in groups
    assert {"gossip_ucb", "fed_ucb", "cdp_mab", "local_ucb", "oracle_ucb"} <= set(
        registry.policy_ids()
    )
    spec = registry.spec("fed_ucb")
    assert spec.family == "gossip" and spec.has_fast_path and spec.kwargs == {"epsilon": 1.0}


def test_a_per_agent_policy_becomes_an_independent_team(scratch_ids: list[str]) -> None:
    scratch_ids.append("arm_two")
    registry.register("arm_two", FixedArm, kwargs={"arm": 2})
    team = registry.make("arm_two")
    assert isinstance(team, IndependentTeam) and team.name == "arm_two"
    # call arguments win over the spec's defaults
    assert registry.make("arm_two", arm=0).requirements(2, 3).message_dim == 0
    with pytest.raises(ValueError, match="arm must be an int >= 0"):
        registry.make("arm_two", arm=-1)


def test_a_team_entry_point_is_returned_as_it_is(scratch_ids: list[str]) -> None:
    class Zeros(Team):
        name = "zeros"

        def reset(self, env: Any, seed: Any = None) -> None:
            pass

        def act(self, observations: dict[str, Any]) -> dict[str, Any]:
            return {a: 0 for a in observations}

    scratch_ids.append("zeros")
    registry.register("zeros", Zeros)
    assert isinstance(registry.make("zeros"), Zeros)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"id": "ppo:x"}, ValueError, "no ':'"),
        ({"id": "9lives"}, ValueError, "start with a letter"),
        ({"id": ""}, ValueError, "policy id"),
        ({"entry_point": 3}, TypeError, "entry_point of 'p' must be a callable"),
        ({"fast_entry_point": 3}, TypeError, "fast_entry_point of 'p'"),
        ({"kwargs": [1]}, TypeError, "kwargs of 'p' must be a mapping"),
    ],
)
def test_bad_registrations_are_refused(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    args: dict[str, Any] = {"id": "p", "entry_point": FixedArm, **kwargs}
    with pytest.raises(error, match=message):
        registry.PolicySpec(**args)


@pytest.mark.parametrize(
    ("entry_point", "message"),
    [
        ("no_colon", "must look like 'module:attr'"),
        ("no_such_module_xyz:thing", "cannot import 'no_such_module_xyz'"),
        ("fedbandit_env.policies:NoSuchPolicy", "has no 'NoSuchPolicy'"),
    ],
)
def test_bad_entry_points_fail_at_make_naming_the_policy(
    entry_point: str, message: str, scratch_ids: list[str]
) -> None:
    scratch_ids.append("broken")
    registry.register("broken", entry_point)
    with pytest.raises(ValueError, match=message):
        registry.make("broken")


def test_an_entry_point_that_returns_no_policy_is_refused(scratch_ids: list[str]) -> None:
    scratch_ids.append("not_a_policy")
    registry.register("not_a_policy", lambda: 42)
    with pytest.raises(TypeError, match="returned int, not a Team, Policy or VectorPolicy"):
        registry.make("not_a_policy")


def test_unknown_ids_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown policy id 'nope'; known ids: \['cdp_mab'"):
        registry.make("nope")
    with pytest.raises(ValueError, match="is not registered"):
        registry.deregister("nope")


def test_reregistering_warns_only_when_the_spec_changes(scratch_ids: list[str]) -> None:
    scratch_ids.append("twice")
    registry.register("twice", FixedArm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry.register("twice", FixedArm)  # the same spec: silent
    with pytest.warns(UserWarning, match="overriding policy 'twice'"):
        registry.register("twice", FixedArm, kwargs={"arm": 1})
    assert registry.spec("twice").kwargs == {"arm": 1}


def test_plugins_load_and_a_broken_one_is_reported_not_fatal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scratch_ids: list[str]
) -> None:
    (tmp_path / "good_plugin_mod.py").write_text(
        "from fedbandit_env import registry\n"
        "from fedbandit_env.policies import FixedArm\n"
        "def register_policies():\n"
        "    registry.register('plugin_arm', FixedArm)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = [
        EntryPoint("bad", "no_such_plugin_xyz:register", registry.ENTRY_POINT_GROUP),
        EntryPoint("good", "good_plugin_mod:register_policies", registry.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(fedbandit_env.entry_points, "entry_points", lambda group: fake)
    scratch_ids.append("plugin_arm")
    with pytest.warns(UserWarning, match="policy plugin 'bad'.*failed to load"):
        registry.load_plugins()
    assert "plugin_arm" in registry.policy_ids()


def test_options_entry_points_map_setting_options_to_constructor_arguments() -> None:
    settings = {"epsilon": float("inf"), "participation": 0.5, "rounds": 0, "min_gap": None}
    assert registry.spec("cdp_mab").options(settings, None) == {
        "epsilon": None,
        "participation": 0.5,
    }
    assert registry.spec("fed_ucb").options(settings, None) == {"epsilon": float("inf")}
    assert registry.spec("gossip_ucb").options(settings, None) == {}


def test_the_fast_path_is_found_through_the_registry(scratch_ids: list[str]) -> None:
    scratch_ids.append("my_random")
    registry.register(
        "my_random",
        "baselines.ucb:RandomPolicy",
        fast_entry_point="baselines.ucb.fast:run_random",
    )
    assert has_fast_path("my_random") and not has_fast_path("ppo:m.zip")
    scenario = Scenario(n_agents=3, n_arms=4, horizon=60)
    mine = run_fast("my_random", scenario, 2, seed=3, progress=False, record_every=20)
    ref = run_fast("random", scenario, 2, seed=3, progress=False, record_every=20)
    np.testing.assert_array_equal(mine.regret, ref.regret)
    assert evaluate("my_random", scenario, trials=1).meta["path"] == "fast"


def test_a_users_policy_runs_through_evaluate_like_a_reference(scratch_ids: list[str]) -> None:
    scratch_ids.append("arm_zero")
    registry.register("arm_zero", FixedArm)
    scenario = Scenario(n_agents=3, n_arms=4, horizon=30)
    curves = evaluate("arm_zero", scenario, trials=2, record_every=10)
    gap0 = scenario.problem().gaps[0]
    assert curves.meta["path"] == "interactive"
    np.testing.assert_allclose(curves.regret[:, :, -1], 30 * gap0)


@pytest.mark.slow
def test_a_users_policy_runs_in_bench_and_a_parallel_sweep(tmp_path: Path) -> None:
    small = ["--agents", "3", "--arms", "3", "--horizon", "60", "--trials", "2"]
    quiet = ["--no-plot", "--no-progress"]
    bench_out = tmp_path / "bench"
    argv = ["bench", "--import", str(EXAMPLE), "--policies", "eps_greedy,local_ucb"]
    assert main([*argv, *small, *quiet, "--out", str(bench_out)]) == 0
    rows = json.loads((bench_out / "config.json").read_text())["summary"]
    assert [r["policy"] for r in rows] == ["eps_greedy", "local_ucb"]
    # two loky worker processes: each imports the file before looking the id up
    sweep_out = tmp_path / "sweep"
    argv = ["sweep", "--import", str(EXAMPLE), "--policies", "eps_greedy"]
    argv += [*small, *quiet, "--grid", "graph=complete,ring", "--jobs", "2"]
    assert main([*argv, "--out", str(sweep_out)]) == 0
    summary = json.loads((sweep_out / "sweep.json").read_text())["summary"]
    assert sorted(r["scenario"] for r in summary) == ["graph=complete", "graph=ring"]
    bench_regret = next(r for r in rows if r["policy"] == "eps_greedy")["per_agent_mean"]
    complete = next(r for r in summary if r["scenario"] == "graph=complete")
    assert complete["per_agent_mean"] == pytest.approx(bench_regret)  # the same trials


def test_list_shows_reference_and_imported_policies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--import", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "eps_greedy" in out and re.search(
        r"gossip_ucb +gossip +mab +yes +default,speed +gossip,", out
    )


def test_an_imported_file_may_import_its_siblings(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    scratch_ids: list[str],
) -> None:
    """``--import lab/register.py`` runs as ``python lab/register.py`` would: its folder
    is on ``sys.path``, so ``import lab_helpers`` beside it works."""
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "lab_helpers_xyz.py").write_text("DESCRIPTION = 'from a sibling module'\n")
    (lab / "register.py").write_text(
        "from lab_helpers_xyz import DESCRIPTION\n"
        "from fedbandit_env import registry\n"
        "registry.register('sibling_random_xyz', 'baselines.ucb:RandomPolicy',\n"
        "                  description=DESCRIPTION, family='lab')\n"
    )
    monkeypatch.setattr("sys.path", list(__import__("sys").path))  # restored afterwards
    scratch_ids.append("sibling_random_xyz")
    assert main(["list", "--import", str(lab / "register.py")]) == 0
    assert "from a sibling module" in capsys.readouterr().out


def test_an_unimportable_module_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["bench", "--import", "no_such_module_xyz", "--out", str(tmp_path)])
    assert stop.value.code == 2
    assert "--import no_such_module_xyz: cannot import" in capsys.readouterr().err


def test_evaluate_takes_policy_objects_and_factories_too() -> None:
    scenario = Scenario(n_agents=3, n_arms=4, horizon=30)
    by_class = evaluate(FixedArm, scenario, {"arm": 0}, trials=2, record_every=10)
    by_lambda = evaluate(lambda: IndependentTeam(lambda: FixedArm(0)), scenario, trials=2)
    assert by_class.policy == "FixedArm" and by_lambda.policy == "custom"
    np.testing.assert_allclose(by_class.regret[:, :, -1], by_lambda.regret[:, :, -1])
    assert evaluate(FixedArm, scenario, trials=1, label="mine").policy == "mine"
    # an unregistered spec with a fast path takes it, with the registered one's numbers
    spec = registry.PolicySpec(
        "unlisted", "baselines.ucb:LocalUCB1", fast_entry_point="baselines.ucb.fast:run_local_ucb"
    )
    mine = evaluate(spec, scenario, trials=2, record_every=10)
    ref = evaluate("local_ucb", scenario, trials=2, record_every=10)
    assert mine.meta["path"] == "fast" and "unlisted" not in registry.policy_ids()
    np.testing.assert_array_equal(mine.regret, ref.regret)
    with pytest.raises(TypeError, match="policy must be an id"):
        evaluate(3, scenario)  # type: ignore[arg-type]


def test_bench_defaults_follow_the_instance_kinds_a_policy_declares() -> None:
    from fedbandit_env.cli.options import parse_policies

    registry.register(
        "homogeneous_only",
        "baselines.ucb:LocalUCB1",
        tags=("default",),
        instances=("homogeneous",),
    )
    try:
        assert "homogeneous_only" in parse_policies(None, instance="homogeneous")
        assert "homogeneous_only" not in parse_policies(None, instance="conflicting")
        assert parse_policies("homogeneous_only", instance="conflicting") == ["homogeneous_only"]
    finally:
        registry.deregister("homogeneous_only")
    with pytest.raises(TypeError, match="tuple of names"):
        registry.PolicySpec("x", "baselines.ucb:LocalUCB1", instances="zhu")  # type: ignore[arg-type]


def test_a_shadowed_reference_package_is_named_in_the_plugin_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenAI Baselines installs a top-level ``baselines`` too: when another package's
    module of that name is found first, the plugin warning says which and what to do."""
    fake = tmp_path / "shadowing_pkg_xyz"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = fedbandit_env.entry_points.ENTRY_POINT_GROUP
    ep = EntryPoint("refs", "shadowing_pkg_xyz.registration:register", group)
    monkeypatch.setattr(fedbandit_env.entry_points, "entry_points", lambda group: [ep])
    with pytest.warns(UserWarning, match="shadowing_pkg_xyz found first is .* use a separate"):
        fedbandit_env.entry_points.load_plugins()
    assert fedbandit_env.entry_points.shadowed_package_hint("baselines.registration:x") == ""
