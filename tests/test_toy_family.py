"""A family from outside: defined in a file of its own, registered the way a third party
would (``--import``, ``registry.register``), it appears in ``fedbandit list``,
``fedbandit bench`` (with its own option), ``compare`` and ``speed``, and the core knows
nothing of it (issue 28's test of "a family is one folder")."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedbandit_env import registry
from fedbandit_env.cli import main
from fedbandit_env.runner import speed
from fedbandit_env.runner.compare import compare
from fedbandit_env.scenario.scenario import Scenario

TOY = '''
"""A toy family: every agent pulls one arm, chosen by its option ``toy_arm``."""
import numpy as np

from fedbandit_env.policies import Policy
from fedbandit_env.problems import MABProblem
from fedbandit_env.registry import PolicyOption, register
from fedbandit_env.scenario.trial import TrialResult
from fedbandit_env.scenario.instances import InstanceSpec, register_instance


class Toy(Policy):
    def __init__(self, toy_arm: int = 0) -> None:
        self.toy_arm = toy_arm

    def reset(self, spec, seed=None) -> None:
        self.arm = min(self.toy_arm, spec.n_arms - 1)

    def act(self, observation):
        return self.arm


def run_toy(setup, seeds):
    """The fast path: the pseudo-regret of pulling one arm is its gap times t."""
    arm = min(int(setup.params.get("toy_arm", 0)), setup.gaps.size - 1)
    regret, arms, rewards = setup.buffers()
    regret[:] = setup.gaps[arm] * setup.steps
    return TrialResult(regret, arms, rewards)


register(
    "toy",
    Toy,
    description="pulls arm --toy-arm, always",
    family="toy",
    fast_entry_point=run_toy,
    tags=("speed",),
    cli_options=(PolicyOption("toy_arm", int, 0, "the arm the toy pulls", low=0),),
    instances=("toy_pair", "conflicting"),
)
register_instance(  # the family's own instance kind, from its own file
    InstanceSpec("toy_pair", lambda s, seed: MABProblem([[0.9, 0.1], [0.7, 0.3]]))
)
'''


@pytest.fixture(scope="module")
def toy_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("toy") / "toy_family.py"
    path.write_text(TOY)
    main(["list", "--import", str(path)])  # registers it, as a user's command would
    yield path
    registry.deregister("toy")
    from fedbandit_env.scenario.instances import deregister_instance

    deregister_instance("toy_pair")


def test_it_is_listed_with_its_tags(toy_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--import", str(toy_file)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("toy ")]
    assert line.split()[:7] == ["toy", "toy", "mab", "yes", "speed", "any", "toy_pair,conflicting"]


def test_it_runs_in_bench_with_its_own_option(
    toy_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    argv = ["bench", "--import", str(toy_file), "--policies", "toy", "--toy-arm", "2"]
    argv += ["--agents", "3", "--arms", "3", "--horizon", "50", "--trials", "2"]
    assert main([*argv, "--no-plot", "--no-progress", "--out", str(out)]) == 0
    with (out / "regret.csv").open() as fh:
        final = {float(r["regret"]) for r in csv.DictReader(fh) if r["t"] == "50"}
    gaps = Scenario(n_agents=3, n_arms=3).problem().gaps
    assert len(final) == 1 and final.pop() == pytest.approx(50 * gaps[2])
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert re.search(r"--toy-arm TOY_ARM +the arm the toy pulls \(toy\)", capsys.readouterr().out)
    with pytest.raises(SystemExit) as stop:
        main([*argv[:5], "--toy-arm", "-1", "--out", str(out)])
    assert stop.value.code == 2


def test_it_is_compared_between_the_registered_bounds(toy_file: Path) -> None:
    s = Scenario(n_agents=3, n_arms=3, horizon=40)
    curves = compare(["toy"], s, trials=2, options={"toy": {"toy_arm": 2}})
    assert [c.policy for c in curves] == [
        "toy",
        *registry.tagged("floor"),
        *registry.tagged("pooled"),
    ]
    assert np.allclose(curves[0].final_per_agent, 40 * s.problem().gaps[2])


def test_speed_measures_it_and_both_paths_agree(toy_file: Path) -> None:
    assert "toy" in registry.tagged("speed")
    small = {"n_agents": 3, "n_arms": 2, "graph": "complete"}
    assert speed.measure_fast("toy", small, 100, 1, 1) > 0
    from fedbandit_env.runner.evaluate import evaluate

    s = Scenario(n_agents=3, n_arms=3, horizon=30)
    fast, slow = (
        evaluate("toy", s, {"toy_arm": 1}, trials=2, interactive=flag, progress=False)
        for flag in (False, True)
    )
    assert (fast.meta["path"], slow.meta["path"]) == ("fast", "interactive")
    assert np.allclose(fast.regret, slow.regret)


def test_the_options_reach_the_constructor_without_an_options_entry_point(
    toy_file: Path,
) -> None:
    spec: Any = registry.spec("toy")
    assert spec.options({"toy_arm": 2, "epsilon": 1.0}, None) == {"toy_arm": 2}
    assert spec.options({"toy_arm": 0}, None) == {}  # the default passes nothing


def test_its_instance_kind_runs_in_bench(toy_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "i"
    argv = ["bench", "--import", str(toy_file), "--instance", "toy_pair", "--agents", "2"]
    argv += ["--arms", "2", "--policies", "toy", "--toy-arm", "1", "--horizon", "10"]
    assert main([*argv, "--trials", "1", "--no-plot", "--no-progress", "--out", str(out)]) == 0
    with (out / "regret.csv").open() as fh:
        final = {float(r["regret"]) for r in csv.DictReader(fh) if r["t"] == "10"}
    assert len(final) == 1 and final.pop() == pytest.approx(10 * 0.6)  # means 0.8, 0.2


def test_it_is_warned_about_off_the_instances_it_declares(
    toy_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--import", str(toy_file), "--policies", "toy", "--instance", "zhu"]
    argv += ["--agents", "3", "--arms", "2", "--horizon", "10", "--trials", "1"]
    assert main([*argv, "--no-plot", "--no-progress", "--out", str(tmp_path / "w")]) == 0
    err = capsys.readouterr().err
    assert "toy is meant for the instances toy_pair, conflicting, not 'zhu'" in err
    assert registry.spec("toy").meant_for("toy_pair") and not registry.spec("toy").meant_for("zhu")
