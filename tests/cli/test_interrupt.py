"""Ctrl-C stops any command in one line (issue 53, item 3): once the command runs
(before its trials, and during compiled trials), ``fedbandit`` ends with ``fedbandit:
interrupted`` and exit status 130, not a ``KeyboardInterrupt`` traceback. The trial in
flight finishes first (a compiled trial cannot be interrupted), the trials not started
are cancelled.

Ctrl-C while Python is still importing the package (the first few tenths of a second)
still ends in the interpreter's own traceback: the command's code has not started.

Note on the report: a process started in the background of a non-interactive shell
(``cmd &`` in a script) inherits SIGINT *ignored*, so ``kill -INT`` reaches nothing
there; these tests start the command with SIGINT at its default, as a terminal does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LONG = ["bench", "--policies", "local_ucb", "--horizon", "400000", "--trials", "400", "--no-plot"]


@pytest.mark.parametrize("after", [0.0, 3.0], ids=["before_trials", "trials"])
def test_ctrl_c_ends_a_run_in_one_line(after: float, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "fedbandit_env.cli", *LONG, "--out", str(tmp_path)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the scenario line: the command is running
    assert first.startswith("scenario:"), first
    time.sleep(after)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    waited = time.perf_counter() - sent
    assert proc.returncode == 130, err[-2000:]
    assert "fedbandit: interrupted" in err and "Traceback" not in err, err[-2000:]
    assert waited < 60, waited  # one trial in flight at most, not the 400 queued
    assert not (tmp_path / "regret.csv").exists()  # nothing half-written
