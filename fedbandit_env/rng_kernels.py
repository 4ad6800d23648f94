"""Compiled random draws shared by every kernel.

numba's ``Generator.integers(low, high)`` returns a scalar by filling a one-element
array: a heap allocation and its atomic reference counts on every draw (measured here:
63 ns a draw, against 6 ns for :func:`integer_below`). Forced picks, ties and gossip
edges draw one small integer at a time, often every step, so the kernels draw through
:func:`integer_below` instead: the same algorithm as NumPy (Lemire's bounded rejection on
the bit generator's ``next_uint32``), hence the same integers and the same consumption of
the stream as ``np.random.Generator.integers(0, n)``. ``tests/test_rng_kernels.py`` holds it
to NumPy's draws for many bounds and seeds.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64
from numba.np.random.generator_core import next_uint32

_UINT32_MAX = 0xFFFFFFFF


@njit(cache=True, nogil=True)
def integer_below(rng: np.random.Generator, n: int) -> int:  # pragma: no cover
    """``rng.integers(0, n)`` for ``n >= 1``, bit for bit, without allocating.

    NumPy draws ``[0, n)`` with ``range = n - 1``: no draw when ``range == 0``; one raw
    ``uint32`` when ``range == 2**32 - 1``; Lemire's rejection on ``uint32`` draws below
    that; beyond 32 bits, numba's own ``integers`` (never reached by the kernels, whose
    bounds are agent, arm and edge counts).

    Example:
        >>> rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
        >>> [integer_below(rng_a, 10) for _ in range(4)] == rng_b.integers(0, 10, 4).tolist()
        True
    """
    span = n - 1
    if span <= 0:
        if span < 0:
            raise ValueError("integer_below needs n >= 1")
        return 0
    if span > _UINT32_MAX:
        return rng.integers(0, n)
    bitgen = rng.bit_generator
    if span == _UINT32_MAX:
        return np.int64(next_uint32(bitgen))
    excl = uint64(span) + uint64(1)
    product = uint64(next_uint32(bitgen)) * excl
    leftover = product & uint64(_UINT32_MAX)
    if leftover < excl:  # rejection, only where the low word can be biased
        threshold = (uint64(_UINT32_MAX) - uint64(span)) % excl
        while leftover < threshold:
            product = uint64(next_uint32(bitgen)) * excl
            leftover = product & uint64(_UINT32_MAX)
    return np.int64(product >> uint64(32))
