"""A sweep killed with SIGKILL mid-run resumes and produces the same table as an
uninterrupted run; a damaged run file is named, set aside and recomputed (issue 19).

Real subprocesses of the ``fedbandit`` command, a real ``kill -9``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ARGS = [
    "sweep",
    "--policies",
    "robust_gossip_ucb,local_ucb",  # the first runs on the PettingZoo path: ~0.2 s a run
    "--grid",
    "graph=complete,ring",
    "--agents",
    "4",
    "--arms",
    "3",
    "--horizon",
    "200",
    "--trials",
    "10",
    "--jobs",
    "1",
    "--no-plot",
    "--no-progress",
]


def _sweep(out: Path, **kw: object) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "fedbandit_env.cli", *ARGS, "--out", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)  # type: ignore[call-overload]


def _finish(out: Path) -> str:
    proc = _sweep(out)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    return stderr


@pytest.mark.slow
def test_a_sweep_killed_mid_run_resumes_to_the_same_table(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    _finish(whole)
    cut = tmp_path / "cut"
    proc = _sweep(cut)
    store = cut / "runs"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # kill once some, not all, runs are stored
        stored = list(store.glob("*.npz")) if store.exists() else []
        if len(stored) >= 6 or proc.poll() is not None:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    kept = len(list(store.glob("*.npz")))
    assert 6 <= kept < 40  # 2 graphs x 2 policies x 10 trials = 40 runs
    assert not (cut / "results.csv").exists()
    # a run file damaged after the kill (a disk fault): named, set aside, recomputed
    victim = sorted(store.glob("*.npz"))[0]
    victim.write_bytes(victim.read_bytes()[:40])
    stderr = _finish(cut)
    assert victim.name in stderr and "damaged" in stderr, stderr
    assert (store / (victim.name + ".damaged")).exists() and victim.exists()
    assert (cut / "results.csv").read_text() == (whole / "results.csv").read_text()
