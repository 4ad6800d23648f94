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
  and what fell due (``VecMessageDelay``).
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
    ``(1, N, N)`` is every env's (pass a broadcast mask's first env, C-ordered: the
    senders' loop then runs over contiguous rows).

    Examples:
        >>> mask = np.ones((1, 2, 2), np.int8)
        >>> cut_off(np.array([[False, True]]), mask, np.empty_like(mask)).tolist()
        [[[1, 0], [0, 0]]]
    """
    n_envs, n = down.shape
    shared = mask.shape[0] == 1
    for b in range(n_envs):
        g = 0 if shared else b
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
    for b in range(n_envs):
        for r in range(n):
            for s in range(n):
                if arrived[b, r, s] != 0:
                    for k in range(d):
                        out_held[b, r, s, k] = rows[b, s, k]
                    out_heard[b, r, s] = 1
                    out_last[b, r, s] = t
                else:
                    for k in range(d):
                        out_held[b, r, s, k] = held[b, r, s, k]
                    out_heard[b, r, s] = heard[b, r, s]
                    out_last[b, r, s] = last[b, r, s]
                out_age[b, r, s] = np.float32(min(t - out_last[b, r, s], horizon))


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


__all__ = ["count_in_flight", "cut_off", "heard_rows_into", "hold_arrived"]
