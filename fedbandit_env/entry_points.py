"""Loading what the registry names: ``"module:attr"`` entry points, plugin packages
(the ``fedbandit_env.policies`` entry point group) and ``--import`` modules or files."""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

ENTRY_POINT_GROUP = "fedbandit_env.policies"
"""The entry point group through which installed packages register policies."""

EntryPoint = Callable[..., Any] | str
"""A callable, or ``"module:attr"`` naming one (imported on first use)."""


def load_entry_point(entry_point: EntryPoint, what: str = "entry point") -> Any:
    """The object an entry point names: the callable itself, or ``module:attr`` imported.

    Raises:
        ValueError: For a string that is not ``"module:attr"``, a module that cannot
            be imported or an attribute it lacks (naming ``what``).

    Examples:
        >>> load_entry_point("fedbandit_env.policies:FixedArm").__name__
        'FixedArm'
    """
    if not isinstance(entry_point, str):
        return entry_point
    module, sep, attr = entry_point.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{what} must look like 'module:attr', got {entry_point!r}")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as err:
        raise ValueError(f"{what} {entry_point!r}: cannot import {module!r}: {err}") from err
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as err:
            raise ValueError(f"{what} {entry_point!r}: {module!r} has no {attr!r}") from err
    return obj


def import_plugin(name: str) -> Any:
    """Import a module that registers policies: a module name (also searched in the
    current folder, as ``python -m`` does) or the path of a ``.py`` file (its folder
    goes on ``sys.path`` first, as ``python file.py`` does, so it may import its
    sibling modules).

    Raises:
        ValueError: If it cannot be imported (naming it).

    Examples:
        >>> import_plugin("json").__name__
        'json'
    """
    import hashlib
    import os
    import sys
    from pathlib import Path

    try:
        if name.endswith(".py"):
            path = Path(name).resolve()
            digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
            module_name = f"fedbandit_plugin_{path.stem}_{digest}"  # one per file
            if module_name in sys.modules:
                return sys.modules[module_name]
            spec_ = importlib.util.spec_from_file_location(module_name, path)
            if spec_ is None or spec_.loader is None or not path.is_file():
                raise ImportError(f"no Python file at {str(path)!r}")
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            module = importlib.util.module_from_spec(spec_)
            sys.modules[module_name] = module
            try:
                spec_.loader.exec_module(module)
            except BaseException:
                del sys.modules[module_name]  # a second try runs it again
                raise
            return module
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
        return importlib.import_module(name)
    except ImportError as err:
        raise ValueError(f"cannot import {name!r}: {err}") from err


def load_plugins(group: str = ENTRY_POINT_GROUP) -> None:
    """Call every registration function installed packages name in ``group``.

    A plugin that fails to load is reported with a warning and skipped, so one broken
    package does not hide the others' policies.
    """
    for ep in entry_points(group=group):
        try:
            hook = ep.load()
            if callable(hook):
                hook()
        except Exception as err:  # a plugin's own error, reported not raised
            warnings.warn(
                f"policy plugin {ep.name!r} ({ep.value}) failed to load: {err}"
                + shadowed_package_hint(ep.value),
                UserWarning,
                stacklevel=2,
            )


def shadowed_package_hint(value: str) -> str:
    """A hint when an entry point's top-level package is another distribution's: the
    reference policies' package is named ``baselines``, as OpenAI Baselines' is, and
    whichever is first on ``sys.path`` wins (``""`` when the package is ours).

    Examples:
        >>> shadowed_package_hint("baselines.registration:register_policies")
        ''
        >>> shadowed_package_hint("json.nope:f").startswith("; the module json found first")
        True
    """
    top = value.split(":")[0].split(".")[0]
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return ""
    origin = getattr(found, "origin", None) or ""
    own = Path(__file__).resolve().parent.parent / top
    if not origin or Path(origin).resolve().parent == own:
        return ""
    return (
        f"; the module {top} found first is {origin}, not fedbandit_env's: another package "
        f"(OpenAI Baselines also installs a top-level {top!r}) shadows it: use a separate "
        "virtual environment"
    )


__all__ = [
    "ENTRY_POINT_GROUP",
    "EntryPoint",
    "entry_points",
    "import_plugin",
    "load_entry_point",
    "load_plugins",
]
