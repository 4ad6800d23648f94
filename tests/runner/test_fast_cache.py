"""A compiled loop's disk cache goes when a kernel it may inline changed after it was
written (numba keys a cache by its own file only): the fast path never runs a loop
compiled against old kernels."""

from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from fedbandit_env.runner import fast


def _family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Path, Path]:
    family = tmp_path / "family"
    (family / "__pycache__").mkdir(parents=True)
    loop = family / "loop.py"
    loop.write_text("@njit\ndef run(): pass\n")
    kernel = tmp_path / "kernels.py"
    kernel.write_text("@njit\ndef k(): pass\n")
    module = types.ModuleType("family_loop")
    module.__file__ = str(loop)
    monkeypatch.setitem(sys.modules, "family_loop", module)
    monkeypatch.setattr(fast, "_compiled_sources", lambda: [loop, kernel])
    monkeypatch.setattr(fast, "_cache_folders", lambda folder: [folder / "__pycache__"])

    def runner() -> None: ...

    runner.__module__ = "family_loop"
    return runner, family / "__pycache__", kernel


def _cache(folder: Path) -> list[Path]:
    files = [folder / "loop.run-1.py311.nbi", folder / "loop.run-1.py311.1.nbc"]
    for path in files:
        path.write_text("")
    return files


def test_caches_go_when_a_kernel_they_may_inline_changed_and_stay_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, cache, kernel = _family(tmp_path, monkeypatch)
    old = _cache(cache)
    assert fast.purge_stale_caches(runner) == 2  # compiled before any stamp: unknown kernels
    assert not any(p.exists() for p in old)
    fresh = _cache(cache)  # numba compiles against the kernels as they are
    assert fast.purge_stale_caches(runner) == 0 and all(p.exists() for p in fresh)
    kernel.write_text("@njit\ndef k(): return 1\n")  # a kernel edited
    assert fast.purge_stale_caches(runner) == 2 and not any(p.exists() for p in fresh)


def test_a_kernel_dated_in_the_future_purges_once_not_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The former rule (a cache older than the newest kernel goes) purged and recompiled
    on every run when a source's time lay in the future (clock skew, an unpacked archive):
    one candidate of issue 53 item 6's "compiled again on every run"."""
    runner, cache, kernel = _family(tmp_path, monkeypatch)
    future = time.time() + 3600
    os.utime(kernel, (future, future))
    _cache(cache)
    assert fast.purge_stale_caches(runner) == 2  # the first run after the change
    fresh = _cache(cache)
    assert fast.purge_stale_caches(runner) == 0 and all(p.exists() for p in fresh)
