"""Compiled gossip draws, shared by the gossip protocols and the batched kernels."""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import BoolArray, IntArray


@njit(cache=True)
def random_edge(
    edges: IntArray, n_agents: int, rng: np.random.Generator
) -> BoolArray:  # pragma: no cover
    """Zhu et al.'s gossip: one edge uniformly at random (one ``integers`` draw), as a
    symmetric ``(N, N)`` partner mask.

    Example:
        >>> random_edge(np.array([[0, 1]]), 2, np.random.default_rng(0)).tolist()
        [[False, True], [True, False]]
    """
    mask = np.zeros((n_agents, n_agents), dtype=np.bool_)
    e = rng.integers(0, edges.shape[0])
    i, j = edges[e, 0], edges[e, 1]
    mask[i, j] = True
    mask[j, i] = True
    return mask


@njit(cache=True)
def neighbour_calls(
    neighbors: IntArray, degrees: IntArray, rng: np.random.Generator
) -> BoolArray:  # pragma: no cover
    """Every agent calls one uniformly random neighbour (one uniform each, agent order);
    calls are symmetric.

    Example:
        >>> nb = np.array([[1], [0]])
        >>> neighbour_calls(nb, np.array([1, 1]), np.random.default_rng(0)).tolist()
        [[False, True], [True, False]]
    """
    n = degrees.size
    mask = np.zeros((n, n), dtype=np.bool_)
    for i in range(n):
        pick = int(rng.random() * degrees[i])
        j = neighbors[i, pick]
        mask[i, j] = True
        mask[j, i] = True
    return mask
