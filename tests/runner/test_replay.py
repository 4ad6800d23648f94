"""The fast path and the interactive path agree step for step on the same seeds, through
the check the package ships (:func:`fedbandit_env.testing.check_replay`).

For every reference policy with a fast path, on several graphs and gossip protocols,
with and without privacy: the arms every agent pulls, the rewards it observes (raw, or
the private increment under PrivateRewards), the per-agent cumulative regret and the
network's communication cost are equal at every step, bit for bit.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedbandit_env import registry
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_replay

CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("local_ucb", {"graph": "ring"}, {}),
    ("random", {"graph": "complete"}, {}),
    ("oracle_ucb", {"graph": "star"}, {}),
    ("oracle_ucb", {"graph": "complete", "noise": "gaussian", "sigma": 0.5}, {}),
    ("gossip_ucb", {"graph": "complete"}, {}),
    ("gossip_ucb", {"graph": "ring"}, {}),
    ("gossip_ucb", {"graph": "star", "protocol": "neighbour_gossip"}, {}),
    (
        "gossip_ucb",
        {"graph": "ring", "protocol": "broadcast", "instance": "zhu", "noise": "gaussian"},
        {},
    ),
    # the faulty loop (baselines/gossip/faulty.py): loss, delay, both, every protocol
    ("gossip_ucb", {"graph": "ring", "loss": 0.3}, {}),
    ("gossip_ucb", {"graph": "complete", "delay": 3}, {}),
    ("gossip_ucb", {"graph": "ring", "protocol": "broadcast", "loss": 0.5, "delay": 2}, {}),
    ("gossip_ucb", {"graph": "star", "protocol": "neighbour_gossip", "loss": 0.2, "delay": 1}, {}),
    ("gossip_ucb", {"graph": "complete", "loss": 1.0}, {}),
    ("fed_ucb", {"graph": "complete"}, {"epsilon": 2.0}),
    (
        "fed_ucb",
        {"graph": "ring", "instance": "zhu", "noise": "clipped_gaussian"},
        {"epsilon": 1.0, "confidence": "paper"},
    ),
    ("fed_ucb", {"graph": "star", "estimator": "honaker"}, {"epsilon": 5.0}),
    ("fed_ucb", {"graph": "complete"}, {"epsilon": np.inf}),
    ("fed_ucb", {"graph": "complete"}, {"epsilon": np.inf, "alpha_1_inside": False}),
    ("fed_ucb", {"graph": "ring"}, {"epsilon": 2.0, "alpha_1_inside": False}),
    ("fed_ucb", {"noise": "gaussian", "sigma": 0.7, "clip": (-0.5, 1.5)}, {"epsilon": 1.0}),
]


@pytest.mark.parametrize(
    ("policy", "setting", "params"), CASES, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(CASES)]
)
def test_fast_path_replays_the_interactive_path(
    policy: str, setting: dict[str, Any], params: dict[str, Any]
) -> None:
    scenario = Scenario(n_agents=4, n_arms=3, horizon=120, seed=3, **setting)
    _assert_paths_agree(policy, scenario, params, seed=11)


def _assert_paths_agree(
    policy: str, scenario: Scenario, params: dict[str, Any], seed: int
) -> np.ndarray:
    """Two trials on both paths through the shipped check
    (:func:`fedbandit_env.testing.check_replay`); returns the cumulative cost,
    ``(trials, T)``."""
    return check_replay(policy, scenario, params, seed=seed, trials=2).comm_cost


# Li & Song's elimination family needs longer runs to see several rounds.
ELIMINATION: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("cdp_mab", {"graph": "complete"}, {"epsilon": 1.0}),
    ("cdp_mab", {"instance": "homogeneous"}, {"epsilon": 0.5, "participation": 0.6}),
    ("cdp_mab", {"instance": "zhu"}, {"epsilon": None, "rounds": 2, "min_gap": 0.05}),
    ("ddp_mab", {"graph": "ring"}, {"epsilon": 1.0}),
    ("ddp_mab", {"graph": "star", "instance": "homogeneous"}, {"epsilon": None}),
    ("hdp_mab", {"graph": "star", "components": (2, 1, 3)}, {"epsilon": 1.0}),
    ("hdp_mab", {"graph": "path", "components": (6,)}, {"epsilon": 2.0}),
    ("hdp_mab", {"components": (1,) * 6}, {"epsilon": 1.0, "rounds": 3, "min_gap": 0.1}),
    # unbounded rewards: clipped by the scenario's range (ClipRewards), then the policy's
    ("cdp_mab", {"noise": "gaussian", "sigma": 0.5, "clip": (0.0, 1.0)}, {"epsilon": 1.0}),
    (
        "ddp_mab",
        {"graph": "ring", "noise": "gaussian", "sigma": 0.5, "clip": (-1.0, 2.0)},
        {"epsilon": 1.0, "clip": (0.1, 0.9)},
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("policy", "setting", "params"),
    ELIMINATION,
    ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(ELIMINATION)],
)
def test_fast_elimination_replays_the_interactive_path(
    policy: str, setting: dict[str, Any], params: dict[str, Any]
) -> None:
    scenario = Scenario(n_agents=6, n_arms=4, horizon=2500, gap=0.15, seed=5, **setting)
    cost = _assert_paths_agree(policy, scenario, params, seed=7)
    assert cost[0, -1] > 0  # rounds happened, so the replay covered communication


# Dubey & Pentland's linear family: thresholds and batches small enough for several
# synchronisations (so the replay covers the releases, the server sums and the tree).
LINEAR: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("lin_ucb", {}, {}),
    ("lin_ucb", {"noise": "gaussian", "sigma": 0.3, "heterogeneity": 0.1}, {"beta": 0.5}),
    ("pooled_lin_ucb", {"heterogeneity": 0.1}, {}),
    ("dec_fedlin_ucb", {"graph": "path"}, {"gamma": 2, "threshold": 15.0}),
    ("dec_fedlin_ucb", {"graph": "ring", "heterogeneity": 0.1}, {"gamma": 1, "threshold": 8.0}),
    ("dec_fedlin_ucb", {"graph": "path"}, {"gamma": 2, "sync": "fixed", "batch": 6}),
    # the published noise on the request rule; the corrected private variant, both bounds
    ("dec_fedlin_ucb", {"graph": "ring"}, {"gamma": 2, "threshold": 15.0, "epsilon": 3.0}),
    ("private_dec_fedlin_ucb", {"graph": "path"}, {"batch": 5}),
    ("private_dec_fedlin_ucb", {"graph": "star"}, {"gamma": 1, "batch": 7, "noise_bound": "each"}),
    ("fedlin_ucb", {}, {"threshold": 40.0}),
    ("fedlin_ucb_fixed", {"heterogeneity": 0.2}, {"batch": 9}),
    ("fedlin_ucb_dp", {}, {"threshold": 30.0}),
    ("private_fedlin_ucb", {}, {"batch": 5}),
    ("private_fedlin_ucb", {"instances": "held_out"}, {"batch": 4, "epsilon": 5.0}),
]


@pytest.mark.parametrize(
    ("policy", "setting", "params"),
    LINEAR,
    ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(LINEAR)],
)
def test_fast_linear_replays_the_interactive_path(
    policy: str, setting: dict[str, Any], params: dict[str, Any]
) -> None:
    scenario = Scenario(n_agents=3, n_arms=6, horizon=150, instance="dubey", dim=3, **setting)
    cost = _assert_paths_agree(policy, scenario, params, seed=4)
    if policy not in ("lin_ucb", "pooled_lin_ucb"):
        assert (cost[:, -1] >= 2 * 25.0 * scenario.n_agents).all()  # two rounds or more


def test_every_fast_policy_is_covered() -> None:
    """Every registered fast path is replayed: by the lists here, or by its family's own
    tests (a module under ``tests/`` that calls ``check_replay`` and names the id)."""
    fast = {p for p in registry.policy_ids() if registry.spec(p).has_fast_path}
    covered = {p for p, _, _ in CASES + ELIMINATION + LINEAR}
    for path in Path(__file__).parents[1].rglob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "test_replay.py" and "check_replay(" in text:
            covered |= {p for p in fast if f'"{p}"' in text}
    assert sorted(fast - covered) == []


def test_results_do_not_depend_on_the_number_of_workers() -> None:
    scenario = Scenario(n_agents=5, n_arms=4, horizon=300)
    one = run_fast("fed_ucb", scenario, 4, seed=2, record_every=50, progress=False, epsilon=1.0)
    two = run_fast(
        "fed_ucb", scenario, 4, seed=2, record_every=50, progress=False, epsilon=1.0, workers=2
    )
    np.testing.assert_array_equal(one.regret, two.regret)


def test_recording_keeps_memory_independent_of_the_horizon() -> None:
    scenario = Scenario(n_agents=3, n_arms=2, horizon=10_000)
    c = run_fast("local_ucb", scenario, 1, record_every=2500, progress=False)
    assert c.regret.shape == (1, 3, 4) and c.t.tolist() == [2500, 5000, 7500, 10_000]


def test_run_fast_rejects_bad_input() -> None:
    scenario = Scenario(n_agents=3, n_arms=2, horizon=10)
    with pytest.raises(ValueError, match="no fast path for 'ppo'"):
        run_fast("ppo", scenario, 1)
    with pytest.raises(ValueError, match="n_trials must be >= 1"):
        run_fast("random", scenario, 0)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        run_fast("random", scenario, 1, workers=0)


def test_the_faulty_loop_sees_the_faults() -> None:
    """The faulty cases above are not the fault-free run replayed: loss and delay change
    the arms Gossip_UCB pulls (so the replay there can fail)."""
    base = Scenario(n_agents=4, n_arms=3, horizon=200, seed=3, graph="ring")
    plain = run_fast("gossip_ucb", base, 1, progress=False, trace=True)
    for fault in ({"loss": 0.3}, {"delay": 3}):
        faulty = run_fast("gossip_ucb", replace(base, **fault), 1, progress=False, trace=True)
        assert not np.array_equal(plain.meta["arms"], faulty.meta["arms"]), fault


def test_the_shipped_replay_check_catches_a_fast_path_that_drifts() -> None:
    """Power check: a policy whose fast path is another policy's loop fails it."""
    registry.register(
        "replay_probe", "baselines.ucb:LocalUCB1", fast_entry_point="baselines.ucb.fast:run_random"
    )
    try:
        with pytest.raises(AssertionError, match="replay_probe: arms differ"):
            check_replay("replay_probe", Scenario(n_agents=3, n_arms=3, horizon=40))
    finally:
        registry.deregister("replay_probe")
