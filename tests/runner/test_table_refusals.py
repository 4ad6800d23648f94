"""``fedbandit table`` refuses cells no run writes (issue 53, item 4): on ``d3a7325`` a
hand-edited ``nan`` became ``nan +- nan`` (exit 0), a negative pseudo-regret a wrong mean
(exit 0), and a non-numeric cell failed with ``could not convert string to float:
'abc'``, naming no file, row or column."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from fedbandit_env.cli import main

SMALL = ["--policies", "local_ucb,random", "--agents", "3", "--arms", "2", "--horizon", "20",
         "--trials", "2", "--no-plot", "--no-progress"]  # fmt: skip


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("regret", "nan", r"line 5, column 'regret': nan is not a regret any run writes"),
        ("regret", "-3.5", r"line 5, column 'regret': -3.5 is not a regret any run writes"),
        ("regret", "abc", r"line 5, column 'regret': 'abc' is not a number"),
        ("agent", "1.5", r"line 5, column 'agent': '1.5' is not an integer"),
        ("comm_cost", "inf", r"line 5, column 'comm_cost': inf is not a comm_cost"),
    ],
)
def test_a_hand_edited_cell_is_refused_naming_file_line_and_column(
    column: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *SMALL, "--out", str(tmp_path)]) == 0
    table = tmp_path / "regret.csv"
    with table.open() as f:
        rows = list(csv.DictReader(f))
    rows[3][column] = value  # line 5 of the file
    with table.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["table", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert str(table) in err
    assert re.search(message, err), err
