"""A bare ``pip install`` (no extras) then the README's commands (issue 53, item 2).

An extra that is not installed is simulated by hiding its module (``sys.modules[name] =
None`` makes ``import name`` fail as it does without the package). ``bench`` and
``sweep`` write their results and go on without the plot; ``train`` and ``sweep
--cluster`` end with one line naming the extra to install (exit status 2), never a
traceback. On ``d3a7325`` ``bench`` printed its table, wrote the CSV, then exited 1 with
two chained tracebacks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fedbandit_env.cli import main
from fedbandit_env.extras import MissingExtra, require

SMALL = ["--agents", "3", "--arms", "2", "--horizon", "30", "--trials", "2", "--no-progress"]


def _hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_require_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "matplotlib", "matplotlib.pyplot")
    with pytest.raises(
        MissingExtra, match=r"plotting needs matplotlib: pip install 'fedbandit_env\[plots\]'"
    ):
        require("matplotlib.pyplot", "plots", "plotting")


def test_bench_without_matplotlib_writes_its_results_and_says_why_there_is_no_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _hide(monkeypatch, "matplotlib", "matplotlib.pyplot")
    assert main(["bench", "--policies", "local_ucb", *SMALL, "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert (tmp_path / "regret.csv").exists() and (tmp_path / "config.json").exists()
    assert not (tmp_path / "regret.png").exists()
    assert "no plot: plotting needs matplotlib: pip install 'fedbandit_env[plots]'" in err
    assert "Traceback" not in out + err and "regret.png" not in out


def test_sweep_without_matplotlib_writes_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _hide(monkeypatch, "matplotlib", "matplotlib.pyplot")
    argv = [
        "sweep",
        "--policies",
        "local_ucb",
        *SMALL,
        "--grid",
        "graph=ring",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    assert (tmp_path / "results.csv").exists()
    assert "no plot: plotting needs matplotlib" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "hidden", "extra"),
    [
        (["train", "ppo", "--timesteps", "10"], ("stable_baselines3",), "rl"),
        (
            ["sweep", "--policies", "local_ucb", *SMALL, "--cluster", "local:1"],
            ("dask", "dask.distributed"),
            "cluster",
        ),
    ],
    ids=["train", "sweep_cluster"],
)
def test_a_missing_extra_ends_in_one_line_not_a_traceback(
    argv: list[str],
    hidden: tuple[str, ...],
    extra: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _hide(monkeypatch, *hidden)
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"pip install 'fedbandit_env[{extra}]'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
