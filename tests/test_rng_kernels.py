"""The kernels' integer draw against NumPy's, draw for draw."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from fedbandit_env.rng_kernels import integer_below


@njit
def _draw_all(rng: np.random.Generator, bounds: np.ndarray, out: np.ndarray) -> None:
    for j in range(bounds.size):
        out[j] = integer_below(rng, bounds[j])


@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_integer_below_is_numpys_integers_draw_for_draw(seed: int) -> None:
    # small bounds (forced picks, ties, edges), bounds where Lemire rejects often
    # (just above 2**31), the raw-uint32 case 2**32 and n = 1 (no draw): interleaved,
    # so a draw consumed differently would shift every later one
    pick = np.random.default_rng(seed + 100)
    bounds = pick.integers(1, 60, 3000)
    bounds[::7] = 1
    bounds[::11] = 2**31 + pick.integers(1, 2**30, bounds[::11].size)
    bounds[::13] = 2**32
    ours = np.empty_like(bounds)
    _draw_all(np.random.default_rng(seed), bounds, ours)
    numpy_rng = np.random.default_rng(seed)
    expected = np.array([numpy_rng.integers(0, n) for n in bounds])
    np.testing.assert_array_equal(ours, expected)
    # and the generators are left in the same state (interleaved 32-bit halves included)
    after = np.random.default_rng(seed)
    _draw_all(after, bounds, ours)
    assert after.random() == numpy_rng.random()


def test_integer_below_rejects_an_empty_range() -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        _draw_all(np.random.default_rng(0), np.array([0]), np.empty(1, np.int64))
