"""The rollouts' disk cache: numba's, for functions that take a compiled function as an
argument (every rollout takes the policy's step and the observation hook)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import marshal
import os
import sys
import threading
import types
from pathlib import Path
from types import ModuleType
from typing import Any

from numba.core import sigutils
from numba.core import types as nb_types
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.serialize import dumps
from numba.core.typing import signature


def _code_names(code: types.CodeType) -> set[str]:
    """The global and attribute names ``code`` reads, its nested functions' included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _sources(func: Any, seen: set[int]) -> set[str]:
    """The source files of ``func`` and of every function it names, through its globals
    and the modules it reads attributes of, transitively: the files whose edit changes
    what numba compiles for ``func`` (a helper it calls in another module, a constant)."""
    if id(func) in seen or not hasattr(func, "__code__"):
        return set()
    seen.add(id(func))
    files = {inspect.getsourcefile(func) or ""}
    names = _code_names(func.__code__)
    scope = getattr(func, "__globals__", {})
    for name in names:
        value = scope.get(name)
        if isinstance(value, types.ModuleType):
            files.add(getattr(value, "__file__", None) or "")
            for attr in names:  # what it may read of the module (``rk.next_double_at``)
                files |= _sources(getattr(getattr(value, attr, None), "py_func", None), seen)
            continue
        files |= _sources(getattr(value, "py_func", value), seen)
    return files


def stable_key(numba_type: Any) -> Any:
    """A compiled function's type as a cache key that is the same in every process: its
    module, name and a digest of its code, constants, defaults, closure, options and the
    time and size of its source file and of every module it calls into
    (``("dispatcher", module, qualname, digest)``); any other type as it is. A function
    whose closure cannot be pickled, or that has no source file, keeps its type (it
    compiles again in each process, as every rollout did before).

    The files' stamps make an edit that changes what numba compiles for the step miss:
    its own module (the helpers it calls there, the constants it reads) as numba's own
    stamp does for a function, and, further than numba's stamp, every module whose
    compiled functions it calls, however deep (``baselines/common/kernels.py`` under a
    family's step), found through the names its code reads.

    Examples:
        >>> from numba import njit, types
        >>> from baselines.gossip.kernels import gossip_step
        >>> stable_key(types.Dispatcher(gossip_step))[:3], stable_key(types.float64)
        (('dispatcher', 'baselines.gossip.kernels', 'gossip_step'), float64)
        >>> step = njit(lambda x: x)  # no source file: its type
        >>> stable_key(types.Dispatcher(step)) == types.Dispatcher(step)
        True
    """
    if not isinstance(numba_type, nb_types.Dispatcher):
        return numba_type
    dispatcher = numba_type.dispatcher
    func = dispatcher.py_func
    try:
        if not inspect.getsourcefile(func):
            raise OSError("no source file")
        cells = tuple(c.cell_contents for c in func.__closure__ or ())
        stamps = []
        for path in sorted(_sources(func, set())):
            if path:
                source = os.stat(path)
                stamps.append(f"{path}|{source.st_mtime_ns}|{source.st_size}")
        parts = (marshal.dumps(func.__code__), dumps((cells, func.__defaults__)),
                 repr(sorted(dispatcher.targetoptions.items())).encode(),
                 "\n".join(stamps).encode())  # fmt: skip
    except Exception:  # an unpicklable closure, no source file: the type itself (no hit
        return numba_type  # across processes)
    digest = hashlib.sha256(b"\0".join(parts)).hexdigest()
    return ("dispatcher", func.__module__, func.__qualname__, digest)


class _ForgivingIndex(IndexDataCacheFile):
    """numba's cache index file, read as empty where it cannot be unpickled in this
    process: a key names a class of a module that is gone (a policy's state holds a
    ``NamedTuple`` of the user's module; the module was renamed or deleted, or this
    process runs where it cannot import it). The function compiles again, and its save
    rewrites the index without the dead keys (``tests/vector/test_rollout_cache.py``)."""

    def _load_index(self) -> dict[Any, Any]:
        try:
            return dict(super()._load_index())
        except (ImportError, AttributeError):
            return {}


class ArgumentFunctionCache(FunctionCache):
    """numba's disk cache for a function that takes a compiled function as an argument
    (the rollouts take the policy's step), which keeps a signature it cannot save
    compiled in memory instead of failing.

    numba keys such a function's cache by the types of its arguments, a compiled
    function's type included, and rewrites the whole index when it saves a new
    signature. A process that loaded the index holds the functions named in its keys
    only among the last ``NUMBA_FUNCTION_CACHE_SIZE`` (128) it unpickled; past that,
    pickling the index again raises ``ReferenceError: underlying object has vanished``,
    and the compile of the new signature (a new policy, after others were cached) failed
    with it. Here that save is skipped: the rollout runs, and the next process compiles
    that signature again (``tests/vector/test_rollout_cache.py``). And an index whose
    keys name a class this process cannot import (a user's policy module, since gone)
    reads as empty instead of failing every later rollout (:class:`_ForgivingIndex`).

    The index keys a compiled function given as an argument by what it is, not by the
    object (:func:`stable_key`): numba's key holds the function's type, which unpickles
    as a new dispatcher in another process and so never equals the one that process
    compiled, and every process compiled the rollouts again (six to fourteen seconds a
    policy).

    Examples:
        >>> from fedbandit_env.core.kernels import rollout_block
        >>> isinstance(rollout_block._cache, ArgumentFunctionCache)
        True
    """

    def __init__(self, py_func: Any) -> None:
        super().__init__(py_func)
        self._cache_file = _ForgivingIndex(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
        )

    def _index_key(self, sig: Any, codegen: Any) -> Any:
        key = super()._index_key(sig, codegen)
        return (tuple(stable_key(t) for t in key[0]), *key[1:])

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """numba's load, the result keyed by this process's argument types: the cached
        signature names the steps as the saving process had them (a dispatcher each
        process rebuilds anew), under which the dispatcher would keep the loaded
        function in memory where no call finds it, and load it again on every call."""
        cres = super().load_overload(sig, target_context)
        if cres is None:
            return None
        args, _ = sigutils.normalize_signature(sig)
        return cres._replace(signature=signature(cres.signature.return_type, *args))

    def save_overload(self, sig: Any, data: Any) -> None:
        """Save as numba does, unless the index names a function this process let go."""
        with contextlib.suppress(ReferenceError):
            super().save_overload(sig, data)


def generated_folder(kind: str) -> Path:
    """Where the package writes compiled code it generates (``kind``: a folder per
    generator): ``fedbandit_env/<kind>`` under ``NUMBA_CACHE_DIR`` when it is set, else
    under the user's cache folder (``XDG_CACHE_HOME``, or ``~/.cache``). Never inside the
    package, whose modules tools and the kernels' fingerprint scan.

    Examples:
        >>> generated_folder("scorers").parts[-2:]
        ('fedbandit_env', 'scorers')
    """
    from numba.core import config

    cache_dir = getattr(config, "CACHE_DIR", "")
    root = Path(cache_dir) if cache_dir else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    )  # fmt: skip
    return root / "fedbandit_env" / kind


_GENERATED_LOCK = threading.Lock()


def generated_module(kind: str, name: str, source: str, salt: bytes = b"") -> ModuleType | None:
    r"""``source`` as a module of its own, from a file in :func:`generated_folder`
    (``kind``) named ``<name>_<digest>.py``, the digest of the source and ``salt`` (what
    else the compiled code depends on), written on first use and imported once per
    process. numba caches a function on disk only where it comes from a file, and stamps
    the cache by the file's time and size: a new digest is a new file, so a change of
    the source or the salt compiles again, and the same digest loads. ``None`` where the
    folder cannot be written (the caller compiles in each process, as without it).

    Examples:
        >>> module = generated_module("examples", "twice", "def twice(x):\n    return 2 * x\n")
        >>> module is None or module.twice(21) == 42
        True
    """
    digest = hashlib.sha256(source.encode() + b"\0" + salt).hexdigest()[:16]
    folder = generated_folder(kind)
    path = folder / f"{name}_{digest}.py"
    module_name = f"_fedbandit_{kind}_{path.stem}"
    with _GENERATED_LOCK:  # trials on several threads may ask at once
        module = sys.modules.get(module_name)
        if module is not None:
            return module
        try:
            if not path.exists():
                folder.mkdir(parents=True, exist_ok=True)
                partial = folder / f".{path.name}.{os.getpid()}.tmp"
                partial.write_text(source, encoding="utf-8")
                os.replace(partial, path)  # whole or absent: another process may read it
        except OSError:
            return None
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # before numba reads a cache: it imports it
        spec.loader.exec_module(module)
        return module


__all__ = ["ArgumentFunctionCache", "generated_folder", "generated_module", "stable_key"]
