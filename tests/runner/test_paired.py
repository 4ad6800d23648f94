"""Paired statistics (``fedbandit table --against``): the definitions on hand-checked
data, the bootstrap interval's coverage under the null, its power against a shift, and
the matching of trials by index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedbandit_env.cli import main
from fedbandit_env.runner.paired import iqm, paired, paired_rows, probability_of_improvement
from fedbandit_env.runner.rollout import RegretCurves


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    x = np.array([9.0, -50.0, 1.0, 2.0, 3.0, 4.0, 5.0, 100.0])
    assert iqm(x) == np.mean([2.0, 3.0, 4.0, 5.0])  # 2 trimmed at each end
    assert iqm(np.arange(10.0)) == np.mean([2.0, 3.0, 4.0, 5.0, 6.0, 7.0])  # floor(2.5) = 2


def test_probability_of_improvement_counts_pairs_and_ties() -> None:
    assert probability_of_improvement(np.array([1.0]), np.array([1.0])) == 0.5
    assert probability_of_improvement(np.array([0.0, 3.0]), np.array([1.0, 2.0])) == 0.5
    assert probability_of_improvement(np.zeros(3), np.ones(4)) == 1.0


@pytest.mark.slow
def test_the_paired_interval_covers_a_zero_difference_at_its_level() -> None:
    """200 null experiments (paired data, equal means, n = 60): the 95% interval holds 0
    in a share within 3 binomial standard deviations of 0.95 (a percentile bootstrap
    under-covers a little at small n, so the check is one-sided below and loose above;
    4,000 resamples each, as the coverage does not hinge on the count)."""
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        instance = rng.gamma(2.0, 2.0, 60)  # the shared instance difficulty
        x, y = instance + rng.normal(0, 1, 60), instance + rng.normal(0, 1, 60)
        lo, hi = paired(x, y, seed=int(rng.integers(1000)), resamples=4000)["mean_diff_ci95"]
        hits += lo <= 0.0 <= hi
    sd = np.sqrt(0.95 * 0.05 / 200)
    assert hits / 200 >= 0.95 - 3 * sd


def test_a_shift_is_caught_and_pairing_is_what_catches_it() -> None:
    """A shift of 0.3 under instance spread 4: paired, the interval excludes 0; the
    instances' spread alone (unpaired) would swamp it."""
    rng = np.random.default_rng(1)
    instance = rng.gamma(2.0, 2.0, 100)
    y = instance + rng.normal(0, 0.2, 100)
    x = instance - 0.3 + rng.normal(0, 0.2, 100)
    stats = paired(x, y)
    assert stats["mean_diff_ci95"][1] < 0 and stats["lower_share"] > 0.8
    assert 0.4 < stats["prob_improvement"] < 0.6  # over all pairs: barely better
    same = paired(y, y)
    assert same["mean_diff"] == 0.0 and same["prob_improvement"] == 0.5


def _curves(name: str, values: list[float], seeds: list[int]) -> RegretCurves:
    regret = np.array(values, dtype=float).reshape(-1, 1, 1)
    return RegretCurves(name, np.array([5]), regret, seeds=np.array(seeds))


def test_rows_match_trials_by_index_and_name_what_is_missing() -> None:
    ref = _curves("ref", [1.0, 2.0, 3.0, 4.0, 5.0], [0, 1, 2, 3, 4])
    other = _curves("other", [0.0, 1.0, 9.0, 9.0], [2, 3, 5, 6])  # trials 2, 3 shared
    (row,) = paired_rows([ref, other], "ref")
    assert row["n"] == 2 and row["mean_diff"] == pytest.approx(((0 - 3) + (1 - 4)) / 2)
    with pytest.raises(ValueError, match="no such policy"):
        paired_rows([ref, other], "nope")
    with pytest.raises(ValueError, match="share no trial"):
        paired_rows([ref, _curves("far", [1.0], [9])], "ref")


def test_table_against_prints_a_paired_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    main(["bench", "--policies", "local_ucb,local_ts", "--horizon", "30", "--trials", "6",
          "--no-plot", "--no-progress", "--out", str(out)])  # fmt: skip
    capsys.readouterr()
    main(["table", str(out), "--against", "local_ts"])
    text = capsys.readouterr().out
    assert "paired against local_ts" in text and "P(improvement)" in text
    with pytest.raises(SystemExit, match="--against nope: no such policy"):
        main(["table", str(out), "--against", "nope"])


def test_the_bootstrap_is_rliables_size_and_resamples_by_counts() -> None:
    """50,000 resamples (rliable's default); each resample's IQM and probability of
    improvement, computed from counts, equal the direct statistics of the expanded
    resample (ties included)."""
    from fedbandit_env.runner import paired as paired_module

    assert paired_module.RESAMPLES == 50_000
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 5, 41).astype(float), rng.integers(0, 5, 41).astype(float)
    cx, cy = paired_module._counts(rng, 41, 30), paired_module._counts(rng, 41, 30)
    assert (cx.sum(axis=1) == 41).all()
    ox, oy = np.argsort(x, kind="stable"), np.argsort(y, kind="stable")
    iqms = paired_module._weighted_iqm(x[ox], cx[:, ox])
    places = paired_module._places(x, y[oy])
    poi = paired_module._weighted_improvement(cx, places, cy[:, oy])
    for r in range(30):
        xr, yr = np.repeat(x, cx[r]), np.repeat(y, cy[r])
        assert iqms[r] == pytest.approx(iqm(xr), abs=1e-12)
        direct = np.mean((xr[:, None] < yr[None, :]) + 0.5 * (xr[:, None] == yr[None, :]))
        assert poi[r] == pytest.approx(direct, abs=1e-12)


def test_each_iqm_has_an_interval_that_holds_its_point() -> None:
    rng = np.random.default_rng(4)
    y = rng.gamma(2.0, 2.0, 200)
    stats = paired(y - 1.0, y)
    for key in ("iqm", "iqm_against"):
        lo, hi = stats[f"{key}_ci95"]
        assert lo < stats[key] < hi
    assert stats["iqm_ci95"][1] < stats["iqm_against_ci95"][1]


def test_aggregate_averages_tasks_and_counts_wins() -> None:
    """Two tasks of different scales: a policy better by a clear shift in one and equal
    in the other has P(improvement) between the two tasks' values, an IQM ratio below
    1, and 1 win, 1 tie; its stratified interval is narrower than either task's."""
    from fedbandit_env.runner.paired import aggregate

    rng = np.random.default_rng(5)
    small = rng.gamma(2.0, 1.0, 300)
    large = 100 * rng.gamma(2.0, 1.0, 300)
    better = {"policy": "p", **paired(small - 1.0, small)}
    same = {"policy": "p", **paired(large + rng.normal(0, 1, 300), large)}
    (row,) = aggregate([[better], [same]])
    assert (row["wins"], row["ties"], row["losses"]) == (1, 1, 0)
    lo_task = min(better["prob_improvement"], same["prob_improvement"])
    hi_task = max(better["prob_improvement"], same["prob_improvement"])
    assert lo_task < row["prob_improvement"] < hi_task
    assert row["iqm_ratio_ci95"][1] < 1.0
    width = row["prob_improvement_ci95"][1] - row["prob_improvement_ci95"][0]
    for task in (better, same):
        assert width < task["prob_improvement_ci95"][1] - task["prob_improvement_ci95"][0]


def test_table_against_warns_on_few_trials_and_aggregates_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for h in ("20", "30"):
        main(["bench", "--policies", "local_ucb,local_ts", "--horizon", h, "--trials", "3",
              "--no-plot", "--no-progress", "--out", str(tmp_path / h)])  # fmt: skip
    capsys.readouterr()
    main(["table", str(tmp_path / "20"), str(tmp_path / "30"), "--against", "local_ts"])
    got = capsys.readouterr()
    assert got.err.count("3 paired trial(s) against local_ts; under 20") == 2, got.err
    assert "aggregate over the 2 tables against local_ts" in got.out
    assert "IQM / ref IQM [CI]" in got.out
