"""Options that change nothing are said, not passed in silence (issue 53, item 5):
``--privacy-noise secure`` where nothing draws privacy noise (a warning: the run is still
valid), and training options a run would ignore (refused before training)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbandit_env.cli import main

SMALL = ["--agents", "3", "--arms", "2", "--horizon", "20", "--trials", "1", "--no-plot",
         "--no-progress"]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "warned"),
    [
        (["--policies", "coop_ts"], True),
        (["--policies", "coop_ts,local_ucb", "--setting", "neighbours"], True),
        (["--policies", "cdp_mab"], False),  # its own Laplace mechanism
        (["--policies", "coop_ts", "--setting", "neighbours+private"], False),
    ],
)
def test_secure_noise_where_nothing_draws_noise_is_a_warning(
    argv: list[str], warned: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if "neighbours+private" in argv:
        argv = ["--policies", "private_coop_ts", "--setting", "neighbours+private"]
    assert main(["bench", *argv, *SMALL, "--privacy-noise", "secure", "--out", str(tmp_path)]) == 0
    line = "--privacy-noise secure changes nothing: no chosen policy or setting draws"
    assert (line in capsys.readouterr().err) is warned


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--setting", "neighbours", "--episode-lengths", "50:200"],
            "--episode-lengths needs --horizon-free",
        ),
        (
            ["--setting", "neighbours", "--privacy-noise", "secure"],
            "--privacy-noise secure changes nothing",
        ),
        (["--setting", "gossip", "--epsilon", "0.5"], "--epsilon 0.5 changes nothing"),
    ],
)
def test_training_options_that_change_nothing_are_refused(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["train", "ppo", "--timesteps", "10", *extra, "--out", str(tmp_path / "m")])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "--papers", ""], "--papers names no paper"),
        (["reproduce", "--papers", " , "], "--papers names no paper"),
        (["reproduce", "--store", "FILE"], "--store must be a folder"),
        (["bench", "--policies", "ppo:FOLDER", *SMALL], "no saved model in the folder"),
        (["bench", "--policies", "ppo:FILE", *SMALL], "is not a saved ppo model"),
    ],
)
def test_bad_inputs_of_issue_53_end_in_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # on d3a7325: '' ran every paper, a file as the store did not refuse, and a folder or
    # a zip that is no model ended in tracebacks
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.zip").write_text("not a model")
    subst = {"FILE": str(tmp_path / "file.zip"), "FOLDER": str(tmp_path / "folder")}
    argv = [subst.get(a, a.replace("FOLDER", subst["FOLDER"]).replace("FILE", subst["FILE"]))
            for a in argv]  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and "Traceback" not in err, err


@pytest.mark.parametrize("interactive", [False, True], ids=["fast", "pettingzoo"])
def test_a_consensus_policy_on_a_disconnected_graph_is_refused_on_both_paths(
    interactive: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # d3a7325: the fast path ran coop_ucb2 on --components 5,5, which the API refuses
    argv = ["bench", "--policies", "coop_ucb2", "--components", "5,5", "--agents", "10",
            "--arms", "3", "--horizon", "20", "--trials", "1", "--no-plot", "--no-progress",
            "--out", str(tmp_path), *(["--interactive"] if interactive else [])]  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "needs a connected network" in capsys.readouterr().err
