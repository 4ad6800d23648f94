"""The package as a user installs it: a wheel, typed (``py.typed``), that a user's mypy
reads (issue 33)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

USER_FILE = """\
from fedbandit_env.policies import AgentSpec, Policy
from fedbandit_env.type_aliases import Observation, SeedLike


class Greedy(Policy):
    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        self.n = spec.n_arms

    def act(self, observation: Observation) -> int:
        return 0


count: int = AgentSpec(0, 2, 3, 10).n_arms
"""


@pytest.mark.slow
def test_the_wheel_is_typed_and_a_users_mypy_reads_it(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(tmp_path / "dist")],
        check=True, cwd=tmp_path,
    )  # fmt: skip
    wheel = next((tmp_path / "dist").glob("fedbandit_env-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "fedbandit_env/py.typed" in names and "baselines/py.typed" in names
    # a fresh environment with the wheel in it; its dependencies come from ours (a .pth
    # after its own site-packages), so nothing is downloaded
    env = tmp_path / "user-env"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
         str(wheel)],
        check=True,
    )  # fmt: skip
    user = tmp_path / "user" / "mine.py"
    user.parent.mkdir()
    user.write_text(USER_FILE)
    bad = user.with_name("wrong.py")
    bad.write_text(USER_FILE + "oops: str = AgentSpec(0, 2, 3, 10).n_arms\n")
    mypy = [sys.executable, "-m", "mypy", "--python-executable", str(python),
            "--no-incremental", "--strict"]  # fmt: skip
    ok = subprocess.run([*mypy, str(user)], capture_output=True, text=True, cwd=user.parent)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # and it really reads the package's types: a wrong one is caught
    wrong = subprocess.run([*mypy, str(bad)], capture_output=True, text=True, cwd=user.parent)
    assert wrong.returncode == 1 and "Incompatible types in assignment" in wrong.stdout
