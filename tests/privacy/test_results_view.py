"""A results folder in the threat model (issue 49, item 2): a privileged view.

The audit of what ``fedbandit bench`` publishes, from the seat of someone handed the
folder of a private run with secure noise: ``regret.csv`` gives every agent's cumulative
regret at every step, hence the gap of the arm it pulled, hence (gaps being distinct)
the arm; ``config.json`` gives the seed and the scenario, hence the env and each trial's
seed; replaying the arms on that env draws every raw reward again, exactly. So the
folder is not a post-processing of the private releases (epsilon = infinity for every
agent, whatever the mechanism), and every ``config.json`` says so (``privacy_view``), as
does ``bench`` when a private policy ran. The power check: the same attack on a folder
whose regret has been coarsened to one record in 8 steps recovers nothing exactly.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedbandit_env.cli import main
from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.policies import Requirements
from fedbandit_env.runner.results import RESULTS_VIEW
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.seeding import spawn, split_trial_seed

TRIALS, HORIZON, N = 2, 64, 3


@pytest.fixture
def raw_rewards(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, float]]:
    """Every raw reward the simulator draws, step by step (the ground truth)."""
    drawn: list[dict[str, float]] = []
    step = FederatedMABEnv.step

    def recording(self: FederatedMABEnv, actions: Any) -> Any:
        out = step(self, actions)
        drawn.append({a: float(r) for a, r in out[1].items()})
        return out

    monkeypatch.setattr(FederatedMABEnv, "step", recording)
    return drawn


def _attack(folder: Path, policy: str) -> np.ndarray:
    """The raw rewards ``(trials, T, N)`` regenerated from a results folder alone."""
    config = json.loads((folder / "config.json").read_text())
    gaps = max(config["global_means"]) - np.asarray(config["global_means"])
    regret = np.zeros((TRIALS, N, HORIZON + 1))
    with (folder / "regret.csv").open() as f:
        for row in csv.DictReader(f):
            if row["policy"] == policy:
                regret[int(row["seed"]), int(row["agent"]), int(row["t"])] = float(row["regret"])
    increments = np.diff(regret, axis=2)  # (trials, N, T): the gap of each pull
    arms = np.abs(increments[..., None] - gaps).argmin(axis=-1)
    fields = {**config["scenario"], "setting": None, "epsilon": None}
    env = Scenario(**fields).make_env(Requirements())  # the simulator, no wrapper
    out = np.zeros((TRIALS, HORIZON, N))
    for j, child in enumerate(spawn(config["seed"], TRIALS)):
        env.reset(seed=split_trial_seed(child)[0])
        for t in range(HORIZON):
            _, rewards, *_ = env.step({f"agent_{i}": int(arms[j, i, t]) for i in range(N)})
            out[j, t] = [rewards[f"agent_{i}"] for i in range(N)]
    return out


def _bench(folder: Path, extra: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    argv = ["bench", "--policies", "private_coop_ts,fed_ucb", "--setting", "neighbours+private",
            "--epsilon", "1", "--agents", str(N), "--arms", "3", "--horizon", str(HORIZON),
            "--trials", str(TRIALS), "--no-plot", "--no-progress", "--privacy-noise", "secure",
            "--out", str(folder), *extra]  # fmt: skip
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("record_every", [1, 8], ids=["published", "coarsened"])
def test_a_results_folder_gives_back_every_raw_reward(
    record_every: int,
    tmp_path: Path,
    raw_rewards: list[dict[str, float]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = _bench(tmp_path, ["--record-every", str(record_every)], capsys)
    truth = np.array([[r[f"agent_{i}"] for i in range(N)] for r in raw_rewards])
    truth = truth.reshape(2, TRIALS, HORIZON, N)  # policies, trials, steps, agents
    for p, policy in enumerate(["private_coop_ts", "fed_ucb"]):
        exact = np.array_equal(_attack(tmp_path, policy), truth[p])
        assert exact is (record_every == 1), policy
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["privacy_view"] == RESULTS_VIEW and RESULTS_VIEW.startswith("privileged")
    assert "a results folder is a privileged view" in printed
