"""The compiled rollouts of Li & Song's rounds: a vector policy's talking step and the
env's, with the protocol's routing between them, over a batch of envs, no Python between
steps. :func:`rollout_rounds` routes the master-worker rounds (``ServerRounds``),
:func:`rollout_flooding` GIS flooding (``Flooding``), :func:`rollout_hybrid` the hybrid
structure (``Hybrid``); :meth:`MABCore.rollout <fedbandit_env.core.mab.MABCore.rollout>`
takes them where the router's kind is ``server_rounds``, ``flooding`` or ``hybrid``. Beside
:mod:`fedbandit_env.core.kernels`' rollouts (their counted twins and disk cache made the
same way), in a module of their own.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from fedbandit_env.core.caching import ArgumentFunctionCache
from fedbandit_env.core.kernels import (
    UNCOUNTED,
    _counted_twin,
    observe_raw,  # noqa: F401  (the docstring's example)
    step_envs,
    trace_and_record,
)
from fedbandit_env.network.graph import Network  # noqa: F401  (the docstring's example)
from fedbandit_env.rng_kernels import generator_at, integer_below
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


class QuietSteps(NamedTuple):
    """The steps after this one that a talking compiled step has planned to be quiet,
    for the round rollouts (:func:`~fedbandit_env.core.rounds.rollout_rounds`,
    :func:`~fedbandit_env.core.rounds.rollout_flooding`,
    :func:`~fedbandit_env.core.rounds.rollout_hybrid`): steps in which it raises no
    flag, writes no message and pulls arms it knows already (an elimination agent
    exploring its active arms in turn, or committed to one). A policy whose step plans
    puts one in its state (``MABCore.rollout`` finds it there); the rollout then plays
    those steps without calling the step, and the step reads what they observed when it
    is next called.

    ``counts = [planned, played, room]``: before each call the rollout writes in
    ``room`` how many steps after this one it could play so (0 outside a rollout: the
    step plans nothing); the step writes in ``planned`` how many steps it planned,
    this one included (1: none after it), and their arms in ``arms[0 .. planned - 1]``
    ``(Q, B, N)``, ``arms[0]`` this step's; where the protocol is idle after this step
    (no round started or in flight), the rollout plays ``played`` of them (at most
    ``room``), writes each step's observation in ``seen[j]`` ``(Q, B, N)`` float32
    (``seen[0]`` this step's) and the last one where the step reads its observation, and
    leaves the last one's arms as the last arms. The step's next call must first take
    in steps ``0 .. played - 1`` (their arms and observations), then the last as usual.
    The rollout never ends on a step it played so, so nothing is left to take in when
    it returns.

    Examples:
        >>> quiet = QuietSteps.of(16, n_envs=2, n_agents=3)
        >>> quiet.arms.shape, quiet.counts.tolist()
        ((16, 2, 3), [0, 0, 0])
    """

    arms: IntArray
    seen: Float32Array
    counts: IntArray

    def check(self, n_envs: int, n_agents: int) -> None:
        """Raise ``ValueError`` unless the arrays fit ``n_envs`` envs of ``n_agents``
        agents: ``arms`` int64 and ``seen`` float32 ``(Q, B, N)`` with ``Q >= 1``,
        ``counts`` int64 ``(3,)`` (the rollout writes and reads them unchecked).

        Examples:
            >>> QuietSteps.of(4, 2, 3).check(2, 3)
            >>> QuietSteps.of(4, 2, 3).check(1, 3)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: QuietSteps needs int64 arms and float32 seen (Q, 1, 3) ...(4, 2, 3)...
        """
        arms, seen, counts = self.arms, self.seen, self.counts
        arrays = all(isinstance(x, np.ndarray) for x in (arms, seen, counts))
        if (
            not arrays
            or arms.dtype != np.int64 or seen.dtype != np.float32 or counts.dtype != np.int64
            or arms.ndim != 3 or arms.shape[0] < 1 or arms.shape[1:] != (n_envs, n_agents)
            or seen.shape != arms.shape or counts.shape != (3,)
        ):  # fmt: skip
            raise ValueError(
                f"QuietSteps needs int64 arms and float32 seen (Q, {n_envs}, {n_agents}) and "
                f"int64 counts (3,), got {getattr(arms, 'shape', arms)}, "
                f"{getattr(seen, 'shape', seen)} and {getattr(counts, 'shape', counts)}"
            )

    @classmethod
    def of(cls, planned: int, n_envs: int, n_agents: int) -> QuietSteps:
        """Room for ``planned`` steps' arms and observations (this one included), none
        planned."""
        if planned < 1:
            raise ValueError(f"QuietSteps needs room for at least one step, got {planned!r}")
        return cls(
            np.zeros((planned, n_envs, n_agents), dtype=np.int64),
            np.zeros((planned, n_envs, n_agents), dtype=np.float32),
            np.zeros(3, dtype=np.int64),
        )


@njit(cache=True, nogil=True, inline="always")
def close_step(
    t: int,
    arms: IntArray,
    last: IntArray,
    cum_cost: FloatArray,
    traced: Float32Array,
    cum: FloatArray,
    steps: IntArray,
    r: int,
    out: FloatArray,
    cost_out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> int:  # pragma: no cover
    """A round rollout's books after step ``t``: the arms become the last ones, and at
    a recorded step ``steps[r]`` the cumulative cost goes to ``cost_out[:, r]`` beside
    :func:`~fedbandit_env.core.kernels.trace_and_record`'s regret; returns the next ``r``.

    Examples:
        >>> last, cost = np.zeros((1, 1), np.int64), np.zeros((1, 1))
        >>> close_step(2, np.array([[1]]), last, np.array([7.0]),
        ...            np.zeros((1, 1), np.float32), np.zeros((1, 1)), np.array([2]), 0,
        ...            np.zeros((1, 1, 1)), cost, np.zeros((0, 0, 0), np.int64),
        ...            np.zeros((0, 0, 0), np.float32))
        1
        >>> last.tolist(), cost.tolist()
        ([[1]], [[7.0]])
    """
    n_envs, n = arms.shape
    for b in range(n_envs):
        for i in range(n):
            last[b, i] = arms[b, i]
    if r < steps.size and t == steps[r]:  # the network's cost beside the regret
        for b in range(n_envs):
            cost_out[b, r] = cum_cost[b]
    return trace_and_record(t, arms, traced, cum, steps, r, out, t_arms, t_rewards)


@njit(cache=True, nogil=True, inline="always")
def play_quiet(
    quiet: QuietSteps,
    s: int,
    t: int,
    r: int,
    means: FloatArray,
    gaps: FloatArray,
    kinds: IntArray,
    sigma: FloatArray,
    draws: FloatArray,
    raw: FloatArray,
    regret: FloatArray,
    cum: FloatArray,
    observe: Any,
    watch: Any,
    seen: Float32Array,
    traced: Float32Array,
    last: IntArray,
    arms: IntArray,
    cum_cost: FloatArray,
    nothing: float,
    record: tuple[Any, ...],
) -> tuple[int, int, int]:  # pragma: no cover
    """After step ``s`` of the block (``t`` steps played, ``r`` the next record), the
    steps the talking step planned quiet (:class:`QuietSteps`: ``min(planned - 1,
    room)`` of them), played without calling it, each as the round rollouts play a step
    whose protocol is idle: the env's step on the planned
    arms, the observation (into ``quiet.seen``, ``seen[0]`` the step before them), the
    cost of a step without a round (``nothing``: the protocol's ``c1 0 + c2 0``, as its
    route adds it) and the records. The last step's arms become the last arms and its
    observation what the step reads next; ``quiet.counts[1]`` says how many were
    played. Returns ``(s, t, r)`` after them.

    Examples:
        >>> quiet = QuietSteps.of(3, 1, 1)
        >>> quiet.arms[:, 0, 0] = [0, 1, 1]
        >>> quiet.counts[:] = 3, 0, 1  # three planned, room for one after this step
        >>> means, gaps = np.array([[[0.9, 0.1]]]), np.array([[0.0, 0.8]])
        >>> last, arms = np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64)
        >>> cum = np.zeros((1, 1))
        >>> seen, cost = np.zeros((1, 1), np.float32), np.zeros(1)
        >>> record = (np.array([5]), 0, np.zeros((1, 1, 1)), np.zeros((1, 1)),
        ...           np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32))
        >>> play_quiet(quiet, 0, 1, 0, means, gaps, np.array([0]), np.array([1.0]),
        ...            np.full((1, 3, 1), 0.5), np.zeros((1, 1)), np.empty((0, 0)), cum,
        ...            observe_raw, (), seen, seen, last, arms, cost, 0.0, record)
        (1, 2, 0)
        >>> quiet.counts.tolist(), arms.tolist(), cum.tolist(), seen.tolist()
        ([3, 1, 1], [[1]], [[0.8]], [[0.0]])
    """
    steps, _, out, cost_out, t_arms, t_rewards = record
    n_envs, n = arms.shape
    for b in range(n_envs):
        for i in range(n):
            quiet.seen[0, b, i] = seen[b, i]
    ahead = min(quiet.counts[0] - 1, quiet.counts[2])
    p = 0
    while p < ahead:
        p += 1
        s += 1
        planned = quiet.arms[p]
        step_envs(means, gaps, kinds, sigma, planned, draws, s, raw, regret, cum)
        t += 1
        observe(planned, raw, t, *watch, quiet.seen[p], traced)
        for b in range(n_envs):
            cum_cost[b] += nothing
        if r < steps.size and t == steps[r]:  # the network's cost beside the regret
            for b in range(n_envs):
                cost_out[b, r] = cum_cost[b]
        r = trace_and_record(t, planned, traced, cum, steps, r, out, t_arms, t_rewards)
    for b in range(n_envs):
        for i in range(n):
            arms[b, i] = quiet.arms[p, b, i]
            last[b, i] = quiet.arms[p, b, i]
            seen[b, i] = quiet.seen[p, b, i]
    quiet.counts[1] = p
    return s, t, r


@njit(cache=True, nogil=True, inline="always")
def refused(
    sent: FloatArray,
    flat: FloatArray,
    everyone: bool,
    checked: np.ndarray,
    low: float,
    high: float,
    changed: IntArray,
    listed: IntArray,
    whole: bool,
) -> bool:  # pragma: no cover
    """Whether a message of the senders ``checked`` in ``sent`` ``(B, N, D)`` is not
    finite or lies outside ``[low, high]``: the vector env's check, as the round
    rollouts make it before each step (``flat``: ``sent`` as one row, read in one pass
    that vectorizes whole where ``everyone`` is checked). ``messages_within``'s check,
    written out: that helper reads ``.flags``, which needs numba's runtime, so an
    uncounted rollout cannot call it (it compiles only where a counted caller compiled
    it first: a test order would hide that).

    Where the step listed what it wrote in every env (``listed[b] >= 0``, the entries
    ``(i, k)`` in ``changed[b, :, :listed[b]]``, :class:`~fedbandit_env.core.kernels.
    WireChanges`; every other entry is what it was after the step before, checked then)
    and the step is not the first of a block (``whole`` false), only the listed entries
    are checked; a listing outside the messages is refused too (the caller then says why).

    Examples:
        >>> sent = np.array([[[0.5, 2.0], [np.nan, 0.0]]])
        >>> none = np.zeros((1, 2, 0), np.int64), np.full(1, -1)
        >>> refused(sent, sent.reshape(-1), False, np.array([True, False]), -1.0, 3.0, *none,
        ...         False)
        False
        >>> refused(sent, sent.reshape(-1), True, np.array([True, True]), -1.0, 3.0, *none,
        ...         False)
        True
        >>> listing = np.array([[[0], [1]]]), np.array([1])  # only entry (0, 1) moved
        >>> [refused(sent, sent.reshape(-1), True, np.array([True, True]), -1.0, 3.0,
        ...          *listing, whole) for whole in (False, True)]
        [False, True]
    """
    n_envs, n, d = sent.shape
    sparse = not whole
    for b in range(n_envs):
        sparse &= listed[b] >= 0
    bad = False
    if sparse:
        room = changed.shape[2]
        for b in range(n_envs):
            bad |= listed[b] > room
            for c in range(min(listed[b], room)):
                i, k = changed[b, 0, c], changed[b, 1, c]
                if i < 0 or i >= n or k < 0 or k >= d:
                    bad = True
                    continue
                v = sent[b, i, k]
                bad |= checked[i] & ((v - v != 0.0) | (v < low) | (v > high))
        return bad
    if everyone:
        for k in range(flat.size):
            v = flat[k]
            bad |= (v - v != 0.0) | (v < low) | (v > high)
        return bad
    for b in range(n_envs):
        for i in range(n):
            if checked[i]:
                for k in range(d):
                    v = sent[b, i, k]
                    bad |= (v - v != 0.0) | (v < low) | (v > high)
    return bad


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
    low, high, rates, table, uploads, cum_cost, c1, pool, chosen, aggregate, changed,
    listed, quiet)``: the
    senders whose messages are checked, the bounds, each env's participation rate
    ``rates`` ``(B,)`` and protocol generator (row ``b`` of ``table``), the last step's
    uploads ``(B,)`` (0: no round; kept up to date), each env's cumulative cost, the
    server link's cost ``c1``, and work space ``pool`` ``(N,)`` int64, ``chosen``
    ``(N,)`` bool, ``aggregate`` ``(D - 1,)``; ``changed`` and ``listed``: what a step
    that lists its writes listed (:class:`~fedbandit_env.core.kernels.WireChanges`; a
    step that writes whole rows leaves ``listed`` at -1), so only those entries are
    checked (:func:`refused`), and ``sent`` keeps from step to step what the step does not
    write; ``quiet``: the step's :class:`QuietSteps` (one
    with room for one step where it plans none): after a step in which no round was
    played, the steps it planned quiet are played without calling it
    (:func:`play_quiet`), up to the block's last step but one, so the last is always the
    step's own. ``record``: :func:`rollout_talking`'s.

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
        ...         2.0, np.zeros(2, np.int64), np.zeros(2, np.bool_), np.zeros(1),
        ...         np.zeros((1, 2, 0), np.int64), np.full(1, -1), QuietSteps.of(1, 1, 2))
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
    uploads, cum_cost, c1, pool, chosen, aggregate, changed, listed, quiet = wire[8:]
    steps, r, out, cost_out, t_arms, t_rewards = record
    n_envs, n = arms.shape
    d = sent.shape[2]
    everyone = checked.all()
    flat = sent.reshape(-1)  # every sender checked: one flat pass (it vectorizes whole)
    s = first
    while s < draws.shape[1]:
        quiet.counts[2] = max(0, draws.shape[1] - s - 2)  # the block's last step: the step's
        act(last, seen, t, server, server_mask, *state, arms, sent)
        quiet.counts[1] = 0
        if refused(sent, flat, everyone, checked, low, high, changed, listed, s == first):
            quiet.counts[2] = 0
            return r, t  # the caller raises
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
        idle = True  # no round this step: the next ones cost nothing unless one starts
        for b in range(n_envs):
            cum_cost[b] += c1 * float(uploads[b])
            idle &= uploads[b] == 0
        r = close_step(t, arms, last, cum_cost, traced, cum, steps, r, out, cost_out, t_arms,
                       t_rewards)  # fmt: skip
        if idle and quiet.counts[0] > 1 and quiet.counts[2] > 0:  # the step's quiet steps
            s, t, r = play_quiet(quiet, s, t, r, means, gaps, kinds, sigma, draws, raw, regret,
                                 cum, observe, watch, seen, traced, last, arms, cum_cost,
                                 c1 * 0.0, record)  # fmt: skip
        s += 1
    quiet.counts[2] = 0
    return r, t


def rollout_flooding(
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
    """:func:`rollout_rounds` for envs whose messages go by ``Flooding`` (Li & Song's GIS,
    Algorithm 2): ``act(last, seen, t, heard, mask, *state, arms, sent)`` is a talking
    step (``heard`` ``(B, N, D)`` float32 by origin, ``mask`` ``(B, N, N)`` int8: the
    payloads of the rounds completed last step) that writes its messages ``sent`` ``(B,
    N, D)``, entry 0 the send flag. ``wire = (heard, mask, sent, checked, low, high,
    hops, reach, edges, c1, c2, cum_cost, peer, starts, origins, payload, delivered,
    advertise, used, changed, listed, quiet)``: the senders checked and the bounds, the hop
    distances ``hops`` ``(N, N)`` and each origin's eccentricity ``reach`` ``(N,)``, the
    graph's ``edges`` ``(E, 2)``, the link costs, each env's cumulative cost and last
    step's peer links ``peer`` ``(B,)``; the rounds in flight as a ring of ``L`` slots
    (``L`` the largest eccentricity, at least 1; the round uploaded at step ``s`` in
    slot ``s % L``): ``starts`` ``(B, L)`` (its upload step, ``-1``: free), ``origins``
    ``(B, L, N)`` bool (its uploaders) and ``payload`` ``(B, L, N, D)`` (the messages
    of its upload step); ``delivered`` ``(B,)`` int8 (last step delivered something) and work space
    ``advertise`` ``(N,)`` bool, ``used`` ``(E,)`` bool; ``changed``, ``listed`` and
    ``quiet``: :func:`rollout_rounds`' (a step is quiet-free when no round started, was
    in flight or was delivered in it). ``record``: :func:`rollout_talking`'s.

    After each step ``t``, as ``Flooding.route`` routes it (GIS with the hop distances in
    place of the held sets: after ``k`` slots an agent holds origin ``j``'s payload iff
    it lies within ``k`` hops of ``j``): a step whose flags are set starts a round; then,
    oldest first, every round in flight plays one slot: the agents ``k`` hops from one of
    its uploaders (``k`` its slots played before) advertise, and an edge with an
    advertising end is used; a round whose uploaders' eccentricities are all at most
    ``k + 1`` is complete, and every agent hears its uploaders' payloads (float32, a later
    round's over an earlier one's). The step costs ``c1 0 + c2 used`` (the edges used by
    any round). The messages of the senders ``checked`` are checked before the step, as
    :func:`rollout_rounds` checks them. Returns the next ``r`` and the steps played by then.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def flag_on_0(last, seen, t, heard, mask, arms, sent):
        ...     arms[:] = 0
        ...     sent[:] = 0.0
        ...     if t == 0:
        ...         sent[0, 0, 0], sent[0, 0, 1] = 1.0, 0.25
        >>> net = Network.path(3)
        >>> means, gaps = np.full((1, 3, 2), 0.5), np.zeros((1, 2))
        >>> n = np.zeros((1, 3), np.int64)
        >>> heard, mask = np.zeros((1, 3, 2), np.float32), np.zeros((1, 3, 3), np.int8)
        >>> wire = (heard, mask, np.zeros((1, 3, 2)), np.ones(3, np.bool_), -9.0, 9.0,
        ...         net.hop_distances.astype(np.int64), np.array([2, 1, 2]), net.edges,
        ...         0.0, 1.0, np.zeros(1), np.zeros(1, np.int64),
        ...         np.full((1, 2), -1, np.int64), np.zeros((1, 2, 3), np.bool_),
        ...         np.zeros((1, 2, 3, 2)), np.zeros(1, np.int8), np.zeros(3, np.bool_),
        ...         np.zeros(2, np.bool_), np.zeros((1, 2, 0), np.int64), np.full(1, -1),
        ...         QuietSteps.of(1, 1, 3))
        >>> record = (np.array([2]), 0, np.zeros((1, 3, 1)), np.zeros((1, 1)),
        ...           np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32))
        >>> rollout_flooding(flag_on_0, (), means, gaps, np.array([0]), np.array([1.0]),
        ...                  np.full((1, 2, 3), 0.5), 0, 0, n.copy(), n,
        ...                  np.zeros((1, 3), np.float32), np.empty((0, 0)),
        ...                  np.zeros((1, 3)), wire, record, observe_raw, (),
        ...                  np.zeros((1, 3)), np.zeros((1, 3), np.float32))
        (1, 2)
        >>> mask[0, :, 0].tolist(), heard[0, 0].tolist(), record[3].tolist()
        ([0, 1, 1], [1.0, 0.25], [[3.0]])
    """
    heard, mask, sent, checked, low, high, hops, reach, edges = wire[:9]
    c1, c2, cum_cost, peer, starts, origins, payload, delivered, advertise, used = wire[9:19]
    changed, listed, quiet = wire[19:]
    steps, r, out, cost_out, t_arms, t_rewards = record
    n_envs, n = arms.shape
    d = sent.shape[2]
    ring = starts.shape[1]
    everyone = checked.all()
    flat = sent.reshape(-1)
    s = first
    while s < draws.shape[1]:
        quiet.counts[2] = max(0, draws.shape[1] - s - 2)  # the block's last step: the step's
        act(last, seen, t, heard, mask, *state, arms, sent)
        quiet.counts[1] = 0
        if refused(sent, flat, everyone, checked, low, high, changed, listed, s == first):
            quiet.counts[2] = 0
            return r, t  # the caller raises
        step_envs(means, gaps, kinds, sigma, arms, draws, s, raw, regret, cum)
        t += 1
        observe(arms, raw, t, *watch, seen, traced)
        idle = True  # no round started, in flight or delivered this step
        for b in range(n_envs):  # Flooding.route, env by env
            if delivered[b]:  # last step's delivery is over
                delivered[b] = 0
                for i in range(n):
                    for k in range(d):
                        heard[b, i, k] = np.float32(0.0)
                    for j in range(n):
                        mask[b, i, j] = 0
            flagged = False
            for i in range(n):
                flagged |= sent[b, i, 0] > 0.5
            if flagged:  # a round starts: slot t % L is free (a round lasts <= L steps)
                now = t % ring
                starts[b, now] = t
                for i in range(n):
                    origins[b, now, i] = sent[b, i, 0] > 0.5
                    for k in range(d):
                        payload[b, now, i, k] = sent[b, i, k]
            links = 0
            played = False  # a round in flight this step (between rounds, none: no edge
            for u in range(t - ring + 1, t + 1):  # is used, and none is visited)
                at = u % ring  # oldest first
                if u < 1 or starts[b, at] != u:
                    continue
                if not played:
                    played = True
                    for e in range(used.size):
                        used[e] = False
                k_hops = t - u  # the slots this round played before this one
                far = 0
                for i in range(n):
                    advertise[i] = False
                for j in range(n):
                    if origins[b, at, j]:
                        far = max(far, reach[j])
                        for i in range(n):
                            advertise[i] |= hops[i, j] == k_hops
                for e in range(used.size):
                    used[e] |= advertise[edges[e, 0]] | advertise[edges[e, 1]]
                if far <= k_hops + 1:  # every agent holds every payload: delivered
                    starts[b, at] = -1
                    delivered[b] = 1
                    for j in range(n):
                        if origins[b, at, j] and n > 1:
                            for i in range(n):
                                mask[b, i, j] = i != j
                            for k in range(d):
                                heard[b, j, k] = np.float32(payload[b, at, j, k])
            if played:
                for e in range(used.size):
                    links += used[e]
            peer[b] = links
            cum_cost[b] += c1 * 0.0 + c2 * float(links)
            idle &= not played and not delivered[b]
        r = close_step(t, arms, last, cum_cost, traced, cum, steps, r, out, cost_out, t_arms,
                       t_rewards)  # fmt: skip
        if idle and quiet.counts[0] > 1 and quiet.counts[2] > 0:  # the step's quiet steps
            s, t, r = play_quiet(quiet, s, t, r, means, gaps, kinds, sigma, draws, raw, regret,
                                 cum, observe, watch, seen, traced, last, arms, cum_cost,
                                 c1 * 0.0 + c2 * 0.0, record)  # fmt: skip
        s += 1
    quiet.counts[2] = 0
    return r, t


def rollout_hybrid(
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
    """:func:`rollout_rounds` for envs whose messages go by ``Hybrid`` (Li & Song's
    hybrid structure, Algorithms 4-5): the same talking step, reading the server's
    broadcast (``server``, ``server_mask``). ``wire = (server, server_mask, sent,
    checked, low, high, parent, component, sinks, c1, c2, cum_cost, peer, up, live,
    payload, members, at, uploaded, sink_means, sink_counts, broadcast, mark,
    aggregate, changed, listed, quiet)``: the senders checked and the bounds; each agent's next
    hop towards its component's sink ``parent`` ``(N,)`` (-1: a sink), its component
    ``(N,)`` and the sinks ``(Q,)``; the link costs, each env's cumulative cost and last
    step's links ``peer``, ``up`` ``(B,)``; the round in flight (``live`` ``(B,)`` int8), as
    ``Hybrid`` holds it: the payloads ``(B, N, D - 1)``, each component's uploaders
    ``(B, Q, N)``, where each payload is ``(B, N)`` (-1: not sent), the components that
    uploaded ``(B, Q)``, their sinks' means ``(B, Q, D - 1)`` and counts ``(B, Q)``;
    ``broadcast`` ``(B,)`` int8 (the server answered last step), and work space ``mark``
    ``(N,)`` bool, ``aggregate`` ``(D - 1,)``; ``changed``, ``listed`` and ``quiet``:
    :func:`rollout_rounds`' (a step is quiet-free when no round was in flight in it and
    the server did not answer). ``record``: :func:`rollout_talking`'s.

    After each step, as ``Hybrid.route`` routes it: a step whose flags are set starts a
    round; every payload not at its sink moves one hop (SAC: ``c2`` per agent that
    forwards, however many payloads it forwards); a component whose uploaders' payloads
    are all at its sink averages them (in agent order) and uploads (``c1``); when every
    component has uploaded, the server averages the sinks' means weighted by their
    uploaders and every agent hears ``[n uploaders, mean]`` (float32). Before each step
    the messages are checked as :func:`rollout_rounds` checks them, and a flag set while
    a round is in flight stops the rollout there too (``step()`` raises for it after the
    env's step; the caller raises before it). Returns the next ``r`` and the steps
    played by then.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def flag_on_0(last, seen, t, server, server_mask, arms, sent):
        ...     arms[:] = 0
        ...     sent[:] = 0.0
        ...     if t == 0:
        ...         sent[0, 0, 0], sent[0, 0, 1] = 1.0, 0.25
        >>> means, gaps = np.full((1, 3, 2), 0.5), np.zeros((1, 2))
        >>> n = np.zeros((1, 3), np.int64)
        >>> server, smask = np.zeros((1, 3, 2), np.float32), np.zeros((1, 3, 1), np.int8)
        >>> wire = (server, smask, np.zeros((1, 3, 2)), np.ones(3, np.bool_), -9.0, 9.0,
        ...         np.array([1, -1, 1]), np.zeros(3, np.int64), np.array([1]), 5.0, 1.0,
        ...         np.zeros(1), np.zeros(1, np.int64), np.zeros(1, np.int64),
        ...         np.zeros(1, np.int8), np.zeros((1, 3, 1)), np.zeros((1, 1, 3), np.bool_),
        ...         np.zeros((1, 3), np.int64), np.zeros((1, 1), np.bool_),
        ...         np.zeros((1, 1, 1)), np.zeros((1, 1)), np.zeros(1, np.int8),
        ...         np.zeros(3, np.bool_), np.zeros(1), np.zeros((1, 3, 0), np.int64),
        ...         np.full(1, -1), QuietSteps.of(1, 1, 3))
        >>> record = (np.array([1]), 0, np.zeros((1, 3, 1)), np.zeros((1, 1)),
        ...           np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32))
        >>> rollout_hybrid(flag_on_0, (), means, gaps, np.array([0]), np.array([1.0]),
        ...                np.full((1, 2, 3), 0.5), 0, 0, n.copy(), n,
        ...                np.zeros((1, 3), np.float32), np.empty((0, 0)), np.zeros((1, 3)),
        ...                wire, record, observe_raw, (), np.zeros((1, 3)),
        ...                np.zeros((1, 3), np.float32))
        (1, 2)
        >>> record[3].tolist(), server[0, 2].tolist(), smask[0, :, 0].tolist()
        ([[6.0]], [0.0, 0.0], [0, 0, 0])
    """
    server, server_mask, sent, checked, low, high, parent, component, sinks = wire[:9]
    c1, c2, cum_cost, peer, up, live, payload, members, at = wire[9:18]
    uploaded, sink_means, sink_counts, broadcast, mark, aggregate, changed, listed = wire[18:26]
    quiet = wire[26]
    steps, r, out, cost_out, t_arms, t_rewards = record
    n_envs, n = arms.shape
    d = sent.shape[2]
    n_comp = sinks.size
    everyone = checked.all()
    flat = sent.reshape(-1)
    s = first
    while s < draws.shape[1]:
        quiet.counts[2] = max(0, draws.shape[1] - s - 2)  # the block's last step: the step's
        act(last, seen, t, server, server_mask, *state, arms, sent)
        quiet.counts[1] = 0
        busy = False  # a round started while one is in flight: Hybrid.route refuses it
        for b in range(n_envs):
            if live[b]:
                for i in range(n):
                    busy |= sent[b, i, 0] > 0.5
        busy |= refused(sent, flat, everyone, checked, low, high, changed, listed, s == first)
        if busy:  # the caller raises
            quiet.counts[2] = 0
            return r, t
        step_envs(means, gaps, kinds, sigma, arms, draws, s, raw, regret, cum)
        t += 1
        observe(arms, raw, t, *watch, seen, traced)
        idle = True  # no round in flight or broadcast this step
        for b in range(n_envs):  # Hybrid.route, env by env
            if broadcast[b]:  # last step's broadcast is over
                broadcast[b] = 0
                for i in range(n):
                    server_mask[b, i, 0] = 0
                    for k in range(d):
                        server[b, i, k] = np.float32(0.0)
            peer[b], up[b] = 0, 0
            flagged = False
            for i in range(n):
                flagged |= sent[b, i, 0] > 0.5
            if flagged:  # a round starts
                live[b] = 1
                for q in range(n_comp):
                    uploaded[b, q] = True  # a component without uploaders sends nothing
                    sink_counts[b, q] = 0.0
                    for k in range(d - 1):
                        sink_means[b, q, k] = 0.0
                for i in range(n):
                    up_here = sent[b, i, 0] > 0.5
                    at[b, i] = i if up_here else -1
                    for q in range(n_comp):
                        members[b, q, i] = up_here and component[i] == q
                    if up_here:
                        uploaded[b, component[i]] = False
                    for k in range(d - 1):
                        payload[b, i, k] = sent[b, i, 1 + k]
            if not live[b]:
                cum_cost[b] += c1 * 0.0 + c2 * 0.0
                idle &= not broadcast[b]
                continue
            idle = False
            links = 0  # SAC: every payload not at its sink moves a hop; one link per agent
            for i in range(n):  # that forwards
                p = at[b, i]
                if p >= 0 and parent[p] >= 0:
                    if not mark[p]:
                        mark[p] = True
                        links += 1
                    at[b, i] = parent[p]
            for i in range(n):
                mark[i] = False
            sinks_up = 0
            done = True
            for q in range(n_comp):
                if uploaded[b, q]:
                    continue
                there = True
                for i in range(n):
                    there &= not members[b, q, i] or at[b, i] == sinks[q]
                if not there:
                    done = False
                    continue
                count = 0  # mean_rows: the component's payloads summed in agent order
                for i in range(n):
                    if members[b, q, i]:
                        count += 1
                        for k in range(d - 1):
                            sink_means[b, q, k] += payload[b, i, k]
                for k in range(d - 1):
                    sink_means[b, q, k] /= count
                sink_counts[b, q] = count
                uploaded[b, q] = True
                sinks_up += 1
            if done:  # weighted_mean_rows over the sinks, then the server's broadcast
                total = 0.0
                for k in range(d - 1):
                    aggregate[k] = 0.0
                for q in range(n_comp):
                    w = sink_counts[b, q]
                    if w > 0:
                        total += w
                        for k in range(d - 1):
                            aggregate[k] += w * sink_means[b, q, k]
                if total > 0:
                    for k in range(d - 1):
                        aggregate[k] /= total
                everyone_up = 0
                for q in range(n_comp):
                    for i in range(n):
                        everyone_up += members[b, q, i]
                for i in range(n):
                    server[b, i, 0] = np.float32(everyone_up)
                    for k in range(d - 1):
                        server[b, i, 1 + k] = np.float32(aggregate[k])
                    server_mask[b, i, 0] = 1
                broadcast[b] = 1
                live[b] = 0
            peer[b], up[b] = links, sinks_up
            cum_cost[b] += c1 * float(sinks_up) + c2 * float(links)
        r = close_step(t, arms, last, cum_cost, traced, cum, steps, r, out, cost_out, t_arms,
                       t_rewards)  # fmt: skip
        if idle and quiet.counts[0] > 1 and quiet.counts[2] > 0:  # the step's quiet steps
            s, t, r = play_quiet(quiet, s, t, r, means, gaps, kinds, sigma, draws, raw, regret,
                                 cum, observe, watch, seen, traced, last, arms, cum_cost,
                                 c1 * 0.0 + c2 * 0.0, record)  # fmt: skip
        s += 1
    quiet.counts[2] = 0
    return r, t


rollout_rounds_counted = njit(cache=True, nogil=True)(_counted_twin(rollout_rounds))
rollout_rounds = njit(cache=True, nogil=True, **UNCOUNTED)(rollout_rounds)
rollout_flooding_counted = njit(cache=True, nogil=True)(_counted_twin(rollout_flooding))
rollout_flooding = njit(cache=True, nogil=True, **UNCOUNTED)(rollout_flooding)
rollout_hybrid_counted = njit(cache=True, nogil=True)(_counted_twin(rollout_hybrid))
rollout_hybrid = njit(cache=True, nogil=True, **UNCOUNTED)(rollout_hybrid)
_ROLLOUTS: tuple[Any, ...] = (
    rollout_rounds,
    rollout_rounds_counted,
    rollout_flooding,
    rollout_flooding_counted,
    rollout_hybrid,
    rollout_hybrid_counted,
)
for _rollout in _ROLLOUTS:
    _rollout._cache = ArgumentFunctionCache(_rollout.py_func)

__all__ = [
    "QuietSteps",
    "close_step",
    "play_quiet",
    "refused",
    "rollout_flooding",
    "rollout_flooding_counted",
    "rollout_hybrid",
    "rollout_hybrid_counted",
    "rollout_rounds",
    "rollout_rounds_counted",
]
