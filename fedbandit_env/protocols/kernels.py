"""Compiled gossip draws, shared by the gossip protocols and the batched kernels."""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.rng_kernels import GeneratorSlot, integer_below
from fedbandit_env.type_aliases import BoolArray, FloatArray, IntArray


@njit(cache=True)
def random_edge_pair(
    edges: IntArray, rng: np.random.Generator
) -> tuple[int, int]:  # pragma: no cover
    """The draw of :func:`random_edge`: the endpoints of one edge chosen uniformly (one
    ``integers`` draw). The batched path keeps the pair instead of an ``N x N`` mask.

    Examples:
        >>> random_edge_pair(np.array([[0, 1]]), np.random.default_rng(0))
        (0, 1)
    """
    e = integer_below(rng, edges.shape[0])
    return edges[e, 0], edges[e, 1]


@njit(cache=True)
def random_edge(
    edges: IntArray, rng: np.random.Generator, mask: BoolArray
) -> BoolArray:  # pragma: no cover
    """Zhu et al.'s gossip: one edge uniformly at random (one ``integers`` draw), written
    as a symmetric partner mask into ``mask`` (cleared first).

    Examples:
        >>> random_edge(np.array([[0, 1]]), np.random.default_rng(0),
        ...             np.ones((2, 2), bool)).tolist()
        [[False, True], [True, False]]
    """
    mask[:] = False
    i, j = random_edge_pair(edges, rng)
    mask[i, j] = True
    mask[j, i] = True
    return mask


@njit(cache=True)
def neighbour_calls(
    neighbors: IntArray, degrees: IntArray, rng: np.random.Generator, mask: BoolArray
) -> BoolArray:  # pragma: no cover
    """Every agent calls one uniformly random neighbour (one uniform each, agent order);
    calls are symmetric; written into ``mask`` (cleared first).

    Examples:
        >>> nb = np.array([[1], [0]])
        >>> neighbour_calls(nb, np.array([1, 1]), np.random.default_rng(0),
        ...                 np.zeros((2, 2), bool)).tolist()
        [[False, True], [True, False]]
    """
    n = degrees.size
    mask[:] = False
    for i in range(n):
        pick = int(rng.random() * degrees[i])
        j = neighbors[i, pick]
        mask[i, j] = True
        mask[j, i] = True
    return mask


@njit(cache=True)
def choose_subset(
    candidates: IntArray, k: int, rng: np.random.Generator | GeneratorSlot, mask: BoolArray
) -> BoolArray:  # pragma: no cover
    """Mark ``k`` of ``candidates`` chosen uniformly without replacement in ``mask``
    (cleared first): a partial Fisher-Yates shuffle, one ``integers`` draw per pick, and
    no draw at all when every candidate is chosen. Li & Song's partial participation.

    Examples:
        >>> choose_subset(np.arange(5), 2, np.random.default_rng(0),
        ...               np.zeros(5, bool)).sum().item()
        2
    """
    mask[:] = False
    n = candidates.size
    if k >= n:
        for c in range(n):
            mask[candidates[c]] = True
        return mask
    pool = candidates.copy()
    for c in range(k):
        j = c + integer_below(rng, n - c)
        pool[c], pool[j] = pool[j], pool[c]
        mask[pool[c]] = True
    return mask


@njit(cache=True)
def mean_rows(
    values: FloatArray, rows: BoolArray, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """Mean of the selected rows of ``values``, summed in row order (a fixed order, so
    every path that aggregates the same rows gets the same bits), written into ``out``.

    Examples:
        >>> mean_rows(np.array([[1.0, 2.0], [3.0, 6.0], [9.0, 9.0]]),
        ...           np.array([True, True, False]), np.zeros(2)).tolist()
        [2.0, 4.0]
    """
    out[:] = 0.0
    count = 0
    for i in range(values.shape[0]):
        if rows[i]:
            count += 1
            for k in range(values.shape[1]):
                out[k] += values[i, k]
    if count:
        for k in range(values.shape[1]):
            out[k] /= count
    return out


@njit(cache=True)
def weighted_mean_rows(
    values: FloatArray, weights: FloatArray, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """``sum_q w_q values[q] / sum_q w_q`` in row order (rows with ``w_q = 0`` skipped),
    written into ``out``: the server's average of sink means, each weighted by its
    number of agents. With unit weights it is :func:`mean_rows` bit for bit.

    Examples:
        >>> weighted_mean_rows(np.array([[0.2], [1.0]]), np.array([3.0, 1.0]),
        ...                    np.zeros(1)).round(6).tolist()
        [0.4]
    """
    out[:] = 0.0
    total = 0.0
    for q in range(values.shape[0]):
        w = weights[q]
        if w > 0:
            total += w
            for k in range(values.shape[1]):
                out[k] += w * values[q, k]
    if total > 0:
        for k in range(values.shape[1]):
            out[k] /= total
    return out
