"""The compiled rollout of linear envs whose messages go by
:class:`~fedbandit_env.protocols.GammaHops` (Dubey & Pentland's LOCAL protocol: a
message travels ``gamma`` hops, one a step): a linear vector policy's talking step and
the env's, with the protocol's delivery between them, over a batch of envs, no Python
between steps (:func:`rollout_linear_hops`; :meth:`LinearCore.rollout
<fedbandit_env.core.linear.LinearCore.rollout>` takes it where every env's protocol is
``GammaHops`` with one ``gamma``).

The protocol is kept as what each agent sent at its last ``gamma`` steps (a ring,
``ring[b, s % gamma]`` the messages of step ``s``, float32 as observed), not as
``GammaHops``' per-receiver queue: the observation after step ``t`` is, for receiver
``r`` and origin ``v`` at ``h = hops[r, v]`` hops (``1 <= h <= gamma``), what ``v`` sent
at step ``t - h + 1`` (once ``t >= h``), which is what ``GammaHops.route`` hands out
(``tests/vector/test_linear_hops.py`` holds the rollout to the env's step). The step
reads it in the ring, where it lies (an index per receiver and origin,
:func:`hops_arrived`), rather than a copy per receiver: copying every message to every
receiver in reach cost as much as decentralized FedUCB's own step on a complete graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from fedbandit_env.core.caching import ArgumentFunctionCache
from fedbandit_env.core.kernels import (
    LinearEnvArrays,
    _linear_played,
    _step_linear,
    arms_within,
)
from fedbandit_env.network.graph import Network
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


def hop_table(network: Network, gamma: int) -> IntArray:
    """``hops[r, v]``: the hops from origin ``v`` to receiver ``r`` where a message
    reaches ``r`` under :class:`~fedbandit_env.protocols.GammaHops` (``1 .. gamma``),
    else 0 (itself, unreachable, or further than ``gamma``), as ``GammaHops.reset``
    computes it.

    Examples:
        >>> hop_table(Network.path(3), 1).tolist()
        [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
        >>> hop_table(Network.path(3), 2)[0].tolist()
        [0, 1, 2]
    """
    dist = network.hop_distances
    return np.ascontiguousarray(np.where((dist >= 1) & (dist <= gamma), dist, 0), dtype=np.int64)


@njit(cache=True, nogil=True)
def hops_arrived(
    hops: IntArray, t: int, gamma: int, slot: IntArray, mask: np.ndarray, marks: bool = True
) -> None:  # pragma: no cover
    """Where each receiver finds what arrived after step ``t`` in the ring of sent
    messages (``ring[b, s % gamma]``: the messages of step ``s``): receiver ``r``'s message
    from origin ``v`` at ``h = hops[r, v]`` hops is ``ring[b, slot[r, v], v]``, sent at
    step ``t - h + 1``, and (with ``marks``) ``mask[b, r, v] = 1`` once ``t >= h``.

    Examples:
        >>> hops = hop_table(Network.path(3), 2)
        >>> slot, mask = np.zeros((3, 3), np.int64), np.zeros((1, 3, 3), np.int8)
        >>> hops_arrived(hops, 1, 2, slot, mask)
        >>> mask[0].tolist(), int(slot[1, 2])  # one hop: in the step it was sent (1 % 2)
        ([[0, 1, 0], [1, 0, 1], [0, 1, 0]], 1)
    """
    n_envs, n = mask.shape[0], mask.shape[1]
    for r in range(n):
        for v in range(n):
            h = hops[r, v]
            if h < 1 or t < h:
                continue
            slot[r, v] = (t - h + 1) % gamma
            if marks:
                for b in range(n_envs):
                    mask[b, r, v] = 1


def hops_inbox(ring: Float32Array, hops: IntArray, t: int) -> tuple[Float32Array, np.ndarray]:
    """The per-receiver observation after step ``t`` (``inbox`` ``(B, N, N, D)``, zeros
    where nothing arrived, and ``mask``), from the ring of sent messages
    (:func:`hops_arrived`): what ``GammaHops.route`` hands out.

    Examples:
        >>> ring = np.zeros((1, 2, 3, 1), np.float32)
        >>> ring[0, 1, 2, 0] = 7.0  # agent 2's message of step 1 (slot 1 % 2)
        >>> inbox, mask = hops_inbox(ring, hop_table(Network.path(3), 2), 1)
        >>> float(inbox[0, 1, 2, 0]), float(inbox[0, 0, 2, 0])  # two hops: not yet
        (7.0, 0.0)
    """
    n_envs, gamma, n, d = ring.shape
    slot, mask = np.zeros((n, n), np.int64), np.zeros((n_envs, n, n), np.int8)
    hops_arrived(hops, t, gamma, slot, mask)
    inbox = np.zeros((n_envs, n, n, d), np.float32)
    for r, v in zip(*np.nonzero(mask[0]), strict=True):
        inbox[:, r, v] = ring[:, slot[r, v], v]
    return inbox, mask


def rollout_linear_hops(
    act: Any,
    state: Any,
    env: LinearEnvArrays,
    sets: IntArray,
    t: int,
    until: int,
    horizon: int,
    last: IntArray,
    arms: IntArray,
    seen: Float32Array,
    raw: FloatArray,
    regret: FloatArray,
    cum: FloatArray,
    sent: FloatArray,
    ring: Float32Array,
    slot: IntArray,
    mask: np.ndarray,
    hops: IntArray,
    bounds: FloatArray,
    c1: float,
    c2: float,
    n_edges: int,
    cum_cost: FloatArray,
    steps: IntArray,
    r: int,
    out: FloatArray,
    cost_out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> tuple[int, int]:  # pragma: no cover
    """:func:`~fedbandit_env.core.kernels.rollout_linear` for envs whose messages go by
    :class:`~fedbandit_env.protocols.GammaHops`: ``act(last, seen, t, pools, pool_of,
    sets, heard, slot, mask, *state, arms, sent)`` also reads what arrived after the
    last step, receiver ``r``'s message from origin ``v`` being ``heard[b, slot[r, v],
    v]`` where ``mask[b, r, v]`` (:func:`hops_arrived`; ``heard`` is the ``ring`` ``(B,
    gamma, N, D)`` of what every agent sent at its last ``gamma`` steps, read in place:
    a step that reads the vector env's observation instead passes its inbox ``(B, N, N,
    D)`` with ``slot[r, v] = r``), and writes every agent's message into ``sent`` ``(B,
    N, D)``; a message entry that is not finite or outside ``bounds`` (the env's ``(low,
    high)``), or an arm outside ``[0, K)``, stops the rollout before that step (the
    caller raises the env's error). After the env's step the messages go into the ring
    as float32 (what the observation holds), and each step costs ``c1 0 + c2 |E|``
    (``GammaHops`` uses every edge every step). The cumulative cost goes to
    ``cost_out[:, r]`` at the recorded steps. Returns ``(r, t)``: the next record and
    the steps played.

    Examples:
        >>> from numba import njit
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> @njit
        ... def echo(last, seen, t, pools, pool_of, sets, heard, slot, mask, arms, sent):
        ...     arms[:] = 0
        ...     for i in range(sent.shape[1]):  # agent i sends t + i; reads its neighbour's
        ...         sent[0, i, 0] = t + i + 10.0 * heard[0, slot[i, 1 - i], 1 - i, 0]
        >>> gens = [np.random.default_rng(0)], [np.random.default_rng(1)]
        >>> tables = generator_table(gens[0]), generator_table(gens[1])
        >>> sets, out = np.array([[[1, 0], [0, 1]]]), np.zeros((1, 2, 1))
        >>> arms, seen = np.zeros((1, 2), np.int64), np.zeros((1, 2), np.float32)
        >>> ring, slot = np.zeros((1, 1, 2, 1), np.float32), np.zeros((2, 2), np.int64)
        >>> mask, cost, trace = np.zeros((1, 2, 2), np.int8), np.zeros((1, 1)), (
        ...     np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32))
        >>> env = LinearEnvArrays(np.array([[[1.0, 0.0], [1.0, 0.0]]]),
        ...                       np.array([[0.5, 0.25]]), np.array([0]), np.array([1.0]),
        ...                       tables[0], tables[1], np.array([-1]), np.array([0]),
        ...                       np.zeros((1, 2, 1), np.float32), np.zeros(1, np.int64))
        >>> rollout_linear_hops(echo, (), env, sets, 0, 2, 2, arms.copy(), arms, seen,
        ...     np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2, 1)),
        ...     ring, slot, mask, hop_table(Network.path(2), 1), np.array([-1e3, 1e3]),
        ...     25.0, 1.0, 1, np.zeros(1), np.array([2]), 0, out, cost, *trace)
        (1, 2)
        >>> ring[0, 0, :, 0].tolist(), cost.tolist()  # step 2: 1 + 10 * 1, 2 + 10 * 0
        ([11.0, 2.0], [[2.0]])
    """
    n_envs, n = arms.shape
    d = sent.shape[2]
    gamma = ring.shape[1]
    lo, hi = bounds[0], bounds[1]
    marks = True  # the mask as this call found it: marked once, then only while it grows
    while t < until:
        if t > 0:
            hops_arrived(hops, t, gamma, slot, mask, marks or t <= gamma)
            marks = False
        act(last, seen, t, env.pools, env.pool_of, sets, ring, slot, mask, *state, arms, sent)
        ok = True  # the env's check of every message entry, branch-free (it vectorizes)
        for b in range(n_envs):
            for i in range(n):
                for k in range(d):
                    v = sent[b, i, k]
                    ok &= (v >= lo) & (v <= hi) & (v - v == 0.0)  # v - v: NaN for inf, NaN
        if not ok or not arms_within(arms, sets.shape[2]):
            return r, t
        _step_linear(env, arms, sets, raw, regret, t + 1 < horizon)
        t += 1
        now = t % gamma  # this step's messages replace those of step t - gamma
        for b in range(n_envs):
            for i in range(n):
                for k in range(d):
                    ring[b, now, i, k] = np.float32(sent[b, i, k])
            cum_cost[b] += c1 * 0 + c2 * n_edges
        if r < steps.size and t == steps[r]:
            for b in range(n_envs):
                cost_out[b, r] = cum_cost[b]
        r = _linear_played(t, arms, raw, regret, cum, seen, last, steps, r, out, t_arms,
                           t_rewards)  # fmt: skip
    return r, t


rollout_linear_hops = njit(cache=True, nogil=True)(rollout_linear_hops)
_hops_rollout: Any = rollout_linear_hops  # the step is an argument too: the same disk cache
_hops_rollout._cache = ArgumentFunctionCache(rollout_linear_hops.py_func)

__all__ = ["hop_table", "hops_arrived", "hops_inbox", "rollout_linear_hops"]
