"""``fedbandit reproduce`` and the papers' claims on the papers' grids.

The claim tests run the report's own rows (the papers' grids: N = 50 agents and 100
arms for Li & Song, Fig. 2's settings for Zhu et al.) at a short horizon and judge them
as the report does: every difference's 95% bootstrap interval over trials on the
claimed side. A claim that does not reproduce is a strict expected failure naming why
(the report, ``docs/reproduction.md``, says the same at the paper's scale), never an
assertion of its contradicted form.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from baselines.papers.li_song import (
    experiments,
    fig12,
    run_figure,
    table1,
    table2_costs,
)
from baselines.papers.zhu import fig2
from fedbandit_env.reproduce import markdown, row_keys, run_rows, scale_names
from fedbandit_env.reproduce.core import VERDICTS, Row, less, ordering, ratio_ci, stability

ROOT = Path(__file__).resolve().parents[3]


def test_the_judge_catches_a_difference_of_four_standard_errors_and_not_of_none() -> None:
    rng = np.random.default_rng(0)
    caught = 0
    for _ in range(200):
        a, b = rng.normal(0, 1, 30), rng.normal(1.2, 1, 30)  # 4.6 standard errors apart
        caught += less(a, b) == "confirmed"
    assert caught >= 195  # power 0.9995 at 4.6 standard errors of the difference
    false = sum(less(rng.normal(0, 1, 30), rng.normal(0, 1, 30)) == "confirmed" for _ in range(400))
    assert false <= 400 * 0.025 + 3 * np.sqrt(400 * 0.025)  # one-sided 2.5% level, 3 sd
    assert less(np.ones(4), np.ones(4)) == "equal"


def test_an_ordering_is_reproduced_only_when_every_pair_is() -> None:
    hi, mid, lo = np.full(5, 3.0) + np.arange(5) * 0.01, np.full(5, 2.0), np.full(5, 1.0)
    assert ordering(["a", "b", "c"], [hi, mid, lo])[0] == "reproduced"
    noisy = np.array([1.9, 2.1, 2.0, 1.95, 2.05])  # the same mean as mid, within noise
    assert ordering(["a", "b", "c"], [hi, mid, noisy])[0] == "partly"
    assert ordering(["a", "b"], [lo, hi])[0] == "not reproduced"
    r, low, high = ratio_ci(np.array([1.0, 1.1, 0.9]), np.array([2.0, 2.0, 2.0]))
    assert r == pytest.approx(0.5)
    assert low <= r <= high


def test_a_row_refuses_an_unknown_verdict() -> None:
    with pytest.raises(ValueError, match="verdict"):
        Row("k", "p", "i", "c", "s", "m", "maybe", "w")  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_quick_report_has_every_row_with_a_verdict_and_its_figures(tmp_path: Path) -> None:
    from fedbandit_env.reproduce import reproduce

    report = reproduce("quick", tmp_path)
    ROW_KEYS = row_keys()
    rows = json.loads((tmp_path / "figures" / "reproduction" / "rows.json").read_text())
    assert [r["key"] for r in rows] == list(ROW_KEYS)
    assert all(r["verdict"] in VERDICTS and r["why"] for r in rows)
    text = report.read_text()
    for figure in re.findall(r"!\[[^]]*\]\(([^)]+)\)", text):
        assert (tmp_path / figure).is_file(), figure
    assert text.count("<a id=") == len(ROW_KEYS)


def test_the_committed_report_is_at_the_paper_scale_and_covers_every_row() -> None:
    ROW_KEYS = row_keys()
    text = (ROOT / "docs" / "reproduction.md").read_text()
    assert "fedbandit reproduce --scale paper" in text
    for key in ROW_KEYS:
        assert f'<a id="{key}"></a>' in text, key
    rows = json.loads((ROOT / "docs" / "figures" / "reproduction" / "rows.json").read_text())
    assert {r["key"] for r in rows} == set(ROW_KEYS)
    for figure in re.findall(r"!\[[^]]*\]\(([^)]+)\)", text):
        assert (ROOT / "docs" / figure).is_file(), figure


@pytest.mark.slow
def test_regenerating_one_paper_keeps_the_others_rows(tmp_path: Path) -> None:
    from fedbandit_env.reproduce import reproduce

    reproduce("quick", tmp_path, ("dubey",))
    text = reproduce("quick", tmp_path, ("martinez_rubio",)).read_text()
    for key in row_keys(("dubey", "martinez_rubio")):
        assert f'<a id="{key}"></a>' in text, key
    assert "The rows of dubey were kept" in text
    rows = json.loads((tmp_path / "figures" / "reproduction" / "rows.json").read_text())
    assert [r["key"] for r in rows] == list(row_keys(("dubey", "martinez_rubio")))
    # a report at another scale is not merged into
    text = reproduce("quick", tmp_path / "other", ("martinez_rubio",)).read_text()
    assert "dubey_fig1a" not in text


@pytest.mark.slow
def test_a_stored_scale_resumes_without_running_a_trial_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import baselines.papers.dubey as dubey
    from fedbandit_env.cli import main

    store = tmp_path / "store"
    main(["reproduce", "--scale", "quick", "--papers", "dubey", "--out", str(tmp_path / "a"),
          "--store", str(store), "--jobs", "2"])  # fmt: skip
    kept = sorted(p.name for p in (store / "runs").iterdir())
    # every trial once: (A) 2 M x 2 eps x 2 variants, (B) 3 levels x 3 runs, (C) 2 d x 2,
    # less (B)'s Theorem-1 private run, which is (A)'s at M = 8, eps = 1
    assert len(kept) == (8 + 9 + 4 - 1) * dubey.SCALES["quick"]["trials"]

    def no_trial(*args: object, **kwargs: object) -> None:
        raise AssertionError("a stored trial ran again")

    monkeypatch.setattr("fedbandit_env.runner.sweep.execute", no_trial)
    monkeypatch.setattr(dubey, "run_fast", no_trial)
    main(["reproduce", "--scale", "quick", "--papers", "dubey", "--out", str(tmp_path / "b"),
          "--store", str(store)])  # fmt: skip
    first, again = (json.loads((tmp_path / x / "figures/reproduction/rows.json").read_text())
                    for x in ("a", "b"))  # fmt: skip
    assert [r["measured"] for r in first] == [r["measured"] for r in again]
    assert sorted(p.name for p in (store / "runs").iterdir()) == kept
    # read back in a blink, the rows still carry the time their trials took when they ran
    took = sum(float(np.load(store / "runs" / name)["seconds"].sum()) for name in kept)
    assert sum(r["seconds"] for r in again) == pytest.approx(took)
    assert "count the time those trials took" in (tmp_path / "b" / "reproduction.md").read_text()
    with pytest.raises(SystemExit):
        main(["reproduce", "--scale", "quick", "--papers", "dubey", "--jobs", "0"])


def test_reproduce_in_a_checkout_writes_to_results_not_the_committed_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fedbandit_env.cli import main

    committed = {p: p.read_bytes() for p in (ROOT / "docs").rglob("*") if p.is_file()}
    monkeypatch.chdir(tmp_path)
    main(["reproduce", "--scale", "quick", "--papers", "dubey"])
    assert (tmp_path / "results" / "reproduce" / "reproduction.md").is_file()
    assert not (tmp_path / "docs").exists()
    after = {p: p.read_bytes() for p in (ROOT / "docs").rglob("*") if p.is_file()}
    assert after == committed  # docs/ untouched: `git status` stays clean


def test_a_verdict_a_half_of_the_trials_overturns_is_marked_unstable() -> None:
    rng = np.random.default_rng(0)

    def judge(v: list[np.ndarray]) -> str:
        return ordering(["a", "b"], v)[0]

    clear = [5 + rng.standard_normal(10), rng.standard_normal(10)]
    assert stability(judge, clear).startswith("stable: reproduced")
    # the whole confirms a > b, the odd-numbered trials alone do not
    mixed = [np.array([9.0, 1.0, 9.1, 1.1, 8.9, 0.9, 9.0, 1.0]), np.ones(8)]
    text = stability(judge, mixed)
    assert text.startswith("unstable"), text
    assert stability(judge, [np.ones(3), np.zeros(3)]).startswith("not assessed")
    row = Row("k", "p", "i", "c", "s", "m", "partly", "w", stability=text)
    report = markdown([row], "quick", 1.0, "f")
    assert "**partly** (unstable) |" in report and "1 of them unstable" in report
    assert f"- **Stability**: {text}" in report


def test_a_long_scale_of_a_resumable_paper_without_a_store_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fedbandit_env.cli import main

    monkeypatch.setattr("fedbandit_env.reproduce.reproduce", lambda *a: tmp_path / "r.md")
    out = ["--out", str(tmp_path)]
    main(["reproduce", "--scale", "paper", *out])
    assert "without --store, an interruption loses every finished trial of dubey" in (
        capsys.readouterr().err
    )
    for quiet in (["--scale", "quick"], ["--scale", "paper", "--store", str(tmp_path / "s")],
                  ["--scale", "paper", "--papers", "zhu"]):  # fmt: skip
        main(["reproduce", *quiet, *out])
        assert "without --store" not in capsys.readouterr().err, quiet


def test_bad_scales_and_papers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="scale"):
        run_rows("huge", tmp_path)
    with pytest.raises(ValueError, match="papers"):
        run_rows("quick", tmp_path, ("zhu", "smith"))
    assert set(scale_names()) == {"quick", "paper"}
    assert "## p, i: exact" in markdown(
        [Row("k", "p", "i", "c", "s", "m", "exact", "w")], "quick", 1.0, "f"
    )


# --- the papers' claims, on their grids ---------------------------------------------


def test_li_song_table1_link_counts_are_exact() -> None:
    assert table1().verdict == "exact"


@pytest.fixture(scope="module")
def li_song_figures() -> dict:
    return experiments(30_000)


@pytest.mark.slow
def test_li_song_fig5_regret_falls_as_participation_rises(li_song_figures: dict) -> None:
    curves = run_figure(li_song_figures["fig5_participation"], 4)
    verdict, pairs = ordering([c.policy for c in curves], [c.final_per_agent for c in curves])
    assert verdict == "reproduced", pairs


@pytest.mark.slow
def test_li_song_table2_cost_claims_hold_under_the_texts_link_reading(
    li_song_figures: dict,
) -> None:
    runs = li_song_figures["table2_hybrid"]
    row = table2_costs(run_figure(runs, 2), runs)
    assert "every claim holds" in row.why, row.why  # the text's reading
    assert "case 2 < case 3 contradicted" in row.why  # the proof's count: case 3 cheapest


@pytest.mark.slow
def test_li_song_fig6_on_an_instance_whose_rounds_all_finish_regret_falls_with_r() -> None:
    from baselines.papers.li_song import fig6_instance

    seed, curves = fig6_instance(30_000, 3)
    assert seed > 0  # the default instance (seed 0) cannot finish its rounds
    verdict, pairs = ordering(
        [c.policy for c in curves[:3]], [c.final_per_agent for c in curves[:3]]
    )
    assert verdict == "reproduced", pairs


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="not reproduced (docs/reproduction.md, Fig. 6): on an instance whose rounds all "
    "finish, R = 5 keeps lowering the regret (29% below R = 4 at T = 1e6); the paper's "
    "'almost the same' needs log T ~ 4 rounds to eliminate every arm",
)
def test_li_song_fig6_r4_and_r5_are_almost_the_same() -> None:
    from baselines.papers.li_song import _similar, fig6_instance

    _, curves = fig6_instance(30_000, 3)
    assert _similar([c.final_per_agent for c in curves[2:]])[0]


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="not reproduced (docs/reproduction.md, Fig. 10): with homogeneous rewards the "
    "ring's longer rounds cost only local exploitation of an already well-estimated arm",
)
def test_li_song_fig10_star_and_complete_below_ring(li_song_figures: dict) -> None:
    curves = run_figure(li_song_figures["fig10_graphs"], 4)
    by = {c.policy: c.final_per_agent for c in curves}
    assert less(by["complete"], by["ring"]) == "confirmed"
    assert less(by["star"], by["ring"]) == "confirmed"


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="not reproduced (docs/reproduction.md, Fig. 12): CDP, HDP and DDP differ only "
    "by the local exploitation of in-flight rounds; at T = 1e6 within the trial-to-trial "
    "spread, at this short horizon the hybrid's cheap exploitation steps even put it lowest",
)
def test_li_song_fig12_cdp_below_hdp_below_ddp(tmp_path: Path) -> None:
    assert fig12(30_000, 4, tmp_path).verdict == "reproduced"


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="partly reproduced (docs/reproduction.md, Fig. 4): eps = 0.1 is worse, but from "
    "eps = 0.3 up the privacy terms of S(r) and C(r) are small and the regrets within noise",
)
def test_li_song_fig4_regret_rises_at_every_step_down_in_epsilon(li_song_figures: dict) -> None:
    curves = run_figure(li_song_figures["fig4_privacy"], 4)
    assert ordering([c.policy for c in curves], [c.final_per_agent for c in curves])[0] == (
        "reproduced"
    )


@pytest.mark.slow
def test_li_song_fig4_the_strongest_privacy_costs_the_most_regret(li_song_figures: dict) -> None:
    curves = run_figure(li_song_figures["fig4_privacy"], 4)
    assert less(curves[-1].final_per_agent, curves[0].final_per_agent) == "confirmed"


@pytest.mark.slow
def test_zhu_fig2b_regret_falls_as_epsilon_grows(tmp_path: Path) -> None:
    rows, _ = fig2("b", 20_000, 5, tmp_path)
    assert rows[0].verdict == "reproduced", rows[0].why


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="partly reproduced (docs/reproduction.md, Fig. 2(a), T = 1e6, 100 trials): with "
    "alpha_1 inside eq. 12's root and the calibrated privacy term some trials stay on a "
    "wrong arm, and only epsilon = 5 > no privacy is confirmed",
)
def test_zhu_fig2a_regret_falls_as_epsilon_grows(tmp_path: Path) -> None:
    rows, _ = fig2("a", 20_000, 5, tmp_path)
    assert rows[0].verdict == "reproduced", rows[0].why


@pytest.mark.slow
def test_zhu_fig2c_fed_ucb_learns_on_the_hospital_records(tmp_path: Path) -> None:
    rows, _ = fig2("c", 20_000, 5, tmp_path)
    assert rows[1].verdict == "reproduced", rows[1].measured
