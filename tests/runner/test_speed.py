"""Smoke test of the throughput benchmark's pieces (no timing is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbandit_env import registry
from fedbandit_env.runner import speed

SMALL = {"n_agents": 3, "n_arms": 2, "graph": "complete"}


def test_speed_measurements_run_and_report_positive_rates() -> None:
    for policy in ("gossip_ucb", "fed_ucb"):
        assert speed.measure_fast(policy, SMALL, 100, 2, 2) > 0
        assert speed.measure_pettingzoo(policy, SMALL, 20) > 0
        assert speed.measure_plain_loop(policy, SMALL, 20) > 0
    env_us, bare_us = speed.measure_noop_env(SMALL, 50)
    assert env_us > 0 and bare_us > 0


def test_the_measured_page_holds_every_row_and_the_conditions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(speed, "SETTINGS", (("tiny", SMALL),))
    monkeypatch.setattr(speed, "BUDGET_S", 0.05)
    page = tmp_path / "speed.md"
    rows = speed.run(quick=True, docs=page)
    text = page.read_text()
    policies = registry.tagged("speed")
    assert {r.policy for r in rows} == set(policies)
    assert len(rows) == 4 * len(policies)  # fast one thread, fast every core, PettingZoo, plain
    for r in rows:
        assert f"| tiny | `{r.policy}` | {r.path} | {r.agent_steps_per_s:,.0f} |" in text
    printed = capsys.readouterr().out
    assert "bare dict API" in printed and "bare dict API" in text  # the printed ratios too
    assert "cores" in text and "numpy" in text  # the conditions
