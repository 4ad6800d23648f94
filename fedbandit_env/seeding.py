"""Seeding helpers: one ``SeedSequence`` per run, spawned, never global state.

Example:
    >>> a, b = spawn(0, 2)
    >>> a.entropy == b.entropy and a.spawn_key != b.spawn_key
    True
"""

from __future__ import annotations

import numpy as np

from fedbandit_env.type_aliases import SeedLike


def seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """``seed`` as a ``SeedSequence`` (fresh OS entropy for ``None``).

    Example:
        >>> seed_sequence(3).entropy
        3
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)


def spawn(seed: SeedLike, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child sequences of ``seed``."""
    return seed_sequence(seed).spawn(n)


def int_seed(seed: SeedLike) -> int:
    """A 32-bit int drawn from ``seed`` (for APIs that only take ints, e.g. ``reset``).

    Example:
        >>> int_seed(0) == int_seed(np.random.SeedSequence(0))
        True
    """
    return int(seed_sequence(seed).generate_state(1)[0])
