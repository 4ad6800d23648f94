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


def test_the_speed_horizon_is_the_budget_at_the_probed_rate_within_its_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``speed_horizon`` is what ``fedbandit speed`` plays: the probed rate times the
    budget over ``N``, at least 200 steps, at most the size's cap (a tenth quick)."""
    rates = {"rate": 1e6}
    monkeypatch.setattr(speed, "measure_fast", lambda *args: rates["rate"])
    monkeypatch.setattr(speed, "BUDGET_S", 3.0)
    big = {"n_agents": 50, "n_arms": 100, "graph": "complete"}
    assert speed.speed_horizon("gossip_ucb", SMALL) == int(1e6 * 3.0 / 3)
    assert speed.speed_horizon("gossip_ucb", SMALL, quick=True) == int(1e6 * 0.3 / 3)
    assert speed.speed_horizon("gossip_ucb", big) == int(1e6 * 3.0 / 50)
    rates["rate"] = 1e9  # capped
    assert speed.speed_horizon("gossip_ucb", SMALL) == 2_000_000
    assert speed.speed_horizon("gossip_ucb", SMALL, quick=True) == 200_000
    assert speed.speed_horizon("gossip_ucb", big) == 100_000
    assert speed.speed_horizon("gossip_ucb", big, quick=True) == 10_000
    rates["rate"] = 10.0  # at least 200 steps
    assert speed.speed_horizon("gossip_ucb", big) == 200


def test_the_speed_line_plays_each_policy_at_its_speed_horizon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``run`` times the fast path at the horizon :func:`speed.speed_horizon` gives."""
    monkeypatch.setattr(speed, "SETTINGS", (("tiny", SMALL),))
    monkeypatch.setattr(speed, "speed_horizon", lambda policy, setting, quick: 321)
    played: list[int] = []
    real = speed.measure_fast

    def spy(policy: str, setting: dict[str, object], horizon: int, trials: int,
            workers: int) -> float:  # fmt: skip
        played.append(horizon)
        return real(policy, setting, horizon, trials, workers)

    monkeypatch.setattr(speed, "measure_fast", spy)
    monkeypatch.setattr(speed, "measure_pettingzoo", lambda *args: 1.0)
    monkeypatch.setattr(speed, "measure_plain_loop", lambda *args: 1.0)
    import fedbandit_env.runner.vector_speed as vector_speed

    monkeypatch.setattr(vector_speed, "wrapper_lines", lambda steps: [])
    speed.run(quick=True)
    # each policy: the first call (compile) on 200 steps, then one thread and every core
    assert played == [200, 321, 321] * len(registry.tagged("speed"))
