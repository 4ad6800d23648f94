"""The rollouts' disk cache (``core.caching.ArgumentFunctionCache``): a process that
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

if sys.argv[1] == "numba-key":  # an index keyed as numba keys it (by the steps' types)
    from numba.core.caching import FunctionCache
    from fedbandit_env.core.caching import ArgumentFunctionCache
    ArgumentFunctionCache._index_key = FunctionCache._index_key
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
    # an index whose keys hold the steps' types (numba's key; this cache's own keys hold
    # no compiled function, so nothing in them can vanish)
    assert "played local_ucb random" in _run(tmp_path, "numba-key", "local_ucb", "random")
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


PLAY_TWICE = """
import sys
from numba.core.caching import FunctionCache
from fedbandit_env.core.caching import ArgumentFunctionCache
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.scenario import Scenario

if sys.argv[1] == "numba-key":  # numba's own index key (the power check)
    ArgumentFunctionCache._index_key = FunctionCache._index_key
for _ in range(2):  # the second run finds the rollout in memory
    run_fast("local_ucb", Scenario(n_agents=3, n_arms=2, horizon=20), 1, progress=False)
"""


@pytest.mark.slow  # three fresh processes, the first compiling the rollouts
def test_a_second_process_loads_the_rollout_the_first_compiled(tmp_path: Path) -> None:
    """A rollout is keyed in its cache by what its step is, not by the step's object, so
    the next process loads it instead of compiling it again, once: with numba's key (the
    step's type, a new object in each process) the next process saved a compile of its
    own, and a loaded rollout kept under the saving process's types was loaded again on
    every later call (1.5 s a call for CDP-MAB's)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "NUMBA_DEBUG_CACHE": "1"}

    def play(mode: str) -> tuple[list[str], list[str]]:
        done = subprocess.run([sys.executable, "-c", PLAY_TWICE, mode], env=env,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        lines = [line for line in done.stdout.splitlines() if "rollout_block" in line]
        return [x for x in lines if "data saved" in x], [x for x in lines if "data loaded" in x]

    assert play("stable")[0] != []  # the first process compiles and saves the rollout
    saved, loaded = play("stable")
    assert saved == [] and loaded != []  # the second loads it ...
    assert len(loaded) == len(set(loaded))  # ... once, for both runs
    assert play("numba-key")[0] != []  # the power check: numba's key misses it


def test_a_steps_cache_key_follows_its_module_and_what_it_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit of the step's module (a helper it calls there, a constant it reads), or of
    a module whose compiled function it calls (a helper's helper, read as a global or as
    a module's attribute), gives the step another key, so the rollout compiled against
    the old code is not loaded; the key is otherwise the same in every process (module,
    name, code digest)."""
    import importlib

    from numba import njit, types

    from fedbandit_env.core.caching import stable_key

    deep = tmp_path / "user_deep_key.py"
    deep.write_text("from numba import njit\n\n@njit\ndef twice(x):\n    return 2 * x\n")
    helper = tmp_path / "user_helper_key.py"
    helper.write_text("from numba import njit\nfrom user_deep_key import twice\n\n"
                      "@njit\ndef grow(x):\n    return twice(x) + 1\n")  # fmt: skip
    module = tmp_path / "user_steps_key.py"
    module.write_text("from numba import njit\nimport user_helper_key as h\n\nSHIFT = 1\n\n"
                      "@njit\ndef step(x):\n    return h.grow(x) + SHIFT\n")  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    step = importlib.import_module("user_steps_key").step
    keys = [stable_key(types.Dispatcher(step))]
    assert keys[0][:3] == ("dispatcher", "user_steps_key", "step")
    assert stable_key(types.Dispatcher(step)) == keys[0]  # the same step, the same key
    for path, old, new in [(module, "SHIFT = 1", "SHIFT = 22"), (helper, "+ 1", "+ 3"),
                           (deep, "2 * x", "3 * x")]:  # fmt: skip
        path.write_text(path.read_text().replace(old, new))
        keys.append(stable_key(types.Dispatcher(step)))
    assert len(set(keys)) == len(keys)  # each edit, however deep, another key
    assert stable_key(types.Dispatcher(njit(lambda x: x))) != keys[0]
