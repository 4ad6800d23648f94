"""Result files: what ``fedbandit bench`` and ``train`` write beside their numbers."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

from fedbandit_env.runner.results import write_config


def test_configs_are_valid_json_whatever_the_floats(tmp_path: Path) -> None:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    path = write_config(
        {"epsilon": float("inf"), "rate": float("nan"), "x": [1.5]}, tmp_path / "c.json"
    )
    config = json.loads(path.read_text(), parse_constant=refuse)
    assert (config["epsilon"], config["rate"], config["x"]) == ("inf", None, [1.5])


def test_a_warm_cache_says_nothing_however_slow_the_first_trial(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 53 item 6: the notice said "compiling" on every run whose first trial took
    over 2 s, because a module of the family that the run never calls (Gossip_UCB's
    faulty-network loop) has no cache file; it now listens to numba's compile events."""
    from fedbandit_env.runner import fast
    from fedbandit_env.scenario.scenario import Scenario

    s = Scenario(n_agents=3, n_arms=3, horizon=50)
    fast.run_fast("gossip_ucb", s, 1, progress=False)  # warm: compiled and cached
    capsys.readouterr()
    monkeypatch.setattr(fast, "NOTICE_AFTER_S", 0.0)  # every first trial is "slow" now
    fast.run_fast("gossip_ucb", s, 2, progress=False)
    assert "compil" not in capsys.readouterr().err


def test_the_compile_notice_shows_when_numba_compiles_slowly_and_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import numba

    from fedbandit_env.runner import fast

    def compile_one(k: int) -> None:
        numba.njit(lambda x: x + k)(1)  # a new function: numba compiles it (no cache)

    with fast.CompileNotice("p") as notice:  # a quick compile: nothing said
        compile_one(1)
        notice.first_result()
    assert notice.compiled and "compil" not in capsys.readouterr().err
    monkeypatch.setattr(fast, "NOTICE_AFTER_S", 0.0)
    with fast.CompileNotice("p") as notice:
        compile_one(2)
        compile_one(3)  # a second compile does not say it again
        time.sleep(0.2)  # the notice's timer fires
        notice.first_result()
        compile_one(4)  # after the first trial: silent
        time.sleep(0.1)
    err = capsys.readouterr().err
    assert err.count("fedbandit: compiling the fast path of p") == 1, err
    assert err.count("fedbandit: compiled in") == 1, err
    with fast.CompileNotice("p") as notice:  # nothing compiled: nothing said
        time.sleep(0.1)
        notice.first_result()
    assert not notice.compiled and capsys.readouterr().err == ""


def test_the_compile_check_looks_where_numba_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from numba.core import config

    from fedbandit_env.runner import fast

    folder = Path(fast.__file__).parent
    assert fast._cache_folders(folder) == [folder / "__pycache__"]
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path), raising=False)
    (where,) = fast._cache_folders(folder)
    assert where.parent == tmp_path and where.name.startswith("runner_")


def test_the_privileged_marker_is_on_every_row_and_survives_a_round_trip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fedbandit_env.cli import main
    from fedbandit_env.runner import read_csv

    out = tmp_path / "bench"
    argv = ["bench", "--setting", "local", "--policies", "local_ucb,oracle_ucb", "--horizon"]
    main([*argv, "40", "--trials", "2", "--out", str(out), "--no-progress", "--no-plot"])
    with (out / "regret.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    flags = {(r["policy"], r["privileged"]) for r in rows}
    assert flags == {("local_ucb", "0"), ("oracle_ucb", "1")}  # on every row, not the table
    back = {c.policy: c.meta.get("privileged", 0) for c in read_csv(out / "regret.csv")}
    assert back == {"local_ucb": 0, "oracle_ucb": 1}
    assert main(["plot", str(out)]) == 0  # the figures redraw from the table
    assert "oracle_ucb*" in capsys.readouterr().out  # and the table it prints keeps the star


def test_a_stored_sweep_run_keeps_its_privileged_marker(tmp_path: Path) -> None:
    from fedbandit_env.runner.sweep import Run, execute, load_run, save_run
    from fedbandit_env.scenario.scenario import Scenario

    s = Scenario(n_agents=2, n_arms=2, horizon=10, setting="local")
    for policy, flag in (("oracle_ucb", 1), ("local_ucb", 0)):
        run = Run("base", s, policy)
        curves = execute(run)
        assert curves.meta.get("privileged", 0) == flag
        save_run(curves, tmp_path / f"{policy}.npz")
        assert load_run(run, tmp_path / f"{policy}.npz").meta.get("privileged", 0) == flag


def test_the_tail_columns_show_a_policy_that_fails_on_a_few_instances() -> None:
    import numpy as np

    from fedbandit_env.runner.results import format_table, summary_rows
    from fedbandit_env.runner.rollout import RegretCurves

    t = np.array([100])
    finals = np.array([5.0] * 8 + [300.0, 400.0])  # fine on 8 trials, lost on 2
    brittle = RegretCurves("brittle", t, np.repeat(finals[:, None, None], 3, axis=1))
    steady = RegretCurves("steady", t, np.full((10, 3, 1), 80.0))
    random = RegretCurves("random", t, np.full((10, 3, 1), 100.0))
    rows = {r["policy"]: r for r in summary_rows([brittle, steady, random])}
    assert rows["brittle"]["per_agent_mean"] < rows["steady"]["per_agent_mean"]  # the mean hides it
    assert rows["brittle"]["worse_than_random"] == 0.2
    assert rows["steady"]["worse_than_random"] == 0.0
    assert rows["brittle"]["per_agent_p90"] == pytest.approx(np.percentile(finals, 90))
    assert rows["brittle"]["per_agent_p90"] > 100 > rows["steady"]["per_agent_p90"]
    table = format_table([brittle, steady, random])
    assert "p90" in table and "> random" in table
    assert "20%" in table.splitlines()[2]
    # without a random run there is no reference: a dash, not a made-up share
    alone = summary_rows([brittle])[0]
    assert alone["worse_than_random"] is None
    assert format_table([brittle]).splitlines()[2].split()[9] == "-"


def test_atomic_writes_keep_the_usual_permissions(tmp_path: Path) -> None:
    """Issue 64: mkstemp's 0600 made every config.json unreadable to others beside a 0644
    CSV; a new file gets 0666 less the umask, a rewritten one keeps its mode."""
    import os
    import stat

    from fedbandit_env.files import write_text_atomic

    old = os.umask(0o022)
    try:
        new = write_text_atomic(tmp_path / "a.json", "{}")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        kept = tmp_path / "b.md"
        kept.write_text("x")
        kept.chmod(0o640)
        write_text_atomic(kept, "y")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    finally:
        os.umask(old)
