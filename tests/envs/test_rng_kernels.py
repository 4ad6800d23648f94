"""The kernels' integer draw against NumPy's, draw for draw."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from fedbandit_env import rng_kernels
from fedbandit_env.rng_kernels import (
    bit_generator_at,
    close_stream,
    fill_noise,
    generator_at,
    generator_table,
    integer_below,
    open_stream,
    pcg64_words,
    standard_normal_of,
    stream_below,
)


@njit
def _draw_all(rng: np.random.Generator, bounds: np.ndarray, out: np.ndarray) -> None:
    for j in range(bounds.size):
        out[j] = integer_below(rng, bounds[j])


@njit
def _draw_round_robin(table: np.ndarray, bounds: np.ndarray, out: np.ndarray) -> None:
    for j in range(bounds.size):  # draw j from generator j % rows
        out[j] = integer_below(generator_at(table, j % table.shape[0]), bounds[j])


def _bounds(seed: int) -> np.ndarray:
    # small bounds (forced picks, ties, edges), bounds where Lemire rejects often
    # (just above 2**31 and 2**63), the raw-uint32 case 2**32, 64-bit bounds and n = 1
    # (no draw): interleaved, so a draw consumed differently would shift every later one
    pick = np.random.default_rng(seed + 100)
    bounds = pick.integers(1, 60, 3000)
    bounds[::7] = 1
    bounds[::11] = 2**31 + pick.integers(1, 2**30, bounds[::11].size)
    bounds[::13] = 2**32
    bounds[::17] = pick.integers(2**32 + 1, 2**62, bounds[::17].size)
    bounds[::19] = 2**62 + pick.integers(1, 2**61, bounds[::19].size)
    bounds[::23] = 2**63 - 1
    return bounds


@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_integer_below_is_numpys_integers_draw_for_draw(seed: int) -> None:
    bounds = _bounds(seed)
    ours = np.empty_like(bounds)
    _draw_all(np.random.default_rng(seed), bounds, ours)
    numpy_rng = np.random.default_rng(seed)
    expected = np.array([numpy_rng.integers(0, n) for n in bounds])
    np.testing.assert_array_equal(ours, expected)
    # and the generators are left in the same state (interleaved 32-bit halves included)
    after = np.random.default_rng(seed)
    _draw_all(after, bounds, ours)
    assert after.random() == numpy_rng.random()


@njit
def _draw_by_streams(table: np.ndarray, bounds: np.ndarray, every: int, out: np.ndarray) -> None:
    # a stream over row 0, closed and opened again every `every` draws, and between them
    # one draw from the row itself (the stream's state and 32-bit buffer written back)
    slot = generator_at(table, 0)
    stream = open_stream(slot)
    for j in range(bounds.size):
        if j % every == every - 1:
            close_stream(slot, stream)
            out[j] = integer_below(slot, bounds[j])
            stream = open_stream(slot)
        else:
            out[j], stream = stream_below(stream, bounds[j])
    close_stream(slot, stream)


@pytest.mark.parametrize(("seed", "every"), [(0, 5), (1, 2), (2024, 10**9)])
def test_a_stream_draws_its_rows_numbers_and_leaves_its_state(seed: int, every: int) -> None:
    bounds = _bounds(seed)
    ours = np.empty_like(bounds)
    rng = np.random.default_rng(seed)
    _draw_by_streams(generator_table([rng]), bounds, every, ours)
    numpy_rng = np.random.default_rng(seed)
    expected = np.array([numpy_rng.integers(0, n) for n in bounds])
    np.testing.assert_array_equal(ours, expected)
    # the generator goes on where NumPy's does, its buffered 32-bit half included
    assert rng.bit_generator.state == numpy_rng.bit_generator.state
    assert rng.integers(0, 7, 5).tolist() == numpy_rng.integers(0, 7, 5).tolist()


@pytest.mark.parametrize("seed", [0, 7])
def test_a_generator_table_draws_what_its_generators_draw(seed: int) -> None:
    # three generators interleaved through one table, as the kernels' agents draw
    bounds = _bounds(seed)
    rngs = [np.random.default_rng([seed, a]) for a in range(3)]
    ours = np.empty_like(bounds)
    _draw_round_robin(generator_table(rngs), bounds, ours)
    numpy_rngs = [np.random.default_rng([seed, a]) for a in range(3)]
    expected = [numpy_rngs[j % 3].integers(0, n) for j, n in enumerate(bounds)]
    np.testing.assert_array_equal(ours, expected)
    # the table drew on the generators themselves: they moved on exactly as NumPy's
    assert [r.random() for r in rngs] == [r.random() for r in numpy_rngs]


def test_pcg64_rows_are_stepped_in_the_kernel_and_other_bit_generators_called() -> None:
    """A PCG64 row holds its state words (the 64-bit draws step them in the kernel); a
    row of another bit generator holds 0 and is drawn through its call. Both in one
    table, interleaved with 32-bit draws, give each generator's own numbers and leave
    it where NumPy's draws leave it."""
    kinds = [np.random.PCG64, np.random.Philox, np.random.PCG64, np.random.SFC64,
             np.random.MT19937, np.random.PCG64DXSM]  # fmt: skip

    def make() -> list[np.random.Generator]:
        return [np.random.Generator(kind(40 + k)) for k, kind in enumerate(kinds)]

    rngs = make()
    table = generator_table(rngs)
    assert [bool(w) for w in table[:, 4]] == [k is np.random.PCG64 for k in kinds]
    assert pcg64_words(np.random.PCG64DXSM(0)) == 0  # another output function
    bounds = np.resize(_bounds(3), 6 * 500)
    ours = np.empty_like(bounds)
    _draw_round_robin(table, bounds, ours)
    numpy_rngs = make()
    expected = [numpy_rngs[j % 6].integers(0, n) for j, n in enumerate(bounds)]
    np.testing.assert_array_equal(ours, expected)
    assert [r.random() for r in rngs] == [r.random() for r in numpy_rngs]


def test_a_table_read_from_the_capsules_is_the_ctypes_interfaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The table reads each generator's ``bitgen_t`` from its capsule (NumPy's layout,
    checked once a process): the addresses its ``ctypes`` interface reports, for every
    bit generator, and the table built through ``ctypes`` where the check fails."""
    kinds = [np.random.PCG64, np.random.Philox, np.random.SFC64, np.random.MT19937,
             np.random.PCG64DXSM]  # fmt: skip
    rngs = [np.random.Generator(kind(7 + k)) for k, kind in enumerate(kinds)]
    assert rng_kernels._bitgen_readable()
    want = np.array([rng_kernels._ctypes_words(rng.bit_generator) for rng in rngs], np.uint64)
    read = generator_table(rngs)
    np.testing.assert_array_equal(read[:, :4], want)
    monkeypatch.setattr(rng_kernels, "_bitgen_readable", lambda: False)
    np.testing.assert_array_equal(generator_table(rngs), read)
    # power: the two function pointers swapped (bitgen_t keeps next_uint64 first) differ
    assert not np.array_equal(want[:, [0, 2, 1, 3]], want)


def test_integer_below_returns_minus_one_for_an_empty_range_without_drawing() -> None:
    rng, untouched = np.random.default_rng(0), np.random.default_rng(0)
    out = np.empty(2, np.int64)
    _draw_all(rng, np.array([0, -5]), out)
    assert out.tolist() == [-1, -1]
    assert rng.random() == untouched.random()


@pytest.mark.parametrize("seed", [0, 7, 2024])
def test_fill_noise_draws_each_generators_numbers_in_order(seed: int) -> None:
    # three generators, uniforms and normals, in two calls (a stream read on across
    # blocks): NumPy's numbers, and each generator left where NumPy leaves it
    kinds = np.array([0, 1, 1])
    mine = [np.random.default_rng(seed + k) for k in range(3)]
    theirs = [np.random.default_rng(seed + k) for k in range(3)]
    table = generator_table(mine)
    for shape in ((5, 4), (300, 7)):
        out = fill_noise(table, kinds, np.empty((3, *shape)))
        for b, rng in enumerate(theirs):
            expected = rng.random(shape) if kinds[b] == 0 else rng.standard_normal(shape)
            assert np.array_equal(out[b], expected), (b, shape)
    for b in range(3):  # the generators' own states moved on by exactly those draws
        assert mine[b].random() == theirs[b].random()


@njit
def _normals_of_generator(rng: np.random.Generator, out: np.ndarray) -> None:
    for j in range(out.size):
        out[j] = standard_normal_of(rng)


@njit
def _normals_of_bits(table: np.ndarray, out: np.ndarray) -> None:
    bits = bit_generator_at(table, 0)
    for j in range(out.size):
        out[j] = standard_normal_of(bits)


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.MT19937, np.random.Philox])
def test_standard_normals_keep_numpys_ziggurat_in_its_rare_branches(bits: type) -> None:
    # 200k normals a generator: about 1,400 take the wedge test and 50 the tail beyond
    # the ziggurat's r = 3.654..., each redrawing from the stream, so a branch that drew
    # differently (or took the sign differently) would shift every later number. PCG64
    # is stepped in the kernel, the others called through their pointers.
    mine, theirs = np.random.Generator(bits(11)), np.random.Generator(bits(11))
    out = fill_noise(generator_table([mine]), np.array([1]), np.empty((1, 200_000)))
    expected = theirs.standard_normal(200_000)
    assert np.array_equal(out[0], expected)
    assert (np.abs(expected) > 3.6541528853610088).sum() >= 20  # the tail was drawn
    assert mine.random() == theirs.random()
    # the same through a Generator and through numba's bit generator over a table row
    for source in ("generator", "bits"):
        mine, theirs = np.random.Generator(bits(12)), np.random.Generator(bits(12))
        out = np.empty(200_000)
        if source == "generator":
            _normals_of_generator(mine, out)
        else:
            _normals_of_bits(generator_table([mine]), out)
        assert np.array_equal(out, theirs.standard_normal(200_000)), source
        assert mine.random() == theirs.random(), source


def test_fill_noise_can_tell_the_streams_apart() -> None:
    # power: the same numbers from the wrong generator, or normals for uniforms, differ
    rngs = [np.random.default_rng(1), np.random.default_rng(2)]
    out = fill_noise(generator_table(rngs), np.array([1, 1]), np.empty((2, 50)))
    assert not np.array_equal(out[0], np.random.default_rng(2).standard_normal(50))
    alive = [np.random.default_rng(3)]  # the table holds its address, not a reference
    out = fill_noise(generator_table(alive), np.array([0]), np.empty((1, 50)))
    assert not np.array_equal(out[0], np.random.default_rng(3).standard_normal(50))


def test_pcg64_distance_counts_the_numbers_drawn() -> None:
    """``pcg64_distance`` is the number of raw draws between two states of one stream:
    random counts, a jump of ``2**100 + 5``, and refusals for other streams."""
    from fedbandit_env.rng_kernels import pcg64_distance

    counts = np.random.default_rng(99).integers(0, 50_000, size=12)
    for seed, k in enumerate(counts):
        rng = np.random.default_rng(seed)
        before = rng.bit_generator.state
        rng.random(int(k))
        assert pcg64_distance(before, rng.bit_generator.state) == k
        assert pcg64_distance(before, before) == 0
    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    rng.bit_generator.advance(2**100 + 5)
    assert pcg64_distance(before, rng.bit_generator.state) == 2**100 + 5
    with pytest.raises(ValueError, match="different PCG64 streams"):
        pcg64_distance(before, np.random.default_rng(2).bit_generator.state)
    with pytest.raises(ValueError, match="not a PCG64 state"):
        pcg64_distance(before, np.random.Generator(np.random.MT19937(1)).bit_generator.state)


def test_a_generator_table_keeps_its_generators_alive() -> None:
    """A table holds addresses; the generators behind them live as long as it does, so a
    table made of a temporary list never points at freed memory (a kernel advancing a
    freed PCG64 state corrupts whatever was allocated there)."""
    import gc
    import sys

    rng = np.random.default_rng(0)
    alone = sys.getrefcount(rng)
    table = generator_table([rng])
    assert sys.getrefcount(rng) == alone + 1
    del table
    gc.collect()
    assert sys.getrefcount(rng) == alone
    table = generator_table([np.random.default_rng(7)])  # nothing else holds it
    gc.collect()
    out = fill_noise(table, np.array([0]), np.empty((1, 5)))
    assert out[0].tolist() == np.random.default_rng(7).random(5).tolist()
