"""Compiled gossip draws, shared by the gossip protocols and the batched kernels."""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import BoolArray, IntArray


@njit(cache=True)
def random_edge(
    edges: IntArray, rng: np.random.Generator, mask: BoolArray
) -> BoolArray:  # pragma: no cover
    """Zhu et al.'s gossip: one edge uniformly at random (one ``integers`` draw), written
    as a symmetric partner mask into ``mask`` (cleared first).

    Example:
        >>> random_edge(np.array([[0, 1]]), np.random.default_rng(0),
        ...             np.ones((2, 2), bool)).tolist()
        [[False, True], [True, False]]
    """
    mask[:] = False
    e = rng.integers(0, edges.shape[0])
    i, j = edges[e, 0], edges[e, 1]
    mask[i, j] = True
    mask[j, i] = True
    return mask


@njit(cache=True)
def neighbour_calls(
    neighbors: IntArray, degrees: IntArray, rng: np.random.Generator, mask: BoolArray
) -> BoolArray:  # pragma: no cover
    """Every agent calls one uniformly random neighbour (one uniform each, agent order);
    calls are symmetric; written into ``mask`` (cleared first).

    Example:
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
