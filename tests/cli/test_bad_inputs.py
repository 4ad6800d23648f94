"""The bad-input catalogue: each case gives a clear error naming what is wrong (or a
warning), across the env, the wrappers, the policies, the runner and the CLI (issue 19).

Every case asserts the exception type and a message that names the argument; the CLI
cases assert exit status 2 and one ``fedbandit: error:`` line, no traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_linear_v0, federated_mab_v0
from fedbandit_env.cli import main
from fedbandit_env.network import Network
from fedbandit_env.problems import MABProblem, conflicting
from fedbandit_env.protocols import RandomEdgeGossip
from fedbandit_env.registry import make as make_team
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import (
    AgentCrash,
    ArmActions,
    Byzantine,
    ClipRewards,
    FlattenObservations,
    Gossip,
    LinkFailures,
    LocalStatistics,
    MessageDelay,
    MessageLoss,
    PrivateRewards,
)


def _env(**kw: Any) -> Any:
    return federated_mab_v0.parallel_env(**{"horizon": 5, **kw})


def _talk(**kw: Any) -> Any:
    return _env(message_dim=2, **kw)


def _stepped(actions: Callable[[Any], Any]) -> Callable[[], Any]:
    def go() -> Any:
        env = _env()
        env.reset(seed=0)
        return env.step(actions(env))

    return go


CASES: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    # ---------------------------------------------------------------- the env
    "env n_agents 1": (lambda: _env(n_agents=1), ValueError, "n_agents must be >= 2, got 1"),
    "env n_arms 0": (lambda: _env(n_arms=0), ValueError, "n_arms must be >= 2"),
    "env horizon 0": (
        lambda: federated_mab_v0.parallel_env(horizon=0),
        ValueError,
        "horizon must be >= 1",
    ),
    "env horizon float": (
        lambda: federated_mab_v0.parallel_env(horizon=2.5),
        TypeError,
        "horizon must be an int",
    ),
    "env unknown graph": (lambda: _env(network="moon"), ValueError, "graph kind must be one of"),
    "env message_dim -1": (lambda: _env(message_dim=-1), ValueError, "message_dim must be >= 0"),
    "env message bounds reversed": (
        lambda: _env(message_dim=1, message_bounds=(1, 0)),
        ValueError,
        "message_bounds must satisfy low < high",
    ),
    "env negative link cost": (
        lambda: _env(link_costs=(-1, 1)),
        ValueError,
        "link_costs must be two finite numbers >= 0",
    ),
    "env render mode": (lambda: _env(render_mode="rgb"), ValueError, "render_mode must be"),
    "env problem type": (
        lambda: federated_mab_v0.FederatedMABEnv("means"),
        TypeError,
        "problem must be a MABProblem",
    ),
    "env network size": (
        lambda: federated_mab_v0.FederatedMABEnv(conflicting(4, 3, seed=0), Network.ring(5)),
        ValueError,
        "network",
    ),
    "env split": (
        lambda: federated_mab_v0.FederatedMABEnv(conflicting(4, 3, seed=0), split="test"),
        ValueError,
        "split must be one of",
    ),
    "env arm out of range": (
        _stepped(lambda env: dict.fromkeys(env.agents, 9)),
        ValueError,
        "arm",
    ),
    "env missing agents": (
        _stepped(lambda env: {"agent_0": 0}),
        ValueError,
        r"missing \['agent_1'",
    ),
    "env unknown agent": (
        _stepped(lambda env: {**dict.fromkeys(env.agents, 0), "agent_9": 0}),
        ValueError,
        r"unexpected \['agent_9'\]",
    ),
    "env step after the end": (
        lambda: _env().step({}),
        RuntimeError,
        "call reset",
    ),
    "env message wrong shape": (
        lambda: (
            lambda e: (e.reset(seed=0), e.step({a: {"arm": 0, "message": [1.0]} for a in e.agents}))
        )(_talk()),
        ValueError,
        r"message of agent_0 must have shape \(2,\)",
    ),
    "env message NaN": (
        lambda: (
            lambda e: (
                e.reset(seed=0),
                e.step({a: {"arm": 0, "message": [np.nan, 0.0]} for a in e.agents}),
            )
        )(_talk()),
        ValueError,
        "must be finite",
    ),
    "problem means out of range": (lambda: MABProblem([[1.5, 0.2]]), ValueError, "mean"),
    "linear env dim": (
        lambda: federated_linear_v0.parallel_env(dim=1),
        ValueError,
        "dim",
    ),
    # ---------------------------------------------------------------- the wrappers
    "private epsilon string": (
        lambda: PrivateRewards(_env(), epsilon="1"),
        TypeError,
        "epsilon must be a number",
    ),
    "private epsilon 0": (lambda: PrivateRewards(_env(), 0.0), ValueError, "epsilon must be"),
    "private twice": (
        lambda: PrivateRewards(PrivateRewards(_env(), 1.0), 1.0),
        ValueError,
        "already wrapped in PrivateRewards",
    ),
    "statistics twice": (
        lambda: LocalStatistics(LocalStatistics(_env())),
        ValueError,
        "already wrapped in LocalStatistics",
    ),
    "flatten twice": (
        lambda: FlattenObservations(FlattenObservations(_env())),
        ValueError,
        "already wrapped in FlattenObservations",
    ),
    "clip reversed": (lambda: ClipRewards(_env(), 1, 0), ValueError, "finite low < high"),
    "loss p 2": (lambda: MessageLoss(_talk(), 2.0), ValueError, r"p must lie in \[0, 1\]"),
    "loss without messages": (lambda: MessageLoss(_env(), 0.1), TypeError, "carries messages"),
    "delay negative": (lambda: MessageDelay(_talk(), -1), ValueError, "delay must be an int"),
    "delay max below min": (
        lambda: MessageDelay(_talk(), 3, 1),
        ValueError,
        "max_delay must be >= delay",
    ),
    "links fail 2": (lambda: LinkFailures(_talk(), 2, 0), ValueError, "fail must lie"),
    "crash unknown agent": (
        lambda: AgentCrash(_talk(), 0.1, agents=["bob"]),
        ValueError,
        "unknown agent 'bob'",
    ),
    "byzantine everyone": (
        lambda: Byzantine(_talk(), 4, "random"),
        ValueError,
        "count of Byzantine agents",
    ),
    "byzantine behaviour": (
        lambda: Byzantine(_talk(), 1, "shout"),
        ValueError,
        "behaviour must be one of",
    ),
    "gossip schedule": (lambda: Gossip(_talk(), "smoke"), ValueError, "schedule must be one of"),
    "gossip over a gossip protocol": (
        lambda: Gossip(_talk(protocol=RandomEdgeGossip())),
        ValueError,
        "broadcasts to neighbours",
    ),
    "arm actions message_fn": (
        lambda: ArmActions(_talk(), message_fn=3),
        TypeError,
        "message_fn must be callable",
    ),
    # ---------------------------------------------------------------- policies
    "unknown policy": (lambda: make_team("nope"), ValueError, "unknown policy"),
    "fed_ucb epsilon 0": (lambda: make_team("fed_ucb", epsilon=0.0), ValueError, "epsilon"),
    "cdp_mab epsilon 0": (lambda: make_team("cdp_mab", epsilon=0.0), ValueError, "epsilon"),
    "cdp_mab participation": (
        lambda: make_team("cdp_mab", participation=1.5),
        ValueError,
        "participation",
    ),
    "cdp_mab rounds without gap": (
        lambda: make_team("cdp_mab", rounds=3, min_gap=0.0),
        ValueError,
        "min_gap",
    ),
    "robust trim": (lambda: make_team("robust_gossip_ucb", trim=-1), ValueError, "trim"),
    "gossip alpha": (lambda: make_team("gossip_ucb", alpha_1=-1.0), ValueError, "alpha_1"),
    # ---------------------------------------------------------------- the scenario
    "scenario seed -1": (lambda: Scenario(seed=-1), ValueError, "seed must be >= 0"),
    "scenario link cost": (
        lambda: Scenario(link_costs=(-5.0, 1.0)),
        ValueError,
        "link_costs must be two finite numbers >= 0",
    ),
    "scenario sigma 0": (lambda: Scenario(sigma=0.0), ValueError, "sigma must be"),
    "scenario conflict fraction": (
        lambda: Scenario(conflict_fraction=2.0),
        ValueError,
        r"conflict_fraction must lie in \[0, 1\]",
    ),
    "scenario gap": (lambda: Scenario(gap=-1.0), ValueError, r"gap must lie in \(0, 1\)"),
    "scenario graph": (lambda: Scenario(graph="moon"), ValueError, "graph must be one of"),
    "scenario noise": (lambda: Scenario(noise="poisson"), ValueError, "noise must be one of"),
    "scenario protocol": (
        lambda: Scenario(protocol="pigeon"),
        ValueError,
        "protocol must be one of",
    ),
    "scenario estimator": (lambda: Scenario(estimator="x"), ValueError, "estimator must be"),
    "scenario epsilon 0": (lambda: Scenario(epsilon=0.0), ValueError, "epsilon must be > 0"),
    "scenario setting": (lambda: Scenario(setting="moon"), ValueError, "setting must be one of"),
    "scenario private setting": (
        lambda: Scenario(setting="local+private"),
        ValueError,
        "needs an epsilon",
    ),
    "scenario components": (
        lambda: Scenario(n_agents=6, components=(2, 2)),
        ValueError,
        "hold 4 agents",
    ),
    "scenario byzantine": (lambda: Scenario(n_agents=3, byzantine=3), ValueError, "byzantine"),
    "scenario attack": (lambda: Scenario(attack="x"), ValueError, "attack must be one of"),
    "scenario dim on MAB": (lambda: Scenario(dim=3), ValueError, "linear instances"),
    "scenario horizon": (lambda: Scenario(horizon=0), ValueError, "horizon must be >= 1"),
    # ---------------------------------------------------------------- the runner
    "evaluate trials 0": (
        lambda: evaluate("random", Scenario(horizon=5), trials=0),
        ValueError,
        "trials must be >= 1, got 0",
    ),
    "run_fast no fast path": (
        lambda: run_fast("robust_gossip_ucb", Scenario(horizon=5), 1, progress=False),
        ValueError,
        "no fast path",
    ),
    "run_fast fault": (
        lambda: run_fast("fed_ucb", Scenario(horizon=5, byzantine=1), 1, progress=False),
        ValueError,
        "does not model byzantine",
    ),
    "linear policy on MAB": (
        lambda: evaluate("lin_ucb", Scenario(horizon=5), trials=1),
        ValueError,
        "linear",
    ),
    "policy outside its setting": (
        lambda: evaluate("ddp_mab", Scenario(horizon=5, setting="neighbours"), trials=1),
        ValueError,
        "not meant for the 'neighbours' setting",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bad_input_gives_a_clear_error(name: str) -> None:
    make, error, match = CASES[name]
    with pytest.raises(error, match=match):
        make()


CLI_CASES: dict[str, tuple[list[str], str]] = {
    "seed -1": (["--seed", "-1"], "seed must be >= 0"),
    "c1 negative": (["--c1", "-5"], "link_costs must be two finite numbers >= 0"),
    "fed_ucb epsilon 0": (["--policies", "fed_ucb", "--epsilon", "0"], "epsilon must be > 0"),
    "cdp_mab epsilon 0": (["--policies", "cdp_mab", "--epsilon", "0"], "epsilon"),
    # nan must not quietly mean "no privacy" (inf does, on purpose)
    "cdp_mab epsilon nan": (["--policies", "cdp_mab", "--epsilon", "nan"], "epsilon must be > 0"),
    "ddp_mab epsilon nan": (["--policies", "ddp_mab", "--epsilon", "nan"], "epsilon must be > 0"),
    "fed_ucb epsilon nan": (["--policies", "fed_ucb", "--epsilon", "nan"], "epsilon must be > 0"),
    "rounds without gap": (
        ["--policies", "cdp_mab", "--rounds", "3", "--min-gap", "0"],
        "min_gap",
    ),
    "unwritable out": (["--out", "/proc/nope"], "--out /proc/nope: cannot write there"),
    "unknown policy": (["--policies", "nope"], "--policies must name known ids"),
    "loss 2": (["--loss", "2"], r"loss must lie in \[0, 1\]"),
    "byzantine all": (["--byzantine", "10"], "byzantine must be < n_agents"),
    "sigma 0": (["--sigma", "0", "--noise", "gaussian"], "sigma must be"),
    "two models, one label": (
        ["--policies", "ppo:a/best.zip,ppo:b/best.zip"],
        r"would share the label\(s\) \['ppo:best'\]",
    ),
    # issue 52's new policies and options (this session)
    "fed1_ucb kappa 0": (
        ["--setting", "server", "--policies", "fed1_ucb", "--kappa", "0"],
        r"--kappa \(kappa\) must lie in \(0, inf\), got 0.0",
    ),
    "fed1_ucb c negative": (
        ["--setting", "server", "--policies", "fed1_ucb", "--c", "-1"],
        r"--c \(c\) must lie in \(0, inf\), got -1.0",
    ),
    "epoch_private_ts epsilon 0": (
        ["--setting", "neighbours", "--policies", "epoch_private_ts", "--epsilon", "0"],
        "epsilon must be > 0",
    ),
    "epoch_private_ts on unbounded rewards": (
        ["--setting", "neighbours", "--policies", "epoch_private_ts", "--noise", "gaussian"],
        "privatises rewards, so they need a finite range",
    ),
    "epoch_private_server_ts period 0": (
        ["--setting", "server", "--policies", "epoch_private_server_ts", "--period", "0"],
        r"--period \(period\) must lie in \[1, inf\), got 0",
    ),
}


def test_the_yardstick_and_a_second_bench_refuse_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 53's catalogue, grown by this session's commands: an unknown setting, too
    few trials, an --out holding a bench's results."""
    (tmp_path / "regret.csv").write_text("kept")
    for argv, match in (
        (["yardstick", "--settings", "local,nowhere"], "settings must be among"),
        (["yardstick", "--trials", "1"], "must each be >= 2"),
        (["bench", "--policies", "random", "--out", str(tmp_path)], "pass --overwrite"),
        (["learned", "--settings", "server"], "settings must be among"),
        (["learned", "--seeds", "x"], "a comma list of integers"),
        (["learned", "--horizons", "200", "--trials", "300,10"], "one trial count per horizon"),
        (["bench", "--protocol", "nowhere"], "invalid choice: 'nowhere'"),
    ):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and re.search(match, err.splitlines()[-1]), err
    assert (tmp_path / "regret.csv").read_text() == "kept"


def test_a_former_name_reads_as_the_new_one_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--protocol local`` (now ``gamma_hops``) still runs, and says so in one line."""
    argv = ["bench", "--policies", "random", "--protocol", "local", "--horizon", "5",
            "--trials", "1", "--no-plot", "--no-progress", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "fedbandit: --protocol local is now called gamma_hops" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_the_cli_refuses_in_one_line(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, match = CLI_CASES[name]
    base = ["bench", "--horizon", "20", "--trials", "1", "--no-plot", "--no-progress"]
    if "--out" not in argv:
        base += ["--out", str(tmp_path)]
    with pytest.raises(SystemExit) as stop:
        main([*base, *argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1].startswith("fedbandit: error:"), err
    assert "Traceback" not in err
    assert re.search(match, lines[-1]), lines[-1]
    assert not (tmp_path / "regret.csv").exists()  # refused before computing


def test_damaged_tables_and_bad_grids_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fedbandit plot`` on a table cut mid-row or with foreign columns, and a sweep
    over an epsilon grid that contains 0: one line naming the file or the option."""
    good = tmp_path / "bench"
    main(["bench", "--horizon", "20", "--trials", "1", "--no-plot", "--no-progress",
          "--policies", "random", "--out", str(good)])  # fmt: skip
    text = (good / "regret.csv").read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: len(text) // 2])
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b\n1,2\n")
    cases = [
        (["plot", str(cut)], r"line \d+ has \d+ fields, the header 11: the table is cut short"),
        (["plot", str(wrong)], r"lacks the columns \['agent', 'policy', 'regret', 'seed', 't'\]"),
        (
            ["sweep", "--policies", "fed_ucb", "--grid", "epsilon=0,1", "--horizon", "20",
             "--trials", "1", "--no-plot", "--no-progress", "--out", str(tmp_path / "s")],
            "epsilon must be > 0",
        ),
    ]  # fmt: skip
    capsys.readouterr()
    for argv, match in cases:
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert lines[-1].startswith("fedbandit: error:") and re.search(match, lines[-1]), lines


@pytest.mark.parametrize(
    ("argv", "warning"),
    [
        (["--policies", "gossip_ucb", "--participation", "0.5"], "--participation 0.5"),
        (["--policies", "local_ucb", "--sigma", "2"], "--sigma 2.0 changes nothing"),
        (["--policies", "local_ucb", "--epsilon", "3"], "--epsilon 3.0 changes nothing"),
        (["--policies", "local_ucb", "--attack", "random"], "--attack random changes nothing"),
        (["--policies", "local_ucb", "--instance", "zhu", "--gap", "0.2"], "--gap 0.2"),
    ],
)
def test_options_that_change_nothing_are_warned_about(
    argv: list[str], warning: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["bench", "--horizon", "20", "--trials", "1", "--no-plot", "--no-progress"]
    main([*base, "--out", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert f"fedbandit: warning: {warning}" in err, err
    assert (tmp_path / "regret.csv").exists()  # it runs anyway


def test_options_that_matter_are_not_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["bench", "--horizon", "20", "--trials", "1", "--no-plot", "--no-progress"]
    main([*base, "--out", str(tmp_path), "--policies", "cdp_mab", "--participation", "0.5"])
    assert "warning" not in capsys.readouterr().err


TRAIN_CASES: dict[str, tuple[list[str], str]] = {
    "train --policies": (["--policies", "random"], "does not read --policies"),
    "train --trials": (["--trials", "5"], "does not read --trials"),
    "train --record-every": (["--record-every", "2"], "does not read --record-every"),
    "train --no-plot": (["--no-plot"], "does not read --no-plot"),
    "train --rounds": (["--rounds", "0"], "does not read --rounds"),
    "train --held-out": (["--held-out"], "draws train instances; --held-out"),
    "train --instances held_out": (["--instances", "held_out"], "draws train instances"),
}


@pytest.mark.parametrize("name", sorted(TRAIN_CASES))
def test_train_refuses_what_only_a_benchmark_reads(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, match = TRAIN_CASES[name]
    out = tmp_path / "model"
    with pytest.raises(SystemExit) as stop:
        main(["train", "ppo", "--timesteps", "10", "--out", str(out), *argv])
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("fedbandit: error:") and re.search(match, last), last
    assert not out.exists()  # refused before training


SPEED_CASES: dict[str, tuple[list[str], str]] = {
    "speed --train --docs": (["--train", "--docs"], "write the policies' page, not --train's"),
    "speed --markdown unwritable": (["--markdown", "/proc/nope/x.md"], "cannot write there"),
}


@pytest.mark.parametrize("name", sorted(SPEED_CASES))
def test_speed_refuses_a_page_it_cannot_write(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, match = SPEED_CASES[name]
    with pytest.raises(SystemExit) as stop:
        main(["speed", "--quick", *argv])
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("fedbandit: error:") and re.search(match, last), last


def test_the_catalogue_is_at_least_sixty_cases() -> None:
    n = len(CASES) + len(CLI_CASES) + len(TRAIN_CASES) + len(SPEED_CASES) + 7 + 5
    assert n >= 60


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_a_run_longer_than_an_hour_is_announced_before_it_starts(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warning comes before any trial runs: the run itself is stopped at its first
    trial (as a user's Ctrl-C would), so a horizon of 1e12 costs nothing here."""
    import fedbandit_env.cli.bench as bench_cli
    import fedbandit_env.cli.sweep as sweep_cli

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_cli, "evaluate", stop)
    monkeypatch.setattr(sweep_cli, "run_sweep", stop)
    argv = [command, "--policies", "gossip_ucb,random", "--horizon", str(10**12)]
    argv += ["--trials", "2", "--no-plot", "--no-progress", "--out", str(tmp_path)]
    argv += ["--jobs", "1"] if command == "sweep" else []
    try:  # bench: 'fedbandit: interrupted', 130; sweep: 130 and how to resume
        code = main(argv)
    except SystemExit as stop:
        code = int(stop.code or 0)
    assert code == 130
    err = capsys.readouterr().err
    assert re.search(r"warning: this run takes about [\d.]+ (years|days)", err), err


def test_a_short_run_is_not_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--policies", "random", "--horizon", "20", "--trials", "1"]
    main([*argv, "--no-plot", "--no-progress", "--out", str(tmp_path)])
    assert "this run takes about" not in capsys.readouterr().err
