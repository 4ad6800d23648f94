"""``horizon_free_features`` on NumPy (tables of whole counts, or float64 work written out
as float32) against the plain statement, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env.wrappers.horizon_free import horizon_free_features


def plain(t: int, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    log_t = np.log1p(np.full(1, float(t)))
    c = np.asarray(counts).astype(np.float64)
    shares = c / float(t) if t > 0 else np.zeros_like(c)
    bonus = np.sqrt(float(log_t[0]) / (1.0 + c))
    return log_t.astype(np.float32), shares.astype(np.float32), bonus.astype(np.float32)


@pytest.mark.parametrize("t", [0, 1, 7, 200, 12_345, 10**6])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5,), (64, 10, 5)])
def test_the_same_bits_as_the_plain_statement(t: int, dtype: type, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(t)
    whole = np.floor(rng.random(shape) * min(t + 1, 40)).astype(dtype)  # tables (large)
    spread = np.floor(rng.random(shape) * (t + 1)).astype(dtype)
    fractional = (rng.random(shape) * 50).astype(dtype)
    for counts in (whole, spread, fractional):
        got, want = horizon_free_features(t, counts), plain(t, counts)
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
        assert all(
            g.dtype == np.float32 and g.shape == w.shape for g, w in zip(got, want, strict=True)
        )


def test_a_table_off_by_one_is_caught() -> None:
    """Power: the bonus of the next count differs from the statement's."""
    counts = np.floor(np.random.default_rng(0).random((64, 10, 5)) * 30)
    assert horizon_free_features(50, counts + 1)[2].tobytes() != plain(50, counts)[2].tobytes()
