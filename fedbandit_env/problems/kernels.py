"""Compiled reward draws, shared by ``MABProblem.sample`` and the batched kernels."""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.type_aliases import FloatArray, IntArray

NOISE_CODES = {"bernoulli": 0, "gaussian": 1, "clipped_gaussian": 2}
"""Integer code of each noise kind inside compiled code."""


@njit(cache=True)
def sample_rewards(
    local_means: FloatArray,
    arms: IntArray,
    noise: int,
    sigma: float,
    rng: np.random.Generator,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """One reward per agent (agent order): Bernoulli ``u < mu`` with one uniform each,
    Gaussian ``mu + sigma z`` with one standard normal each, clipped to [0, 1] for 2;
    into ``out``.

    Example:
        >>> sample_rewards(np.array([[1.0, 0.0]]), np.array([0]), 0, 1.0,
        ...                np.random.default_rng(0), np.empty(1)).tolist()
        [1.0]
    """
    n = arms.size
    for i in range(n):
        mu = local_means[i, arms[i]]
        if noise == 0:
            out[i] = 1.0 if rng.random() < mu else 0.0
        else:
            x = mu + sigma * rng.standard_normal()
            if noise == 2:
                x = min(max(x, 0.0), 1.0)
            out[i] = x
    return out
