"""Compiled steps of the binary-tree mechanism, shared by ``TreeMechanism`` and the
batched kernels (one source of truth for the noise and the order it is drawn in).

State per stream ``s`` and level ``l``: ``acc[s, l]`` the exact sum of the open block,
``seen[s, l]`` whether it holds an observation, ``node[s, l]`` the released estimate of
the last completed block, ``var[s, l]`` its noise variance (Honaker only).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import BoolArray, FloatArray, IntArray


@njit(cache=True)
def lowest_bit(t: int) -> int:  # pragma: no cover
    """Level of the block ``(q(t), t]`` that completes at step ``t`` (Algorithm 2, line 2).

    Examples:
        >>> [lowest_bit(t) for t in (1, 2, 3, 4, 12)]
        [0, 1, 0, 2, 2]
    """
    level = 0
    while (t >> level) & 1 == 0:
        level += 1
    return level


@njit(cache=True)
def tree_add(
    acc: FloatArray, seen: BoolArray, streams: IntArray, values: FloatArray
) -> None:  # pragma: no cover
    """Add ``values[j]`` to every open block of stream ``streams[j]`` and mark it seen.

    Examples:
        >>> acc, seen = np.zeros((2, 3)), np.zeros((2, 3), bool)
        >>> tree_add(acc, seen, np.array([1]), np.array([0.5]))
        >>> acc[1].tolist(), bool(seen[0].any())
        ([0.5, 0.5, 0.5], False)
    """
    for j in range(streams.size):
        s = streams[j]
        for lvl in range(acc.shape[1]):
            acc[s, lvl] += values[j]
            seen[s, lvl] = True


@njit(cache=True, inline="always")
def honaker_merge(
    own: float, own_var: float, left: float, left_var: float, below: float, below_var: float
) -> tuple[float, float]:  # pragma: no cover
    """Honaker's estimate of a node above level 0 and its noise variance: its own noisy
    sum (``own``, variance ``own_var``) and its two children's sum (the left child's
    estimate ``left`` from before the step, the right child's ``below`` just made) by
    inverse-variance weights; its own where neither has noise. The one statement of the
    combination, for the one tree here and the batched trees
    (:func:`~fedbandit_env.privacy.batched_kernels.honaker_close`).

    Examples:
        >>> honaker_merge(4.0, 2.0, 1.0, 1.0, 1.0, 1.0)
        (3.0, 1.0)
        >>> honaker_merge(4.0, 0.0, 1.0, 0.0, 1.0, 0.0)
        (4.0, 0.0)
    """
    kids = left + below
    kids_var = left_var + below_var
    total = own_var + kids_var
    if total > 0.0:
        w = kids_var / total
        return w * own + (1.0 - w) * kids, own_var * kids_var / total
    return own, 0.0


@njit(cache=True)
def tree_complete(
    acc: FloatArray,
    seen: BoolArray,
    node: FloatArray,
    var: FloatArray,
    t: int,
    scale: float,
    honaker: bool,
    rng: np.random.Generator,
) -> None:  # pragma: no cover
    """Close the blocks ending at step ``t`` and noise them (Algorithm 3).

    Dyadic: only the level-``lowest_bit(t)`` block, one ``Lap(scale)`` draw per stream
    whose block holds an observation (streams in order). Honaker: every level
    ``0 .. lowest_bit(t)``, drawn stream by stream and level by level, each node then
    combined with its two children by inverse variance.


    Examples:
        >>> acc, seen = np.array([[1.0, 1.0]]), np.ones((1, 2), bool)
        >>> node, var = np.zeros((1, 2)), np.zeros((1, 2))
        >>> tree_complete(acc, seen, node, var, 1, 1.0, False, np.random.default_rng(0))
        >>> bool(node[0, 0] != 1.0), acc[0].tolist()   # noisy leaf; its block reset
        (True, [0.0, 1.0])
    """
    top = lowest_bit(t)
    n_streams = acc.shape[0]
    if not honaker:
        for s in range(n_streams):
            value = acc[s, top]
            if seen[s, top]:
                value += rng.laplace(0.0, scale)
            node[s, top] = value
    else:
        var_unit = 2.0 * scale * scale
        for s in range(n_streams):
            left, left_var = 0.0, 0.0  # previous node of the level below (the left child)
            for lvl in range(top + 1):
                own = acc[s, lvl]
                own_var = 0.0
                if seen[s, lvl]:
                    own += rng.laplace(0.0, scale)
                    own_var = var_unit
                old, old_var = node[s, lvl], var[s, lvl]
                if lvl == 0:
                    est, v = own, own_var
                else:
                    est, v = honaker_merge(own, own_var, left, left_var, node[s, lvl - 1],
                                           var[s, lvl - 1])  # fmt: skip
                node[s, lvl], var[s, lvl] = est, v
                left, left_var = old, old_var
    for s in range(n_streams):
        for lvl in range(top + 1):
            acc[s, lvl] = 0.0
            seen[s, lvl] = False


@njit(cache=True)
def tree_add_listed(
    acc: FloatArray,
    seen: BoolArray,
    streams: IntArray,
    values: FloatArray,
    touched: IntArray,
    n_touched: IntArray,
) -> None:  # pragma: no cover
    """:func:`tree_add` that also lists, per level, the streams first seen in the open
    block (``touched[l, :n_touched[l]]``), for :func:`tree_complete_listed`.

    Examples:
        >>> acc, seen = np.zeros((3, 2)), np.zeros((3, 2), bool)
        >>> touched, n_touched = np.zeros((2, 3), np.int64), np.zeros(2, np.int64)
        >>> tree_add_listed(acc, seen, np.array([2]), np.array([1.0]), touched, n_touched)
        >>> touched[:, 0].tolist(), n_touched.tolist()
        ([2, 2], [1, 1])
    """
    levels = acc.shape[1]
    for j in range(streams.size):
        s = streams[j]
        for lvl in range(levels):
            acc[s, lvl] += values[j]
        # An open block lies inside the open block of the level above, so the levels a
        # stream is seen at are a top range: list it from level 0 up to the first level
        # where it is already seen (one or two levels, typically, instead of all).
        lvl = 0
        while lvl < levels and not seen[s, lvl]:
            seen[s, lvl] = True
            touched[lvl, n_touched[lvl]] = s
            n_touched[lvl] += 1
            lvl += 1


@njit(cache=True)
def tree_complete_listed(
    acc: FloatArray,
    seen: BoolArray,
    node: FloatArray,
    t: int,
    scale: float,
    rng: np.random.Generator,
    touched: IntArray,
    n_touched: IntArray,
    live: IntArray,
    n_live: IntArray,
) -> None:  # pragma: no cover
    """:func:`tree_complete` (dyadic) that visits only the streams with observations:
    the same nodes and the same draws in the same order (streams in increasing order),
    at a cost proportional to the observations instead of to all streams. ``live[l,
    :n_live[l]]`` lists the streams whose level-``l`` node is nonzero (they become 0 when
    their new block is empty). Used by the batched path with many streams; the replay
    tests check it against :func:`tree_complete` step for step.

    Examples:
        >>> acc, seen, node = np.zeros((3, 2)), np.zeros((3, 2), bool), np.zeros((3, 2))
        >>> touched, n_touched = np.zeros((2, 3), np.int64), np.zeros(2, np.int64)
        >>> live, n_live = np.zeros((2, 3), np.int64), np.zeros(2, np.int64)
        >>> tree_add_listed(acc, seen, np.array([1]), np.array([1.0]), touched, n_touched)
        >>> tree_complete_listed(acc, seen, node, 1, 1.0, np.random.default_rng(0),
        ...                      touched, n_touched, live, n_live)
        >>> bool(node[1, 0] != 0.0), float(node[0, 0]), n_live.tolist(), n_touched.tolist()
        (True, 0.0, [1, 0], [0, 1])
    """
    top = lowest_bit(t)
    for c in range(n_live[top]):  # the last block of this level: empty unless seen again
        node[live[top, c], top] = 0.0
    n = n_touched[top]
    n_streams = acc.shape[0]
    # Increasing stream order, without allocating. Short lists (the frequent low
    # levels): insertion sort. Long ones (rare high levels, where insertion sort is
    # quadratic: measured 2.4x slower Fed_UCB at N=50, M=100): in place by quicksort, or,
    # when they cover a good part of all streams, read back from ``seen`` in order.
    if n > 32 and 8 * n >= n_streams:
        c = 0
        for s in range(n_streams):
            if seen[s, top]:
                touched[top, c] = s
                c += 1
    elif n > 32:
        touched[top, :n].sort()
    else:
        for c in range(1, n):
            s = touched[top, c]
            d = c
            while d > 0 and touched[top, d - 1] > s:
                touched[top, d] = touched[top, d - 1]
                d -= 1
            touched[top, d] = s
    for c in range(n):
        s = touched[top, c]
        value = acc[s, top]
        value += rng.laplace(0.0, scale)
        node[s, top] = value
        live[top, c] = s
    n_live[top] = n
    for lvl in range(top + 1):
        for c in range(n_touched[lvl]):
            s = touched[lvl, c]
            acc[s, lvl] = 0.0
            seen[s, lvl] = False
        n_touched[lvl] = 0


@njit(cache=True)
def tree_prefix(node: FloatArray, t: int, s: int) -> float:  # pragma: no cover
    """Private prefix sum of stream ``s`` after step ``t``: the dyadic cover of ``t``.

    Examples:
        >>> tree_prefix(np.array([[1.0, 2.0, 4.0]]), 5, 0)   # 5 = 101b: levels 0 and 2
        5.0
    """
    total = 0.0
    for lvl in range(node.shape[1]):
        if (t >> lvl) & 1:
            total += node[s, lvl]
    return total


@njit(cache=True, nogil=True)
def tree_prefix_streams(
    node: FloatArray, t: int, streams: IntArray, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """:func:`tree_prefix` of ``streams[j]`` into ``out[j]``, for a batch of streams at
    one step: the cover of ``t`` is walked once, not once per stream. The same sums in the
    same order (levels increasing), so the same bits as :func:`tree_prefix`.

    Examples:
        >>> node = np.array([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]])
        >>> tree_prefix_streams(node, 5, np.array([1, 0]), np.empty(2)).tolist()
        [40.0, 5.0]
    """
    for j in range(streams.size):
        out[j] = 0.0
    for lvl in range(node.shape[1]):
        if (t >> lvl) & 1:
            for j in range(streams.size):
                out[j] += node[streams[j], lvl]
    return out


@njit(cache=True)
def tree_prefix_all(node: FloatArray, t: int) -> FloatArray:  # pragma: no cover
    """:func:`tree_prefix` of every stream.

    Examples:
        >>> tree_prefix_all(np.array([[1.0, 2.0], [3.0, 4.0]]), 2).tolist()
        [2.0, 4.0]
    """
    out = np.empty(node.shape[0])
    for s in range(node.shape[0]):
        out[s] = tree_prefix(node, t, s)
    return out
