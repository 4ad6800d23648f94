"""The compiled passes of the vector fault layers (:mod:`fedbandit_env.vector.wrappers.kernels`)
against the NumPy statements they replaced, to the bit, on random masks and messages
with NaN, infinities, negative zeros and a public prefix."""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env.vector.wrappers.base import heard_rows
from fedbandit_env.vector.wrappers.kernels import cut_off


def numpy_heard_rows(obs: dict[str, np.ndarray], public_dim: int) -> np.ndarray:
    """``heard_rows`` as it was written in NumPy."""
    sent = np.asarray(obs["messages"], dtype=np.float32)
    full = np.asarray(obs["mask"]).astype(bool).any(axis=1)
    with np.errstate(invalid="ignore"):  # inf times 0: NaN, as the kernel's
        rows = sent * full[..., None]
        if public_dim and "public_mask" in obs:
            public = np.asarray(obs["public_mask"]).astype(bool).any(axis=1)
            rows[..., :public_dim] += sent[..., :public_dim] * (public & ~full)[..., None]
    return np.asarray(rows, dtype=np.float32)


def random_obs(seed: int, public: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, n, d = 7, 5, 6
    messages = rng.normal(size=(b, n, d)).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float32)
    spots = rng.random((b, n, d)) < 0.15
    messages[spots] = rng.choice(special, int(spots.sum()))
    obs = {"messages": messages, "mask": (rng.random((b, n, n)) < 0.3).astype(np.int8)}
    if public:
        obs["public_mask"] = (rng.random((b, n, n)) < 0.4).astype(np.int8)
    return obs


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("public", "public_dim"), [(False, 0), (True, 0), (True, 2)])
def test_heard_rows_is_the_numpy_statement(seed: int, public: bool, public_dim: int) -> None:
    obs = random_obs(seed, public)
    assert same_bits(heard_rows(obs, public_dim), numpy_heard_rows(obs, public_dim))


def test_a_public_prefix_left_out_is_caught() -> None:
    """Power: the rows without the prefix that only the public mask carries differ."""
    obs = random_obs(0, True)
    assert not same_bits(heard_rows(obs, 0), numpy_heard_rows(obs, 2))


@pytest.mark.parametrize("dtype", [np.int8, np.bool_])
@pytest.mark.parametrize("shared", [False, True])
def test_cut_off_is_numpy_where(dtype: type, shared: bool) -> None:
    """Envs with agents down and envs with nobody down (copied whole), one mask per env
    or one for all (``(1, N, N)``)."""
    rng = np.random.default_rng(3)
    down = rng.random((9, 6)) < 0.3
    down[::3] = False  # nobody down in these envs
    mask = (rng.random((1 if shared else 9, 6, 6)) < 0.6).astype(dtype)
    expected = np.where(down[:, :, None] | down[:, None, :], 0, mask).astype(dtype)
    got = cut_off(down, mask, np.empty(expected.shape, dtype))
    assert same_bits(got, expected)
    assert not same_bits(cut_off(down[:, ::-1].copy(), mask, np.empty(expected.shape, dtype)),
                         expected)  # fmt: skip


@pytest.mark.parametrize(
    ("rate", "shared", "steps"),
    [(0.3, False, np.float64), (0.8, False, np.float64), (0.8, True, np.float32)],
)
def test_hold_arrived_is_the_numpy_statement(rate: float, shared: bool, steps: type) -> None:
    """``VecHeldMessages``' compiled update against its array statement, over steps of
    random arrivals (held, heard, last and the age, to the bit): few arrivals (each
    receiver's row starts from what it held), most (it starts from the senders' rows, and
    the slots never heard are zeros), and one mask for every env (``(1, N, N)``); the
    steps last heard in float64 or, as the layer keeps them on NumPy below 2**24 steps,
    in float32."""
    from fedbandit_env.vector.wrappers.kernels import hold_arrived

    rng = np.random.default_rng(5)
    b, n, d, horizon = 4, 5, 3, 6.0  # ages reach the cap: cells unheard for 6 steps
    held, heard, last = (
        np.zeros((b, n, n, d), np.float32),
        np.zeros((b, n, n), np.int8),
        np.zeros((b, n, n), steps),
    )
    ref = (held.copy(), heard.copy(), last.copy())
    for t in range(1, 12):
        arrived = (rng.random((1 if shared else b, n, n)) < rate).astype(np.int8)
        rows = rng.normal(size=(b, n, d)).astype(np.float32)
        outs = (np.empty_like(held), np.empty_like(heard), np.empty_like(last),
                np.empty((b, n, n), np.float32))  # fmt: skip
        hold_arrived(arrived, rows, held, heard, last, float(t), horizon, *outs)
        held, heard, last, age = outs
        a = np.broadcast_to(arrived.astype(bool), (b, n, n))
        ref = (
            np.where(a[..., None], rows[:, None], ref[0]),
            np.where(a, np.ones_like(ref[1]), ref[1]),
            np.where(a, np.full_like(ref[2], float(t)), ref[2]),
        )
        expected_age = np.minimum(float(t) - ref[2], horizon).astype(np.float32)
        for got, want in zip((held, heard, last, age), (*ref, expected_age), strict=True):
            assert same_bits(got, want), t
        if t == 1:  # both kinds of slot, heard and never heard
            assert 0 < heard.sum() < heard.size
    if rate < 0.5:  # rare arrivals: some ages reach the cap, which must be horizon's
        assert not same_bits(age, np.minimum(float(t) - ref[2], horizon - 1).astype(np.float32))


def test_row_sums_is_numpy_sum() -> None:
    """``row_sums`` against ``sum(axis=1)``: booleans and whole numbers, and an empty row."""
    from fedbandit_env.vector.wrappers.kernels import row_sums

    rng = np.random.default_rng(4)
    flags = rng.random((7, 5)) < 0.4
    counts = rng.integers(0, 9, size=(7, 5))
    for x in (flags, counts, np.zeros((3, 0), np.int64)):
        got, want = row_sums(x), x.sum(axis=1)
        assert got.dtype == np.int64 and got.tolist() == want.tolist()
