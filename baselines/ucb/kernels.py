"""The plain baselines' indices: UCB1 of one agent, and the oracle's pooled UCB1.

Called by :class:`~baselines.ucb.LocalUCB1` and :class:`~baselines.ucb.OracleUCB` and by
the batched loops of :mod:`baselines.ucb.fast`: one source of truth for both paths.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import FloatArray


@njit(cache=True)
def ucb1_index(
    sums: FloatArray, counts: FloatArray, log_t: float, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """UCB1 (Auer et al. 2002): ``sums / n + scale * sqrt(2 log t / n)``, into ``out``.

    Example:
        >>> ucb1_index(np.array([1.0, 2.0]), np.array([1.0, 4.0]), 0.0, 1.0, np.empty(2)).tolist()
        [1.0, 0.5]
    """
    for k in range(counts.size):
        out[k] = sums[k] / counts[k] + scale * np.sqrt(2.0 * log_t / counts[k])
    return out


@njit(cache=True)
def oracle_index(
    sums: FloatArray, counts: FloatArray, t: int, n_agents: int, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """Pooled UCB1 of the oracle: ``xbar + scale * sqrt(2 log(N t) / (N n))``, into ``out``.

    ``log(N t)`` is computed here (it is called once per step, by one controller).

    Example:
        >>> oracle_index(np.array([0.5]), np.array([1.0]), 1, 1, 1.0, np.empty(1)).tolist()
        [0.5]
    """
    log_nt = np.log(max(n_agents * t, 1))
    for k in range(counts.size):
        out[k] = sums[k] / counts[k] + scale * np.sqrt(2.0 * log_nt / (n_agents * counts[k]))
    return out
