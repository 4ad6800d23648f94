"""Compiled random draws shared by every kernel.

numba's ``Generator.integers(low, high)`` returns a scalar by filling a one-element
array: a heap allocation and its atomic reference counts on every draw (measured here:
63 ns a draw, against 2 ns for :func:`integer_below`). Forced picks, ties and gossip
edges draw one small integer at a time, often every step, so the kernels draw through
:func:`integer_below` instead: the same algorithm as NumPy (Lemire's bounded rejection on
the bit generator's ``next_uint32`` / ``next_uint64``), hence the same integers and the
same consumption of the stream as ``np.random.Generator.integers(0, n)``.
``tests/envs/test_rng_kernels.py`` holds it to NumPy's draws for many bounds and seeds.

Many generators (one per agent) cannot go into a kernel as a numba typed list without
cost: an item access there is a C call and atomic reference counts, about 40 ns. They go
as a :func:`generator_table` instead, one row of addresses per generator from NumPy's
documented ``bit_generator.ctypes`` interface, and :func:`generator_at` gives a row that
:func:`integer_below` draws from exactly as from the generator itself (the same C
functions on the same state). :func:`next_double_at` and :func:`standard_normal_at`
draw ``Generator.random()`` and ``Generator.standard_normal()`` from a row
(:func:`fill_noise`: a block of either), at a few nanoseconds a number where NumPy's
calls on small arrays cost more in the call than in the draws; :func:`bit_generator_at`
makes a row numba's own bit generator, for numba's other distributions (``beta``).

A row of a PCG64 generator (``np.random.default_rng``'s) also holds the address of its
128-bit state and increment, and :func:`integer_below` and the kernels' uniforms then
step that state in the kernel itself (:func:`pcg64_next`: NumPy's ``pcg64_next64``,
the XSL-RR output of the 128-bit LCG, written out in LLVM's 128-bit arithmetic) instead
of calling ``next_uint64`` through its pointer: the same numbers from the same memory,
without a call that spills the kernel's registers (measured: an agent's crash chain
37 -> 27 us a step at B = 1024, N = 10). The same holds for ``next_uint32``
(:func:`pcg64_next32`: NumPy's ``pcg64_next32``, half of a 64-bit draw, the other half
kept in the state struct's ``has_uint32`` / ``uinteger`` fields for the next call;
measured: a bounded draw 2.1 -> 1.2 ns). The address is used only if this NumPy keeps
the state where and as ``bit_generator.state`` reports it, and the 32-bit buffer in the
two fields after its pointer (the layout of its native 128-bit build, checked once a
process on fresh generators: :func:`pcg64_words`); any other layout, bit generator or
byte order keeps the call.

:func:`integer_below` is inlined into its callers (numba's ``inline="always"``): called
as a function with a row of a table it cost 4.2 ns a bounded draw, against 1.9 ns
inlined, measured on 2 shared cores.

A loop of many draws from one PCG64 row (a step's decision sets: ``N K`` bounded draws)
holds the row's state as values instead (:class:`Stream`: :func:`open_stream`,
:func:`stream_below`, :func:`close_stream`), which the compiler keeps in registers: drawn
from the row, each number loads and stores the state, since the compiler cannot tell
that the loop's array stores leave the generator's memory alone. The numbers, and the
state left behind, are the row's (``tests/envs/test_rng_kernels.py``).
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Sequence
from ctypes import (
    PYFUNCTYPE,
    c_char_p,
    c_int,
    c_uint32,
    c_uint64,
    c_void_p,
    cast,
    py_object,
    pythonapi,
)
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.extending import intrinsic, overload
from numba.np.random import _constants as _ziggurat
from numba.np.random.distributions import random_beta
from numba.np.random.generator_core import next_double, next_uint32, next_uint64

_UINT32_MAX = 0xFFFFFFFF
_DOUBLE_UNIT = 1.0 / 9007199254740992.0  # 2**-53: NumPy's next_double of a 64-bit draw
_UINT64_MAX = 0xFFFFFFFFFFFFFFFF
_KI, _WI, _FI = _ziggurat.ki_double, _ziggurat.wi_double, _ziggurat.fi_double
_NOR_R, _NOR_INV_R = _ziggurat.ziggurat_nor_r, _ziggurat.ziggurat_nor_inv_r
"""NumPy's standard-normal ziggurat tables and its tail's start (numba's copies)."""


@njit(cache=True, nogil=True)
def _multiply_64(a: np.uint64, b: np.uint64) -> tuple[np.uint64, np.uint64]:  # pragma: no cover
    """The 128-bit product of two ``uint64`` as ``(high, low)`` words.

    Examples:
        >>> [int(w) for w in _multiply_64(np.uint64(2**63), np.uint64(6))]
        [3, 0]
    """
    mask = np.uint64(_UINT32_MAX)
    shift = np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & mask, a >> shift, b & mask, b >> shift
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    cross = (lo_lo >> shift) + (hi_lo & mask) + lo_hi
    high = a_hi * b_hi + (hi_lo >> shift) + (cross >> shift)
    return high, a * b


GeneratorSlot = tuple[int, int, int, int, int]
"""A row of a :func:`generator_table` as :func:`generator_at` reads it: ``(state
address, next_uint32, next_uint64, next_double, PCG64 state words or 0)``."""

_HAS_UINT32_OFFSET = 8
"""Where NumPy's ``pcg64_state`` keeps ``has_uint32`` (an ``int``, after the state
pointer), checked by :func:`_native_pcg64`."""
_UINTEGER_OFFSET = 12
"""Where it keeps ``uinteger`` (the buffered ``uint32``)."""
_PCG64_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
"""``PCG_DEFAULT_MULTIPLIER_128`` of NumPy's ``pcg64.h``."""
_WORD = (1 << 64) - 1


def pcg64_words(bit_generator: np.random.BitGenerator, state_address: int | None = None) -> int:
    """The address of a PCG64 bit generator's ``(state, inc)`` as four little-endian
    ``uint64`` words (``state`` low, high, ``inc`` low, high), read from the first field
    of its state struct (at ``state_address``, default its ``ctypes.state_address``);
    0 for another bit generator, or where NumPy's build keeps them otherwise (checked
    once a process, :func:`_native_pcg64`): draw through the call then.

    Examples:
        >>> pcg64_words(np.random.PCG64(0)) != 0, pcg64_words(np.random.Philox(0))
        (True, 0)
    """
    if type(bit_generator) is not np.random.PCG64 or not _native_pcg64():
        return 0
    address = bit_generator.ctypes.state_address if state_address is None else state_address
    return int(c_void_p.from_address(address).value or 0)


@functools.lru_cache(maxsize=1)
def _native_pcg64() -> bool:
    """Whether this NumPy keeps a PCG64 state as :func:`pcg64_words` reads it: the
    words at the state struct's first field are what ``bit_generator.state`` reports
    (NumPy's native 128-bit build on a little-endian machine), for a few seeds."""
    if sys.byteorder != "little":
        return False
    for seed in (0, 1, 2**40 + 3):
        bit_generator = np.random.PCG64(seed)
        bit_generator.advance(seed + 5)
        pointer = c_void_p.from_address(bit_generator.ctypes.state_address).value
        if not pointer:
            return False
        state = bit_generator.state["state"]
        expected = (state["state"] & _WORD, state["state"] >> 64, state["inc"] & _WORD,
                    state["inc"] >> 64)  # fmt: skip
        if tuple((c_uint64 * 4).from_address(pointer)) != expected:
            return False
        # the 32-bit buffer: after one next_uint32, has_uint32 = 1 and uinteger the high
        # half of the 64-bit draw it split (NumPy's pcg64_next32)
        twin = np.random.PCG64()
        twin.state = bit_generator.state
        interface = bit_generator.ctypes
        low = int(interface.next_uint32(interface.state))
        word = int(twin.random_raw())
        address = int(interface.state_address)
        has = c_int.from_address(address + _HAS_UINT32_OFFSET).value
        kept = c_uint32.from_address(address + _UINTEGER_OFFSET).value
        if (low, has, kept) != (word & _UINT32_MAX, 1, word >> 32):
            return False
    return True


def generator_table(rngs: Sequence[np.random.Generator]) -> npt.NDArray[np.uint64]:
    """The ``(len(rngs), 5)`` ``uint64`` table of the generators' bit-generator state,
    ``next_uint32`` / ``next_uint64`` / ``next_double`` function addresses and PCG64
    state words (:func:`pcg64_words`, 0 for none), for :func:`generator_at` and
    :func:`bit_generator_at`.

    The table holds addresses; it keeps its generators alive itself (a finalizer holds
    them until the table is collected), so a table made of a temporary list stays valid
    (a kernel drawing through it once wrote into freed memory). Drawing from the
    generators elsewhere still changes what a kernel draws next.

    Examples:
        >>> rngs = [np.random.default_rng(s) for s in (1, 2)]
        >>> generator_table(rngs).shape
        (2, 5)
    """
    table = np.zeros((len(rngs), 5), dtype=np.uint64)
    read = _bitgen_words if _bitgen_readable() else _ctypes_words
    for i, rng in enumerate(rngs):
        state, uint32, uint64, double = read(rng.bit_generator)
        table[i] = (state, uint32, uint64, double, pcg64_words(rng.bit_generator, state))
    weakref.finalize(table, _keep, list(rngs))  # the generators live as long as the table
    return table


def _ctypes_words(bit_generator: np.random.BitGenerator) -> tuple[int, int, int, int]:
    """A bit generator's state address and ``next_uint32`` / ``next_uint64`` /
    ``next_double`` addresses through its ``ctypes`` interface (which builds three
    ctypes function objects: about 35 us a generator)."""
    interface = bit_generator.ctypes
    return (int(interface.state_address), _address(interface.next_uint32),
            _address(interface.next_uint64), _address(interface.next_double))  # fmt: skip


_capsule_pointer = PYFUNCTYPE(c_void_p, py_object, c_char_p)(("PyCapsule_GetPointer", pythonapi))
"""``PyCapsule_GetPointer`` with its own prototype (not set on ``ctypes.pythonapi``'s
shared function object, which other libraries call with theirs)."""


def _bitgen_words(bit_generator: np.random.BitGenerator) -> tuple[int, int, int, int]:
    """:func:`_ctypes_words` read from the bit generator's ``capsule``: NumPy's
    ``bitgen_t`` (``numpy/random/bitgen.h``: the state pointer, then ``next_uint64``,
    ``next_uint32``, ``next_double`` and ``next_raw``), about 4 us a generator. Used
    where :func:`_bitgen_readable` found the layout so in this process."""
    address = _capsule_pointer(bit_generator.capsule, b"BitGenerator")
    words = (c_uint64 * 4).from_address(address)
    return int(words[0]), int(words[2]), int(words[1]), int(words[3])


@functools.lru_cache(maxsize=1)
def _bitgen_readable() -> bool:
    """Whether :func:`_bitgen_words` reads what the ``ctypes`` interface reports, for a
    generator of each of NumPy's bit generators (checked once a process; else the tables
    are built through ``ctypes``)."""
    try:
        kinds = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64,
                 np.random.MT19937)  # fmt: skip
        made = [kind(1) for kind in kinds]
        return all(_bitgen_words(g) == _ctypes_words(g) for g in made)
    except (AttributeError, ValueError, TypeError):  # no capsule, or another name
        return False


def _keep(*owners: object) -> None:
    """Nothing: its arguments are what a generator table keeps alive until collected."""


def _address(function: Any) -> int:
    """The address of a ctypes function pointer."""
    address = cast(function, c_void_p).value
    if not address:
        raise ValueError("a bit generator exposes a null function pointer")
    return int(address)


@njit(cache=True, nogil=True)
def generator_at(table: npt.NDArray[np.uint64], i: int) -> GeneratorSlot:  # pragma: no cover
    """Row ``i`` of a :func:`generator_table`, to draw from with :func:`integer_below`.

    Examples:
        >>> rngs = [np.random.default_rng(5)]
        >>> slot = generator_at(generator_table(rngs), 0)
        >>> integer_below(slot, 100) == int(np.random.default_rng(5).integers(0, 100))
        True
    """
    return table[i, 0], table[i, 1], table[i, 2], table[i, 3], table[i, 4]


def _bit_generator_typing(typingctx: Any, table: Any, i: Any) -> Any:
    """numba's bit generator (``NumPyRandomBitGeneratorType``) over row ``i`` of a
    :func:`generator_table`: the state and the three ``next_*`` addresses of that row
    (no Python object behind it: nothing is reference-counted)."""
    bit_type = types.NumPyRandomBitGeneratorType("bit_generator")

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        width = cgutils.unpack_tuple(builder, array.shape)[1]
        row = builder.mul(args[1], width)

        def column(k: int) -> Any:
            at = builder.add(row, context.get_constant(types.intp, k))
            return builder.load(builder.gep(array.data, [at]))

        value = cgutils.create_struct_proxy(bit_type)(context, builder)
        value.state_address = column(0)
        value.state = column(0)
        value.fnptr_next_uint32 = column(1)
        value.fnptr_next_uint64 = column(2)
        value.fnptr_next_double = column(3)
        value.bit_generator = context.get_constant(types.uintp, 0)
        value.parent = cgutils.get_null_value(value.parent.type)
        return value._getvalue()

    return bit_type(table, types.intp), codegen


_bit_generator: Any = intrinsic(_bit_generator_typing)


@njit(cache=True, nogil=True)
def bit_generator_at(table: npt.NDArray[np.uint64], i: int) -> Any:  # pragma: no cover
    """Row ``i`` of a C-ordered :func:`generator_table` as numba's bit generator, which
    numba's distributions draw from as from the generator's own (:func:`beta_of`).

    Examples:
        >>> @njit
        ... def one_beta(table):
        ...     return beta_of(bit_generator_at(table, 0), 2.0, 3.0)
        >>> rngs = [np.random.default_rng(3)]
        >>> one_beta(generator_table(rngs)) == np.random.default_rng(3).beta(2.0, 3.0)
        True
    """
    return _bit_generator(table, i)


@njit(cache=True, nogil=True)
def fill_noise(
    table: npt.NDArray[np.uint64], kinds: npt.NDArray[np.int64], out: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:  # pragma: no cover
    """``out[b]`` (any shape after the first axis, C-ordered) filled from generator ``b``
    of ``table``: uniforms on ``[0, 1)`` where ``kinds[b] == 0``, else standard normals,
    the numbers ``Generator.random(shape)`` / ``Generator.standard_normal(shape)`` give
    (:func:`next_double_at`, :func:`standard_normal_at`: NumPy's algorithms,
    ``tests/envs/test_rng_kernels.py``).

    Examples:
        >>> rngs = [np.random.default_rng(s) for s in (1, 2)]
        >>> out = fill_noise(generator_table(rngs), np.array([0, 1]), np.empty((2, 3)))
        >>> bool((out[1] == np.random.default_rng(2).standard_normal(3)).all())
        True
    """
    for b in range(out.shape[0]):
        row = out[b].reshape(-1)
        slot = generator_at(table, b)
        if kinds[b] == 0:
            for k in range(row.size):
                row[k] = next_double_at(slot)
        else:
            for k in range(row.size):
                row[k] = standard_normal_at(slot)
    return out


def _call_next(width: int) -> Any:
    """An intrinsic calling a bit generator's ``next_uint{width}`` (``width`` 0:
    ``next_double``) at an address."""

    @intrinsic
    def call(typingctx: Any, state: Any, function: Any) -> Any:
        result: Any = {32: types.uint32, 64: types.uint64, 0: types.float64}[width]

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            address_type = context.get_value_type(types.uintp)
            function_type = ir.FunctionType(context.get_value_type(result), (address_type,))
            pointer = builder.inttoptr(args[1], function_type.as_pointer())
            return builder.call(pointer, (args[0],))

        return result(types.uint64, types.uint64), codegen

    return call


_call_next_uint32 = _call_next(32)
_call_next_uint64 = _call_next(64)
_call_next_double = _call_next(0)


def pcg64_distance(before: dict[str, Any], after: dict[str, Any]) -> int:
    """How many numbers a PCG64 generator drew between two of its ``bit_generator.state``
    dicts (``before`` earlier than ``after``, the same stream): the number of steps of
    its 128-bit LCG from one state to the other, found bit by bit from the lowest (an
    LCG modulo ``2**128`` with an odd increment steps every state once a period, and its
    low ``k`` bits depend only on the low ``k`` bits before, so ``2**k`` steps of it are
    one step of another LCG with multiplier ``a**(2**k)``: one decision a bit, 128 at
    most). Each ``next_uint64`` / ``next_double`` is one step; a ``next_uint32`` takes
    one step a pair.

    Raises:
        ValueError: If the states are not of one PCG64 stream.

    Examples:
        >>> rng = np.random.default_rng(3)
        >>> before = rng.bit_generator.state
        >>> _ = rng.random(1000), rng.laplace(size=7)
        >>> pcg64_distance(before, rng.bit_generator.state)
        1007
    """
    for state in (before, after):
        if state.get("bit_generator") != "PCG64":
            raise ValueError(f"not a PCG64 state: {state.get('bit_generator')!r}")
    if before["state"]["inc"] != after["state"]["inc"]:
        raise ValueError("the two states are of different PCG64 streams (their increments differ)")
    word = (1 << 128) - 1
    here, there = before["state"]["state"], after["state"]["state"]
    multiplier, increment = _PCG64_MULTIPLIER, before["state"]["inc"]
    steps, bit = 0, 1
    while here != there:
        if (here ^ there) & bit:  # this bit of the count is set: take 2**k steps
            here = (here * multiplier + increment) & word
            steps |= bit
        # 2**(k + 1) steps: the LCG composed with itself
        increment = ((multiplier + 1) * increment) & word
        multiplier = (multiplier * multiplier) & word
        bit <<= 1
        if bit > word:
            raise ValueError("the two states are of different PCG64 streams")
    return steps


def _emit_pcg64_step(builder: Any, address: Any) -> Any:
    """LLVM IR that advances the PCG64 state words at ``address`` (:func:`pcg64_words`)
    and returns the 64-bit output: ``state = state * multiplier + inc`` (mod 2**128),
    then ``rotr64(high ^ low, high >> 58)`` (NumPy's
    ``pcg_setseq_128_xsl_rr_64_random_r``)."""
    wide = ir.IntType(128)
    at = builder.inttoptr(address, wide.as_pointer())
    state = builder.load(at, align=8)
    inc = builder.load(builder.gep(at, [ir.Constant(ir.IntType(32), 1)]), align=8)
    state = builder.add(builder.mul(state, ir.Constant(wide, _PCG64_MULTIPLIER)), inc)
    builder.store(state, at, align=8)
    return _emit_pcg64_output(builder, state)


def _emit_pcg64_output(builder: Any, state: Any) -> Any:
    """LLVM IR of PCG64's XSL-RR output of the 128-bit ``state``: ``rotr64(high ^ low,
    high >> 58)``."""
    wide, word = ir.IntType(128), ir.IntType(64)
    high = builder.trunc(builder.lshr(state, ir.Constant(wide, 64)), word)
    mixed = builder.xor(high, builder.trunc(state, word))
    turn = builder.lshr(high, ir.Constant(word, 58))
    rotate = builder.module.declare_intrinsic(
        "llvm.fshr", [word], ir.FunctionType(word, [word, word, word])
    )
    return builder.call(rotate, [mixed, mixed, turn])


def _pcg64_step_typing(typingctx: Any, address: Any) -> Any:
    """Advance the PCG64 state at ``address`` and return its output
    (:func:`_emit_pcg64_step`)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return _emit_pcg64_step(builder, args[0])

    return types.uint64(types.uint64), codegen


_pcg64_step: Any = intrinsic(_pcg64_step_typing)


def _pcg64_next32_typing(typingctx: Any, state: Any, words: Any) -> Any:
    """NumPy's ``pcg64_next32`` on the state struct at ``state`` whose 128-bit words
    are at ``words``: the buffered high half where ``has_uint32`` is set (and clear it),
    else one :func:`_pcg64_step` whose low half is returned and high half buffered."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word, half = ir.IntType(64), ir.IntType(32)
        base = builder.inttoptr(args[0], half.as_pointer())
        has_at = builder.gep(base, [ir.Constant(half, _HAS_UINT32_OFFSET // 4)])
        kept_at = builder.gep(base, [ir.Constant(half, _UINTEGER_OFFSET // 4)])
        out = cgutils.alloca_once(builder, half)
        buffered = builder.icmp_unsigned("!=", builder.load(has_at, align=4), ir.Constant(half, 0))
        with builder.if_else(buffered) as (then, otherwise):
            with then:
                builder.store(ir.Constant(half, 0), has_at)
                builder.store(builder.load(kept_at, align=4), out)
            with otherwise:
                drawn = _emit_pcg64_step(builder, args[1])
                builder.store(ir.Constant(half, 1), has_at)
                builder.store(builder.trunc(builder.lshr(drawn, ir.Constant(word, 32)), half),
                              kept_at)  # fmt: skip
                builder.store(builder.trunc(drawn, half), out)
        return builder.load(out)

    return types.uint32(types.uint64, types.uint64), codegen


_pcg64_next32: Any = intrinsic(_pcg64_next32_typing)


@njit(cache=True, nogil=True)
def pcg64_next32(state: int, words: int) -> int:  # pragma: no cover
    """``next_uint32`` of the PCG64 generator whose state struct is at ``state`` and
    state words at ``words`` (:func:`pcg64_words`), stepped here: the number NumPy's
    call returns, and the state (and 32-bit buffer) it leaves.

    Examples:
        >>> rng, twin = np.random.default_rng(2), np.random.default_rng(2)
        >>> at = rng.bit_generator.ctypes.state_address
        >>> mine = [int(pcg64_next32(at, pcg64_words(rng.bit_generator))) for _ in range(3)]
        >>> mine == twin.integers(0, 2**32, size=3, dtype=np.uint32).tolist()
        True
        >>> rng.bit_generator.state == twin.bit_generator.state
        True
    """
    return _pcg64_next32(np.uint64(state), np.uint64(words))


@njit(cache=True, nogil=True)
def pcg64_next(words: int) -> int:  # pragma: no cover
    """``next_uint64`` of the PCG64 generator whose state words are at ``words``
    (:func:`pcg64_words`), stepped here: the number NumPy's call returns, and the state
    it leaves.

    Examples:
        >>> rng = np.random.default_rng(1)
        >>> word = pcg64_next(pcg64_words(rng.bit_generator))
        >>> int(word) == int(np.random.default_rng(1).bit_generator.random_raw())
        True
    """
    return _pcg64_step(np.uint64(words))


class Stream(NamedTuple):
    """A PCG64 row's state as values (:func:`open_stream`), which the compiler keeps in
    registers through a loop of draws (:func:`stream_below`), where a draw from the row
    itself loads and stores the state in memory on every number (the compiler cannot
    tell that the loop's array stores leave it alone): NumPy's 128-bit state and
    increment as ``uint64`` words, and its 32-bit buffer (``has_uint32``,
    ``uinteger``). :func:`close_stream` writes it back; the numbers are the row's.

    Examples:
        >>> Stream(*range(6)).has
        4
    """

    low: Any
    high: Any
    inc_low: Any
    inc_high: Any
    has: Any
    kept: Any


def _is_stream(numba_type: Any) -> bool:
    """Whether a numba type is a :class:`Stream`'s (uniform or as boxed from Python)."""
    return getattr(numba_type, "instance_class", None) is Stream


def _pcg64_load_typing(typingctx: Any, words: Any) -> Any:
    """The four ``uint64`` words at ``words`` (:func:`pcg64_words`)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word = ir.IntType(64)
        at = builder.inttoptr(args[0], word.as_pointer())
        values = [builder.load(builder.gep(at, [ir.Constant(ir.IntType(32), k)]), align=8)
                  for k in range(4)]  # fmt: skip
        return context.make_tuple(builder, signature.return_type, values)

    return types.UniTuple(types.uint64, 4)(types.uint64), codegen


def _pcg64_keep_typing(typingctx: Any, words: Any, low: Any, high: Any) -> Any:
    """Store the 128-bit state ``(low, high)`` at ``words`` (the increment stays)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word = ir.IntType(64)
        at = builder.inttoptr(args[0], word.as_pointer())
        builder.store(args[1], at, align=8)
        builder.store(args[2], builder.gep(at, [ir.Constant(ir.IntType(32), 1)]), align=8)
        return context.get_dummy_value()

    return types.none(types.uint64, types.uint64, types.uint64), codegen


def _half_at_typing(typingctx: Any, address: Any) -> Any:
    """The ``uint32`` at ``address``, widened."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        at = builder.inttoptr(args[0], ir.IntType(32).as_pointer())
        return builder.zext(builder.load(at, align=4), ir.IntType(64))

    return types.uint64(types.uint64), codegen


def _keep_half_typing(typingctx: Any, address: Any, value: Any) -> Any:
    """Store the low 32 bits of ``value`` at ``address``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        at = builder.inttoptr(args[0], ir.IntType(32).as_pointer())
        builder.store(builder.trunc(args[1], ir.IntType(32)), at, align=4)
        return context.get_dummy_value()

    return types.none(types.uint64, types.uint64), codegen


def _pcg64_advance_typing(typingctx: Any, low: Any, high: Any, inc_low: Any, inc_high: Any) -> Any:
    """One step of the 128-bit LCG on values: ``(low, high, output)`` of ``state *
    multiplier + inc`` (:func:`_emit_pcg64_step`'s arithmetic, nothing in memory)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        wide, word = ir.IntType(128), ir.IntType(64)

        def join(lo: Any, hi: Any) -> Any:
            return builder.or_(builder.shl(builder.zext(hi, wide), ir.Constant(wide, 64)),
                               builder.zext(lo, wide))  # fmt: skip

        state = join(args[0], args[1])
        state = builder.add(builder.mul(state, ir.Constant(wide, _PCG64_MULTIPLIER)),
                            join(args[2], args[3]))  # fmt: skip
        low = builder.trunc(state, word)
        high = builder.trunc(builder.lshr(state, ir.Constant(wide, 64)), word)
        values = [low, high, _emit_pcg64_output(builder, state)]
        return context.make_tuple(builder, signature.return_type, values)

    return types.UniTuple(types.uint64, 3)(types.uint64, types.uint64, types.uint64,
                                           types.uint64), codegen  # fmt: skip


_pcg64_load: Any = intrinsic(_pcg64_load_typing)
_pcg64_keep: Any = intrinsic(_pcg64_keep_typing)
_half_at: Any = intrinsic(_half_at_typing)
_keep_half: Any = intrinsic(_keep_half_typing)
_pcg64_advance: Any = intrinsic(_pcg64_advance_typing)


@njit(cache=True, nogil=True, inline="always")
def open_stream(slot: GeneratorSlot) -> Stream:  # pragma: no cover
    """The state of a PCG64 row in its native layout (``slot[4] != 0``) as a
    :class:`Stream`; draw from it with :func:`stream_below` and write it back with
    :func:`close_stream` before the row is drawn from again. A stream lives in compiled
    code: boxed to Python, its words become ints that numba types by their size.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def three(table, n):
        ...     s = open_stream(generator_at(table, 0))
        ...     a, s = stream_below(s, n)
        ...     b, s = stream_below(s, n)
        ...     c, s = stream_below(s, 2**40)
        ...     close_stream(generator_at(table, 0), s)
        ...     return a, b, c
        >>> rng = np.random.default_rng(3)
        >>> three(generator_table([np.random.default_rng(3)]), 10) == (
        ...     rng.integers(0, 10), rng.integers(0, 10), rng.integers(0, 2**40))
        True
    """
    w = _pcg64_load(slot[4])
    base = np.uint64(slot[0])
    return Stream(w[0], w[1], w[2], w[3], _half_at(base + np.uint64(_HAS_UINT32_OFFSET)),
                  _half_at(base + np.uint64(_UINTEGER_OFFSET)))  # fmt: skip


@njit(cache=True, nogil=True, inline="always")
def close_stream(slot: GeneratorSlot, stream: Stream) -> None:  # pragma: no cover
    """Write a :class:`Stream` opened from ``slot`` back into its generator (the state,
    the 32-bit buffer): the generator then draws on from where the stream stopped.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def once(table):  # half a 64-bit word drawn, the other half kept
        ...     slot = generator_at(table, 0)
        ...     close_stream(slot, stream_below(open_stream(slot), 3)[1])
        >>> rng, twin = np.random.default_rng(6), np.random.default_rng(6)
        >>> once(generator_table([rng]))
        >>> _ = twin.integers(0, 3)
        >>> rng.bit_generator.state == twin.bit_generator.state
        True
    """
    _pcg64_keep(slot[4], stream.low, stream.high)
    base = np.uint64(slot[0])
    _keep_half(base + np.uint64(_HAS_UINT32_OFFSET), stream.has)
    _keep_half(base + np.uint64(_UINTEGER_OFFSET), stream.kept)


@njit(cache=True, nogil=True, inline="always")
def _stream_next64(s: Stream) -> tuple[np.uint64, Stream]:  # pragma: no cover
    """``next_uint64`` of a :class:`Stream` and the stream after it."""
    low, high, out = _pcg64_advance(s.low, s.high, s.inc_low, s.inc_high)
    return out, Stream(low, high, s.inc_low, s.inc_high, s.has, s.kept)


@njit(cache=True, nogil=True, inline="always")
def _stream_next32(s: Stream) -> tuple[np.uint64, Stream]:  # pragma: no cover
    """``next_uint32`` of a :class:`Stream` (NumPy's ``pcg64_next32``: the buffered high
    half, or half of a new 64-bit draw with the other half buffered), widened."""
    if s.has != np.uint64(0):
        return s.kept, Stream(s.low, s.high, s.inc_low, s.inc_high, np.uint64(0), s.kept)
    out, s = _stream_next64(s)
    return out & np.uint64(_UINT32_MAX), Stream(s.low, s.high, s.inc_low, s.inc_high,
                                                np.uint64(1), out >> np.uint64(32))  # fmt: skip


def _next32(source: Any) -> int:  # pragma: no cover
    """``next_uint32`` of a Generator, numba's bit generator or a :data:`GeneratorSlot`
    (compiled only)."""
    raise NotImplementedError


def _next64(source: Any) -> int:  # pragma: no cover
    """``next_uint64`` of a Generator, numba's bit generator or a :data:`GeneratorSlot`
    (compiled only)."""
    raise NotImplementedError


def _next_double(source: Any) -> float:  # pragma: no cover
    """``next_double`` of a Generator, numba's bit generator or a :data:`GeneratorSlot`
    (compiled only)."""
    raise NotImplementedError


def _draw_overload(on_bits: Any, on_slot: Any) -> Any:
    """The overload of a draw (:func:`_next32`, :func:`_next64`, :func:`_next_double`,
    :func:`standard_normal_of`): ``on_bits`` of a Generator's bit generator or of
    numba's bit generator itself, ``on_slot`` of a :data:`GeneratorSlot`."""

    def typed(source: Any) -> Any:
        if isinstance(source, types.NumPyRandomGeneratorType):

            def from_generator(source: Any) -> Any:
                return on_bits(source.bit_generator)

            return from_generator
        if isinstance(source, types.NumPyRandomBitGeneratorType):

            def from_bits(source: Any) -> Any:
                return on_bits(source)

            return from_bits
        if isinstance(source, types.UniTuple) and source.count == 5:

            def from_slot(source: Any) -> Any:
                return on_slot(source)

            return from_slot
        return None

    return typed


@njit(cache=True, nogil=True, inline="always")
def _slot_next32(slot: GeneratorSlot) -> int:  # pragma: no cover
    """``next_uint32`` of a :data:`GeneratorSlot`: a PCG64 row in its native layout
    stepped here, any other called."""
    if slot[4] != 0:
        return _pcg64_next32(slot[0], slot[4])
    return _call_next_uint32(slot[0], slot[1])


@njit(cache=True, nogil=True, inline="always")
def _slot_next64(slot: GeneratorSlot) -> int:  # pragma: no cover
    """``next_uint64`` of a :data:`GeneratorSlot`, as :func:`_slot_next32`."""
    if slot[4] != 0:
        return _pcg64_step(slot[4])
    return _call_next_uint64(slot[0], slot[2])


@njit(cache=True, nogil=True)
def next_double_at(slot: GeneratorSlot) -> float:  # pragma: no cover
    """``Generator.random()`` of a row of a :func:`generator_table`, bit for bit: a PCG64
    row's ``next_uint64 >> 11`` times ``2**-53`` (NumPy's ``pcg64_next_double``) stepped
    here, any other bit generator's ``next_double`` called.

    Examples:
        >>> rngs = [np.random.default_rng(4), np.random.Generator(np.random.MT19937(4))]
        >>> table = generator_table(rngs)
        >>> [next_double_at(generator_at(table, i)) for i in (0, 1)] == [
        ...     np.random.default_rng(4).random(),
        ...     np.random.Generator(np.random.MT19937(4)).random()]
        True
    """
    if slot[4] != 0:
        return np.float64(_pcg64_step(slot[4]) >> np.uint64(11)) * _DOUBLE_UNIT
    return _call_next_double(slot[0], slot[3])


overload(_next32)(_draw_overload(next_uint32, _slot_next32))
overload(_next64)(_draw_overload(next_uint64, _slot_next64))
overload(_next_double)(_draw_overload(next_double, next_double_at))


@njit(cache=True, nogil=True)
def laplace_at(slot: GeneratorSlot) -> float:  # pragma: no cover
    """``Generator.laplace(0.0, 1.0)`` of a row of a :func:`generator_table`, bit for
    bit: NumPy's ``random_laplace`` (numba's too) on :func:`next_double_at`, a draw of 0
    redrawn, ``0 - log(2 - 2u)`` from ``u >= 0.5``, else ``0 + log(2u)``.

    Examples:
        >>> rngs = [np.random.default_rng(9)]
        >>> laplace_at(generator_at(generator_table(rngs), 0)) == (
        ...     np.random.default_rng(9).laplace(0.0, 1.0))
        True
    """
    u = next_double_at(slot)
    while u <= 0.0:
        u = next_double_at(slot)
    upper = u >= 0.5  # selects, not branches: u is a coin flip on either side
    log = np.log(2.0 - u - u if upper else u + u)
    return 0.0 - 1.0 * log if upper else 0.0 + 1.0 * log


@njit(cache=True, nogil=True, inline="always")
def _ziggurat_word(source: Any) -> tuple[np.intp, np.uint64, float]:  # pragma: no cover
    """One 64-bit word of the ziggurat (``random_standard_normal``'s first lines): its
    layer ``idx`` (8 bits), then its sign (1 bit) and ``rabs`` (52 bits), and the draw
    ``x = rabs wi[idx]`` with that sign, taken without a branch (a coin flip
    mispredicts half the time; ``x (1 - 2 s)`` is ``-x`` exactly)."""
    r = np.uint64(_next64(source))
    idx = np.intp(r & np.uint64(0xFF))
    r >>= np.uint64(8)
    rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
    x = np.float64(rabs) * _WI[idx] * (1.0 - 2.0 * np.float64(r & np.uint64(1)))
    return idx, rabs, x


@njit(cache=True, nogil=True)
def _normal_rest(source: Any, idx: np.intp, rabs: np.uint64, x: float) -> float:  # pragma: no cover
    """The ziggurat's 0.7%: the tail (``idx`` 0) or the wedge test of draw ``x``, then
    whole draws again until one is taken (:func:`_standard_normal`)."""
    while True:
        if idx == 0:  # the tail
            while True:
                xx = -_NOR_INV_R * np.log1p(-_next_double(source))
                yy = -np.log1p(-_next_double(source))
                if yy + yy > xx * xx:
                    if (rabs >> np.uint64(8)) & np.uint64(1):
                        return -(_NOR_R + xx)
                    return _NOR_R + xx
        elif (_FI[idx - 1] - _FI[idx]) * _next_double(source) + _FI[idx] < np.exp(-0.5 * x * x):
            return x
        idx, rabs, x = _ziggurat_word(source)
        if rabs < _KI[idx]:
            return x


@njit(cache=True, nogil=True, inline="always")
def _standard_normal(source: Any) -> float:  # pragma: no cover
    """NumPy's ``random_standard_normal`` (numba's too: the same ziggurat, tables and
    draws) on a Generator, numba's bit generator or a :data:`GeneratorSlot`. The 99.3% of
    draws that one 64-bit word settles (:func:`_ziggurat_word`) are inlined into the
    caller; the rest is :func:`_normal_rest`. Measured on 2 shared cores: 11.6 -> 6.5
    ns a normal through a bit generator's pointers, 3.4 from a PCG64 slot."""
    idx, rabs, x = _ziggurat_word(source)
    if rabs < _KI[idx]:  # 99.3% of the draws end here
        return x
    return _normal_rest(source, idx, rabs, x)


@njit(cache=True, nogil=True, inline="always")
def standard_normal_at(slot: GeneratorSlot) -> float:  # pragma: no cover
    """``Generator.standard_normal()`` of a row of a :func:`generator_table`, bit for
    bit: NumPy's ziggurat (:func:`_standard_normal`) on the row, a PCG64 row stepped
    here instead of called through its ``next_uint64`` pointer.

    Examples:
        >>> rngs = [np.random.default_rng(6), np.random.Generator(np.random.MT19937(6))]
        >>> table = generator_table(rngs)
        >>> [standard_normal_at(generator_at(table, i)) for i in (0, 1)] == [
        ...     np.random.default_rng(6).standard_normal(),
        ...     np.random.Generator(np.random.MT19937(6)).standard_normal()]
        True
    """
    return _standard_normal(slot)


def standard_normal_of(source: Any) -> Any:  # pragma: no cover
    """``standard_normal()`` of a Generator, of a :func:`bit_generator_at` row or of a
    :data:`GeneratorSlot` (compiled only): NumPy's ziggurat (:func:`_standard_normal`)
    on the generator's bit generator, so each gives the generator's numbers."""
    raise NotImplementedError


def beta_of(source: Any, a: Any, b: Any) -> Any:  # pragma: no cover
    """``beta(a, b)`` of a Generator or of a :func:`bit_generator_at` row (compiled
    only), as :func:`standard_normal_of`."""
    raise NotImplementedError


overload(standard_normal_of)(_draw_overload(_standard_normal, standard_normal_at))


@overload(beta_of)
def _overload_beta_of(source: Any, a: Any, b: Any) -> Any:  # pragma: no cover
    if isinstance(source, types.NumPyRandomGeneratorType):

        def from_generator(source: Any, a: Any, b: Any) -> Any:
            return random_beta(source.bit_generator, a, b)

        return from_generator
    if isinstance(source, types.NumPyRandomBitGeneratorType):

        def from_bits(source: Any, a: Any, b: Any) -> Any:
            return random_beta(source, a, b)

        return from_bits
    return None


def _take32(source: Any) -> Any:  # pragma: no cover
    """``(next_uint32, source after it)`` of a Generator, a row or a :class:`Stream`
    (compiled only)."""
    raise NotImplementedError


def _take64(source: Any) -> Any:  # pragma: no cover
    """``(next_uint64, source after it)``, as :func:`_take32`."""
    raise NotImplementedError


def _take_overload(on_stream: Any, draw: Any) -> Any:
    """The overload of :func:`_take32` / :func:`_take64`: a :class:`Stream`'s draw gives a
    new stream, any other source draws in place and is itself after."""

    def typed(source: Any) -> Any:
        if _is_stream(source):

            def from_stream(source: Any) -> Any:
                return on_stream(source)

            return from_stream

        def drawn_in_place(source: Any) -> Any:
            return np.uint64(draw(source)), source

        return drawn_in_place

    return typed


def in_place(source: Any) -> Any:  # pragma: no cover
    """What :func:`stream_below` draws from in place for ``source`` (compiled only): a
    Generator's bit generator (a tuple holding the Generator itself is
    reference-counted on every draw: 2.4 -> 7.6 ns a bounded draw, measured), a row of
    a :func:`generator_table` itself.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def two(rng):
        ...     v, source = stream_below(in_place(rng), 10)
        ...     w, source = stream_below(source, 10)
        ...     return v, w
        >>> two(np.random.default_rng(4)) == tuple(np.random.default_rng(4).integers(0, 10, 2))
        True
    """
    raise NotImplementedError


@overload(in_place)
def _overload_in_place(source: Any) -> Any:
    if isinstance(source, types.NumPyRandomGeneratorType):

        def bits(source: Any) -> Any:
            return source.bit_generator

        return bits

    def itself(source: Any) -> Any:
        return source

    return itself


overload(_take32)(_take_overload(_stream_next32, _next32))
overload(_take64)(_take_overload(_stream_next64, _next64))


@njit(cache=True, nogil=True, inline="always")
def _below(source: Any, n: int) -> Any:  # pragma: no cover
    """:func:`integer_below`'s draw and the source after it (a :class:`Stream` is a new
    value; any other source is itself)."""
    if n <= 1:
        return (np.int64(0) if n == 1 else np.int64(-1)), source
    span = np.uint64(n - 1)
    if span == np.uint64(_UINT32_MAX):
        word, source = _take32(source)
        return np.int64(word), source
    if span < np.uint64(_UINT32_MAX):
        excl = span + np.uint64(1)
        word, source = _take32(source)
        product = word * excl
        leftover = product & np.uint64(_UINT32_MAX)
        if leftover < excl:  # rejection, only where the low word can be biased
            threshold = (np.uint64(_UINT32_MAX) - span) % excl
            while leftover < threshold:
                word, source = _take32(source)
                product = word * excl
                leftover = product & np.uint64(_UINT32_MAX)
        return np.int64(product >> np.uint64(32)), source
    excl = span + np.uint64(1)
    word, source = _take64(source)
    high, low = _multiply_64(word, excl)
    if low < excl:
        threshold = (np.uint64(_UINT64_MAX) - span) % excl
        while low < threshold:
            word, source = _take64(source)
            high, low = _multiply_64(word, excl)
    return np.int64(high), source


@njit(cache=True, nogil=True, inline="always")
def integer_below(rng: np.random.Generator | GeneratorSlot, n: int) -> np.int64:  # pragma: no cover
    """``rng.integers(0, n)`` for ``1 <= n < 2**63``, bit for bit, without allocating;
    ``-1`` (and no draw) for ``n < 1``, where NumPy raises: the callers' bounds are
    counts known to be positive, and a ``raise`` here would keep numba from pruning the
    generator's reference counts on every call (measured: 18 ns a draw instead of 2).

    NumPy draws ``[0, n)`` with ``range = n - 1``: no draw when ``range == 0``; one raw
    ``uint32`` when ``range == 2**32 - 1``; Lemire's rejection on ``uint32`` draws below
    that and on ``uint64`` draws above. ``rng`` is a Generator or a row of a
    :func:`generator_table` (:func:`generator_at`); :func:`stream_below` draws the same
    from a :class:`Stream`.

    Examples:
        >>> rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
        >>> [integer_below(rng_a, 10) for _ in range(4)] == rng_b.integers(0, 10, 4).tolist()
        True
    """
    return _below(in_place(rng), n)[0]


@njit(cache=True, nogil=True, inline="always")
def stream_below(stream: Any, n: int) -> tuple[np.int64, Any]:  # pragma: no cover
    """:func:`integer_below` of a :class:`Stream` (the same numbers as of its row) and the
    stream after the draw; of a source drawn in place (:func:`in_place`: a row, a
    bit generator), the number and the source itself, so one loop serves both.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def draws(table, bounds, out):
        ...     s = open_stream(generator_at(table, 0))
        ...     for j in range(bounds.size):
        ...         out[j], s = stream_below(s, bounds[j])
        ...     close_stream(generator_at(table, 0), s)
        >>> bounds, out = np.array([5, 2**40, 7, 2**32]), np.zeros(4, np.int64)
        >>> draws(generator_table([np.random.default_rng(8)]), bounds, out)
        >>> rng = np.random.default_rng(8)
        >>> out.tolist() == [int(rng.integers(0, n)) for n in bounds]
        True
    """
    return _below(stream, n)
