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
from numba.np.random.generator_core import next_uint32, next_uint64

_UINT32_MAX = 0xFFFFFFFF
_UINT64_MAX = 0xFFFFFFFFFFFFFFFF


@njit(cache=True, nogil=True)
def _multiply_64(a: int, b: int) -> tuple[int, int]:  # pragma: no cover
    """The 128-bit product of two ``uint64`` as ``(high, low)`` words.

    Example:
        >>> [int(w) for w in _multiply_64(2**63, 6)]
        [3, 0]
    """
    a, b = uint64(a), uint64(b)
    mask = uint64(_UINT32_MAX)
    shift = uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & mask, a >> shift, b & mask, b >> shift
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    cross = (lo_lo >> shift) + (hi_lo & mask) + lo_hi
    high = a_hi * b_hi + (hi_lo >> shift) + (cross >> shift)
    return high, a * b


@njit(cache=True, nogil=True)
def integer_below(rng: np.random.Generator, n: int) -> int:  # pragma: no cover
    """``rng.integers(0, n)`` for ``1 <= n < 2**63``, bit for bit, without allocating;
    ``-1`` (and no draw) for ``n < 1``, where NumPy raises: the callers' bounds are
    counts known to be positive, and a ``raise`` here would keep numba from pruning the
    generator's reference counts on every call (measured: 18 ns a draw instead of 2).

    NumPy draws ``[0, n)`` with ``range = n - 1``: no draw when ``range == 0``; one raw
    ``uint32`` when ``range == 2**32 - 1``; Lemire's rejection on ``uint32`` draws below
    that and on ``uint64`` draws above.

    Example:
        >>> rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
        >>> [integer_below(rng_a, 10) for _ in range(4)] == rng_b.integers(0, 10, 4).tolist()
        True
    """
    if n <= 1:
        return 0 if n == 1 else -1
    span = uint64(n - 1)
    bitgen = rng.bit_generator
    if span == uint64(_UINT32_MAX):
        return np.int64(next_uint32(bitgen))
    if span < uint64(_UINT32_MAX):
        excl = span + uint64(1)
        product = uint64(next_uint32(bitgen)) * excl
        leftover = product & uint64(_UINT32_MAX)
        if leftover < excl:  # rejection, only where the low word can be biased
            threshold = (uint64(_UINT32_MAX) - span) % excl
            while leftover < threshold:
                product = uint64(next_uint32(bitgen)) * excl
                leftover = product & uint64(_UINT32_MAX)
        return np.int64(product >> uint64(32))
    excl = span + uint64(1)
    high, leftover = _multiply_64(next_uint64(bitgen), excl)
    if leftover < excl:
        threshold = (uint64(_UINT64_MAX) - span) % excl
        while leftover < threshold:
            high, leftover = _multiply_64(next_uint64(bitgen), excl)
    return np.int64(high)
