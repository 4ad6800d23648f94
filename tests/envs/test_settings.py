"""Information settings: one env stack for every policy, refusals naming what is
missing, privacy spent from the stack whoever acts, a setting column in results."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from fedbandit_env import registry
from fedbandit_env.cli import main
from fedbandit_env.cli.options import default_policies
from fedbandit_env.policies import Requirements
from fedbandit_env.privacy import tree_epsilon_spent
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.results import bootstrap_ci, read_csv
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.settings import SETTINGS, get_setting
from fedbandit_env.wrappers import PrivateRewards

SMALL = {"n_agents": 4, "n_arms": 3, "horizon": 120}


def test_every_protocol_setting_has_a_private_twin() -> None:
    for name, info in SETTINGS.items():
        if not info.private and name != "sync":
            twin = SETTINGS[f"{name}+private"]
            assert (twin.protocol, twin.private) == (info.protocol, True)
    # sync is the linear scenarios' setting: PrivateRewards is per arm, so no twin; the
    # linear family privatises the statistics it sends itself
    assert "sync+private" not in SETTINGS
    with pytest.raises(ValueError, match="setting must be one of"):
        get_setting("telepathy")


@pytest.mark.parametrize(
    ("setting", "needs", "message"),
    [
        ("local", Requirements(message_dim=4), "carries no messages"),
        ("gossip", Requirements(protocol="server"), "needs the 'server' protocol"),
        ("gossip", Requirements(message_dim=4, epsilon=1.0), "gives raw rewards"),
        ("gossip+private", Requirements(message_dim=4, epsilon=2.0), "gives epsilon=1.0"),
    ],
)
def test_a_policy_that_needs_more_than_the_setting_gives_is_refused(
    setting: str, needs: Requirements, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        get_setting(setting).requirements(needs, epsilon=1.0)


def test_the_setting_decides_the_env_whatever_the_policy_asks() -> None:
    scenario = Scenario(**SMALL, setting="neighbours+private", epsilon=0.5)
    env = scenario.make_env(Requirements(message_dim=6, public_dim=3))
    assert isinstance(env, PrivateRewards) and env.epsilon == 0.5
    assert type(env.unwrapped.protocol).__name__ == "Broadcast"
    local = Scenario(**SMALL, setting="local").make_env(Requirements())
    assert not isinstance(local, PrivateRewards) and local.unwrapped.message_dim == 0
    with pytest.raises(ValueError, match="needs an epsilon > 0"):
        Scenario(**SMALL, setting="gossip+private")


def test_policies_declare_the_settings_they_are_meant_for() -> None:
    assert registry.spec("fed_ucb").runs_in("gossip+private")
    assert not registry.spec("fed_ucb").runs_in("gossip")
    assert registry.spec("local_ucb").settings is None
    assert registry.spec("cdp_mab").settings == ("server",)
    with pytest.raises(ValueError, match="not meant for the 'local' setting"):
        evaluate("gossip_ucb", Scenario(**SMALL, setting="local"))
    with pytest.raises(ValueError, match="settings of 'x' must be names of"):
        registry.PolicySpec("x", "fedbandit_env.policies:FixedArm", settings=("moon",))


def test_the_fast_path_serves_a_setting_that_adds_nothing_and_agrees() -> None:
    # Gossip_UCB in "neighbours" is its own env with the broadcast protocol: fast path,
    # the same numbers as the PettingZoo path through the setting
    scenario = Scenario(**SMALL, setting="neighbours")
    fast = evaluate("gossip_ucb", scenario, trials=2, record_every=40)
    slow = evaluate("gossip_ucb", scenario, trials=2, record_every=40, interactive=True)
    assert fast.meta["path"] == "fast" and slow.meta["path"] == "interactive"
    np.testing.assert_allclose(fast.regret, slow.regret)
    assert fast.setting == slow.setting == "neighbours"
    # in a private setting Gossip_UCB needs PrivateRewards, which its kernel does not
    # draw: the PettingZoo path runs it
    private = Scenario(**SMALL, setting="gossip+private", epsilon=1.0)
    assert evaluate("gossip_ucb", private, trials=1).meta["path"] == "interactive"
    # Fed_UCB's own env is the setting's: fast, and equal to run_fast on the plain scenario
    fed = evaluate("fed_ucb", private, {"epsilon": 1.0}, trials=2, record_every=40)
    plain = run_fast("fed_ucb", Scenario(**SMALL), 2, record_every=40, progress=False)
    assert fed.meta["path"] == "fast"
    np.testing.assert_allclose(fed.regret, plain.regret)


def test_privacy_spent_is_the_setting_stack_whoever_acts() -> None:
    scenario = Scenario(**SMALL, setting="gossip+private", epsilon=1.0)
    expected = tree_epsilon_spent(np.array([60, 120]), 120, 1.0)
    for pid, options in (("local_ucb", {}), ("random", {}), ("fed_ucb", {"epsilon": 1.0})):
        c = evaluate(pid, scenario, options, trials=1, record_every=60)
        np.testing.assert_allclose(c.privacy_spent, expected)
    # without a setting the silent local_ucb spends nothing, as before
    assert evaluate("local_ucb", Scenario(**SMALL), trials=1).privacy_spent[-1] == 0.0


def test_the_oracle_is_a_privileged_bound_outside_the_setting() -> None:
    scenario = Scenario(**SMALL, setting="gossip+private", epsilon=1.0)
    inside = evaluate("oracle_ucb", scenario, trials=2, record_every=60)
    outside = evaluate("oracle_ucb", Scenario(**SMALL), trials=2, record_every=60)
    np.testing.assert_allclose(inside.regret, outside.regret)
    assert inside.setting == "gossip+private" and inside.meta["privileged"] == 1


def test_bench_with_a_setting_writes_the_setting_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--setting", "gossip", "--agents", "4", "--arms", "3", "--horizon", "60"]
    argv += ["--trials", "3", "--no-plot", "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "setting gossip: one random edge" in out and "oracle_ucb*" in out
    assert "95% CI" in out
    with (tmp_path / "regret.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {r["setting"] for r in rows} == {"gossip"}
    # the default policies in a setting are those meant for it
    meant = {p for p in default_policies() if registry.spec(p).runs_in("gossip")}
    assert {r["policy"] for r in rows} == meant | {"oracle_ucb"}  # and the pooled reference
    assert {"gossip_ucb", "local_ucb", "random"} <= meant and "cdp_mab" not in meant
    assert {c.setting for c in read_csv(tmp_path / "regret.csv")} == {"gossip"}


def test_a_sweep_over_settings_skips_policies_not_meant_for_one(tmp_path: Path) -> None:
    argv = ["sweep", "--policies", "local_ucb,fed_ucb", "--agents", "4", "--arms", "3"]
    argv += ["--horizon", "60", "--trials", "2", "--grid", "setting=local,gossip+private"]
    argv += ["--no-plot", "--no-progress", "--jobs", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    curves = read_csv(tmp_path / "results.csv")
    assert sorted((c.setting, c.policy) for c in curves) == [
        ("gossip+private", "fed_ucb"),
        ("gossip+private", "local_ucb"),
        ("local", "local_ucb"),
    ]


def test_bootstrap_interval_covers_the_mean_at_its_nominal_rate() -> None:
    # 400 experiments of 20 Gaussian trials. The percentile bootstrap's coverage at
    # n = 20 lies in [0.92, 0.96] (it undercovers slightly: the 1/n variance, z for t);
    # three binomial(400, p) standard deviations beyond either end give [352, 396].
    rng = np.random.default_rng(0)
    samples = [rng.normal(size=20) for _ in range(400)]

    def covered(level: float) -> int:
        return sum(
            lo <= 0.0 <= hi
            for lo, hi in (bootstrap_ci(x, level=level, resamples=2000) for x in samples)
        )

    assert 352 <= covered(0.95) <= 396
    assert covered(0.5) <= 250  # power: a 50% interval (a third as wide) is caught
