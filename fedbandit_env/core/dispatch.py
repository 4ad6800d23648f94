"""A compiled rollout called block after block with arguments of the same types: its
compiled entry, found once, so numba does not type every argument at every call.

numba's dispatcher types each argument of each call before it picks the compiled code.
Arrays and scalars have a fingerprint it reads in C, but a tuple holding a named tuple
(``QuietSteps``, ``WireChanges``, a family's setup) or a type (a packed state's
``typeref``, :mod:`fedbandit_env.core.packed`) is typed through Python, and a large
type is hashed member by member: DDP-MAB's rollout over GIS flooding spent about 150
microseconds a block in ``numba.core.types.abstract.__hash__`` before any step was
played, which at ``2**15`` numbers a block (N = 10, B = 2: 1,638 steps) is a third of
its time once the quiet steps (:class:`~fedbandit_env.core.rounds.QuietSteps`) had made
the steps themselves cheap. The entry of a compiled overload takes the same Python
arguments, unboxes them and runs the same machine code (the GIL released where the
function says so): about 1.6 microseconds a call for the same arguments.
"""

from __future__ import annotations

from typing import Any


class SameTypes:
    """``function`` (a numba dispatcher, or any callable) called through the compiled
    entry of its arguments' types from its second call on.

    Only for a caller whose every call passes arguments of the same numba types, as one
    rollout's blocks do (the same arrays, a fresh block of noise of the same dtype and
    dimensions, Python ints): a later call with other types would be unboxed as the
    second call's types, unchecked. So an instance lives for one rollout and is not
    shared. Where the second call's types are not found among the dispatcher's overloads
    (a literal or a conversion the dispatcher chose), or ``function`` is not a numba
    dispatcher (``NUMBA_DISABLE_JIT``), every call goes through ``function`` as it is.

    Args:
        function: The compiled function to call.

    Examples:
        >>> import numpy as np
        >>> from numba import njit
        >>> @njit
        ... def total(a, extra):
        ...     return a.sum() + extra[0]
        >>> call = SameTypes(total)
        >>> call(np.ones(3), (1.0, np.int8))  # through the dispatcher: compiles, types
        4.0
        >>> call.entry is None  # one call: no lookup
        True
        >>> call(np.arange(3.0), (0.5, np.int8))  # the entry of these types
        3.5
        >>> call.entry is not None
        True
    """

    def __init__(self, function: Any) -> None:
        self.function = function
        self.entry: Any = None
        self._calls = 0

    def __call__(self, *args: Any) -> Any:
        """Call ``function`` (the first call) or the compiled entry, looked up at the
        second call (a rollout of one block does not pay the lookup: about a millisecond
        of typing through Python)."""
        if self._calls == 1:
            self.entry = entry_for(self.function, args)
        self._calls += 1
        if self.entry is not None:
            return self.entry(*args)
        return self.function(*args)


def entry_for(function: Any, args: tuple[Any, ...]) -> Any:
    """The compiled entry ``function`` (a numba dispatcher) has for ``args``' types, or
    ``None`` where it has none (it was not compiled for them, the types were converted
    on dispatch, or ``function`` is not a dispatcher).

    Examples:
        >>> import numpy as np
        >>> from numba import njit
        >>> @njit
        ... def first(a):
        ...     return a[0]
        >>> entry_for(first, (np.ones(2),)) is None  # not compiled for them yet
        True
        >>> _ = first(np.ones(2))
        >>> entry_for(first, (np.ones(2),))(np.full(2, 7.0))
        7.0
        >>> entry_for(len, ([1],)) is None
        True
    """
    overloads = getattr(function, "overloads", None)
    typeof = getattr(function, "typeof_pyval", None)
    if overloads is None or typeof is None:
        return None
    try:
        key = tuple(typeof(a) for a in args)
    except (TypeError, ValueError):  # an argument numba cannot type: the dispatcher says so
        return None
    found = overloads.get(key)
    return None if found is None else found.entry_point


__all__ = ["SameTypes", "entry_for"]
