"""A compiled loop's disk cache goes when a kernel it may inline changed after it was
written (numba keys a cache by its own file only): the fast path never runs a loop
compiled against old kernels."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from fedbandit_env.runner import fast


def test_a_cache_older_than_an_edited_kernel_goes_and_a_fresh_one_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    family = tmp_path / "family"
    (family / "__pycache__").mkdir(parents=True)
    loop = family / "loop.py"
    loop.write_text("@njit\ndef run(): pass\n")
    kernel = tmp_path / "kernels.py"
    kernel.write_text("@njit\ndef k(): pass\n")
    old = family / "__pycache__" / "loop.run-1.py311.nbi"
    old.write_text("")
    data = family / "__pycache__" / "loop.run-1.py311.1.nbc"
    data.write_text("")
    for path in (loop, old, data):
        os.utime(path, (1000, 1000))
    os.utime(kernel, (2000, 2000))  # the kernel was edited after the loop was cached
    module = types.ModuleType("family_loop")
    module.__file__ = str(loop)
    monkeypatch.setitem(sys.modules, "family_loop", module)
    monkeypatch.setattr(fast, "_compiled_sources", lambda: [loop, kernel])
    monkeypatch.setattr(fast, "_cache_folders", lambda folder: [folder / "__pycache__"])

    def runner() -> None: ...

    runner.__module__ = "family_loop"
    assert fast.purge_stale_caches(runner) == 2
    assert not old.exists() and not data.exists()
    fresh = family / "__pycache__" / "loop.run-1.py311.nbi"
    fresh.write_text("")
    os.utime(fresh, (3000, 3000))  # compiled after the edit
    assert fast.purge_stale_caches(runner) == 0 and fresh.exists()
