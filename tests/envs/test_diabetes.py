"""Zhu et al.'s real-data problem (Fig. 2(c)): the shipped table, the readings, the env,
and an installed wheel that needs no raw data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fedbandit_env.problems.diabetes import (
    DATA_PATH,
    arm_samples,
    diabetes,
    readmission_table,
    records,
)
from fedbandit_env.scenario.scenario import Scenario

SHARED = Path(__file__).resolve().parents[3] / "shared"
ARCHIVE = SHARED / "data" / "diabetes" / "dataset_diabetes.zip"


@pytest.mark.skipif(not ARCHIVE.exists(), reason="the raw UCI archive is not on this machine")
def test_the_shipped_table_is_what_the_build_script_derives_from_the_archive(
    tmp_path: Path,
) -> None:
    from fedbandit_env.problems.diabetes_build import build

    out = build(ARCHIVE, tmp_path / "rebuilt.npz")
    with np.load(out) as rebuilt:
        np.testing.assert_array_equal(rebuilt["codes"], records())


@pytest.mark.skipif(not ARCHIVE.exists(), reason="the raw UCI archive is not on this machine")
def test_the_exclusive_arms_and_rewards_match_a_direct_reading_of_the_csv() -> None:
    import csv
    import io

    with zipfile.ZipFile(ARCHIVE) as z, z.open("dataset_diabetes/diabetic_data.csv") as f:
        rows = list(csv.DictReader(io.TextIOWrapper(f, encoding="utf-8", newline="")))
    # an independent count: records steady on insulin and on nothing else, no dose change
    meds = [c for c in rows[0] if c not in ("readmitted", "change", "diabetesMed")][24:]
    assert len(meds) == 23 and meds[0] == "metformin"
    only_insulin = [
        r for r in rows
        if r["insulin"] == "Steady" and all(r[m] == "No" for m in meds if m != "insulin")
    ]  # fmt: skip
    arm, reward, _ = arm_samples("exclusive")
    # steady insulin alone, or with other steady drugs of the same group (none: a group of one)
    assert (arm == 0).sum() == len(only_insulin)
    assert reward[arm == 0].sum() == sum(r["readmitted"] == ">30" for r in only_insulin)


def test_the_table_has_every_record_and_the_papers_arm_sizes() -> None:
    assert records().shape == (101766,)
    arm, _, rec = arm_samples("exclusive")
    assert np.bincount(arm).tolist() == [16261, 4223, 5311, 6426, 23403]
    assert np.unique(rec).size == rec.size  # exclusive: a record is one arm's sample
    _, _, rec_o = arm_samples("overlap")
    assert rec_o.size > rec.size and set(rec) <= set(rec_o)


def test_the_order_split_has_the_local_bias_the_paper_reports_and_the_random_one_not() -> None:
    ordered = diabetes(3, split="order")
    shuffled = diabetes(3, split="random", seed=0)
    assert ordered.best_arm == shuffled.best_arm == 2
    assert len(ordered.conflicting_agents) == 1  # hospital 2 prefers arm 4 (index 3)
    assert len(shuffled.conflicting_agents) == 0
    _, counts = readmission_table(3)
    assert counts.sum() == 16261 + 4223 + 5311 + 6426 + 23403
    # equal thirds of the 101,766 records (not of the usable samples, whose share varies)
    assert counts.sum(axis=1).tolist() == [21321, 17830, 16473]


def test_both_readings_of_the_overlapping_groups_agree_on_the_best_arm() -> None:
    a = diabetes(3, arms="exclusive").global_means
    b = diabetes(3, arms="overlap").global_means
    assert a.argmax() == b.argmax() == 2
    assert np.abs(a - b).max() < 0.025


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_agents": 0}, "n_agents"),
        ({"split": "shuffled"}, "split"),
        ({"arms": "both"}, "arms"),
        ({"n_agents": 40000}, "no record"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        diabetes(**kwargs)


def test_a_scenario_with_other_arms_or_noise_is_refused() -> None:
    with pytest.raises(ValueError, match="5 arms"):
        Scenario(n_agents=3, n_arms=4, instance="diabetes")
    with pytest.raises(ValueError, match="Bernoulli"):
        Scenario(n_agents=3, n_arms=5, instance="diabetes", noise="gaussian")


def test_the_diabetes_env_passes_the_pettingzoo_api_and_gossip_ucb_learns_on_it() -> None:
    from pettingzoo.test import parallel_api_test

    from fedbandit_env.runner.evaluate import evaluate

    s = Scenario(n_agents=3, n_arms=5, instance="diabetes", horizon=3000)
    parallel_api_test(s.make_env(), num_cycles=50)
    gossip = evaluate("gossip_ucb", s, trials=3).final_per_agent
    rand = evaluate("random", s, trials=3).final_per_agent
    # random's regret is exactly T times the mean gap; Gossip_UCB must be far below it
    assert rand.mean() == pytest.approx(3000 * diabetes().gaps.mean(), rel=0.05)
    assert gossip.max() < 0.5 * rand.min()


def test_held_out_diabetes_instances_are_random_splits_of_the_records() -> None:
    s = Scenario(n_agents=3, n_arms=5, instance="diabetes", instances="held_out")
    a, b = s.problem_for(1), s.problem_for(2)
    assert not np.array_equal(a.local_means, b.local_means)
    # the same records, so the same best arm; the global means (an average of the
    # hospitals' rates, not the pooled rate) move with the hospitals' sizes only
    assert a.best_arm == b.best_arm == diabetes().best_arm
    assert np.abs(a.global_means - b.global_means).max() < 0.01


@pytest.mark.slow
def test_an_installed_wheel_runs_the_diabetes_problem_without_the_repository(
    tmp_path: Path,
) -> None:
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "wheel"), str(root)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "wheel").glob("fedbandit_env-*.whl")
    assert "fedbandit_env/data/diabetes.npz" in zipfile.ZipFile(wheel).namelist()
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    script = (
        "import fedbandit_env, pathlib\n"
        "assert pathlib.Path(fedbandit_env.__file__).is_relative_to(pathlib.Path.cwd()), "
        "fedbandit_env.__file__\n"
        "from fedbandit_env.scenario.scenario import Scenario\n"
        "env = Scenario(n_agents=3, n_arms=5, instance='diabetes', horizon=5).make_env()\n"
        "obs, infos = env.reset(seed=0)\n"
        "obs, rew, term, trunc, infos = env.step({a: 0 for a in env.agents})\n"
        "print(sorted(rew), env.unwrapped.problem.best_arm)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=target, capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
    )  # fmt: skip
    assert out.stdout.strip() == "['agent_0', 'agent_1', 'agent_2'] 2"
    assert DATA_PATH.exists()


# --- the same records as a linear contextual bandit -------------------------------


def test_the_linear_problem_shows_one_patient_and_its_five_medications_a_step() -> None:
    from fedbandit_env.problems.diabetes import DIABETES_DIM, diabetes_linear

    p = diabetes_linear()
    assert p.dim == DIABETES_DIM == 40 and p.set_size == 5
    assert float(np.linalg.norm(p.features, axis=1).max()) <= 1 + 1e-12  # L = 1
    sets = p.draw_sets(np.random.default_rng(3))
    assert (sets % 5 == np.arange(5)).all() and (np.diff(sets // 5, axis=1) == 0).all()
    # each row of a group is the same patient's context in another medication's block
    rows = p.features[sets[0]].reshape(5, 5, 8)
    assert all(np.array_equal(rows[a, a], rows[0, 0]) for a in range(5))
    assert p.local_means.min() >= 0 and p.local_means.max() <= 1


def test_the_compiled_grouped_draws_are_the_python_ones_bit_for_bit() -> None:
    from fedbandit_env.problems.diabetes import diabetes_linear
    from fedbandit_env.problems.kernels import draw_sets

    p = diabetes_linear()
    mine = np.empty((p.n_agents, 5), dtype=np.int64)
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    for _ in range(20):
        draw_sets(p.draw_code, p.n_features, a, mine)
        np.testing.assert_array_equal(mine, p.draw_sets(b))


def test_the_fitted_parameters_carry_each_hospitals_readmission_rates() -> None:
    from fedbandit_env.problems.diabetes import diabetes_linear, hospitals, patient_contexts

    p = diabetes_linear()
    arm, reward, rec = arm_samples()
    z, hosp = patient_contexts()[rec], hospitals(3)[rec]
    for i in range(3):
        for a in range(5):
            rows = (hosp == i) & (arm == a)
            fitted = z[rows] @ p.theta[i, a * 8 : (a + 1) * 8]
            # least squares with an intercept: the fit's mean is the rate, up to the ridge
            assert fitted.mean() == pytest.approx(reward[rows].mean(), abs=0.01)


@pytest.mark.slow
def test_a_linear_diabetes_scenario_runs_on_both_paths_with_the_same_regret() -> None:
    from fedbandit_env.runner.evaluate import evaluate

    s = Scenario(n_agents=3, n_arms=5, instance="diabetes_linear", horizon=300)
    assert s.dim == 40 and s.linear
    fast = evaluate("lin_ucb", s, trials=2)
    slow = evaluate("lin_ucb", s, trials=2, interactive=True)
    np.testing.assert_allclose(fast.regret, slow.regret)
    with pytest.raises(ValueError, match="dim 40"):
        Scenario(n_agents=3, n_arms=5, instance="diabetes_linear", dim=10)
    drawn = Scenario(n_agents=3, n_arms=5, instance="diabetes_linear", instances="held_out")
    assert not np.array_equal(drawn.problem_for(1).theta, drawn.problem_for(2).theta)
