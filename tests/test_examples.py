"""Examples run to the end (smoke tests)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_tour_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / "tour.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "oracle_ucb: per-agent regret" in out


def test_zhu_fig2_reproduction_runs_small(tmp_path: Path) -> None:
    mod = runpy.run_path(str(EXAMPLES / "zhu_fig2.py"))
    out = mod["main"](
        ["--horizon", "200", "--trials", "2", "--no-progress", "--out", str(tmp_path)]
    )
    assert set(out) == {"fig2a", "fig2b"} and out["fig2a"][0] == 1.0
    assert (tmp_path / "fig2a.png").exists() and (tmp_path / "fig2b.csv").exists()
