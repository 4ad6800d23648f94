"""Argument checks shared by every public constructor: precise errors, early.

Examples:
    >>> check_int("horizon", 5, minimum=1)
    5
    >>> check_int("horizon", 0, minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: horizon must be >= 1, got 0
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

RESET_OPTIONS: tuple[str, ...] = ("problem",)
"""The keys the envs' ``reset(options=...)`` reads."""


def check_reset_options(options: object) -> Mapping[str, Any]:
    """The ``options`` of an env's ``reset``: ``None`` or a mapping. A key the env does
    not read (:data:`RESET_OPTIONS`) gets a warning naming it: a typo such as
    ``"probelm"`` would otherwise silently play the default instance. (A warning, not an
    error: PettingZoo's ``parallel_api_test`` probes ``reset`` with a dummy key.)

    Examples:
        >>> dict(check_reset_options(None)), list(check_reset_options({"problem": None}))
        ({}, ['problem'])
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = check_reset_options({"probelm": 1})
        >>> print(caught[0].message)
        reset(options=...) ignores unknown key(s) ['probelm']; the env reads ['problem']
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(
            f"reset(options=...) must be a dict such as {{'problem': p}}, got "
            f"{type(options).__name__} {options!r}"
        )
    unknown = sorted(str(k) for k in options if k not in RESET_OPTIONS)
    if unknown:
        warnings.warn(
            f"reset(options=...) ignores unknown key(s) {unknown}; the env reads "
            f"{list(RESET_OPTIONS)}",
            UserWarning,
            stacklevel=3,
        )
    return options


def check_int(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int, or raise naming ``name``, the value and what is allowed.

    Raises:
        TypeError: If ``value`` is not an integer (``bool`` included).
        ValueError: If ``value < minimum``.


    Examples:
        >>> check_int("n_arms", np.int64(3), minimum=1)
        3
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def physical_memory() -> int:
    """This machine's physical memory in bytes (0 where the system does not say).

    Examples:
        >>> physical_memory() >= 0
        True
    """
    import os

    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return 0


def trial_bytes(n_agents: int, n_arms: int) -> int:
    """A lower estimate of one trial's memory: its ``(N, M)`` tables (the instance's
    means and biases, every agent's counts, sums, estimates and draws: six float64) and
    its ``(N, N)`` graph and delivery mask (float64).

    Examples:
        >>> trial_bytes(10, 5)
        3200
    """
    return 8 * (6 * int(n_agents) * int(n_arms) + int(n_agents) ** 2)


def check_memory(needed: int, what: str, remedy: str) -> None:
    """Refuse, before any work, what would need more than this machine's physical memory
    (a memory error after minutes, or a swap storm, otherwise).

    Raises:
        ValueError: Naming ``what``, the estimate, the machine's memory and ``remedy``.

    Examples:
        >>> check_memory(10, "a tiny run", "lower it")
        >>> check_memory(10**20, "a trial of N=10^5 agents", "lower --agents")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: a trial of N=10^5 agents needs about 9.31e+10 GiB of memory ... lower --agents
    """
    have = physical_memory()
    if have and needed > have:
        raise ValueError(
            f"{what} needs about {needed / 2**30:.3g} GiB of memory (a lower estimate), "
            f"more than this machine's {have / 2**30:.3g} GiB: {remedy}"
        )
