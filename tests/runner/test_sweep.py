"""fedbandit sweep: grid, resume after an interruption, engines agree, tidy table, plot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fedbandit_env.runner.sweep as sweep_module
from fedbandit_env.cli import build_parser, main
from fedbandit_env.cli.sweep import parse_grid, sweep_runs
from fedbandit_env.runner import RegretCurves, read_csv
from fedbandit_env.runner.sweep import Run, execute, run_sweep
from fedbandit_env.scenario.scenario import Scenario

SMALL = ["--agents", "4", "--arms", "3", "--horizon", "300", "--record-every", "50"]
GRID = ["--grid", "graph=complete,ring", "--grid", "epsilon=0.5,2"]
POLICIES = ["--policies", "gossip_ucb,fed_ucb,local_ucb,cdp_mab"]


def _argv(out: Path, *extra: str) -> list[str]:
    return ["sweep", *POLICIES, *SMALL, *GRID, "--trials", "3", "--out", str(out), *extra]


def _assert_same(a: list[RegretCurves], b: list[RegretCurves]) -> None:
    assert [(c.scenario, c.policy) for c in a] == [(c.scenario, c.policy) for c in b]
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.t, y.t) and np.array_equal(x.seeds, y.seeds)
        assert np.array_equal(x.regret, y.regret)
        assert np.array_equal(x.comm_cost, y.comm_cost)
        assert np.array_equal(x.privacy_spent, y.privacy_spent)
        assert np.array_equal(x.privacy_delta, y.privacy_delta, equal_nan=True)


def _runs() -> list[Run]:
    s = Scenario(n_agents=4, n_arms=3, horizon=200)
    return [
        Run("base", s, pid, opts, seed=1, trial=j, record_every=40)
        for pid, opts in (("gossip_ucb", {}), ("fed_ucb", {"epsilon": 1.0}), ("ddp_mab", {}))
        for j in range(3)
    ]


def test_grid_points_are_the_product_of_axes_and_checked() -> None:
    base = build_parser().parse_args(["sweep"])
    points = parse_grid(["graph=complete,ring", "agents=4,6", "graph=star"], base)
    # the later graph axis replaces the earlier one; the first axis varies slowest
    assert [p for _, p in points] == [
        {"graph": "star", "agents": "4"},
        {"graph": "star", "agents": "6"},
    ]
    assert parse_grid([], base) == [("base", {})]
    assert parse_grid(["components=2x2/1x4"], base)[1][1] == {"components": "1x4"}
    for bad in ("graph", "trials=3", "nope=1", "graph=ring,ring"):
        with pytest.raises(ValueError):
            parse_grid([bad], base)
    args = build_parser().parse_args(["sweep", "--grid", "graph=moebius"])
    with pytest.raises(SystemExit):  # the value is checked by the option's own parser
        sweep_runs(args)


def test_sweep_run_is_the_same_trial_as_bench(tmp_path: Path) -> None:
    bench = ["bench", *POLICIES, *SMALL, "--graph", "ring", "--epsilon", "0.5", "--trials", "3"]
    assert main([*bench, "--out", str(tmp_path / "b"), "--no-plot", "--no-progress"]) == 0
    argv = _argv(tmp_path / "s", "--jobs", "1", "--no-plot", "--no-progress")
    assert main(argv) == 0
    from_bench = read_csv(tmp_path / "b" / "regret.csv")
    from_sweep = [
        c
        for c in read_csv(tmp_path / "s" / "results.csv")
        if c.scenario == "graph=ring,epsilon=0.5"
    ]
    for c in from_sweep:  # the bench names its scenario by its fields (Scenario.label)
        c.scenario = from_bench[0].scenario
    _assert_same(from_bench, from_sweep)


def test_sweep_resumes_after_an_interruption_without_recomputing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = tmp_path / "clean"
    assert main(_argv(clean, "--jobs", "1", "--no-plot", "--no-progress")) == 0
    calls: list[str] = []

    def interrupted(run: Run) -> RegretCurves:
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(run.key)
        return execute(run)

    monkeypatch.setattr(sweep_module, "execute", interrupted)
    out = tmp_path / "resumed"
    with pytest.raises(SystemExit) as stop:
        main(_argv(out, "--jobs", "1", "--no-plot", "--no-progress"))
    assert stop.value.code == 130
    assert len(list((out / "runs").glob("*.npz"))) == 5
    assert not list((out / "runs").glob("*.part"))
    first = list(calls)

    def counted(run: Run) -> RegretCurves:
        calls.append(run.key)
        return execute(run)

    monkeypatch.setattr(sweep_module, "execute", counted)
    assert main(_argv(out, "--jobs", "1", "--no-plot", "--no-progress")) == 0
    again = calls[len(first) :]
    config = json.loads((out / "sweep.json").read_text())
    distinct = {r["key"] for r in config["runs"]}
    # 4 scenarios x 4 policies x 3 seeds = 48 runs; local_ucb and gossip_ucb ignore
    # epsilon, so 2 x 3 x 2 of them repeat: 36 distinct, each computed exactly once
    assert len(config["runs"]) == 48 and len(distinct) == 36
    assert not set(first) & set(again) and len(first) + len(again) == 36
    _assert_same(read_csv(clean / "results.csv"), read_csv(out / "results.csv"))
    # a third call finds everything stored and computes nothing
    assert main(_argv(out, "--jobs", "1", "--no-plot", "--no-progress")) == 0
    assert len(calls) == 36


@pytest.mark.slow
def test_local_dask_cluster_and_local_processes_give_identical_results(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    runs = _runs()
    sequential = run_sweep(runs, tmp_path / "seq", jobs=1, progress=False)
    processes = run_sweep(runs, tmp_path / "loky", jobs=2, progress=False)
    cluster = run_sweep(runs, tmp_path / "dask", cluster="local:2", progress=False)
    _assert_same(sequential, processes)
    _assert_same(sequential, cluster)
    assert [c.regret.shape for c in cluster] == [(3, 4, 5)] * 3


def test_tidy_table_csv_and_parquet_agree(tmp_path: Path) -> None:
    argv = ["sweep", "--policies", "gossip_ucb,cdp_mab", *SMALL, "--grid", "graph=ring,star"]
    assert (
        main([*argv, "--trials", "2", "--out", str(tmp_path), "--jobs", "1", "--no-progress"]) == 0
    )
    csv_curves = read_csv(tmp_path / "results.csv")
    rows = sum(c.regret.size for c in csv_curves)
    assert rows == 2 * 2 * 2 * 4 * 6  # scenarios x policies x seeds x agents x steps
    header = (tmp_path / "results.csv").read_text().splitlines()[0]
    assert header == (
        "scenario,setting,policy,seed,agent,t,regret,comm_cost,privacy_spent,privacy_delta,"
        "privileged"
    )
    spent = {(c.scenario, c.policy): c.privacy_spent[-1] for c in csv_curves}
    assert spent[("graph=ring", "gossip_ucb")] == np.inf
    assert spent[("graph=star", "cdp_mab")] == pytest.approx(4 * 1.0)  # n eps, eps = 1
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == ["graph=ring.png", "graph=star.png"]
    assert (tmp_path / "summary.png").stat().st_size > 10_000
    pytest.importorskip("pyarrow")
    _assert_same(csv_curves, read_csv(tmp_path / "results.parquet"))


@pytest.mark.slow
def test_plot_redraws_sweep_and_bench_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_out, bench_out = tmp_path / "s", tmp_path / "b"
    argv = ["--policies", "local_ucb,random", *SMALL, "--no-plot", "--no-progress"]
    assert main(["sweep", *argv, "--grid", "arms=2,3", "--out", str(sweep_out), "--jobs", "1"]) == 0
    assert main(["bench", *argv, "--out", str(bench_out)]) == 0
    assert not (sweep_out / "summary.png").exists() and not (bench_out / "regret.png").exists()
    assert main(["plot", str(sweep_out)]) == 0
    assert main(["plot", str(bench_out), "--out", str(tmp_path / "figs"), "--log-x"]) == 0
    assert sorted(p.name for p in (sweep_out / "plots").iterdir()) == ["arms=2.png", "arms=3.png"]
    assert (sweep_out / "summary.png").stat().st_size > 10_000
    assert (tmp_path / "figs" / "regret.png").stat().st_size > 10_000
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main(["plot", str(tmp_path / "nothing")])
    assert stop.value.code == 2


def test_sweep_reads_its_grid_from_a_toml_file(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text(
        'policies = ["local_ucb"]\ntrials = 2\nhorizon = 100\nagents = 4\n'
        '[grid]\ncomponents = [[2, 2], "1x4"]\ngraph = ["complete"]\n'
    )
    out = tmp_path / "out"
    argv = ["sweep", "--config", str(config), "--out", str(out), "--no-plot", "--no-progress"]
    assert main([*argv, "--jobs", "1"]) == 0
    labels = [c.scenario for c in read_csv(out / "results.csv")]
    assert labels == ["components=2,2,graph=complete", "components=1x4,graph=complete"]
    (tmp_path / "bad.toml").write_text("[scenario]\nagents = 3\n")
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--config", str(tmp_path / "bad.toml")])
    assert stop.value.code == 2


def test_the_example_sweep_config_describes_its_grid() -> None:
    from fedbandit_env.cli.config import config_args

    example = Path(__file__).parents[2] / "examples" / "sweep.toml"
    args = build_parser().parse_args(["sweep", *config_args(example)])
    runs, scenarios = sweep_runs(args)
    assert len(scenarios) == 3 * 2 and len(runs) == 6 * 4 * 5
    assert "graph=star,epsilon=0.5" in scenarios


def test_a_retrained_model_invalidates_its_stored_runs(tmp_path: Path) -> None:
    model = tmp_path / "ppo.zip"
    model.write_bytes(b"first")
    run = Run("base", Scenario(n_agents=2, n_arms=2, horizon=10), f"ppo:{model}")
    before = run.key
    model.write_bytes(b"second")
    assert run.key != before
    assert Run("base", run.scenario, "random").key == Run("other", run.scenario, "random").key


def test_a_figure_never_draws_two_policies_in_one_colour() -> None:
    """A figure's lines are told apart even where the stable colours clash (a saved
    model's name hashed onto a reference's colour; once, 11 references drew
    coop_ts_relay and oracle_ucb both green)."""
    from fedbandit_env import registry
    from fedbandit_env.runner.plot import PALETTE, figure_colours, policy_colour

    ids = registry.policy_ids()
    models = [f"ppo:runs/m{k}/model.zip" for k in range(200)]
    clash = next(m for m in models if policy_colour(m) == policy_colour(ids[0]))
    names = [ids[0], clash, *ids[1 : len(PALETTE) - 1]]
    colours = figure_colours(names)
    assert len(set(colours.values())) == len(names)
    assert colours[ids[0]] == policy_colour(ids[0])  # a free colour is kept
    assert colours[clash] != policy_colour(clash)  # a taken one is not
