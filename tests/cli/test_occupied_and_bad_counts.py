"""``fedbandit tune``, ``train`` and tuned files: bad numbers, occupied destinations and damaged
files are refused in one line before any search runs (issue 64, items 1 and 2)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fedbandit_env.cli import main
from fedbandit_env.runner.tune import tuned_policy
from fedbandit_env.scenario import Scenario

TUNED = Path(__file__).parents[2] / "baselines" / "index" / "tuned" / "tuned_ts.json"


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("option", "value"),
    [("--budget", "inf"), ("--budget", "nan"), ("--population", "0"), ("--episodes", "0"),
     ("--episodes", "2.5"), ("--budget", "-3")],
)  # fmt: skip
def test_counts_that_cannot_be_are_refused(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused(["tune", "--setting", "neighbours", "--out", str(tmp_path), option, value],
                    capsys)  # fmt: skip
    assert "expected a whole number >= 1" in line and repr(value) in line, line
    assert not list(tmp_path.iterdir())


def test_an_earlier_tune_is_not_replaced_without_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mine.json"
    shutil.copy(TUNED, out)
    before = out.read_bytes()
    line = _refused(["tune", "--setting", "neighbours", "--out", str(out)], capsys)
    assert re.search("holds an earlier tune's result; pass --overwrite", line), line
    assert out.read_bytes() == before

    # with --overwrite it goes on to the search (stopped here before any work)
    def stop(*args: object, **kwargs: object) -> None:
        raise ValueError("search reached")

    monkeypatch.setattr("fedbandit_env.runner.tune.tune", stop)
    line = _refused(["tune", "--setting", "neighbours", "--out", str(out), "--overwrite"],
                    capsys)  # fmt: skip
    assert line.endswith("search reached"), line


def test_a_budget_of_years_is_announced_before_the_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def stop(*args: object, **kwargs: object) -> None:
        raise ValueError("search reached")

    monkeypatch.setattr("fedbandit_env.runner.tune.tune", stop)
    with pytest.raises(SystemExit):
        main(["tune", "--setting", "neighbours", "--out", str(tmp_path), "--budget", "1e30"])
    err = capsys.readouterr().err
    assert "fedbandit: warning: this run takes about" in err and "lower --budget" in err
    with pytest.raises(SystemExit):
        main(["tune", "--setting", "neighbours", "--out", str(tmp_path), "--budget", "5e7"])
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"parameters": {"bonus": 0.1, "speed": 2.0}}, r"no tunable parameter\(s\) \['speed'\]"),
        ({"parameters": {"bonus": "high"}}, "must map names to finite numbers"),
        ({"parameters": {"bonus": float("inf")}}, "must map names to finite numbers"),
        ({"scenario": "abc"}, "'scenario' must be the scenario tuned on"),
        ({"policy": "nope"}, "tuned a policy that is not registered: 'nope'"),
    ],
)
def test_damaged_tuned_files_are_refused_naming_the_fault(
    change: dict[str, object], match: str, tmp_path: Path
) -> None:
    data = {**json.loads(TUNED.read_text()), **change}
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(data))
    scenario = Scenario(n_agents=10, n_arms=5, horizon=200, setting="neighbours")
    with pytest.raises(ValueError, match=match):
        tuned_policy(path, scenario)


def test_an_earlier_model_is_not_replaced_without_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("stable_baselines3")
    (tmp_path / "model.zip").write_bytes(b"an earlier model")
    argv = ["train", "ppo", "--setting", "neighbours", "--out", str(tmp_path)]
    line = _refused(argv, capsys)
    assert "holds an earlier model (model.zip); pass --overwrite" in line, line
    assert (tmp_path / "model.zip").read_bytes() == b"an earlier model"

    def stop(*args: object, **kwargs: object) -> None:
        raise ValueError(f"training reached, overwrite={kwargs['overwrite']}")

    monkeypatch.setattr("fedbandit_env.rl.train.train_model", stop)
    line = _refused([*argv, "--overwrite"], capsys)
    assert line.endswith("training reached, overwrite=True"), line


def test_a_zip_that_is_not_a_model_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("stable_baselines3")
    import zipfile

    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("notes.txt", "no model here")
    argv = ["bench", "--policies", f"ppo:{bad}", "--horizon", "20", "--trials", "1",
            "--no-plot", "--no-progress", "--out", str(tmp_path / "out")]  # fmt: skip
    line = _refused(argv, capsys)
    assert "is not a saved ppo model (No data found" in line, line


def test_a_quick_learned_run_keeps_its_rows_apart_from_the_pages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``learned --quick`` once overwrote MODELS/rows.json, which ``--render-only --docs``
    then wrote into the committed page."""
    pytest.importorskip("stable_baselines3")
    page_rows = tmp_path / "rows.json"
    page_rows.write_text("the page's rows")
    monkeypatch.setattr("fedbandit_env.runner.learned.learned_table", lambda *a, **k: [])
    assert main(["learned", "--quick", "--models", str(tmp_path)]) == 0
    assert page_rows.read_text() == "the page's rows"
    assert (tmp_path / "quick" / "rows.json").exists()
    for argv in (["--quick", "--docs"], ["--quick", "--render-only", "--docs"]):
        with pytest.raises(SystemExit, match="--quick is for trying"):
            main(["learned", "--models", str(tmp_path), *argv])
    line = _refused(["learned", "--horizons", "0,20000"], capsys)
    assert "every value must be >= 1, got '0,20000'" in line, line


def test_resume_refuses_a_finished_bench(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["bench", "--horizon", "20", "--trials", "1", "--no-plot", "--no-progress",
            "--out", str(tmp_path)]  # fmt: skip
    assert main([*base, "--policies", "random"]) == 0
    before = (tmp_path / "regret.csv").read_bytes()
    line = _refused([*base, "--policies", "coop_ts", "--resume"], capsys)
    assert "holds a finished bench (regret.csv), nothing to resume" in line, line
    assert (tmp_path / "regret.csv").read_bytes() == before


@pytest.mark.parametrize("command", ["bench", "tune", "yardstick"])
def test_a_size_beyond_the_machine_is_refused_before_any_work(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--agents 100000 --arms 10000000`` once ended in a memory-error traceback."""
    argv = [command, "--agents", "100000", "--arms", "10000000"]
    if command != "yardstick":
        argv += ["--setting", "neighbours", "--out", str(tmp_path / "o")]
    line = _refused(argv, capsys)
    assert "needs about" in line and "more than this machine's" in line, line


def test_a_batch_beyond_the_machine_is_refused() -> None:
    from fedbandit_env.policies import Requirements
    from fedbandit_env.vector import make_vec

    s = Scenario(n_agents=10, n_arms=5, horizon=5, setting="neighbours")
    with pytest.raises(ValueError, match="a batch of 1000000000000 envs .* lower num_envs"):
        make_vec(s, 10**12, Requirements(message_dim=10))
    assert make_vec(s, 4, Requirements(message_dim=10)).num_envs == 4


def test_a_budget_below_one_rollout_is_said_to_round_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``train --timesteps 100`` once trained thousands of agent-steps without a word."""
    pytest.importorskip("stable_baselines3")
    argv = ["train", "ppo", "--setting", "neighbours", "--agents", "3", "--arms", "2",
            "--horizon", "20", "--timesteps", "10", "--out", str(tmp_path),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    ran = json.loads((tmp_path / "train.json").read_text())["agent_steps"]
    err = capsys.readouterr().err
    assert f"trained {ran:,} agent-steps, not --timesteps 10" in err, err


@pytest.mark.parametrize("command", ["yardstick", "learned"])
def test_a_page_that_cannot_be_written_is_refused_before_the_measuring(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both once measured every row, then failed with a traceback writing the page."""
    if command == "learned":
        pytest.importorskip("stable_baselines3")

    def measured(*args: object, **kwargs: object) -> None:
        raise AssertionError("measured before the page was checked")

    monkeypatch.setattr("fedbandit_env.runner.yardstick.yardstick", measured)
    monkeypatch.setattr("fedbandit_env.runner.learned.learned_table", measured)
    line = _refused([command, "--markdown", str(tmp_path)], capsys)
    assert line.endswith("a folder, not a page to write"), line
    line = _refused([command, "--markdown", "/proc/nope/page.md"], capsys)
    assert "cannot write there" in line, line


def test_the_yardstick_refuses_a_setting_named_twice(capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(["yardstick", "--settings", "local,neighbours,local"], capsys)
    assert line.endswith("--settings names ['local'] more than once"), line


def test_a_plugin_that_shadows_a_built_in_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A module registering ``coop_ts`` was once silently overridden by the built-in."""
    from fedbandit_env import registry

    plugin = tmp_path / "shadow_coop.py"
    plugin.write_text(
        "from fedbandit_env import registry\n"
        "from fedbandit_env.policies import FixedArm\n"
        "registry.register('coop_ts', FixedArm, description='mine')\n"
    )
    before = registry.spec("coop_ts")
    try:
        argv = ["bench", "--import", str(plugin), "--policies", "coop_ts", "--horizon",
                "20", "--trials", "1", "--no-plot", "--no-progress",
                "--out", str(tmp_path / "o")]  # fmt: skip
        line = _refused(argv, capsys)
        assert "registers ['coop_ts'], the id(s) of policies already registered" in line, line
        assert not (tmp_path / "o" / "regret.csv").exists()
    finally:  # the built-in back, for the tests after this one
        with pytest.warns(UserWarning, match="overriding policy 'coop_ts'"):
            registry.register("coop_ts", **{k: getattr(before, k) for k in _SPEC_FIELDS})
        assert registry.spec("coop_ts") == before


_SPEC_FIELDS = (
    "entry_point", "description", "family", "kwargs", "fast_entry_point",
    "options_entry_point", "settings", "privileged", "bandit", "tags", "cli_options",
    "instances",
)  # fmt: skip


def test_the_help_texts_say_what_the_commands_read(capsys: pytest.CaptureFixture[str]) -> None:
    """train's help once said --instances defaults to fixed (it trains on train
    instances, ignoring fixed); bench's named neither recurrent_ppo: nor tuned:."""
    with pytest.raises(SystemExit):
        main(["train", "ppo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "held-out instance seeds (default: train)" in text, text
    line = _refused(["train", "ppo", "--setting", "neighbours", "--instances", "fixed"], capsys)
    assert "draws train instances (each episode its own)" in line, line
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "recurrent_ppo:" in text and "tuned:path.json" in text, text


def test_a_warning_reads_as_one_line(tmp_path: Path) -> None:
    """A tuned reference away from its conditions warns, in the command's one-line form
    (not Python's ``path:line: Category`` with the source line under it). A subprocess:
    pytest records warnings instead of printing them."""
    import subprocess
    import sys

    argv = ["bench", "--policies", "tuned_ts", "--setting", "neighbours", "--horizon", "30",
            "--trials", "1", "--no-plot", "--no-progress", "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "fedbandit_env.cli", *argv], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "fedbandit: warning: tuned_ts runs on horizon=30 (tuned on 200)" in done.stderr
    assert "UntrainedConditionsWarning" not in done.stderr and ".py:" not in done.stderr


def test_tune_scales_its_default_budget_with_the_horizon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 64: without --budget the search runs GENERATIONS generations at any horizon
    (it was refused at T = 20,000) and says how long that takes; a budget under
    one generation names the budget the horizon needs; a few generations are warned
    about."""
    from fedbandit_env.cli.tune import GENERATIONS

    seen: dict[str, int] = {}

    def stop(*args: object, generations: int, **kwargs: object) -> None:
        seen["generations"] = generations
        raise ValueError("search reached")

    monkeypatch.setattr("fedbandit_env.runner.tune.tune", stop)
    base = ["tune", "--setting", "neighbours", "--out", str(tmp_path / "t.json")]
    with pytest.raises(SystemExit):
        main([*base, "--horizon", "20000"])
    assert seen.pop("generations") == GENERATIONS
    out = capsys.readouterr().out
    assert f"{GENERATIONS} generations" in out and "4,915,200,000 agent-steps, about 16 min" in out
    line = _refused([*base, "--horizon", "20000", "--budget", "1e8"], capsys)
    assert "need --budget 4.92e+09" in line and "generations" not in seen, line
    with pytest.raises(SystemExit):
        main([*base, "--horizon", "20000", "--budget", "1e9"])
    assert seen["generations"] == 3
    assert "is 3 generation(s) at T = 20000" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["bench", "tune", "yardstick"])
@pytest.mark.parametrize("value", ["nan", "0", "-1"])
def test_an_epsilon_that_is_no_privacy_level_is_refused(
    command: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 64: ``--epsilon nan`` ran silently with non-private policies."""
    argv = [command, "--epsilon", value]
    if command != "yardstick":
        argv += ["--out", str(tmp_path)]
    line = _refused(argv, capsys)
    assert line.startswith("fedbandit: error: --epsilon must be > 0 (inf: no privacy)"), line
    assert not list(tmp_path.iterdir())
