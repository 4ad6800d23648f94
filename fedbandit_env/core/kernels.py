"""An env step written once for compiled code: every agent's reward and the step's
pseudo-regret, for the families' compiled trial loops.

The array form of a step is :meth:`MABCore.step <fedbandit_env.core.mab.MABCore.step>`
(``B`` envs, NumPy or a torch device). A family's compiled loop plays one env inside
numba, where that method cannot be called; it calls these instead, so the draws and the
regret of a step are stated here and nowhere in a family (``tests/test_layout.py``
finds every function that draws rewards and adds regret):

- :func:`pull_arms`: multi-armed; each agent's reward
  (:func:`~fedbandit_env.problems.kernels.draw_reward`, agents in order from the env's
  reward generator: the numbers ``MABCore`` draws a block ahead from the same stream)
  and ``cum[i] += gaps[arm_i]``;
- :func:`pull_sets`: linear; agent ``i`` chose pool row ``rows[i]`` of its decision set
  ``sets[i]``; the regret is against the best global mean in that set
  (``LinearProblem.gaps``).

Beside them, the checks a NumPy step of the vector env runs on its actions in one pass
each (:func:`arms_within`, :func:`messages_within`).

A loop calls one of them once a step, and the reward of one agent is
:func:`~fedbandit_env.problems.kernels.draw_reward`, inlined: a call with array arguments
costs a loop atomic reference counts (``baselines/common/trial.py``), and a nested one
cost ``cdp_mab``'s loop (one of the cheapest) a fifth of its speed, measured.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedbandit_env.problems.kernels import draw_reward
from fedbandit_env.type_aliases import FloatArray, IntArray


@njit(cache=True, nogil=True)
def pull_arms(
    mu: FloatArray,
    arms: IntArray,
    noise: int,
    sigma: float,
    rng: np.random.Generator,
    gaps: FloatArray,
    rewards: FloatArray,
    cum: FloatArray,
) -> None:  # pragma: no cover
    """Agent ``i`` pulls ``arms[i]``: its reward into ``rewards[i]`` (local means ``mu``
    ``(N, M)``, noise code and ``sigma`` as ``draw_reward``), and ``gaps[arms[i]]``
    added to ``cum[i]``.

    Examples:
        >>> rewards, cum = np.empty(2), np.zeros(2)
        >>> pull_arms(np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([0, 1]), 0, 1.0,
        ...           np.random.default_rng(0), np.array([0.0, 0.5]), rewards, cum)
        >>> rewards.tolist(), cum.tolist()
        ([1.0, 0.0], [0.0, 0.5])
    """
    for i in range(arms.size):
        rewards[i] = draw_reward(mu[i, arms[i]], noise, sigma, rng)
        cum[i] += gaps[arms[i]]


@njit(cache=True, nogil=True)
def pull_sets(
    local_means: FloatArray,
    rows: IntArray,
    noise: int,
    sigma: float,
    rng: np.random.Generator,
    sets: IntArray,
    global_means: FloatArray,
    rewards: FloatArray,
    cum: FloatArray,
) -> None:  # pragma: no cover
    """Agent ``i`` chose pool row ``rows[i]`` of ``sets[i]``: its reward into
    ``rewards[i]`` (``local_means`` ``(N, P)``) and ``max_k g[sets[i, k]] - g[rows[i]]``
    added to ``cum[i]`` (``g = global_means``).

    Examples:
        >>> rewards, cum = np.empty(1), np.zeros(1)
        >>> pull_sets(np.array([[1.0, 0.0]]), np.array([1]), 0, 1.0, np.random.default_rng(0),
        ...           np.array([[0, 1]]), np.array([0.5, 0.25]), rewards, cum)
        >>> rewards.tolist(), cum.tolist()
        ([0.0], [0.25])
    """
    for i in range(rows.size):
        rewards[i] = draw_reward(local_means[i, rows[i]], noise, sigma, rng)
    for i in range(sets.shape[0]):
        best = -np.inf
        for j in range(sets.shape[1]):
            best = max(best, global_means[sets[i, j]])
        cum[i] += best - global_means[rows[i]]


@njit(cache=True, nogil=True)
def arms_within(arms: np.ndarray, n_arms: int) -> bool:  # pragma: no cover
    """Whether every entry of ``arms`` (any integer dtype, ``(B, N)``) lies in ``[0, M)``:
    the vector env's check of a step's arms in one pass (``MABCore.check_actions``).

    Examples:
        >>> arms_within(np.array([[0, 2]]), 3), arms_within(np.array([[0, -1]]), 3)
        (True, False)
    """
    for b in range(arms.shape[0]):
        for i in range(arms.shape[1]):
            a = arms[b, i]
            if a < 0 or a >= n_arms:
                return False
    return True


@njit(cache=True, nogil=True)
def messages_within(
    messages: np.ndarray, agents: IntArray, low: float, high: float
) -> bool:  # pragma: no cover
    """Whether every entry the ``agents`` send in ``messages`` ``(B, N, D)`` is finite and
    within ``[low, high]``: the vector env's check of a step's messages in one pass
    (without a branch a number: ``v - v`` is 0 only for a finite ``v``, and the loops
    run in SIMD; all agents of a contiguous array: one flat loop).

    Examples:
        >>> sent = np.array([[[0.5], [np.nan]]])
        >>> messages_within(sent, np.array([0]), 0.0, 1.0)
        True
        >>> messages_within(sent, np.array([0, 1]), -np.inf, np.inf)
        False
    """
    bad = False
    if agents.size == messages.shape[1] and messages.flags.c_contiguous:
        flat = messages.reshape(-1)
        for k in range(flat.size):
            v = flat[k]
            bad |= (v - v != 0.0) | (v < low) | (v > high)
        return not bad
    for b in range(messages.shape[0]):
        for i in agents:
            for k in range(messages.shape[2]):
                v = messages[b, i, k]
                bad |= (v - v != 0.0) | (v < low) | (v > high)
    return not bad


__all__ = ["arms_within", "messages_within", "pull_arms", "pull_sets"]
