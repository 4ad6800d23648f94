"""The ``fedbandit bench`` main job."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from fedbandit_env.cli import main
from fedbandit_env.cli.options import default_policies
from fedbandit_env.runner import read_csv


def test_bench_writes_table_plot_csv_and_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    code = main(
        [
            "bench",
            "--horizon",
            "300",
            "--trials",
            "3",
            "--agents",
            "6",
            "--arms",
            "4",
            "--record-every",
            "50",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    for policy in ("local_ucb", "oracle_ucb", "random"):
        assert policy in text
    assert (out / "regret.png").stat().st_size > 10_000
    with (out / "regret.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == [
        "scenario",
        "setting",
        "policy",
        "seed",
        "agent",
        "t",
        "regret",
        "comm_cost",
        "privacy_spent",
        "privacy_delta",
        "privileged",
    ]
    policies = len(default_policies())  # the registered bench defaults
    assert len({r["policy"] for r in rows}) == policies
    assert len(rows) == policies * 3 * 6 * 6  # policies x trials x agents x recorded steps
    spent = {r["policy"]: float(r["privacy_spent"]) for r in rows if r["t"] == "300"}
    # raw means leave gossip_ucb's agents; local_ucb sends nothing; fed_ucb's tree has
    # spent its whole epsilon (=1, the default) by T = 300; CDP's n eps = 6 x 1
    assert spent["gossip_ucb"] == float("inf") and spent["local_ucb"] == 0.0
    # every one of these mechanisms is pure epsilon-DP: delta 0 on every row
    assert {float(r["privacy_delta"]) for r in rows} == {0.0}
    assert spent["fed_ucb"] == pytest.approx(1.0) and spent["cdp_mab"] == pytest.approx(6.0)
    early = {r["policy"]: float(r["privacy_spent"]) for r in rows if r["t"] == "50"}
    assert early["fed_ucb"] == pytest.approx(6 / 9)  # 6 of the 9 levels of T = 300
    config = json.loads((out / "config.json").read_text())
    assert config["scenario"]["horizon"] == 300 and config["trials"] == 3
    curves = {c.policy: c for c in read_csv(out / "regret.csv")}
    assert curves["oracle_ucb"].final_per_agent.mean() < curves["local_ucb"].final_per_agent.mean()
    summary = {r["policy"]: r for r in config["summary"]}
    assert summary["random"]["per_agent_mean"] == pytest.approx(
        curves["random"].final_per_agent.mean()
    )


def test_bench_runs_the_gossip_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "bench",
        "--policies",
        "gossip_ucb,fed_ucb",
        "--horizon",
        "100",
        "--trials",
        "2",
        "--agents",
        "4",
        "--arms",
        "3",
        "--epsilon",
        "2",
        "--out",
        str(tmp_path),
        "--no-progress",
        "--no-plot",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "gossip_ucb" in out and "fed_ucb" in out and "lambda_2=" in out
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["epsilon"] == 2.0
    fed = next(r for r in config["summary"] if r["policy"] == "fed_ucb")
    assert fed["epsilon"] == 2.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--policies", "nope"], "--policies must name known ids"),
        (["--horizon", "0"], "horizon must be >= 1, got 0"),
        (["--agents", "1"], "n_agents"),
        (["--trials", "0"], "--trials must be >= 1"),
        (["--components", "3,x"], "components must look like 20,20,10 or 20x5"),
        (["--policies", "ddp_mab", "--components", "2,2"], "needs a connected network"),
    ],
)
def test_bench_reports_bad_options(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--out", str(tmp_path), "--no-progress", "--no-plot", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_bench_fast_and_interactive_paths_agree(tmp_path: Path) -> None:
    common = [
        "bench",
        "--policies",
        "gossip_ucb,fed_ucb,local_ucb,oracle_ucb,random",
        "--horizon",
        "150",
        "--trials",
        "2",
        "--agents",
        "4",
        "--arms",
        "3",
        "--no-progress",
        "--no-plot",
        "--record-every",
        "10",
    ]
    assert main([*common, "--out", str(tmp_path / "fast"), "--workers", "2"]) == 0
    assert main([*common, "--out", str(tmp_path / "slow"), "--interactive"]) == 0
    fast = {c.policy: c for c in read_csv(tmp_path / "fast" / "regret.csv")}
    slow = {c.policy: c for c in read_csv(tmp_path / "slow" / "regret.csv")}
    assert fast.keys() == slow.keys()
    for policy, curve in fast.items():
        np.testing.assert_array_equal(curve.regret, slow[policy].regret)
    config = json.loads((tmp_path / "fast" / "config.json").read_text())
    assert {r["path"] for r in config["summary"]} == {"fast"}


@pytest.mark.slow
def test_bench_runs_li_song_policies_on_hybrid_components(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = [
        "bench",
        "--policies",
        "cdp_mab,hdp_mab,local_ucb",
        "--components",
        "3x2,1",
        "--graph",
        "star",
        "--horizon",
        "3000",
        "--trials",
        "2",
        "--rounds",
        "2",
        "--participation",
        "0.5",
        "--no-progress",
        "--no-plot",
    ]
    assert main([*common, "--out", str(tmp_path / "fast")]) == 0
    text = capsys.readouterr().out
    assert "3 star components [3, 3, 1]" in text and "comm cost" in text
    assert main([*common, "--out", str(tmp_path / "slow"), "--interactive"]) == 0
    fast = {c.policy: c for c in read_csv(tmp_path / "fast" / "regret.csv")}
    slow = {c.policy: c for c in read_csv(tmp_path / "slow" / "regret.csv")}
    for policy, curve in fast.items():
        np.testing.assert_array_equal(curve.regret, slow[policy].regret)
        np.testing.assert_array_equal(curve.comm_cost, slow[policy].comm_cost)
    # cdp_mab: ceil(0.5 * 7) = 4 uploaders per round, at most 2 rounds
    assert fast["cdp_mab"].comm_cost[0, -1] in (25.0 * 4, 25.0 * 4 * 2)
    config = json.loads((tmp_path / "fast" / "config.json").read_text())
    assert config["policy_options"]["cdp_mab"]["participation"] == 0.5
    assert config["scenario"]["components"] == [3, 3, 1]


def test_bench_reads_a_toml_config_and_the_command_line_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "ring.toml"
    config.write_text(
        'policies = ["ddp_mab", "local_ucb"]\nagents = 6\narms = 3\ngraph = "ring"\n'
        "horizon = 2000\ntrials = 5\nconflict-fraction = 0.5\nno_plot = true\n"
    )
    out = tmp_path / "out"
    argv = ["bench", "--config", str(config), "--trials", "2", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "N=6 agents, M=3 arms" in text and "ring graph" in text and "2 trials" in text
    saved = json.loads((out / "config.json").read_text())
    assert saved["policies"] == ["ddp_mab", "local_ucb"] and not (out / "regret.png").exists()
    config.write_text("agnets = 6\n")
    with pytest.raises(SystemExit):
        main([*argv, "--out", str(out)])
    assert "unrecognized arguments: --agnets" in capsys.readouterr().err


def test_table_merges_benches_of_one_scenario_and_keeps_horizons_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["bench", "--agents", "3", "--arms", "3", "--trials", "4", "--held-out"]
    common += ["--no-plot", "--no-progress"]
    for name, policies, horizon in (
        ("refs", "random,local_ucb", "60"),
        ("mine", "kl_ucb", "60"),
        ("long", "kl_ucb", "90"),
    ):
        args = ["--policies", policies, "--horizon", horizon, "--out", str(tmp_path / name)]
        assert main(common + args) == 0
    capsys.readouterr()
    assert main(["table", str(tmp_path / "refs"), str(tmp_path / "mine"), "--markdown"]) == 0
    text = capsys.readouterr().out
    assert text.count("| policy |") == 1  # one scenario, one table
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    assert {"random", "local_ucb", "kl_ucb"} <= set(rows)
    merged = read_csv(tmp_path / "refs" / "regret.csv") + read_csv(tmp_path / "mine" / "regret.csv")
    from fedbandit_env.runner.results import summary_rows

    kl = next(r for r in summary_rows(merged) if r["policy"] == "kl_ucb")
    assert kl["worse_than_random"] is not None  # random came from the other bench
    assert f"{100 * kl['worse_than_random']:.0f}%" in rows["kl_ucb"]
    assert f"{kl['per_agent_mean']:.1f} [" in rows["kl_ucb"]
    # another horizon is another table; a policy twice in one is refused
    assert main(["table", str(tmp_path / "refs"), str(tmp_path / "long")]) == 0
    assert capsys.readouterr().out.count("T = ") == 2
    with pytest.raises(SystemExit, match="kl_ucb twice"):
        main(["table", str(tmp_path / "mine"), str(tmp_path / "mine")])


def test_train_and_tune_help_list_only_what_they_read(capsys: pytest.CaptureFixture[str]) -> None:
    """A benchmark's options (--trials, the policies' own) are not in their help; given,
    they are refused with where they belong."""
    for command in ("train", "tune"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        for flag in ("--trials", "--record-every", "--no-plot", "--kappa", "--period"):
            assert flag not in text, (command, flag)
        assert "--horizon" in text
    with pytest.raises(SystemExit):
        main(["train", "ppo", "--kappa", "2"])
    assert "does not read --kappa" in capsys.readouterr().err


def test_a_second_bench_does_not_replace_the_first_without_a_word(tmp_path: Path) -> None:
    """Issue 53, item 3: the same --out twice replaced the first results in silence."""
    argv = ["bench", "--policies", "random", "--horizon", "10", "--trials", "2", "--no-plot",
            "--no-progress", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    first = (tmp_path / "regret.csv").read_bytes()
    with pytest.raises(SystemExit) as stop:
        main([*argv[:-4], "--horizon", "12", *argv[-3:]])
    assert stop.value.code == 2
    assert (tmp_path / "regret.csv").read_bytes() == first  # kept
    assert main([*argv, "--overwrite"]) == 0


def test_an_interrupted_bench_resumes_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 53, items 3-4: bench could not resume after Ctrl-C (sweep could). The
    policies it finished are read back, the rest run, and the results equal a bench that
    was never interrupted."""
    import fedbandit_env.cli.bench as bench_cli

    argv = ["bench", "--policies", "local_ucb,random", "--horizon", "30", "--trials", "2",
            "--no-plot", "--no-progress"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    real = bench_cli.evaluate
    calls: list[str] = []

    def interrupted(pid: str, *a: object, **k: object) -> object:
        calls.append(pid)
        if pid == "random":
            raise KeyboardInterrupt
        return real(pid, *a, **k)

    monkeypatch.setattr(bench_cli, "evaluate", interrupted)
    out = tmp_path / "cut"
    assert main([*argv, "--out", str(out)]) == 130
    assert "rerun with --resume" in capsys.readouterr().err
    calls.clear()
    monkeypatch.setattr(
        bench_cli, "evaluate", lambda pid, *a, **k: (calls.append(pid), real(pid, *a, **k))[1]
    )
    assert main([*argv, "--out", str(out), "--resume"]) == 0
    assert calls == ["random"]  # local_ucb was read back
    assert "local_ucb: read back" in capsys.readouterr().err
    assert (out / "regret.csv").read_bytes() == (tmp_path / "whole" / "regret.csv").read_bytes()
    assert not (out / bench_cli.PARTIAL).exists()  # whole: nothing left to resume
