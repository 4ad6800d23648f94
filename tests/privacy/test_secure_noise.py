"""Privacy, fourth round (issue 49, item 1): ``noise="secure"`` is one setting.

A policy's own ``noise`` option and the scenario's ``privacy_noise`` used to be two: a
policy given ``noise="secure"`` through ``evaluate`` took the compiled loop, whose noise
comes from the team's seeded streams, so two "secure" runs were equal bit for bit, and
equal to the seeded run; whoever held the seed regenerated the noise. Now whoever asks
for secure noise gets it on every path (the PettingZoo path draws it; the fast path
refuses it), and the two runs of every private policy differ, through ``evaluate`` and
through ``fedbandit bench``.

Secure noise's OS entropy is made reproducible here by a source unrelated to any run
seed (``mechanisms.fresh_generator`` replaced), so each assertion is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from fedbandit_env.cli import main
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers.base import ParallelWrapper

_LINEAR = {"n_agents": 3, "n_arms": 6, "horizon": 150, "instance": "dubey", "dim": 3}
_ELIM = {"n_agents": 4, "n_arms": 3, "horizon": 400}
# every policy whose own mechanism takes ``noise``
OWN_NOISE: dict[str, dict[str, Any]] = {
    "cdp_mab": _ELIM,
    "ddp_mab": _ELIM,
    "hdp_mab": _ELIM,
    "private_fedlin_ucb": _LINEAR,
    "private_dec_fedlin_ucb": _LINEAR,
    "fedlin_ucb_dp": _LINEAR,
}


class _Tap(ParallelWrapper):
    """The receivers' view: every message any agent hears (peers' and the server's)."""

    heard: ClassVar[list[np.ndarray]] = []

    def step(self, actions: dict[str, Any]) -> Any:
        out = super().step(actions)
        for obs in out[0].values():
            for key in ("messages", "server"):
                if key in obs:
                    _Tap.heard.append(np.asarray(obs[key], dtype=np.float64).ravel())
        return out


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> Callable[[], np.ndarray]:
    """Taps every env the runner builds; returns what the last run's receivers heard."""
    make_env = Scenario.make_env
    monkeypatch.setattr(Scenario, "make_env", lambda self, *a, **k: _Tap(make_env(self, *a, **k)))

    def take() -> np.ndarray:
        out = np.concatenate(_Tap.heard) if _Tap.heard else np.zeros(0)
        _Tap.heard.clear()
        return out

    take()
    return take


@pytest.mark.parametrize("policy", sorted(OWN_NOISE))
def test_a_policys_own_secure_noise_is_drawn_not_replayed(
    policy: str, entropy: list[int], heard: Callable[[], np.ndarray]
) -> None:
    scenario = Scenario(**OWN_NOISE[policy])
    assert evaluate(policy, scenario, trials=2).meta["path"] == "fast"  # seeded: compiled
    seeded = evaluate(policy, scenario, trials=2, interactive=True)
    views = [heard()]
    for _ in "ab":
        secure = evaluate(policy, scenario, {"noise": "secure"}, trials=2)
        assert secure.meta["path"] == "interactive"
        views.append(heard())
    # one fresh generator per agent and trial: the mechanism's own, not its team stream
    assert len(entropy) == 2 * 2 * scenario.n_agents
    assert views[0].size and views[0].size == views[1].size == views[2].size
    assert not np.array_equal(views[1], views[0])  # not the seed's noise
    assert not np.array_equal(views[1], views[2])  # fresh every run
    assert seeded.regret.shape == secure.regret.shape


@pytest.mark.parametrize("policy", ["cdp_mab", "private_fedlin_ucb"])
def test_the_scenarios_secure_noise_reaches_the_policys_own_mechanism(
    policy: str, entropy: list[int], heard: Callable[[], np.ndarray]
) -> None:
    evaluate(policy, Scenario(**OWN_NOISE[policy]), trials=1, interactive=True)
    seeded = heard()
    secure = evaluate(policy, Scenario(**OWN_NOISE[policy], privacy_noise="secure"), trials=1)
    assert secure.meta["path"] == "interactive" and entropy
    assert not np.array_equal(heard(), seeded)


def test_asking_for_seeded_noise_in_a_secure_scenario_is_refused() -> None:
    with pytest.raises(ValueError, match="one setting"):
        evaluate("cdp_mab", Scenario(privacy_noise="secure"), {"noise": "seeded"})


@pytest.mark.parametrize("where", ["option", "scenario"])
def test_the_fast_path_refuses_secure_noise(where: str) -> None:
    s = Scenario(
        n_agents=3,
        n_arms=2,
        horizon=10,
        privacy_noise="secure" if where == "scenario" else "seeded",
    )
    options = {"noise": "secure"} if where == "option" else {}
    with pytest.raises(ValueError, match="replays the seeded noise streams"):
        run_fast("cdp_mab", s, 1, progress=False, **options)


# every private policy of the registry, through the command line, in a setting it runs in
_ELIM_CLI = ["--agents", "4", "--arms", "3", "--horizon", "400"]
_LINEAR_CLI = [
    "--instance",
    "dubey",
    "--dim",
    "3",
    "--agents",
    "3",
    "--arms",
    "6",
    "--horizon",
    "150",
]
_SETTING_CLI = ["--agents", "4", "--arms", "3", "--horizon", "200", "--epsilon", "1"]
BENCH: dict[str, list[str]] = {
    "cdp_mab": _ELIM_CLI,
    "ddp_mab": _ELIM_CLI,
    "hdp_mab": _ELIM_CLI,
    "private_fedlin_ucb": _LINEAR_CLI,
    "private_dec_fedlin_ucb": _LINEAR_CLI,
    "fedlin_ucb_dp": _LINEAR_CLI,
    "fed_ucb": ["--setting", "neighbours+private", *_SETTING_CLI],
    "private_coop_ts": ["--setting", "gossip+private", *_SETTING_CLI],
}  # fmt: skip


def _bench(policy: str, out: Path, extra: list[str]) -> dict[str, Any]:
    argv = ["bench", "--policies", policy, "--trials", "2", "--no-plot", "--no-progress"]
    assert main([*argv, "--out", str(out), *BENCH[policy], *extra]) == 0
    config: dict[str, Any] = json.loads((out / "config.json").read_text())
    return config


@pytest.mark.parametrize("policy", sorted(BENCH))
def test_bench_with_secure_noise_differs_from_run_to_run(
    policy: str, tmp_path: Path, entropy: list[int], heard: Callable[[], np.ndarray]
) -> None:
    _bench(policy, tmp_path / "seeded", ["--interactive"])
    views = [heard()]
    for run in "ab":
        _bench(policy, tmp_path / run, ["--privacy-noise", "secure"])
        views.append(heard())
    assert entropy and views[0].size and views[0].size == views[1].size == views[2].size
    assert not np.array_equal(views[1], views[0]) and not np.array_equal(views[1], views[2])


@pytest.mark.parametrize("policy", ["tuned_private_ts", "index_private_ts", "private_coop_ts"])
def test_a_noise_option_for_a_policy_without_a_mechanism_is_the_settings(policy: str) -> None:
    """Issue 63: ``options={"noise": "secure"}`` raised a raw ``TypeError`` for the
    policies whose noise is the setting's ``PrivateRewards``; it now makes that noise
    secure (the same seed gives different runs; seeded noise, the same run)."""
    s = Scenario(n_agents=4, n_arms=3, horizon=60, setting="neighbours+private", epsilon=1.0)

    def final(noise: str) -> np.ndarray:
        return evaluate(policy, s, {"noise": noise}, trials=2, seed=5).regret[..., -1]

    np.testing.assert_array_equal(final("seeded"), final("seeded"))
    assert not np.array_equal(final("secure"), final("secure"))


def test_a_noise_option_with_no_noise_to_set_is_refused_in_one_line() -> None:
    s = Scenario(n_agents=4, n_arms=3, horizon=20, setting="neighbours")
    with pytest.raises(ValueError, match="tuned_ts has no noise of its own"):
        evaluate("tuned_ts", s, {"noise": "secure"}, trials=1)
    private = Scenario(n_agents=4, n_arms=3, horizon=20, setting="neighbours+private",
                       epsilon=1.0, privacy_noise="secure")  # fmt: skip
    with pytest.raises(ValueError, match="one setting"):
        evaluate("tuned_private_ts", private, {"noise": "seeded"}, trials=1)
    with pytest.raises(ValueError, match="noise must be 'seeded' or 'secure'"):
        evaluate("tuned_private_ts", private, {"noise": "os"}, trials=1)
