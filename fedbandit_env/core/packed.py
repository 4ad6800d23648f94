"""A compiled step's state handed to its rollout packed: one buffer instead of every array.

numba passes an array to a compiled function as its whole struct (two pointers, the
size, the item size, the data pointer, the shape and the strides: 7 to 13 words), so a
rollout that calls a vector policy's step holds every word of the step's state beside
its own and pushes them all at every call: 214 words for CDP-, DDP- and HDP-MAB's
``elimination_step``. For a rollout whose own loop is large (``rollout_flooding``
carries GIS flooding's 21 arrays and scalars), that was most of its time.

For a step marked with :func:`packs_state`, :func:`packed_call` hands the rollout a
*twin* of the step and a state of two values: a buffer holding the state tuple's structs
(:func:`pack_state`) and the tuple's type. The twin (:func:`twin_source`: a module file
written once per step and shape, :func:`~fedbandit_env.core.caching.generated_module`,
so numba caches its compiled code) loads the tuple from the buffer (:func:`load_state`)
and calls the step with it, as the rollout would have. The arrays' data are not
copied; the buffer holds the arrays' structs without their reference counts, so it is
valid while the state tuple it was packed from is alive (the rollout keeps it). The step
itself is the same compiled function, with its own options: the same arithmetic, the
same bits.

Measured with ``examples/vector_gate.py`` (N = 10, M = 10, 2 trials, T = 4e5, the old
and the new in turn, one process each): DDP-MAB's vector form 0.193-0.212 -> 0.120 s
(0.23-0.26x -> 0.41x the loop); CDP- and HDP-MAB's 0.073-0.075 -> 0.108-0.117 s (their
rollout's loop is lean, and the twin adds a call), so they are not marked; Gossip_UCB's
within the noise either way. A step that cannot be imported by its module and name (a
lambda, a closure, a function of ``__main__``), or is compiled with numba's runtime on,
is called as it is.
"""

from __future__ import annotations

import sys
from typing import Any

import numba
import numpy as np
from numba import njit, types
from numba.core.extending import intrinsic

from fedbandit_env.core.caching import generated_module, stable_key
from fedbandit_env.core.kernels import UNCOUNTED

PACKED_STEPS: set[Any] = set()
"""The steps whose rollouts pass their state packed (:func:`packs_state`)."""


def packs_state(step: Any) -> Any:
    """Mark ``step`` (a compiled vector step) as one whose rollouts pass its state packed
    (:func:`packed_call`); returns it. Opt-in, as measured: it is a gain where a
    rollout's loop carried a large state beside a large wire (DDP-MAB's
    ``flooding_step`` under ``rollout_flooding``), and a loss where the step is called
    from a lean loop (CDP- and HDP-MAB's ``elimination_step``: the twin's second call).

    Examples:
        >>> from numba import njit
        >>> @njit(_nrt=False)
        ... def step(last, seen, t, arms):
        ...     arms[:] = 0
        >>> packs_state(step) is step and step in PACKED_STEPS
        True
        >>> PACKED_STEPS.discard(step)  # the example's step leaves the set
    """
    PACKED_STEPS.add(step)
    return step


def _tuple_bytes_typing(typingctx: Any, state: Any) -> Any:
    """The bytes a value of ``state``'s type takes as a struct."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        size = context.get_abi_sizeof(context.get_value_type(state))
        return context.get_constant(types.intp, size)

    return types.intp(state), codegen


def _store_state_typing(typingctx: Any, buf: Any, state: Any) -> Any:
    """``state``'s struct written into ``buf``'s data."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        value_type = context.get_value_type(state)
        builder.store(args[1], builder.bitcast(data, value_type.as_pointer()))
        return context.get_dummy_value()

    return types.void(buf, state), codegen


def _load_state_typing(typingctx: Any, buf: Any, kind: Any) -> Any:
    """The state tuple :func:`pack_state` wrote into ``buf``; ``kind`` is its numba type
    (a ``TypeRef``: ``numba.typeof(state)`` passed as a value).

    Examples:
        >>> state = (np.arange(3.0), 7)
        >>> buf = packed_buffer(state)
        >>> pack_state(buf, state)
        >>> @njit
        ... def second_of_first(buf, kind):
        ...     return load_state(buf, kind)[0][1]
        >>> float(second_of_first(buf, numba.typeof(state)))
        1.0
    """
    state = kind.instance_type

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        value_type = context.get_value_type(state)
        return builder.load(builder.bitcast(data, value_type.as_pointer()))

    return state(buf, kind), codegen


_tuple_bytes: Any = intrinsic(_tuple_bytes_typing)
_store_state: Any = intrinsic(_store_state_typing)
load_state: Any = intrinsic(_load_state_typing)
"""The state tuple :func:`pack_state` wrote into a buffer, in compiled code:
``load_state(buf, kind)`` (:func:`_load_state_typing`)."""


@njit(cache=True)
def state_bytes(state: Any) -> int:  # pragma: no cover
    """The bytes ``state`` takes packed.

    Examples:
        >>> state_bytes((np.zeros(2), np.zeros((2, 2)), 1.0))  # 7 + 9 words and a float
        136
    """
    return _tuple_bytes(state)


@njit(cache=True, **UNCOUNTED)
def pack_state(buf: Any, state: Any) -> None:  # pragma: no cover
    """Write ``state`` (a tuple) into ``buf`` (:func:`packed_buffer`'s), its arrays'
    structs without a reference count: valid while ``state`` is alive.

    Examples:
        >>> state = (np.ones(2), 0.5)
        >>> buf = packed_buffer(state)
        >>> pack_state(buf, state)
        >>> int(buf[4]) == state[0].ctypes.data  # the array's data pointer, in place
        True
    """
    _store_state(buf, state)


def packed_buffer(state: tuple[Any, ...]) -> np.ndarray:
    """A zeroed buffer ``state`` fits in, 8-byte aligned.

    Examples:
        >>> packed_buffer((np.zeros(2),)).nbytes
        56
    """
    return np.zeros(-(-int(state_bytes(state)) // 8), dtype=np.uint64)


def twin_source(act: Any, head: int, n_state: int, tail: int) -> str | None:
    """The source of ``act``'s packed twin for a call ``act(*head, *state, *tail)`` with
    ``head``, ``n_state`` and ``tail`` arguments: ``(*head, buf, kind, *tail)``, the state
    loaded from ``buf`` and ``act`` called with it. ``None`` where ``act`` cannot be
    imported by its module and name, or is compiled with numba's runtime on.

    Examples:
        >>> from baselines.gossip.kernels import gossip_step
        >>> print(twin_source(gossip_step, 1, 2, 1).splitlines()[-1])
            _step(h0, s[0], s[1], t0)
    """
    func = getattr(act, "py_func", None)
    options = dict(getattr(act, "targetoptions", {}))
    module, name = getattr(func, "__module__", ""), getattr(func, "__qualname__", "")
    if func is None or options.get("_nrt", True) is not False or module == "__main__":
        return None
    if not name.isidentifier() or getattr(sys.modules.get(module), name, None) is not act:
        return None  # a closure, a lambda, a function its module does not name
    heads = [f"h{i}" for i in range(head)]
    tails = [f"t{i}" for i in range(tail)]
    loaded = [f"s[{i}]" for i in range(n_state)]
    return "\n".join([
        "from numba import njit",
        "",
        "from fedbandit_env.core.packed import load_state",
        f"from {module} import {name} as _step",
        "",
        "",
        "@njit(cache=True, nogil=True, _nrt=False)",
        f"def packed({', '.join([*heads, 'buf', 'kind', *tails])}):",
        "    s = load_state(buf, kind)",
        f"    _step({', '.join([*heads, *loaded, *tails])})",
        "",
    ])  # fmt: skip


_TWINS: dict[tuple[Any, ...], Any] = {}


def packed_act(act: Any, head: int, n_state: int, tail: int) -> Any | None:
    """``act``'s packed twin (:func:`twin_source`) for a state of ``n_state`` values, from
    a generated module (:func:`~fedbandit_env.core.caching.generated_module`) salted
    with everything ``act`` compiles from (:func:`~fedbandit_env.core.caching.stable_key`:
    its code and the stamps of every module it calls into), so an edit of any of them
    writes a new twin, which numba compiles again. ``None`` where ``act`` has no twin
    (:func:`twin_source`, or no stable key) or no folder can be written.

    Examples:
        >>> from baselines.elimination.kernels import flooding_step
        >>> twin = packed_act(flooding_step, 5, 17, 2)
        >>> twin is None or twin.py_func.__name__ == "packed"
        True
    """
    key = (act, head, n_state, tail)
    if key not in _TWINS:
        source = twin_source(act, head, n_state, tail)
        compiled_from = stable_key(types.Dispatcher(act))
        module = None
        if source is not None and isinstance(compiled_from, tuple):  # else: no stable key
            name = f"{act.py_func.__name__}_{head}_{n_state}_{tail}"
            module = generated_module("packed", name, source, repr(compiled_from).encode())
        _TWINS[key] = None if module is None else module.packed
    return _TWINS[key]


def packed_call(act: Any, state: tuple[Any, ...], head: int, tail: int) -> tuple[Any, Any]:
    """``(act, state)`` as a rollout calls them, packed where ``act`` has a twin:
    ``(twin, (buf, kind))``, the buffer valid while ``state`` is alive (the caller keeps
    it); else as they are.

    Examples:
        >>> from baselines.gossip.kernels import gossip_step
        >>> state = (np.zeros(2), 1.0)
        >>> twin, packed = packed_call(gossip_step, state, 5, 2)
        >>> twin is gossip_step or packed[1] == numba.typeof(state)
        True
    """
    if not state or act not in PACKED_STEPS:
        return act, state
    twin = packed_act(act, head, len(state), tail)
    if twin is None:
        return act, state
    buf = packed_buffer(state)
    pack_state(buf, state)
    return twin, (buf, numba.typeof(state))


__all__ = [
    "load_state",
    "pack_state",
    "packed_act",
    "packed_buffer",
    "packed_call",
    "packs_state",
    "state_bytes",
    "twin_source",
]
