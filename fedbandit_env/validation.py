"""Argument checks shared by every public constructor: precise errors, early.

Example:
    >>> check_int("horizon", 5, minimum=1)
    5
    >>> check_int("horizon", 0, minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: horizon must be >= 1, got 0
"""

from __future__ import annotations

import numpy as np


def check_int(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int, or raise naming ``name``, the value and what is allowed.

    Raises:
        TypeError: If ``value`` is not an integer (``bool`` included).
        ValueError: If ``value < minimum``.


    Example:
        >>> check_int("n_arms", np.int64(3), minimum=1)
        3
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)
