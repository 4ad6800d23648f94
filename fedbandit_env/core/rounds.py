"""The compiled rollout of Li & Song's master-worker rounds (``ServerRounds``): a vector
policy's talking step and the env's, with the server's routing between them, over a
batch of envs, no Python between steps (:func:`rollout_rounds`;
:meth:`MABCore.rollout <fedbandit_env.core.mab.MABCore.rollout>` takes it where the
router's kind is ``server_rounds``). Beside :mod:`fedbandit_env.core.kernels`' rollouts
(its counted twin and disk cache made the same way), in a module of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from fedbandit_env.core.kernels import (
    UNCOUNTED,
    ArgumentFunctionCache,
    _counted_twin,
    observe_raw,  # noqa: F401  (the docstring's example)
    step_envs,
    trace_and_record,
)
from fedbandit_env.rng_kernels import generator_at, integer_below
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


def rollout_rounds(
    act: Any,
    state: Any,
    means: FloatArray,
    gaps: FloatArray,
    kinds: IntArray,
    sigma: FloatArray,
    draws: FloatArray,
    first: int,
    t: int,
    last: IntArray,
    arms: IntArray,
    seen: Float32Array,
    regret: FloatArray,
    cum: FloatArray,
    wire: tuple[Any, ...],
    record: tuple[Any, ...],
    observe: Any,
    watch: Any,
    raw: FloatArray,
    traced: Float32Array,
) -> tuple[int, int]:  # pragma: no cover
    """:func:`rollout_block` for envs whose messages go by ``ServerRounds`` (Li & Song's
    master-worker rounds): ``act(last, seen, t, server, server_mask, *state, arms,
    sent)`` also reads what the server broadcast after the last step (``server`` ``(B,
    N, D)`` float32, ``server_mask`` ``(B, N, 1)`` int8) and writes its messages ``sent``
    ``(B, N, D)``, entry 0 the send flag. ``wire = (server, server_mask, sent, checked,
    low, high, rates, table, uploads, cum_cost, c1, pool, chosen, aggregate)``: the
    senders whose messages are checked, the bounds, each env's participation rate
    ``rates`` ``(B,)`` and protocol generator (row ``b`` of ``table``), the last step's
    uploads ``(B,)`` (0: no round; kept up to date), each env's cumulative cost, the
    server link's cost ``c1``, and work space ``pool`` ``(N,)`` int64, ``chosen``
    ``(N,)`` bool, ``aggregate`` ``(D - 1,)``. ``record``: :func:`rollout_talking`'s.

    After each step, as :func:`~fedbandit_env.core.routing.server_rounds` routes it: in
    env ``b``, ``k = ceil(rates[b] flagged - 1e-9)`` of the agents whose flag is above
    ``0.5`` upload, drawn as ``choose_subset`` draws them (a partial Fisher-Yates shuffle
    of the flagged in agent order, one ``integers`` draw a pick, none when all are
    chosen), and every agent hears ``[k, mean payload]`` (float32; the mean summed in
    agent order); the step costs ``c1 k``. Steps without a flag carry nothing and cost
    nothing. The messages of the senders ``checked`` are checked as the vector env
    checks them (finite, within ``[low, high]``) before the step; a bad one stops the
    rollout there. Returns the next ``r`` and the steps played by then.

    Examples:
        >>> from numba import njit
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> @njit
        ... def flag_on_2(last, seen, t, server, server_mask, arms, sent):
        ...     arms[:] = 0
        ...     sent[:] = 0.0
        ...     if t == 1:
        ...         sent[0, 0, 0], sent[0, 0, 1] = 1.0, 0.25
        >>> means, gaps = np.array([[[0.9, 0.1], [0.9, 0.1]]]), np.array([[0.0, 0.8]])
        >>> n = np.zeros((1, 2), np.int64)
        >>> server, smask = np.zeros((1, 2, 2), np.float32), np.zeros((1, 2, 1), np.int8)
        >>> rngs = [np.random.default_rng(0)]
        >>> wire = (server, smask, np.zeros((1, 2, 2)), np.ones(2, np.bool_), -9.0, 9.0,
        ...         np.ones(1), generator_table(rngs), np.zeros(1, np.int64), np.zeros(1),
        ...         2.0, np.zeros(2, np.int64), np.zeros(2, np.bool_), np.zeros(1))
        >>> record = (np.array([3]), 0, np.zeros((1, 2, 1)), np.zeros((1, 1)),
        ...           np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32))
        >>> rollout_rounds(flag_on_2, (), means, gaps, np.array([0]), np.array([1.0]),
        ...                np.full((1, 3, 2), 0.5), 0, 0, n.copy(), n,
        ...                np.zeros((1, 2), np.float32), np.empty((0, 0)), np.zeros((1, 2)),
        ...                wire, record, observe_raw, (), np.zeros((1, 2)),
        ...                np.zeros((1, 2), np.float32))
        (1, 3)
        >>> record[3].tolist(), smask[0, :, 0].tolist(), wire[8].tolist()
        ([[2.0]], [0, 0], [0])
    """
    server, server_mask, sent, checked, low, high, rates, table = wire[:8]
    uploads, cum_cost, c1, pool, chosen, aggregate = wire[8:]
    steps, r, out, cost_out, t_arms, t_rewards = record
    n_envs, n = arms.shape
    d = sent.shape[2]
    everyone = True
    for i in range(n):
        everyone &= checked[i]
    flat = sent.reshape(-1)  # every sender checked: one flat pass (it vectorizes whole)
    for s in range(first, draws.shape[1]):
        act(last, seen, t, server, server_mask, *state, arms, sent)
        bad = False  # messages_within's check, written out: that helper reads `.flags`,
        # which needs numba's runtime, so an uncounted rollout cannot call it (it compiles
        # only where a counted caller compiled it first: a test order would hide that)
        if everyone:
            for k in range(flat.size):
                v = flat[k]
                bad |= (v - v != 0.0) | (v < low) | (v > high)
        else:
            for b in range(n_envs):
                for i in range(n):
                    if checked[i]:
                        for k in range(d):
                            v = sent[b, i, k]
                            bad |= (v - v != 0.0) | (v < low) | (v > high)
        if bad:  # the caller raises
            return r, t
        step_envs(means, gaps, kinds, sigma, arms, draws, s, raw, regret, cum)
        t += 1
        observe(arms, raw, t, *watch, seen, traced)
        for b in range(n_envs):  # ServerRounds.route, env by env
            if uploads[b]:  # last step's broadcast is over
                for i in range(n):
                    server_mask[b, i, 0] = 0
                    for k in range(d):
                        server[b, i, k] = np.float32(0.0)
            uploads[b] = 0
            flagged = 0
            for i in range(n):
                if sent[b, i, 0] > 0.5:
                    pool[flagged] = i
                    flagged += 1
            if flagged == 0 or d < 2:
                continue
            k_up = max(1, int(np.ceil(rates[b] * flagged - 1e-9)))  # rounds.participants
            for i in range(n):
                chosen[i] = False
            if k_up >= flagged:
                for c in range(flagged):
                    chosen[pool[c]] = True
            else:  # choose_subset: a partial Fisher-Yates shuffle of the flagged
                slot = generator_at(table, b)
                for c in range(k_up):
                    j = c + integer_below(slot, flagged - c)
                    pool[c], pool[j] = pool[j], pool[c]
                    chosen[pool[c]] = True
            for k in range(d - 1):  # mean_rows: summed in agent order
                aggregate[k] = 0.0
            count = 0
            for i in range(n):
                if chosen[i]:
                    count += 1
                    for k in range(d - 1):
                        aggregate[k] += sent[b, i, 1 + k]
            for k in range(d - 1):
                aggregate[k] /= count
            for i in range(n):
                server[b, i, 0] = np.float32(k_up)
                for k in range(d - 1):
                    server[b, i, 1 + k] = np.float32(aggregate[k])
                server_mask[b, i, 0] = 1
            uploads[b] = k_up
        for b in range(n_envs):
            cum_cost[b] += c1 * float(uploads[b])
            for i in range(n):
                last[b, i] = arms[b, i]
        if r < steps.size and t == steps[r]:  # the network's cost beside the regret
            for b in range(n_envs):
                cost_out[b, r] = cum_cost[b]
        r = trace_and_record(t, arms, traced, cum, steps, r, out, t_arms, t_rewards)
    return r, t


rollout_rounds_counted = njit(cache=True, nogil=True)(_counted_twin(rollout_rounds))
rollout_rounds = njit(cache=True, nogil=True, **UNCOUNTED)(rollout_rounds)
_ROLLOUTS: tuple[Any, ...] = (rollout_rounds, rollout_rounds_counted)
for _rollout in _ROLLOUTS:
    _rollout._cache = ArgumentFunctionCache(_rollout.py_func)

__all__ = ["rollout_rounds", "rollout_rounds_counted"]
