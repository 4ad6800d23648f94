"""Results that say what they are (issue 53, item 4): a bench's rows name their scenario
(``Scenario.label``: kind, shape, graph, horizon and a hash of every field) and setting
(``own`` without ``--setting``), so two benches concatenated can be told apart; on
``d3a7325`` both columns were empty on every row of the default ``make bench``."""

from __future__ import annotations

import csv
from pathlib import Path

from fedbandit_env.cli import main
from fedbandit_env.runner.results import read_csv
from fedbandit_env.scenario.scenario import Scenario

SMALL = ["--policies", "local_ucb", "--agents", "3", "--arms", "2", "--horizon", "20",
         "--trials", "2", "--no-plot", "--no-progress"]  # fmt: skip


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_two_benches_rows_name_their_scenario_and_setting(tmp_path: Path) -> None:
    assert main(["bench", *SMALL, "--out", str(tmp_path / "a")]) == 0
    assert main(["bench", *SMALL, "--gap", "0.05", "--out", str(tmp_path / "b")]) == 0
    a, b = _rows(tmp_path / "a" / "regret.csv"), _rows(tmp_path / "b" / "regret.csv")
    names = {r["scenario"] for r in a} | {r["scenario"] for r in b}
    assert len(names) == 2 and all(n.startswith("biased N=3 M=2 complete T=20 #") for n in names)
    assert {r["setting"] for r in a + b} == {"own"}
    label = Scenario(n_agents=3, n_arms=2, horizon=20).label
    assert {r["scenario"] for r in a} == {label}
    # read back, the curves keep their names
    assert {(c.scenario, c.setting) for c in read_csv(tmp_path / "a" / "regret.csv")} == {
        (label, "own")
    }


def test_a_setting_names_its_rows(tmp_path: Path) -> None:
    argv = ["bench", *SMALL, "--setting", "neighbours", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert {r["setting"] for r in _rows(tmp_path / "regret.csv")} == {"neighbours"}
