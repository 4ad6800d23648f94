"""What every reference family shares: the tie rule and ``log t`` (:mod:`.kernels`) and
the pieces of a batched trial loop (:mod:`.trial`).

Examples:
    >>> from baselines.common import argmax_random_tie
    >>> import numpy as np
    >>> argmax_random_tie(np.array([0.2, 0.9]), np.random.default_rng(0))
    1
"""

from baselines.common.kernels import argmax_random_tie, log_time

__all__ = ["argmax_random_tie", "log_time"]
