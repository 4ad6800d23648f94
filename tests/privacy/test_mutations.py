"""The mutation runner (issues 49 and 63): each known weakening of the privacy code,
applied to the package (``tests/privacy/mutations.py``), must make some privacy test
fail. One quick privacy suite a mutation, in a subprocess, stopping at the first
failure; a mutation that crashes the suite instead (an exception that is no assertion)
does not count as caught.

``pytest -m slow tests/privacy/test_mutations.py -s`` prints which test caught each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from mutations import FIRST, MUTATIONS  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[2]
SUITE = [
    "tests/privacy/test_privacy_audits.py",
    "tests/privacy/test_privacy_observers.py",
    "tests/privacy/test_secure_noise.py",
    "tests/privacy/test_privacy.py",
    "tests/families/linear/test_linear_privacy.py",
    "tests/vector/test_vector_audit.py",
    "tests/vector/test_vector_private_noise.py",
    "tests/privacy/test_private_releases.py",
    "tests/vector/test_private_rollout.py",
]


def _ordered(mutation: str) -> list[str]:
    """The suite, the file expected to catch ``mutation`` first (``FIRST``)."""
    first = FIRST.get(mutation)
    return [first, *(f for f in SUITE if f != first)] if first else list(SUITE)


def _run(mutation: str, report: Path) -> tuple[int, list[tuple[str, str]]]:
    env = {
        **os.environ,
        "FEDBANDIT_MUTATION": mutation,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
        ),
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "mutations",
           "-p", "no:cacheprovider", f"--junitxml={report}", *_ordered(mutation)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    failed = []
    for case in ET.parse(report).getroot().iter("testcase"):
        for bad in [*case.findall("failure"), *case.findall("error")]:
            failed.append((f"{case.get('classname')}::{case.get('name')}", bad.get("message", "")))
    return proc.returncode, failed


@pytest.mark.slow
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_every_known_weakening_is_caught_by_a_privacy_test(mutation: str, tmp_path: Path) -> None:
    code, failed = _run(mutation, tmp_path / "report.xml")
    print(f"\nMUTATION {mutation}: caught by {[name for name, _ in failed]}")
    assert code == 1 and failed, f"{mutation} was not caught (pytest exit {code})"
    # caught by an assertion, not by a crash the mutation caused
    assert any("assert" in message.lower() or "Error" not in message for _, message in failed), (
        failed
    )


def test_every_first_file_is_in_the_suite() -> None:
    assert set(FIRST) <= set(MUTATIONS) and set(FIRST.values()) <= set(SUITE)


def test_the_runner_applies_no_mutation_unless_asked(tmp_path: Path) -> None:
    """The unmutated suite passes under the plugin (so a failure above is the mutation's)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    env.pop("FEDBANDIT_MUTATION", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "mutations", "-p", "no:cacheprovider",
           "tests/privacy/test_privacy.py"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:]
