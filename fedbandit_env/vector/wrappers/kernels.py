"""Compiled passes of the vector layers on NumPy arrays.

Each is the arithmetic of the NumPy statement it replaced, cell by cell in the same
floating-point operations, so the observations are the same bits
(``tests/vector/test_fault_kernels.py`` holds them to those statements; the replay
tests hold the layers to the PettingZoo wrappers):

- :func:`heard_rows_into`: a sender's row of ``messages`` kept where someone still
  hears it (:func:`~fedbandit_env.vector.wrappers.base.heard_rows`);
- :func:`cut_off`: the ``mask`` and ``public_mask`` of the agents that are down cleared
  (``VecAgentCrash``);
- :func:`hold_arrived`: each receiver's latest message from each sender, and its age
  (``VecHeldMessages``, which also runs on a torch device as array operations);
- :func:`count_in_flight`: each receiver's messages in flight, moved by what was filed
  and what fell due (``VecMessageDelay``);
- :func:`row_sums`: each env's total of a ``(B, N)`` count (``VecAgentCrash``'s agents
  down, ``VecMessageLoss``' messages lost).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import BoolArray, Float32Array


@njit(cache=True, nogil=True)
def heard_rows_into(
    sent: Float32Array,
    mask: np.ndarray,
    public_mask: np.ndarray,
    public_dim: int,
    out: Float32Array,
) -> Float32Array:  # pragma: no cover
    """``out[b, s] = sent[b, s] * f`` with ``f = 1`` where some receiver's ``mask[b, r, s]``
    is set and ``0`` elsewhere, then its first ``public_dim`` entries plus ``sent * p``
    with ``p = 1`` where only ``public_mask`` still carries the sender (``public_mask``
    of shape ``(0, 0, 0)``: none). The same float32 products and sum as
    :func:`~fedbandit_env.vector.wrappers.base.heard_rows` (a NaN times 0 stays NaN, as
    there).

    Examples:
        >>> sent = np.ones((1, 2, 2), np.float32)
        >>> mask = np.array([[[0, 1], [0, 0]]], np.int8)
        >>> heard_rows_into(sent, mask, np.zeros((0, 0, 0), np.int8), 0,
        ...                 np.empty((1, 2, 2), np.float32)).tolist()
        [[[0.0, 0.0], [1.0, 1.0]]]
    """
    n_envs, n, d = sent.shape
    public = public_dim > 0 and public_mask.shape[0] > 0
    one, zero = np.float32(1.0), np.float32(0.0)
    for b in range(n_envs):
        for s in range(n):
            full = False
            for r in range(n):
                if mask[b, r, s] != 0:
                    full = True
                    break
            f = one if full else zero
            for k in range(d):
                out[b, s, k] = sent[b, s, k] * f
            if public:
                some = False
                for r in range(n):
                    if public_mask[b, r, s] != 0:
                        some = True
                        break
                p = one if some and not full else zero
                for k in range(public_dim):
                    out[b, s, k] = out[b, s, k] + sent[b, s, k] * p
    return out


@njit(cache=True, nogil=True)
def cut_off(down: BoolArray, mask: np.ndarray, out: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``out[b, r, s] = 0`` where agent ``r`` or ``s`` of env ``b`` is down, else
    ``mask[b, r, s]`` (``np.where(down_r | down_s, 0, mask)``). A ``mask`` of one env
    ``(1, N, N)`` is every env's (pass a broadcast mask's first env). Both C-ordered. An
    env with nobody down copies its mask in one flat loop (measured with 9% of agents
    down, B = 1024, N = 10: 50 -> 37 us a step).

    Examples:
        >>> mask = np.ones((1, 2, 2), np.int8)
        >>> cut_off(np.array([[False, True]]), mask, np.empty_like(mask)).tolist()
        [[[1, 0], [0, 0]]]
    """
    n_envs, n = down.shape
    shared = mask.shape[0] == 1
    cells = n * n
    flat_mask = mask.reshape(mask.shape[0], cells)
    flat_out = out.reshape(n_envs, cells)
    for b in range(n_envs):
        g = 0 if shared else b
        anyone = False
        for i in range(n):
            anyone |= down[b, i]
        if not anyone:  # nobody down (most envs at small rates): the mask, one flat copy
            for i in range(cells):
                flat_out[b, i] = flat_mask[g, i]
            continue
        for r in range(n):
            if down[b, r]:
                for s in range(n):
                    out[b, r, s] = 0
            else:
                for s in range(n):  # a select, not a branch: SIMD over senders
                    out[b, r, s] = 0 if down[b, s] else mask[g, r, s]
    return out


@njit(cache=True, nogil=True)
def hold_arrived(
    arrived: np.ndarray,
    rows: Float32Array,
    held: Float32Array,
    heard: np.ndarray,
    last: np.ndarray,
    t: float,
    horizon: float,
    out_held: Float32Array,
    out_heard: np.ndarray,
    out_last: np.ndarray,
    out_age: Float32Array,
) -> None:  # pragma: no cover
    """``VecHeldMessages``' update into new arrays: where ``arrived[b, r, s]`` receiver
    ``r`` now holds sender ``s``'s row ``rows[b, s]``, has heard it and heard it last at
    ``t``; elsewhere what it held; ``out_age = float32(min(t - last, horizon))``. The
    NumPy statement's values (``np.where`` of each, then the age), in one pass.

    ``arrived`` ``(B, N, N)``, or ``(1, N, N)``: every env's (a broadcast mask's first
    env, C-ordered). ``held`` must be 0 wherever ``heard`` is 0, as the layer keeps it
    (zeros until a row arrives): a slot never heard is written as zeros, not read.

    A receiver's row of ``N D`` numbers is written in one loop over contiguous memory
    where most of its slots arrived (the senders' rows, selected with zeros where nothing
    was ever heard, or else with what it held), else copied from what it held and
    patched with the slots that arrived. Slot by slot, the ``D`` numbers of each, it
    cost 3.4 ns a slot at ``B = 1024``, ``N = D = 10``: the short loops, and the cache
    misses of reading every held slot, even those about to be overwritten (measured in
    neighbours, where every slot but the receiver's own arrives: 353 -> 164 us a step;
    a memory copy of the held table alone takes 86 us).

    Examples:
        >>> arrived = np.array([[[0, 1], [0, 0]]], np.int8)
        >>> rows = np.array([[[1.0], [2.0]]], np.float32)
        >>> held = np.zeros((1, 2, 2, 1), np.float32)
        >>> heard, last = np.zeros((1, 2, 2), np.int8), np.zeros((1, 2, 2))
        >>> outs = (np.empty_like(held), np.empty_like(heard), np.empty_like(last),
        ...         np.empty((1, 2, 2), np.float32))
        >>> hold_arrived(arrived, rows, held, heard, last, 3.0, 10.0, *outs)
        >>> outs[0][0, 0, :, 0].tolist(), outs[3][0, 0].tolist()
        ([0.0, 2.0], [3.0, 0.0])
    """
    n_envs, n, _, d = held.shape
    shared = arrived.shape[0] == 1
    width, cells = n * d, n * n
    sent = rows.reshape(n_envs, width)
    kept = held.reshape(n_envs * n, width)
    into = out_held.reshape(n_envs * n, width)
    got = arrived.reshape(arrived.shape[0], cells)
    was_heard, was_last = heard.reshape(n_envs, cells), last.reshape(n_envs, cells)
    now_heard, now_last = out_heard.reshape(n_envs, cells), out_last.reshape(n_envs, cells)
    age = out_age.reshape(n_envs, cells)
    zero = np.float32(0.0)
    # Each mask's receivers (one mask if shared, listed once): the side each row is
    # written from, the slots then taken from the other side, and which numbers of the
    # row arrived (``take``).
    masks = got.shape[0]
    mostly = np.empty((masks, n), dtype=np.bool_)
    patch = np.empty((masks, n, n), dtype=np.int64)
    patches = np.zeros((masks, n), dtype=np.int64)
    take = np.zeros((masks, n, width), dtype=np.bool_)
    for g in range(masks):
        for r in range(n):
            count = 0
            for s in range(n):
                count += got[g, r * n + s] != 0
            many = 2 * count >= n
            mostly[g, r] = many
            for s in range(n):
                here = got[g, r * n + s] != 0
                if here:
                    for k in range(s * d, s * d + d):
                        take[g, r, k] = True
                if here != many:
                    patch[g, r, patches[g, r]] = s
                    patches[g, r] += 1
    for b in range(n_envs):
        g = 0 if shared else b
        for r in range(n):
            row = b * n + r
            if mostly[g, r]:  # mostly arrived: the senders' rows, selected with what stays
                stale = False  # a slot that did not arrive but was heard before
                for j in range(patches[g, r]):
                    stale |= was_heard[b, r * n + patch[g, r, j]] != 0
                if stale:
                    for i in range(width):
                        into[row, i] = sent[b, i] if take[g, r, i] else kept[row, i]
                else:  # what did not arrive was never heard: zeros (not read)
                    for i in range(width):
                        into[row, i] = sent[b, i] if take[g, r, i] else zero
            else:  # mostly kept: what it held, then what arrived
                for i in range(width):
                    into[row, i] = kept[row, i]
                for j in range(patches[g, r]):
                    s = patch[g, r, j]
                    for k in range(s * d, s * d + d):
                        into[row, k] = sent[b, k]
        for i in range(cells):  # selects over contiguous cells
            a = got[g, i] != 0
            now_heard[b, i] = 1 if a else was_heard[b, i]
            at = t if a else was_last[b, i]
            now_last[b, i] = at
            age[b, i] = np.float32(min(t - at, horizon))


@njit(cache=True, nogil=True)
def row_sums(counts: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``counts.sum(axis=1)`` of a ``(B, N)`` array of whole numbers or booleans, as
    ``int64`` (exact: integer sums in any order). NumPy's reduction over rows of ten
    costs a call per row (measured at ``B = 1024``, ``N = 10``: 18-20 us, against 3 here).

    Examples:
        >>> row_sums(np.array([[True, False, True], [False, False, False]])).tolist()
        [2, 0]
    """
    n_envs, n = counts.shape
    out = np.empty(n_envs, dtype=np.int64)
    for b in range(n_envs):
        total = np.int64(0)
        for i in range(n):
            total += np.int64(counts[b, i])
        out[b] = total
    return out


@njit(cache=True, nogil=True)
def count_in_flight(
    filed: np.ndarray, due: np.ndarray, held: np.ndarray
) -> None:  # pragma: no cover
    """``held[b, r] += count_nonzero(filed[b, r]) - count_nonzero(due[b, r])``, in place:
    the messages receiver ``r`` has in flight after one more was filed for each set
    entry of ``filed`` and one arrived for each set entry of ``due`` (both ``(B, N,
    N)``; either may be a broadcast view). The two ``np.count_nonzero(..., axis=2)`` it
    replaced allocated and reduced each mask apart.

    Examples:
        >>> held = np.zeros((1, 2), np.int64)
        >>> count_in_flight(np.ones((1, 2, 2), np.int8), np.eye(2, dtype=np.int8)[None], held)
        >>> held.tolist()
        [[1, 1]]
    """
    n_envs, n = held.shape
    for b in range(n_envs):
        for r in range(n):
            moved = 0
            for s in range(filed.shape[2]):
                moved += (filed[b, r, s] != 0) - (due[b, r, s] != 0)
            held[b, r] += moved


__all__ = ["count_in_flight", "cut_off", "heard_rows_into", "hold_arrived", "row_sums"]
