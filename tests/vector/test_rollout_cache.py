"""The rollouts' disk cache (``core.kernels.ArgumentFunctionCache``): a process that
compiles a new policy's rollout after others were cached runs it, even when it no longer
holds the compiled functions named in the cache's index (numba's pickling of the index
then raises ``ReferenceError``), or cannot import a module the index names. Reproduced
in fresh processes with their own numba cache and ``NUMBA_FUNCTION_CACHE_SIZE=1`` (what
128 unpickled functions do in a long run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PLAY = """
import sys
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.scenario import Scenario

def play(policy):
    run_fast(policy, Scenario(n_agents=3, n_arms=2, horizon=20), 1, progress=False)

if sys.argv[1] == "unguarded":  # numba's own cache, as the rollouts had it
    import fedbandit_env.core.kernels as kernels
    from numba.core.caching import FunctionCache
    rollouts = (kernels.rollout_block, kernels.rollout_block_counted)  # either variant
    guarded = [rollout._cache for rollout in rollouts]
    for rollout in rollouts:
        rollout._cache = FunctionCache(rollout.py_func)
    try:
        play(sys.argv[2])
    except ReferenceError:
        print("unguarded: ReferenceError")
    for rollout, cache in zip(rollouts, guarded):
        rollout._cache = cache
for policy in sys.argv[2:]:
    play(policy)
print("played", *sys.argv[2:])
"""


def _run(cache: Path, *args: str, size: str | None = None) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    if size is not None:
        env["NUMBA_FUNCTION_CACHE_SIZE"] = size
    done = subprocess.run([sys.executable, "-c", PLAY, *args], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_new_policys_rollout_compiles_after_others_were_cached(tmp_path: Path) -> None:
    assert "played local_ucb random" in _run(tmp_path, "-", "local_ucb", "random")
    out = _run(tmp_path, "unguarded", "oracle_ucb", size="1")
    assert "unguarded: ReferenceError" in out  # numba's cache fails here (the power check)
    assert "played oracle_ucb" in out  # the rollouts' cache does not


USER_STEP = """
from typing import NamedTuple

import numpy as np
from numba import njit
from fedbandit_env.vector.policy import VectorPolicy

class Options(NamedTuple):  # a class of the user's module in the step's state
    arm: int

@njit
def first_arm(last, seen, t, options, arms):
    arms[:] = options.arm

class FirstArm(VectorPolicy):
    def reset(self, spec, rngs):
        self.shape = (spec.num_envs, spec.n_agents)

    def act(self, observations):
        return np.zeros(self.shape, np.int64), None

    def kernel(self):
        return first_arm, (Options(0),)
"""

PLAY_USER = """
import importlib
import sys
from fedbandit_env.runner.vector_trials import run_vector_trials
from fedbandit_env.scenario import Scenario

policy = importlib.import_module(sys.argv[1]).FirstArm()
curves = run_vector_trials(policy, Scenario(n_agents=3, n_arms=2, horizon=20), None, 1)
print("played", sys.argv[1], curves.regret.shape)
"""


@pytest.mark.slow  # three fresh processes, each compiling its rollout
def test_a_rollout_plays_after_a_cached_policys_module_is_gone(tmp_path: Path) -> None:
    """A user's policy step rolled out once leaves its module's name in the rollout's
    cache index (the classes in its state are pickled by name); once that module is
    gone (renamed, deleted, another working directory) the next process must still
    roll out another policy, not fail loading the index (numba's own cache raised
    ``ModuleNotFoundError`` there)."""
    cache, user = tmp_path / "cache", tmp_path / "user"
    user.mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(user)}

    def play(module: str) -> str:
        (user / f"{module}.py").write_text(USER_STEP)
        done = subprocess.run([sys.executable, "-c", PLAY_USER, module], env=env,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    assert "played first_step" in play("first_step")
    index = list(cache.rglob("kernels.rollout_block*.nbi"))
    assert any(b"first_step" in path.read_bytes() for path in index)  # its name is kept
    (user / "first_step.py").unlink()  # the module is gone
    assert "played second_step" in play("second_step")
    assert "played first_step" in play("first_step")  # and it compiles again
