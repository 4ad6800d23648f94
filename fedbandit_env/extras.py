"""Optional dependencies: one error that names the extra to install.

The core needs numpy, gymnasium, pettingzoo, networkx, numba and tqdm; plots, learners,
clusters and Parquet need extras (``pyproject.toml``). Code that needs one imports it
through :func:`require`, so a user without it reads one line that says what to install,
and the command line prints that line alone (exit status 2), never a traceback; ``bench``
and ``sweep`` go on without their plot.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(ImportError):
    """An optional dependency is not installed; the message names the extra.

    Examples:
        >>> issubclass(MissingExtra, ImportError)
        True
    """


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtra` naming ``extra``.

    Args:
        module: The module to import (``"matplotlib.pyplot"``).
        extra: The package extra that installs it (``"plots"``).
        purpose: What needs it, for the message (``"plotting"``).

    Examples:
        >>> require("json", "core", "reading JSON").__name__
        'json'
        >>> try:
        ...     require("no_such_module_xyz", "plots", "plotting")
        ... except MissingExtra as err:
        ...     print(err)
        plotting needs no_such_module_xyz: pip install 'fedbandit_env[plots]'
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtra(
            f"{purpose} needs {module.partition('.')[0]}: pip install 'fedbandit_env[{extra}]'"
        ) from err


__all__ = ["MissingExtra", "require"]
