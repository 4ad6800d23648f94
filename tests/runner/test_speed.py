"""Smoke test of the throughput benchmark's pieces (no timing is asserted)."""

from __future__ import annotations

from fedbandit_env.runner import speed

SMALL = {"n_agents": 3, "n_arms": 2, "graph": "complete"}


def test_speed_measurements_run_and_report_positive_rates() -> None:
    for policy in ("gossip_ucb", "fed_ucb"):
        assert speed.measure_fast(policy, SMALL, 100, 2, 2) > 0
        assert speed.measure_pettingzoo(policy, SMALL, 20) > 0
        assert speed.measure_plain_loop(policy, SMALL, 20) > 0
    env_us, bare_us = speed.measure_noop_env(SMALL, 50)
    assert env_us > 0 and bare_us > 0
