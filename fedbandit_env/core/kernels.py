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

The same step of ``B`` envs, from noise drawn a block ahead as ``MABCore`` draws it, is
:func:`step_envs`: what ``MABCore.step`` runs on NumPy (the array statement stays for a
torch device, and ``tests/vector/test_core_step_kernel.py`` holds the two equal to the bit), and
what :func:`rollout_block` calls once a step when a vector policy's compiled ``act`` plays
a whole episode without Python in between (``MABCore.rollout``).

Beside them, the checks a NumPy step of the vector env runs on its actions in one pass
each (:func:`arms_within`, :func:`messages_within`).

A loop calls one of them once a step, and the reward of one agent is
:func:`~fedbandit_env.problems.kernels.draw_reward`, inlined: a call with array arguments
costs a loop atomic reference counts (``baselines/common/trial.py``), and a nested one
cost ``cdp_mab``'s loop (one of the cheapest) a fifth of its speed, measured.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from fedbandit_env.core.caching import ArgumentFunctionCache
from fedbandit_env.problems.kernels import draw_reward, draw_sets, reward_of
from fedbandit_env.rng_kernels import generator_at, next_double_at, standard_normal_at
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray

UNCOUNTED: dict[str, Any] = {"_nrt": False}
"""numba options for a kernel that allocates nothing and is called once a step (the
rollouts, a vector policy's compiled step): numba's runtime off, so its array arguments
are not reference-counted at each call's entry and exit, nor a ``*state`` tuple built
for a call (two atomic operations an array a call: with the two dozen arrays of a
policy's state, a step's call cost more than a small batch's work). Such a kernel
cannot allocate; numba refuses one that does when it compiles.

numba compiles the helpers such a kernel calls, and what they call, under its options,
and keeps that compile as each helper's only one for those argument types (in the
process and in its disk cache): a helper that *returns an array*, compiled so, hands
every later caller (Python, a counted loop) an array it never counted, which the caller
then frees under the array's owner (heap corruption: CDP-MAB's trial loop aborted at
exit after its vector step had been compiled first; KL-UCB's per-agent policy did,
through ``kl_ucb_index`` two calls down). Which compile comes first decides, so it
hides in one test order and shows in another. An uncounted kernel reaches such helpers
only ``inline="always"`` (inlined before typing, no compile of their own);
``tests/test_layout.py`` follows every call down from each uncounted kernel and finds
any other."""

ARITHMETIC: dict[str, Any] = {"error_model": "numpy"}
"""numba options for a kernel that divides cell by cell over arrays: a float division by
zero gives an infinity or NaN, as the NumPy statement the kernel replaces gives it
(numba's default, Python's ``ZeroDivisionError``, puts a test before every division,
which keeps the loop scalar; measured: ``team_features`` 810 -> 489 us at B = 1024,
N = 10, M = 5, the same bits). numba compiles a kernel's callees with the options of
the caller that compiles them first, so a callee shared with a kernel compiled without
them divides either way: the same numbers wherever no divisor is zero."""

SPARSE_WIRE = 8
"""A talking rollout checks and copies only the entries a step listed
(:class:`WireChanges`) when they are at most ``1 / SPARSE_WIRE`` of the messages'
entries; more, and every row is checked and copied (the plain passes vectorize, the
listed entries are visited one by one: measured on Gossip_UCB's step, N = 10 and 2M = 20
numbers a message, listing about 40 of 200 entries a step lost to the rows; N = 50 and
200 numbers, a few hundred of 10,000 won)."""


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


@njit(cache=True, nogil=True, inline="always", **UNCOUNTED)
def step_envs(
    means: FloatArray,
    gaps: FloatArray,
    kinds: IntArray,
    sigma: FloatArray,
    arms: IntArray,
    draws: FloatArray,
    s: int,
    rewards: np.ndarray,
    regret: FloatArray,
    cum: FloatArray,
) -> None:  # pragma: no cover
    """Agent ``i`` of env ``b`` pulls ``arms[b, i]``: its reward from the local means
    ``means`` ``(B, N, M)`` and the noise ``draws[b, s, i]`` of the block ``(B, S, N)``
    into ``rewards[b, i]``, the gap ``gaps[b, arm]`` into ``regret[b, i]`` and added to
    ``cum[b, i]``. ``rewards`` may be float32 (the observation's rounding of the float64
    reward) and ``regret`` empty (not kept). Env ``b``'s noise is ``kinds[b]``
    (:data:`~fedbandit_env.problems.kernels.NOISE_CODES`) with scale ``sigma[b]``; a
    reward is :func:`~fedbandit_env.problems.kernels.reward_of` (``rewards_of``'s
    arithmetic), so the step is ``MABCore.step``'s on NumPy to the bit.

    Examples:
        >>> means, gaps = np.array([[[0.9, 0.1]]]), np.array([[0.0, 0.8]])
        >>> draws = np.array([[[0.5], [0.5]]])  # two steps of one agent's uniforms
        >>> rewards, regret, cum = np.empty((1, 1)), np.empty((1, 1)), np.zeros((1, 1))
        >>> step_envs(means, gaps, np.array([0]), np.array([1.0]), np.array([[1]]), draws,
        ...           1, rewards, regret, cum)
        >>> rewards.tolist(), cum.tolist()
        ([[0.0]], [[0.8]])
    """
    n_envs, n = arms.shape
    keep = regret.size > 0
    for b in range(n_envs):
        kind, scale = kinds[b], sigma[b]
        for i in range(n):
            a = arms[b, i]
            rewards[b, i] = reward_of(means[b, i, a], draws[b, s, i], kind, scale)
            gap = gaps[b, a]
            if keep:
                regret[b, i] = gap
            cum[b, i] += gap


@njit(cache=True, nogil=True, **UNCOUNTED)
def observe_raw(
    arms: IntArray, rewards: FloatArray, t: int, seen: Float32Array, traced: Float32Array
) -> None:  # pragma: no cover
    """The rollouts' observation of a bare env: every agent reads its reward as the
    observation holds it, float32 (``seen``, and ``traced``, the reward its trace keeps:
    the same array here). A layer that changes what agents read (``VecPrivateRewards``)
    passes its own hook of the same form, ``observe(arms, rewards, t, *watch, seen,
    traced)``, called after each step ``t`` (1-based) with the env's float64 rewards.

    Examples:
        >>> seen = np.zeros((1, 2), np.float32)
        >>> observe_raw(np.zeros((1, 2), np.int64), np.array([[0.1, 1.0]]), 1, seen, seen)
        >>> seen.tolist() == [[np.float32(0.1), 1.0]]
        True
    """
    n_envs, n = rewards.shape
    for b in range(n_envs):
        for i in range(n):
            seen[b, i] = np.float32(rewards[b, i])
            traced[b, i] = seen[b, i]


class WireChanges(NamedTuple):
    """What a talking compiled step wrote into its messages this step, for
    :func:`rollout_talking`: ``listed[b]`` entries of env ``b``, sender ``i`` and entry
    ``k`` in ``changed[b, :, c]`` (``changed`` ``(B, 2, L)``), or ``listed[b] = -1`` for
    whole rows. A policy whose
    step keeps its messages entry by entry puts one last in its state
    (``MABCore.rollout`` finds it there); the rollout then checks and copies only those
    entries, and keeps ``sent`` from one step (and one rollout) to the next.

    Examples:
        >>> changes = WireChanges.of(2, 3, 4)
        >>> changes.changed.shape, changes.listed.tolist()
        ((2, 2, 12), [-1, -1])
    """

    changed: IntArray
    listed: IntArray

    def check(self, n_envs: int, n_agents: int, message_dim: int) -> None:
        """Raise ``ValueError`` unless the arrays fit ``n_envs`` envs and every listed
        entry is a sender and an entry of ``(n_agents, message_dim)`` messages.

        Examples:
            >>> changes = WireChanges.of(1, 2, 3)
            >>> changes.changed[0, :, 0], changes.listed[0] = (1, 3), 1
            >>> changes.check(1, 2, 3)
            Traceback (most recent call last):
            ...
            ValueError: WireChanges lists entry (1, 3) of env 0, outside 2 x 3 messages
        """
        changed, listed = self.changed, self.listed
        if (
            not isinstance(changed, np.ndarray) or not isinstance(listed, np.ndarray)
            or changed.dtype != np.int64 or listed.dtype != np.int64
            or changed.ndim != 3 or changed.shape[:2] != (n_envs, 2)
            or listed.shape != (n_envs,)
        ):  # fmt: skip
            raise ValueError(
                f"WireChanges needs int64 arrays changed ({n_envs}, 2, L) and listed "
                f"({n_envs},), got {getattr(changed, 'shape', changed)} and "
                f"{getattr(listed, 'shape', listed)}"
            )
        room = changed.shape[2]
        over = np.flatnonzero(listed > room)
        if over.size:
            b = int(over[0])
            raise ValueError(
                f"WireChanges lists {int(listed[b])} entries of env {b}, room for {room}"
            )
        live = np.arange(room) < listed[:, None]  # (B, L): the entries listed
        i, k = changed[:, 0], changed[:, 1]
        wrong = live & ((i < 0) | (i >= n_agents) | (k < 0) | (k >= message_dim))
        if wrong.any():
            b, c = (int(x) for x in np.argwhere(wrong)[0])
            raise ValueError(
                f"WireChanges lists entry ({int(i[b, c])}, {int(k[b, c])}) of env {b}, outside "
                f"{n_agents} x {message_dim} messages"
            )

    @classmethod
    def of(cls, n_envs: int, n_agents: int, message_dim: int) -> WireChanges:
        """Room for every entry of ``n_envs`` envs' messages, none listed (-1)."""
        return cls(
            np.zeros((n_envs, 2, n_agents * message_dim), dtype=np.int64),
            np.full(n_envs, -1, dtype=np.int64),
        )


@njit(cache=True, nogil=True, inline="always")
def trace_and_record(
    t: int,
    arms: IntArray,
    traced: Float32Array,
    cum: FloatArray,
    steps: IntArray,
    r: int,
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> int:  # pragma: no cover
    """A rollout's books after step ``t`` (every rollout's, inlined: no call): the arms
    and the rewards as the agents read them (``traced``) into the trace where ``t_arms``
    is not empty, and at a recorded step ``steps[r]`` the cumulative regret into ``out[:,
    :, r]``; returns the next ``r``.

    Examples:
        >>> out = np.zeros((1, 1, 1))
        >>> trace_and_record(2, np.array([[1]]), np.array([[0.5]], np.float32),
        ...                  np.array([[0.25]]), np.array([2]), 0, out,
        ...                  np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32))
        1
        >>> out.tolist()
        [[[0.25]]]
    """
    n_envs, n = arms.shape
    if t_arms.shape[0] > 0:
        for b in range(n_envs):
            for i in range(n):
                t_arms[b, t - 1, i] = arms[b, i]
                t_rewards[b, t - 1, i] = traced[b, i]
    if r < steps.size and t == steps[r]:
        for b in range(n_envs):
            for i in range(n):
                out[b, i, r] = cum[b, i]
        r += 1
    return r


def rollout_block(
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
    steps: IntArray,
    r: int,
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
    observe: Any,
    watch: Any,
    raw: FloatArray,
    traced: Float32Array,
) -> int:  # pragma: no cover
    """Steps ``t + 1, t + 2, ..`` of ``B`` envs without messages, one a row of the noise
    block ``draws[:, first:]``: ``act(last, seen, t, *state, arms)`` (a vector policy's
    compiled step: from the last arms and what it read of their rewards, float32, the
    steps played and its own arrays, it writes the next arms into ``arms``), then
    :func:`step_envs` with the rewards into ``raw`` (float64) and ``regret`` (empty: not
    kept), then ``observe(arms, raw, t, *watch, seen, traced)`` (:func:`observe_raw`, or a
    layer's hook: what the agents read into ``seen``, the observation's reward into
    ``traced``), then the last arms. At a recorded step ``steps[r]`` the cumulative
    regret goes to ``out[:, :, r]``; with ``t_arms`` ``(B, T, N)`` non-empty every
    step's arms and (``traced``) rewards are traced. Returns the next ``r``.

    ``act`` is a compiled function passed as an argument, so this loop is compiled once
    per policy kernel (and cached on disk), with no Python between steps.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def first_arm(arms, seen, t, arms_out):
        ...     arms_out[:] = 0
        >>> means, gaps = np.array([[[0.9, 0.1]]]), np.array([[0.0, 0.8]])
        >>> out, trace = np.zeros((1, 1, 1)), np.zeros((0, 0, 0), np.int64)
        >>> arms, seen = np.zeros((1, 1), np.int64), np.zeros((1, 1), np.float32)
        >>> rollout_block(first_arm, (), means, gaps, np.array([0]), np.array([1.0]),
        ...               np.full((1, 3, 1), 0.5), 0, 0, arms.copy(), arms, seen, np.empty((0, 0)),
        ...               np.zeros((1, 1)), np.array([3]), 0, out, trace,
        ...               np.zeros((0, 0, 0), np.float32), observe_raw, (), np.zeros((1, 1)),
        ...               seen)
        1
        >>> seen.tolist(), out.tolist()
        ([[1.0]], [[[0.0]]])
    """
    n_envs, n = arms.shape
    for s in range(first, draws.shape[1]):
        act(last, seen, t, *state, arms)
        step_envs(means, gaps, kinds, sigma, arms, draws, s, raw, regret, cum)
        t += 1
        observe(arms, raw, t, *watch, seen, traced)
        for b in range(n_envs):
            for i in range(n):
                last[b, i] = arms[b, i]
        r = trace_and_record(t, arms, traced, cum, steps, r, out, t_arms, t_rewards)
    return r


def rollout_talking(
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
    """:func:`rollout_block` for envs whose messages go by ``Broadcast``,
    ``RandomEdgeGossip`` or ``NeighbourGossip``: ``act(last, seen, t, heard, mask, *state,
    arms, sent)`` also reads what it heard last step (``heard`` ``(B, N, D)`` float32, by
    sender; ``mask`` ``(B, N, N)`` int8) and writes its messages ``sent`` ``(B, N, D)``.
    ``wire = (heard, mask, sent, adjacency, heard_by, checked, low, high, cost, cum_cost,
    edges, picks, neighbors, degrees, calls, link_cost, public, keeps, step_cost, uptos,
    changed, listed)`` (``keeps`` ``(B, N)`` bool, ``step_cost`` ``(B,)`` and ``uptos``
    ``(B, N)`` int64: work space, as this kernel allocates nothing, :data:`UNCOUNTED`;
    ``changed`` ``(B, 2, L)`` and ``listed`` ``(B,)`` int64: the step's
    :class:`WireChanges`, or ``listed`` all -1). Broadcast (``picks`` and
    ``calls`` empty): each sender's row as float32 where some agent hears it
    (``heard_by`` ``(N,)``), else zeros, and every receiver's mask the graph
    (``adjacency``: the router's broadcast). Random-edge gossip: env ``b``'s edge at the
    block's step ``s`` is ``edges[picks[b, s - first]]`` (the router's draws, in its
    stream's order), both ends hear each other and only their rows are kept (the
    router's ``edge_delivery``; with a public prefix, ``public > 0`` entries, every heard
    sender's first ``public`` entries too, every receiver's ``public_mask`` the graph,
    which the caller leaves in ``last_routed``). Neighbour calls: agent ``i`` of env ``b`` calls
    ``neighbors[i, int(calls[b, s - first, i] * degrees[i])]`` (the router's uniforms),
    both ends of a call hear each other, a sender's row is kept where someone heard it,
    and the step costs ``link_cost`` per distinct pair more. Each env's ``cum_cost``
    gains the step's ``cost``. ``record = (steps, r, out, cost_out, t_arms,
    t_rewards)``: :func:`rollout_block`'s, and the cumulative cost at the recorded
    steps. ``observe``, ``watch``, ``raw`` and ``traced``: :func:`rollout_block`'s.

    Before a step, the messages of the senders ``checked`` ``(N,)`` are checked as the
    vector env checks them (finite, within ``[low, high]``: :func:`messages_within`'s
    test); a bad one stops the rollout before that step. Returns the next ``r`` and the
    steps played by then.

    A step that lists what it writes (``listed[b] >= 0``: ``changed[b, :, c]`` for ``c
    < listed[b]`` are the entries ``(i, k)`` of ``sent[b]`` it wrote, and every other entry
    holds what it held after the step before, :class:`WireChanges`) has only those
    entries checked and put on the wire, and the rows whose heard part grew or shrank
    (a partner came or went) copied or cleared there; the first step of each block
    checks and copies every row. Every number a sender sends was checked in the step
    that wrote it, so the same steps are refused and the same numbers heard as with
    ``listed[b] = -1``, which checks and copies every row every step.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def say_arm(last, seen, t, heard, mask, arms, sent):
        ...     arms[:] = 0
        ...     sent[:] = t
        >>> means, gaps = np.array([[[0.9, 0.1], [0.9, 0.1]]]), np.array([[0.0, 0.8]])
        >>> n = np.zeros((1, 2), np.int64)
        >>> heard, mask = np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 2), np.int8)
        >>> adjacency = np.array([[0, 1], [1, 0]], np.int8)
        >>> wire = (heard, mask, np.zeros((1, 2, 1)), adjacency, np.ones(2, np.bool_),
        ...         np.ones(2, np.bool_), -10.0, 10.0, 1.0, np.zeros(1),
        ...         np.zeros((1, 2), np.int64), np.zeros((1, 0), np.int64),
        ...         np.zeros((2, 1), np.int64), np.ones(2, np.int64), np.zeros((1, 0, 2)), 0.0, 0,
        ...         np.zeros((1, 2), np.bool_), np.zeros(1), np.zeros((1, 2), np.int64),
        ...         np.zeros((1, 2, 0), np.int64), np.full(1, -1))
        >>> none = np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32)
        >>> record = (np.array([3]), 0, np.zeros((1, 2, 1)), np.zeros((1, 1)), *none)
        >>> rollout_talking(say_arm, (), means, gaps, np.array([0]), np.array([1.0]),
        ...                 np.full((1, 3, 2), 0.5), 0, 0, n.copy(), n, np.zeros((1, 2),
        ...                 np.float32), np.empty((0, 0)), np.zeros((1, 2)), wire, record,
        ...                 observe_raw, (), np.zeros((1, 2)), np.zeros((1, 2), np.float32))
        (1, 3)
        >>> heard[0, :, 0].tolist(), mask[0].tolist(), record[3].tolist()
        ([2.0, 2.0], [[0, 1], [1, 0]], [[3.0]])
    """
    heard, mask, sent, adjacency, heard_by, senders, low, high, cost, cum_cost = wire[:10]
    edges, picks, neighbors, degrees, calls, link_cost, public, keeps, step_cost = wire[10:19]
    uptos, changed, listed = wire[19:]
    steps, r, out, cost_out, t_arms, t_rewards = record
    n_envs, n = arms.shape
    d = sent.shape[2]
    gossip = picks.shape[1] > 0
    calling = calls.shape[1] > 0
    for b in range(n_envs):  # (element by element: a slice copy would allocate)
        step_cost[b] = cost
        for i in range(n):
            keeps[b, i] = heard_by[i]  # whose row some agent hears this step
    for s in range(first, draws.shape[1]):
        act(last, seen, t, heard, mask, *state, arms, sent)
        at = s - first
        if gossip:  # the step's edge: last step's ends forgotten, this one's both ways
            for b in range(n_envs):
                if s == first:
                    for i in range(n):
                        keeps[b, i] = False
                        for j in range(n):
                            mask[b, i, j] = 0
                else:
                    u, v = edges[picks[b, at - 1], 0], edges[picks[b, at - 1], 1]
                    mask[b, u, v] = mask[b, v, u] = 0
                    keeps[b, u] = keeps[b, v] = False
                u, v = edges[picks[b, at], 0], edges[picks[b, at], 1]
                mask[b, u, v] = mask[b, v, u] = 1
                keeps[b, u] = keeps[b, v] = True
        elif calling:  # every agent's call, both ends hearing; a link per distinct pair
            for b in range(n_envs):
                for i in range(n):
                    for j in range(n):
                        mask[b, i, j] = 0
                pairs = 0
                for i in range(n):
                    j = neighbors[i, np.int64(calls[b, at, i] * degrees[i])]
                    if mask[b, i, j] == 0:
                        pairs += 1
                    mask[b, i, j] = mask[b, j, i] = 1
                for i in range(n):  # symmetric: a sender is heard where its row is set
                    called = False
                    for j in range(n):
                        called |= mask[b, i, j] != 0
                    keeps[b, i] = called
                step_cost[b] = cost + link_cost * float(pairs)
        bad = False  # messages_within's check, in the pass that puts them on the wire
        for b in range(n_envs):
            if 0 <= listed[b] <= n * d // SPARSE_WIRE and s > first:  # only the entries
                for i in range(n):  # written, and the rows whose heard part moved
                    upto = d if keeps[b, i] else (public if heard_by[i] else 0)
                    for k in range(uptos[b, i], upto):
                        heard[b, i, k] = np.float32(sent[b, i, k])
                    for k in range(upto, uptos[b, i]):
                        heard[b, i, k] = np.float32(0.0)
                    uptos[b, i] = upto
                wrong = listed[b] > changed.shape[2]  # a listing the step got wrong: refused
                for c in range(min(listed[b], changed.shape[2])):
                    i, k = changed[b, 0, c], changed[b, 1, c]
                    if i < 0 or i >= n or k < 0 or k >= d:
                        wrong = True
                        continue
                    v = sent[b, i, k]
                    bad |= senders[i] & ((v - v != 0.0) | (v < low) | (v > high))
                    if k < uptos[b, i]:
                        heard[b, i, k] = np.float32(v)
                bad |= wrong
                continue
            for i in range(n):
                # the whole row where a partner heard it, else its public prefix where
                # some neighbour did (random-edge gossip with public_dim), else nothing
                upto = d if keeps[b, i] else (public if heard_by[i] else 0)
                uptos[b, i] = upto
                if senders[i]:  # three plain passes: each one vectorizes
                    for k in range(d):
                        v = sent[b, i, k]
                        bad |= (v - v != 0.0) | (v < low) | (v > high)
                for k in range(upto):
                    heard[b, i, k] = np.float32(sent[b, i, k])
                for k in range(upto, d):
                    heard[b, i, k] = np.float32(0.0)
        if bad:  # the wire is left half-written: the caller raises
            return r, t
        step_envs(means, gaps, kinds, sigma, arms, draws, s, raw, regret, cum)
        t += 1
        observe(arms, raw, t, *watch, seen, traced)
        for b in range(n_envs):
            cum_cost[b] += step_cost[b]
            for i in range(n):
                last[b, i] = arms[b, i]
        if t == 1 and not gossip and not calling:  # the graph from the first delivery on
            for b in range(n_envs):
                for i in range(n):
                    for j in range(n):
                        mask[b, i, j] = adjacency[i, j]
        if r < steps.size and t == steps[r]:  # the network's cost beside the regret
            for b in range(n_envs):
                cost_out[b, r] = cum_cost[b]
        r = trace_and_record(t, arms, traced, cum, steps, r, out, t_arms, t_rewards)
    return r, t


def _counted_twin(kernel: Any) -> Any:
    """``kernel``'s Python function under another name (``<name>_counted``), so numba
    compiles and caches it apart from the uncounted one."""
    twin = types.FunctionType(kernel.__code__, kernel.__globals__, kernel.__name__ + "_counted",
                              kernel.__defaults__, kernel.__closure__)  # fmt: skip
    twin.__qualname__ = kernel.__qualname__ + "_counted"
    twin.__doc__ = f""":func:`{kernel.__name__}` compiled with numba's runtime on: the loop
    :meth:`MABCore.rollout <fedbandit_env.core.mab.MABCore.rollout>` takes when the step,
    its hook or its state needs the runtime (:func:`runs_uncounted`).

    Examples:
        >>> {kernel.__name__}_counted.py_func.__name__
        '{kernel.__name__}_counted'
        >>> "_nrt" in {kernel.__name__}_counted.targetoptions
        False
    """
    return twin


rollout_block_counted = njit(cache=True, nogil=True)(_counted_twin(rollout_block))
rollout_talking_counted = njit(cache=True, nogil=True)(_counted_twin(rollout_talking))
rollout_block = njit(cache=True, nogil=True, **UNCOUNTED)(rollout_block)
rollout_talking = njit(cache=True, nogil=True, **UNCOUNTED)(rollout_talking)

_ROLLOUTS: tuple[Any, ...] = (
    rollout_block,
    rollout_talking,
    rollout_block_counted,
    rollout_talking_counted,
)
for _rollout in _ROLLOUTS:
    _rollout._cache = ArgumentFunctionCache(_rollout.py_func)


def runs_uncounted(kernels: Any, values: Any) -> bool:
    """Whether a rollout may run :data:`UNCOUNTED`: every compiled function it calls
    (``kernels``: the policy's step, the observation hook) is itself compiled so (numba
    compiles a function's callees with its own options, so a step that allocates could
    not be called from an uncounted loop), and its arguments (``values``) hold nothing
    numba reference-counts besides arrays (a typed ``List``, a ``Generator``).
    :meth:`MABCore.rollout <fedbandit_env.core.mab.MABCore.rollout>` takes
    ``rollout_block`` and ``rollout_talking`` then, and ``rollout_block_counted`` and
    ``rollout_talking_counted`` (the same loops, numba's runtime on) otherwise.

    Examples:
        >>> from numba import typed
        >>> runs_uncounted((step_envs, observe_raw), (np.zeros(3), 1.0, (True, np.ones(2))))
        True
        >>> runs_uncounted((step_envs,), (typed.List([1]),))
        False
        >>> runs_uncounted((arms_within,), ())  # compiled with numba's runtime on
        False
    """
    if not all(getattr(k, "targetoptions", {}).get("_nrt", True) is False for k in kernels):
        return False

    def plain(value: Any) -> bool:
        if isinstance(value, tuple):
            return all(plain(v) for v in value)
        return isinstance(value, (np.ndarray, np.generic, int, float, bool, str))

    return plain(values)


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


@njit(cache=True, nogil=True)
def step_linear_envs(
    local_means: FloatArray,
    global_means: FloatArray,
    noise: IntArray,
    sigma: FloatArray,
    rewards_table: np.ndarray,
    arms: IntArray,
    sets: IntArray,
    rewards: FloatArray,
    regret: FloatArray,
    sets_table: np.ndarray,
    draw_codes: IntArray,
    top_rows: IntArray,
    draw_next: bool,
) -> None:  # pragma: no cover
    """:func:`pull_sets` for ``B`` envs at once, then (``draw_next``) every env's next
    decision sets, as ``LinearProblem.draw_sets`` draws them
    (:func:`~fedbandit_env.problems.kernels.draw_sets`): env ``b``'s agent ``i`` chose
    pool row ``sets[b, i, arms[b, i]]``; its reward from ``local_means`` ``(B, N, P)``
    and generator ``b`` of ``rewards_table`` (a uniform for Bernoulli noise, a standard
    normal else: the numbers ``Generator.random()`` / ``standard_normal()`` give), its
    regret ``max_k g[sets[b, i, k]] - g[row]`` (``g = global_means[b]``); the sets from
    generator ``b`` of ``sets_table`` (``draw_codes[b]``: ``LinearProblem.draw_code``).
    The same numbers, in the same order per stream, as ``B`` calls of
    :func:`pull_sets` and ``draw_sets``.

    ``top_rows[b]`` (``LinearProblem.top_rows``) above 0 says env ``b``'s rows below it
    have the largest global means: a set holding exactly one of them has that one as
    its best, the lowest row of the set. One integer pass over the set (its least row
    and how many lie below ``top_rows[b]``, in SIMD) then stands for the ``K`` gathered
    means; a set that does not hold exactly one is maxed over as before. The same bits
    either way (a max returns one of its values).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> gens = [np.random.default_rng(0)], [np.random.default_rng(1)]
        >>> sets = np.array([[[0, 1]]])
        >>> rewards, regret = np.empty((1, 1)), np.empty((1, 1))
        >>> step_linear_envs(np.array([[[1.0, 0.0]]]), np.array([[0.5, 0.25]]),
        ...                  np.array([0]), np.array([1.0]), generator_table(gens[0]),
        ...                  np.array([[1]]), sets, rewards, regret,
        ...                  generator_table(gens[1]), np.array([0]), np.array([0]), False)
        >>> rewards.tolist(), regret.tolist()
        ([[0.0]], [[0.25]])
    """
    n_envs, n, k = sets.shape
    n_pool = local_means.shape[2]
    for b in range(n_envs):
        slot = generator_at(rewards_table, b)
        kind, scale = noise[b], sigma[b]
        for i in range(n):
            row = sets[b, i, arms[b, i]]
            z = next_double_at(slot) if kind == 0 else standard_normal_at(slot)
            rewards[b, i] = reward_of(local_means[b, i, row], z, kind, scale)
        top = top_rows[b]
        for i in range(n):
            low, below = n_pool, 0
            if top > 0:
                for j in range(k):
                    row = sets[b, i, j]
                    low = min(low, row)
                    below += row < top
            if below == 1:  # the set's one top row: its best (top_rows)
                best = global_means[b, low]
            else:
                best = -np.inf
                for j in range(k):
                    best = max(best, global_means[b, sets[b, i, j]])
            regret[b, i] = 0.0 + (best - global_means[b, sets[b, i, arms[b, i]]])
        if draw_next:
            draw_sets(draw_codes[b], n_pool, generator_at(sets_table, b), sets[b])


@njit(cache=True, nogil=True)
def gather_contexts(features: Float32Array, sets: IntArray, out: Float32Array) -> Float32Array:
    """``out[b, i, k] = features[b, sets[b, i, k]]``: every env's decision sets as vectors
    ``(B, N, K, d)`` from the pools ``(B, P, d)`` (NumPy's fancy index of the same took
    1.7-3x as long at ``B = 256, N = 10, K = 100, d = 10``, on 2 shared cores).

    Examples:
        >>> features = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
        >>> gather_contexts(features, np.array([[[2, 0]]]), np.empty((1, 1, 2, 2), np.float32))
        array([[[[4., 5.],
                 [0., 1.]]]], dtype=float32)
    """
    n_envs, n, k = sets.shape
    d = features.shape[2]
    for b in range(n_envs):
        for i in range(n):
            for j in range(k):
                row = sets[b, i, j]
                for c in range(d):
                    out[b, i, j, c] = features[b, row, c]
    return out


class LinearEnvArrays(NamedTuple):
    """What the linear rollouts step the envs with: the instances stacked
    (``local_means`` ``(B, N, P)``, ``global_means`` ``(B, P)``, read-only views where
    every env shares one), each env's noise kind and ``sigma``, the generator tables of
    its rewards and its decision sets, its sets' draw code
    (:func:`step_linear_envs`'s arguments), and the float32 pools ``(U, P, d)`` with
    each env's pool ``pool_of`` ``(B,)`` that a policy's step reads the vectors from
    (:meth:`LinearCore.rollout_arrays <fedbandit_env.core.linear.LinearCore.rollout_arrays>`)."""

    local_means: FloatArray
    global_means: FloatArray
    noise: IntArray
    sigma: FloatArray
    rewards_table: np.ndarray
    sets_table: np.ndarray
    draw_codes: IntArray
    top_rows: IntArray
    pools: Float32Array
    pool_of: IntArray


@njit(cache=True, nogil=True)
def _step_linear(
    env: LinearEnvArrays,
    arms: IntArray,
    sets: IntArray,
    raw: FloatArray,
    regret: FloatArray,
    draw_next: bool,
) -> None:  # pragma: no cover
    """:func:`step_linear_envs` on a :class:`LinearEnvArrays`."""
    step_linear_envs(env.local_means, env.global_means, env.noise, env.sigma,
                     env.rewards_table, arms, sets, raw, regret, env.sets_table,
                     env.draw_codes, env.top_rows, draw_next)  # fmt: skip


@njit(cache=True, nogil=True)
def _linear_played(
    t: int,
    arms: IntArray,
    raw: FloatArray,
    regret: FloatArray,
    cum: FloatArray,
    seen: Float32Array,
    last: IntArray,
    steps: IntArray,
    r: int,
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> int:  # pragma: no cover
    """The linear rollouts' books after step ``t``: ``cum += regret``, what the agents read
    (``seen``: float32 of ``raw``), the last arms, the trace (``t_arms`` non-empty) and,
    at a recorded step ``steps[r]``, the cumulative regret into ``out[:, :, r]``; returns
    the next ``r``."""
    n_envs, n = arms.shape
    for b in range(n_envs):
        for i in range(n):
            cum[b, i] += regret[b, i]
            seen[b, i] = np.float32(raw[b, i])
            last[b, i] = arms[b, i]
    return trace_and_record(t, arms, seen, cum, steps, r, out, t_arms, t_rewards)


def rollout_linear(
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
    steps: IntArray,
    r: int,
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> tuple[int, int]:  # pragma: no cover
    """Steps ``t + 1 .. until`` of ``B`` linear envs without messages (of episodes of
    ``horizon`` steps): ``act(last, seen, t, pools, pool_of, sets, *state, arms)`` (a
    linear vector policy's compiled step: env ``b``'s agent ``i`` chooses among the
    vectors ``pools[pool_of[b]][sets[b, i]]``, float32, from the last arms and what it
    read of their rewards, float32; an arm outside ``[0, K)`` stops the rollout before
    that step, and the caller raises the env's error), then :func:`step_linear_envs`
    (the rewards into ``raw``, the step's regret into ``regret``, and the next sets into
    ``sets`` except after the last step), then ``cum += regret``, what the agents read (``seen``:
    float32 of ``raw``, as the observation holds it) and the last arms. At a recorded
    step ``steps[r]`` the cumulative regret goes to ``out[:, :, r]``; with ``t_arms``
    ``(B, T, N)`` non-empty every step's arms and rewards are traced. Returns ``(r, t)``:
    the next record and the steps played (below ``until`` only where an arm was
    refused); the episode :meth:`LinearCore.step
    <fedbandit_env.core.linear.LinearCore.step>` plays for the same arms, to the bit.

    Examples:
        >>> from numba import njit
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> @njit
        ... def first(last, seen, t, pools, pool_of, sets, arms):
        ...     arms[:] = 0
        >>> gens = [np.random.default_rng(0)], [np.random.default_rng(1)]
        >>> tables = generator_table(gens[0]), generator_table(gens[1])
        >>> sets, out = np.array([[[1, 0]]]), np.zeros((1, 1, 1))
        >>> arms, seen = np.zeros((1, 1), np.int64), np.zeros((1, 1), np.float32)
        >>> trace = np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32)
        >>> env = LinearEnvArrays(np.array([[[1.0, 0.0]]]), np.array([[0.5, 0.25]]),
        ...                       np.array([0]), np.array([1.0]), tables[0], tables[1],
        ...                       np.array([-1]), np.array([0]),
        ...                       np.zeros((1, 2, 1), np.float32), np.zeros(1, np.int64))
        >>> rollout_linear(first, (), env, sets, 0, 1, 1, arms.copy(), arms, seen,
        ...                np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)), np.array([1]),
        ...                0, out, *trace)
        (1, 1)
        >>> seen.tolist(), out.tolist()  # pool row 1: reward 0, regret 0.5 - 0.25
        ([[0.0]], [[[0.25]]])
    """
    set_size = sets.shape[2]
    while t < until:
        act(last, seen, t, env.pools, env.pool_of, sets, *state, arms)
        if not arms_within(arms, set_size):
            return r, t
        _step_linear(env, arms, sets, raw, regret, t + 1 < horizon)
        t += 1
        r = _linear_played(t, arms, raw, regret, cum, seen, last, steps, r, out, t_arms,
                           t_rewards)  # fmt: skip
    return r, t


rollout_linear = njit(cache=True, nogil=True)(rollout_linear)
_linear_rollout: Any = rollout_linear  # the step is an argument too: the same disk cache
_linear_rollout._cache = ArgumentFunctionCache(rollout_linear.py_func)


def rollout_linear_sync(
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
    server: Float32Array,
    synced: np.ndarray,
    bounds: FloatArray,
    c1: float,
    c2: float,
    cum_cost: FloatArray,
    total: FloatArray,
    steps: IntArray,
    r: int,
    out: FloatArray,
    cost_out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> tuple[int, int]:  # pragma: no cover
    """:func:`rollout_linear` for envs whose messages go by
    :class:`~fedbandit_env.protocols.Synchronize`: ``act(last, seen, t, pools, pool_of,
    sets, server, synced, *state, arms, sent)`` also reads what the server sent after the
    last step (``server`` ``(B, D)`` float32: ``[N, sum]``, where ``synced[b]``) and
    writes every agent's message into ``sent`` ``(B, N, D)``; a message entry that is not
    finite or outside ``bounds`` (the env's ``(low, high)``), or an arm outside ``[0,
    K)``, stops the rollout before that step (the caller raises the env's error). After
    the env's step, in env ``b`` where some agent's flag (entry 0) is above 0.5, the
    payloads (entries ``1:``) are summed in agent order (float64) and the server sends
    ``[N, sum]`` as float32 back
    (:meth:`Synchronize.route <fedbandit_env.protocols.Synchronize.route>`), a round
    costing ``c1`` per agent (``c1 N + c2 0``, as the core prices ``N`` server links);
    elsewhere ``synced[b] = 0``. ``total`` ``(D - 1,)`` is work space. The cumulative
    cost goes to ``cost_out[:, r]`` at the recorded steps. Returns ``(r, t)``: the next
    record and the steps played (below ``until`` only where a message was refused).

    Examples:
        >>> from numba import njit
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> @njit
        ... def ask(last, seen, t, pools, pool_of, sets, server, synced, arms, sent):
        ...     arms[:] = 0
        ...     sent[0, :, 0] = 1.0  # every agent asks for a round
        ...     sent[0, :, 1] = 0.25
        >>> gens = [np.random.default_rng(0)], [np.random.default_rng(1)]
        >>> tables = generator_table(gens[0]), generator_table(gens[1])
        >>> sets, out = np.array([[[1, 0], [0, 1]]]), np.zeros((1, 2, 1))
        >>> arms, seen = np.zeros((1, 2), np.int64), np.zeros((1, 2), np.float32)
        >>> server, synced = np.zeros((1, 2), np.float32), np.zeros(1, np.int8)
        >>> cost, trace = np.zeros((1, 1)), (np.zeros((0, 0, 0), np.int64),
        ...                                  np.zeros((0, 0, 0), np.float32))
        >>> env = LinearEnvArrays(np.array([[[1.0, 0.0], [1.0, 0.0]]]),
        ...                       np.array([[0.5, 0.25]]), np.array([0]), np.array([1.0]),
        ...                       tables[0], tables[1], np.array([-1]), np.array([0]),
        ...                       np.zeros((1, 2, 1), np.float32), np.zeros(1, np.int64))
        >>> rollout_linear_sync(ask, (), env, sets, 0, 1, 1, arms.copy(), arms, seen,
        ...     np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2, 2)),
        ...     server, synced, np.array([-1.0, 1.0]), 25.0, 1.0, np.zeros(1), np.zeros(1),
        ...     np.array([1]), 0, out, cost, *trace)
        (1, 1)
        >>> server.tolist(), synced.tolist(), cost.tolist()
        ([[2.0, 0.5]], [1], [[50.0]])
    """
    n_envs, n = arms.shape
    d = sent.shape[2]
    lo, hi = bounds[0], bounds[1]
    while t < until:
        act(last, seen, t, env.pools, env.pool_of, sets, server, synced, *state, arms, sent)
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
        for b in range(n_envs):
            flagged = False
            for i in range(n):
                flagged |= sent[b, i, 0] > 0.5
            synced[b] = 1 if flagged else 0
            if flagged:  # Synchronize.route: every payload, summed in agent order
                total[:] = 0.0
                for i in range(n):
                    for k in range(d - 1):
                        total[k] += sent[b, i, 1 + k]
                server[b, 0] = np.float32(n)
                for k in range(d - 1):
                    server[b, 1 + k] = np.float32(total[k])
                cum_cost[b] += c1 * n + c2 * 0
        if r < steps.size and t == steps[r]:
            for b in range(n_envs):
                cost_out[b, r] = cum_cost[b]
        r = _linear_played(t, arms, raw, regret, cum, seen, last, steps, r, out, t_arms,
                           t_rewards)  # fmt: skip
    return r, t


rollout_linear_sync = njit(cache=True, nogil=True)(rollout_linear_sync)
_sync_rollout: Any = rollout_linear_sync  # the step is an argument too: the same disk cache
_sync_rollout._cache = ArgumentFunctionCache(rollout_linear_sync.py_func)


__all__ = [
    "LinearEnvArrays",
    "WireChanges",
    "arms_within",
    "gather_contexts",
    "messages_within",
    "observe_raw",
    "pull_arms",
    "pull_sets",
    "rollout_block",
    "rollout_linear",
    "rollout_linear_sync",
    "rollout_talking",
    "step_envs",
    "step_linear_envs",
    "trace_and_record",
]
