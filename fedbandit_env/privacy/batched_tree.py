"""The binary-tree mechanism of ``PrivateRewards`` for ``B`` envs in one compiled call.

:class:`~fedbandit_env.wrappers.PrivateRewards` runs one
:class:`~fedbandit_env.privacy.mechanisms.TreeMechanism` over the ``N M`` streams of its
env (Zhu et al., Algorithms 2-3). Its vector form
(:class:`~fedbandit_env.vector.wrappers.VecPrivateRewards`) has ``B`` such trees, each
drawing from its own generator, and steps them here, all envs in one call: the same
blocks, the same draws in the same order (streams in index order; Honaker: stream by
stream, level by level) and the same sums as ``TreeMechanism.step`` followed by
``tree_prefix_all``, so the two forms release the same bits
(``tests/vector/test_vector_replay.py``, ``tests/vector/test_vector_wrappers.py``).
The Laplace draw is NumPy's algorithm on a generator-table row (:func:`laplace`), so no
Generator is boxed per env and step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from fedbandit_env.privacy.tree_kernels import lowest_bit
from fedbandit_env.rng_kernels import _next64, generator_at
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray

_DOUBLE_UNIT = 1.0 / 9007199254740992.0  # 2**-53


@njit(cache=True, nogil=True)
def laplace(rng: Any, scale: float) -> float:  # pragma: no cover
    """``rng.laplace(0.0, scale)`` bit for bit (NumPy's ``random_laplace``: one
    ``next_double``, redrawn on exactly 0), on a Generator or a generator-table row.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(3)
        >>> slot = generator_at(generator_table([rng]), 0)
        >>> mine = [laplace(slot, 2.0) for _ in range(3)]
        >>> mine == np.random.default_rng(3).laplace(0.0, 2.0, 3).tolist()
        True
    """
    while True:
        u = np.float64(np.uint64(_next64(rng)) >> np.uint64(11)) * _DOUBLE_UNIT
        if u >= 0.5:
            return -scale * math.log(2.0 - u - u)
        if u > 0.0:
            return scale * math.log(u + u)


@njit(cache=True, nogil=True)
def batched_tree_step(
    acc: FloatArray,
    last: IntArray,
    node: FloatArray,
    var: FloatArray,
    counts: FloatArray,
    arms: IntArray,
    rewards: FloatArray,
    t: int,
    clip_lo: float,
    clip_hi: float,
    scale: float,
    honaker: bool,
    table: Any,
    prefix: FloatArray,
    increments: FloatArray,
    counts32: Float32Array,
    means32: Float32Array,
) -> None:  # pragma: no cover
    """Step ``B`` trees: agent ``i`` of env ``b`` pulled ``arms[b, i]`` and got
    ``rewards[b, i]`` (clipped into stream ``i M + arm``); close and noise the blocks
    ending at ``t``; ``prefix[b]`` (the private sums of every stream, at ``t - 1`` on
    entry) becomes the sums at ``t``, ``increments[b, i]`` the pulled stream's change;
    ``counts32`` and ``means32`` ``(B, N, M)`` mirror the counts and the private means
    ``S~ / n`` (0 where never pulled) in float32, as the wrapper's views show them.

    Layout (a step touches rows, not columns): ``acc``, ``node``, ``var``
    ``(B, L, N M)``, level-major; ``last`` ``(B, N M)`` the last step each stream was
    pulled (0: never), which says whether a closing block holds an observation
    (``TreeMechanism``'s ``seen``: the block ``(t - 2^l, t]`` does iff
    ``last > t - 2^l``); ``counts`` ``(B, N, M)``; ``arms``, ``rewards``,
    ``increments`` ``(B, N)``; ``prefix`` ``(B, N M)``; ``table`` one generator row
    per env.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> b, n, m, lv = 1, 1, 2, 2
        >>> acc, node, var = (np.zeros((b, lv, n * m)) for _ in range(3))
        >>> last, counts = np.zeros((b, n * m), np.int64), np.zeros((b, n, m))
        >>> prefix, inc = np.zeros((b, n * m)), np.zeros((b, n))
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> table = generator_table([rng])
        >>> c32, m32 = np.zeros((b, n, m), np.float32), np.zeros((b, n, m), np.float32)
        >>> batched_tree_step(acc, last, node, var, counts, np.array([[1]]),
        ...     np.array([[0.5]]), 1, 0.0, 1.0, 1e-12, False, table, prefix, inc, c32, m32)
        >>> round(float(inc[0, 0]), 6), float(prefix[0, 0]), counts[0, 0].tolist()
        (0.5, 0.0, [0.0, 1.0])
    """
    n_envs, n, m = counts.shape
    levels, n_streams = acc.shape[1], acc.shape[2]
    top = lowest_bit(t)
    var_unit = 2.0 * scale * scale
    cover = np.empty(levels, dtype=np.int64)
    n_cover = 0
    for lvl in range(levels):
        if (t >> lvl) & 1:
            cover[n_cover] = lvl
            n_cover += 1
    for b in range(n_envs):
        rng = generator_at(table, b)
        a_b, l_b, n_b, v_b = acc[b], last[b], node[b], var[b]
        for i in range(n):
            a = arms[b, i]
            s = i * m + a
            value = min(max(rewards[b, i], clip_lo), clip_hi)
            counts[b, i, a] += 1.0
            counts32[b, i, a] = np.float32(counts[b, i, a])
            l_b[s] = t
            for lvl in range(levels):
                a_b[lvl, s] += value
        if not honaker:
            since = t - (1 << top)
            for s in range(n_streams):
                value = a_b[top, s]
                if l_b[s] > since:
                    value += laplace(rng, scale)
                n_b[top, s] = value
        else:
            for s in range(n_streams):
                left, left_var = 0.0, 0.0  # the level below's previous node (left child)
                for lvl in range(top + 1):
                    own = a_b[lvl, s]
                    own_var = 0.0
                    if l_b[s] > t - (1 << lvl):
                        own += laplace(rng, scale)
                        own_var = var_unit
                    old, old_var = n_b[lvl, s], v_b[lvl, s]
                    if lvl == 0:
                        est, v = own, own_var
                    else:
                        kids = left + n_b[lvl - 1, s]
                        kids_var = left_var + v_b[lvl - 1, s]
                        total = own_var + kids_var
                        if total > 0.0:
                            w = kids_var / total
                            est = w * own + (1.0 - w) * kids
                            v = own_var * kids_var / total
                        else:
                            est, v = own, 0.0
                    n_b[lvl, s], v_b[lvl, s] = est, v
                    left, left_var = old, old_var
        for lvl in range(top + 1):
            for s in range(n_streams):
                a_b[lvl, s] = 0.0
        for i in range(n):
            s = i * m + arms[b, i]
            increments[b, i] = -prefix[b, s]  # the sum at t - 1, subtracted below
        p_b = prefix[b]
        for s in range(n_streams):
            p_b[s] = 0.0
        for k in range(n_cover):  # the cover of t, levels increasing: tree_prefix's sums
            row = n_b[cover[k]]
            for s in range(n_streams):
                p_b[s] += row[s]
        for i in range(n):
            for a in range(m):
                pulls = counts[b, i, a]
                if pulls > 0:
                    means32[b, i, a] = np.float32(p_b[i * m + a] / pulls)
        for i in range(n):
            s = i * m + arms[b, i]
            increments[b, i] = p_b[s] + increments[b, i]


__all__ = ["batched_tree_step", "laplace"]
