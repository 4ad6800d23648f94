"""Policy objects from Python: ``compare`` (``fedbandit bench`` as a function) and
sweeps over a user's own factories (issue 14, Deliver 5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedbandit_env.policies import FixedArm
from fedbandit_env.runner.compare import compare
from fedbandit_env.runner.sweep import Run, policy_name, run_sweep
from fedbandit_env.scenario.scenario import Scenario


def test_compare_runs_ids_and_a_users_factory_in_one_setting_with_the_bounds() -> None:
    s = Scenario(n_agents=4, n_arms=3, horizon=200, instances="held_out", setting="local")
    curves = compare([FixedArm, "local_ucb"], s, trials=3, options={"FixedArm": {"arm": 1}})
    assert [c.policy for c in curves] == ["FixedArm", "local_ucb", "random", "oracle_ucb"]
    assert all(c.seeds.tolist() == [0, 1, 2] for c in curves)  # the same held-out draws
    _, ucb, rand, oracle = (c.final_per_agent.mean() for c in curves)
    assert oracle < ucb < rand  # the bounds frame the table
    assert curves[0].setting == "local" and curves[3].meta.get("privileged") == 1


def test_compare_keeps_a_policy_already_listed_and_can_leave_the_bounds_out() -> None:
    s = Scenario(n_agents=3, n_arms=3, horizon=30)
    assert [c.policy for c in compare(["random"], s, trials=1)] == ["random", "oracle_ucb"]
    assert [c.policy for c in compare({"r": "random"}, s, trials=1, bounds=False)] == ["r"]


@pytest.mark.parametrize(
    ("policies", "kwargs", "match"),
    [
        ([], {}, "at least one"),
        (["random", "random"], {}, "twice"),
        (["random"], {"options": {"nope": {}}}, "not compared"),
        ([42], {}, "factory"),
    ],
)
def test_compare_refuses_bad_input_by_name(policies: list, kwargs: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        compare(policies, Scenario(n_agents=2, n_arms=2, horizon=10), trials=1, **kwargs)


def test_a_sweep_runs_a_users_factory_and_resumes_it_by_its_import_path(tmp_path: Path) -> None:
    s = Scenario(n_agents=2, n_arms=3, horizon=40)
    grid = [Run("base", s, FixedArm, {"arm": 2}, trial=j, record_every=20) for j in range(2)]
    assert policy_name(FixedArm) == "fedbandit_env.policies:FixedArm"
    (curves,) = run_sweep(grid, tmp_path, progress=False)
    assert curves.policy == "FixedArm" and curves.regret.shape == (2, 2, 2)
    calls: list[Run] = []
    again = run_sweep(grid, tmp_path, progress=False, run_fn=calls.append)  # type: ignore[arg-type]
    assert calls == [] and np.array_equal(again[0].regret, curves.regret)
    other = Run("base", s, FixedArm, {"arm": 0}, trial=0, record_every=20)
    assert other.key != grid[0].key  # its options are part of the key


@pytest.mark.slow
def test_a_users_factory_runs_in_worker_processes(tmp_path: Path) -> None:
    s = Scenario(n_agents=2, n_arms=3, horizon=40)
    grid = [Run("base", s, FixedArm, {"arm": 1}, trial=j, record_every=20) for j in range(2)]
    (parallel,) = run_sweep(grid, tmp_path / "a", jobs=2, progress=False)
    (serial,) = run_sweep(grid, tmp_path / "b", jobs=1, progress=False)
    np.testing.assert_array_equal(parallel.regret, serial.regret)
