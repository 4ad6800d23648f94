"""Zhu et al.'s Gossip_UCB and Fed_UCB: indices, forced exploration, the gossip update.

Every function here is called both by :class:`~baselines.gossip.GossipUCB` /
:class:`~baselines.gossip.FedUCB` (one call per agent and step) and by the batched loop
of :mod:`baselines.gossip.fast`, so the two paths agree bit for bit
(``tests/runner/test_replay.py``). Equation numbers are the paper's (``ALGORITHMS.md`` section 1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from baselines.common.kernels import argmax_count, log_time, tie_pick
from fedbandit_env.core.kernels import ARITHMETIC, SPARSE_WIRE, UNCOUNTED, WireChanges
from fedbandit_env.rng_kernels import GeneratorSlot, generator_at, integer_below
from fedbandit_env.type_aliases import BoolArray, Float32Array, FloatArray, IntArray


@njit(cache=True)
def gossip_ucb_index(
    theta: FloatArray,
    counts: FloatArray,
    log_t: float,
    n_agents: int,
    alpha_1: float,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """Lines 9-10 of Algorithm 1 with eq. (11): ``theta + sqrt(2 N log(t) / n + alpha_1)``.

    Examples:
        >>> gossip_ucb_index(np.zeros(2), np.array([1.0, 4.0]), 0.0, 3, 0.25, np.empty(2)).tolist()
        [0.5, 0.5]
    """
    for k in range(counts.size):
        out[k] = gossip_ucb_value(theta[k], counts[k], log_t, n_agents, alpha_1)
    return out


@njit(cache=True)
def gossip_ucb_value(
    theta: float, count: float, log_t: float, n_agents: int, alpha_1: float
) -> float:  # pragma: no cover
    """One arm of :func:`gossip_ucb_index` (the batched path evaluates arms one by one).

    Non-decreasing in ``log_t`` also in floating point (every operation is a correctly
    rounded, monotone function of it), which lets the batched path bound an arm's index
    at a later time and skip arms that cannot win.

    Examples:
        >>> gossip_ucb_value(0.0, 4.0, 0.0, 3, 0.25)
        0.5
    """
    return theta + gossip_ucb_width(count, log_t, n_agents, alpha_1)


@njit(cache=True)
def gossip_ucb_width(
    count: float, log_t: float, n_agents: int, alpha_1: float
) -> float:  # pragma: no cover
    """The confidence width of eq. (11), ``sqrt(2 N log(t) / n + alpha_1)``: the index is
    ``theta + width`` (:func:`gossip_ucb_value` adds exactly this), so the batched path
    can keep an arm's width while only its estimate moves.

    Examples:
        >>> gossip_ucb_width(4.0, 0.0, 3, 0.25)
        0.5
    """
    return np.sqrt(2.0 * n_agents * log_t / count + alpha_1)


@njit(cache=True)
def fed_ucb_index(
    theta: FloatArray,
    counts: FloatArray,
    log_t: float,
    n_agents: int,
    horizon: int,
    epsilon: float,
    alpha_1: float,
    calibrated: bool,
    c_privacy: float,
    sensitivity: float,
    out: FloatArray,
    inside: bool = True,
) -> FloatArray:  # pragma: no cover
    """Line 9 of Algorithm 4 with eq. (12), as printed or calibrated.

    Printed: ``alpha_1 + sqrt(2N (c N log^2(T) log(t) log(n) / (n^2 eps^2) + 1/n) log t)``
    with ``c = c_privacy`` (128 in the paper). Calibrated: the privacy term is the tree
    noise's variance bound ``2 L b^2 / n^2``, ``L = floor(log2 T) + 1``,
    ``b = L * sensitivity / eps``. ``eps = inf`` removes the privacy term. ``inside``
    (the default) puts ``alpha_1`` inside the root, as eq. (11) does, so that ``eps =
    inf`` is eq. (11) to the bit (the paper's "the no-privacy curve is Gossip_UCB");
    ``inside=False`` adds it outside, as eq. (12) is printed, where it changes no argmax
    (:func:`fed_ucb_width`).

    Examples:
        >>> from baselines.common.kernels import log_time

        >>> idx = fed_ucb_index(np.zeros(1), np.array([100.0]), log_time(1000), 3, 1024, 1.0, 0.0,
        ...                     True, 128.0, 1.0, np.empty(1))
        >>> round(float(idx[0]), 3)
        3.383
    """
    levels, b, log_h2 = fed_ucb_constants(horizon, epsilon, sensitivity)
    for k in range(counts.size):
        out[k] = fed_ucb_value(
            theta[k], counts[k], log_t, n_agents, epsilon, alpha_1, calibrated, c_privacy,
            levels, b, log_h2, inside,
        )  # fmt: skip
    return out


@njit(cache=True)
def fed_ucb_constants(
    horizon: int, epsilon: float, sensitivity: float
) -> tuple[int, float, float]:  # pragma: no cover
    """The per-run constants of eq. (12): tree levels ``L``, Laplace scale ``b`` and
    ``log^2 T``.

    Examples:
        >>> fed_ucb_constants(1024, 1.0, 1.0)[:2]
        (11, 11.0)
    """
    levels = 0
    h = horizon
    while h > 0:
        levels += 1
        h >>= 1
    return levels, levels * sensitivity / epsilon, np.log(horizon) ** 2


@njit(cache=True)
def fed_ucb_value(
    theta: float,
    count: float,
    log_t: float,
    n_agents: int,
    epsilon: float,
    alpha_1: float,
    calibrated: bool,
    c_privacy: float,
    levels: int,
    b: float,
    log_h2: float,
    inside: bool = True,
) -> float:  # pragma: no cover
    """One arm of :func:`fed_ucb_index`, with :func:`fed_ucb_constants` precomputed;
    non-decreasing in ``log_t`` (see :func:`gossip_ucb_value`).

    Examples:
        >>> from baselines.common.kernels import log_time

        >>> levels, b, log_h2 = fed_ucb_constants(1024, 1.0, 1.0)
        >>> v = fed_ucb_value(0.0, 100.0, log_time(1000), 3, 1.0, 0.0, True, 128.0,
        ...                   levels, b, log_h2)
        >>> round(v, 3)
        3.383
    """
    width = fed_ucb_width(
        count, log_t, n_agents, epsilon, calibrated, c_privacy, levels, b, log_h2, alpha_1, inside
    )
    return theta + width if inside else theta + alpha_1 + width


@njit(cache=True)
def fed_ucb_width(
    count: float,
    log_t: float,
    n_agents: int,
    epsilon: float,
    calibrated: bool,
    c_privacy: float,
    levels: int,
    b: float,
    log_h2: float,
    alpha_1: float = 0.0,
    inside: bool = True,
) -> float:  # pragma: no cover
    """The square root of eq. (12); non-decreasing in ``log_t``. As printed
    (``inside=False``) the index is ``(theta + alpha_1) + width``; read as eq. (11)
    (``inside``) the root is ``sqrt(2N p log t + 2N log(t) / n + alpha_1)`` with ``p`` the
    privacy term, which is eq. (11)'s ``sqrt(2N log(t) / n + alpha_1)`` to the bit when
    ``p = 0`` (``eps = inf``), and the index is ``theta + width``: what
    :func:`fed_ucb_value` computes.

    Examples:
        >>> from baselines.common.kernels import log_time

        >>> levels, b, log_h2 = fed_ucb_constants(1024, 1.0, 1.0)
        >>> w = fed_ucb_width(100.0, log_time(1000), 3, 1.0, True, 128.0, levels, b, log_h2)
        >>> w == fed_ucb_value(0.0, 100.0, log_time(1000), 3, 1.0, 0.0, True, 128.0,
        ...                    levels, b, log_h2)
        True
        >>> levels, b, log_h2 = fed_ucb_constants(1024, float("inf"), 1.0)  # no privacy
        >>> fed_ucb_width(7.0, log_time(50), 3, float("inf"), True, 128.0, levels, b, log_h2,
        ...               46.1) == gossip_ucb_width(7.0, log_time(50), 3, 46.1)
        True
    """
    n = count
    if calibrated:
        privacy = 2.0 * levels * b * b / (n * n)
    else:
        privacy = c_privacy * n_agents * log_h2 * log_t * np.log(n) / (n * n * epsilon**2)
    if inside:  # eq. (11)'s order of operations, with the privacy term added first
        return np.sqrt(2.0 * n_agents * privacy * log_t + 2.0 * n_agents * log_t / n + alpha_1)
    return np.sqrt(2.0 * n_agents * (privacy + 1.0 / n) * log_t)


@njit(cache=True)
def forced_count(counts: FloatArray, n_tilde: FloatArray, n_agents: int) -> int:  # pragma: no cover
    """Line 6: how many arms violate local consistency, ``n_k < n~_k - N``.

    Examples:
        >>> forced_count(np.array([1.0, 9.0]), np.array([9.0, 9.0]), 3)
        1
    """
    count = 0
    for k in range(counts.size):
        if inconsistent(counts[k], n_tilde[k], n_agents):
            count += 1
    return count


@njit(cache=True)
def inconsistent(count: float, n_tilde: float, n_agents: int) -> bool:  # pragma: no cover
    """Line 6 for one arm: ``n_k < n~_k - N`` (the batched path keeps the count of these
    up to date entry by entry instead of rescanning every arm).

    Examples:
        >>> inconsistent(1.0, 9.0, 3), inconsistent(6.0, 9.0, 3)
        (True, False)
    """
    return count < n_tilde - n_agents


@njit(cache=True)
def forced_pick(
    counts: FloatArray,
    n_tilde: FloatArray,
    n_agents: int,
    count: int,
    rng: np.random.Generator | GeneratorSlot,
) -> int:  # pragma: no cover
    """Line 13: one of the ``count`` inconsistent arms, uniformly: one ``integers`` draw
    ``pick``, then the ``pick``-th inconsistent arm in index order. (The batched path
    writes this loop out on its ``(N, M)`` state; ``tests/runner/test_replay.py`` holds the two
    to the same arms.)

    Examples:
        >>> forced_pick(np.array([1.0, 9.0]), np.array([9.0, 9.0]), 3, 1, np.random.default_rng(0))
        0
    """
    pick = integer_below(rng, count)
    for k in range(counts.size):
        if inconsistent(counts[k], n_tilde[k], n_agents):
            if pick == 0:
                return k
            pick -= 1
    return -1


@njit(cache=True)
def forced_arm(
    counts: FloatArray, n_tilde: FloatArray, n_agents: int, rng: np.random.Generator
) -> int:  # pragma: no cover
    """Lines 6 and 13: an arm drawn uniformly from ``{k : n_k < n~_k - N}``, or -1 (and no
    draw) when the agent is consistent.

    Examples:
        >>> forced_arm(np.array([1.0, 9.0]), np.array([9.0, 9.0]), 3, np.random.default_rng(0))
        0
        >>> forced_arm(np.array([9.0, 9.0]), np.array([9.0, 9.0]), 3, np.random.default_rng(0))
        -1
    """
    count = forced_count(counts, n_tilde, n_agents)
    if count == 0:
        return -1
    return forced_pick(counts, n_tilde, n_agents, count, rng)


@njit(cache=True, inline="always")  # called by an uncounted step: see UNCOUNTED
def update_n_tilde(
    counts: FloatArray, sent: FloatArray | Float32Array, senders: BoolArray, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """Line 5: ``n~(t+1) = max(n(t), max_j n~_j(t))`` over the rows ``j`` of ``sent`` with
    ``senders[j]``, into ``out``.

    Examples:
        >>> sent = np.array([[2.0, 5.0], [1.0, 4.0], [9.0, 9.0]])
        >>> update_n_tilde(np.array([3.0, 1.0]), sent, np.array([True, True, False]),
        ...                np.empty(2)).tolist()
        [3.0, 5.0]
    """
    m = counts.size
    for k in range(m):
        out[k] = counts[k]
    for j in range(senders.size):
        if senders[j]:
            for k in range(m):
                if sent[j, k] > out[k]:
                    out[k] = sent[j, k]
    return out


@njit(cache=True, error_model="numpy")
def gossip_update(
    theta: FloatArray,
    row: int,
    sent: FloatArray | Float32Array,
    partners: IntArray,
    n_partners: int,
    arm: int,
    change: float,
) -> None:  # pragma: no cover
    """Lines 20/22, in place on row ``row`` of ``theta``: average it with the rows
    ``partners[row, :n_partners]`` of ``sent`` (indices, in increasing order; none: no
    averaging), then add the change of the local mean. Rows, not slices: the batched
    path passes its ``(N, M)`` state as it is (a sliced row is a reference-counted view,
    costly per step); one agent passes ``theta.reshape(1, -1)``.

    Only the pulled ``arm``'s mean changes in a step (Algorithm 1 line 15; Algorithm 4
    line 17), by ``change = xbar_arm(t) - xbar_arm(t-1)``; every other arm's change is
    exactly 0, so ``theta_k + (xbar_k(t) - xbar_k(t-1))`` is ``theta_k`` itself. With
    several partners the average is over the agent and all of them, summed in index
    order (both paths add in the same order, so they agree to the last bit). Taking the
    partners as indices makes a step cost ``O(p M)`` for ``p`` partners (usually 0 or 1
    under random-edge gossip), not ``O(N M)``.

    Examples:
        >>> theta = np.array([[0.2, 0.3]])
        >>> gossip_update(theta, 0, np.array([[0.6, 0.5], [9.0, 9.0]]), np.array([[0]]), 1,
        ...               0, 0.1)
        >>> theta.round(6).tolist()
        [[0.5, 0.4]]
    """
    p = n_partners
    if p:
        for k in range(theta.shape[1]):
            total = theta[row, k]
            for c in range(p):
                total += sent[partners[row, c], k]
            theta[row, k] = total / (1 + p)
    theta[row, arm] = theta[row, arm] + change


class UcbParams(NamedTuple):
    """What one arm's index needs besides its mean, count and ``log t`` (the batched
    loop's view of :func:`gossip_ucb_width` and :func:`fed_ucb_width`): Fed_UCB's index
    or not, ``N``, ``epsilon``, ``alpha_1``, the calibrated confidence, ``c_privacy``,
    the tree's levels, ``b`` and ``log^2 T`` (:func:`fed_ucb_constants`), and where eq. (12)
    puts ``alpha_1`` (``inside`` the root, or outside as printed)."""

    fed: bool
    n: int
    epsilon: float
    alpha_1: float
    calibrated: bool
    c_privacy: float
    levels: int
    b: float
    log_h2: float
    inside: bool


@njit(cache=True, nogil=True, inline="always")
def ucb_width(ucb: UcbParams, count: float, log_t: float) -> float:  # pragma: no cover
    """One arm's confidence width: the square root of eq. (11) or eq. (12)."""
    fed = ucb.fed
    n = ucb.n
    epsilon = ucb.epsilon
    alpha_1 = ucb.alpha_1
    calibrated = ucb.calibrated
    c_privacy = ucb.c_privacy
    levels = ucb.levels
    b = ucb.b
    log_h2 = ucb.log_h2
    inside = ucb.inside
    if fed:
        return fed_ucb_width(
            count, log_t, n, epsilon, calibrated, c_privacy, levels, b, log_h2, alpha_1, inside
        )
    return gossip_ucb_width(count, log_t, n, alpha_1)


@njit(cache=True, nogil=True, inline="always")
def ucb_join(ucb: UcbParams, theta: float, width: float) -> float:  # pragma: no cover
    """One arm's index from its estimate and width, in the order of
    :func:`gossip_ucb_value` and
    :func:`fed_ucb_value` (the same bits)."""
    if ucb.fed and not ucb.inside:
        return theta + ucb.alpha_1 + width
    return theta + width


@njit(cache=True, nogil=True, inline="always")
def ucb_value(
    ucb: UcbParams, theta: float, count: float, log_t: float
) -> float:  # pragma: no cover
    """One arm's index of Gossip_UCB (eq. 11) or Fed_UCB (eq. 12)."""
    return ucb_join(ucb, theta, ucb_width(ucb, count, log_t))


@njit(cache=True, nogil=True)
def partner_lists(
    partners: BoolArray, plist: IntArray, pcount: IntArray
) -> None:  # pragma: no cover
    """Row ``i`` of a delivery mask as the increasing indices ``plist[i, :pcount[i]]``.

    Examples:
        >>> plist, pcount = np.zeros((2, 2), np.int64), np.zeros(2, np.int64)
        >>> partner_lists(np.array([[False, True], [True, False]]), plist, pcount)
        >>> plist[0, : pcount[0]].tolist(), pcount.tolist()
        ([1], [1, 1])
    """
    n = partners.shape[0]
    for i in range(n):
        c = 0
        for j in range(n):
            if partners[i, j]:
                plist[i, c] = j
                c += 1
        pcount[i] = c


@njit(cache=True, nogil=True)
def tree_levels_of(horizon: int) -> int:  # pragma: no cover
    """``floor(log2 T) + 1`` inside compiled code (see ``tree_levels``).

    Examples:
        >>> tree_levels_of(8)
        4
    """
    levels = 0
    while horizon > 0:
        levels += 1
        horizon >>= 1
    return levels


class GossipStepParams(NamedTuple):
    """:func:`gossip_step`'s reading of the policy: private rewards (the pulled arm's
    private mean read as its local mean, Algorithm 4 line 17), the index's constants
    (:class:`UcbParams`: eq. 11, or eq. 12 with its horizon's constants), and whether
    the step may keep lines 5-6 entry by entry (``incremental``: the rolled-out step,
    where every graph neighbour's count estimates arrive each step as they were sent)."""

    private: bool
    ucb: UcbParams
    incremental: bool = False


STATE_FIELDS = ("counts", "sums", "xbar", "theta", "n_tilde", "n_tilde_next", "bound", "width")
"""What :func:`gossip_step` keeps of each agent, by index on the third axis of its
``state`` ``(B, N, F, M)``: one array, each agent's rows side by side, where eight
``(B, N, M)`` arrays cost the step about a tenth of its time (measured with
``examples/vector_gate.py``: their pointers and strides did not fit in registers).
Algorithm 1's ``n_i``, the sums of the rewards, ``xbar_i`` (line 15), ``theta_i``
(line 22), ``n~_i(t)`` and ``n~_i(t + 1)`` (line 5), and the lazy argmax's bounds and
widths."""
COUNTS, SUMS, XBAR, THETA, N_TILDE, N_TILDE_NEXT, BOUND, WIDTH = range(len(STATE_FIELDS))


def agent_state(b: int, n: int, m: int) -> FloatArray:
    """A fresh :func:`gossip_step` state for ``b`` envs of ``n`` agents and ``m`` arms:
    zeros, and the count estimates ``n~`` at 1 (Algorithm 1's initialisation).

    Examples:
        >>> state = agent_state(2, 3, 4)
        >>> state.shape, state[0, 0, N_TILDE].tolist(), state[0, 0, COUNTS].tolist()
        ((2, 3, 8, 4), [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0])
    """
    state = np.zeros((b, n, len(STATE_FIELDS), m))
    state[:, :, N_TILDE] = 1.0
    state[:, :, N_TILDE_NEXT] = 1.0
    return state


class CountBooks(NamedTuple):
    """Lines 5 and 6 kept entry by entry, as the trial loop of :mod:`baselines.gossip.fast`
    keeps them, for :func:`gossip_step` with ``incremental``. Env ``b``'s books:
    ``lag[b, i]`` line 6's count of agent ``i``; ``lists[b, 0:2]`` the entries ``(i,
    k)`` of ``n~(t+1)`` changed this step (``flagged[b, i, k]``: listed), ``lists[b,
    2:4]`` last step's (to copy into ``n~(t)``), ``lists[b, 4:6]`` the entries whose
    float32 value on the wire changed last step; ``sizes[b]`` the three lengths and
    whether the books are in step (0: the next step recomputes lines 5-6 whole);
    ``wire[b, i, k]`` the value agent ``i`` last sent (float32, widened).
    ``neighbors``/``degrees``: the graph (:class:`~fedbandit_env.network.Network`'s)."""

    lag: IntArray
    flagged: BoolArray
    lists: IntArray
    sizes: IntArray
    wire: FloatArray
    neighbors: IntArray
    degrees: IntArray


def count_books(b: int, n: int, m: int, neighbors: IntArray, degrees: IntArray) -> CountBooks:
    """Fresh :class:`CountBooks` for ``b`` envs of ``n`` agents and ``m`` arms on the
    graph ``neighbors``/``degrees``: out of step, so the first step recomputes lines
    5-6 whole.

    Examples:
        >>> books = count_books(2, 3, 4, np.zeros((3, 2), np.int64), np.full(3, 2))
        >>> books.lists.shape, books.sizes[:, 3].tolist()
        ((2, 6, 12), [0, 0])
    """
    return CountBooks(
        np.zeros((b, n), dtype=np.int64),
        np.zeros((b, n, m), dtype=np.bool_),
        np.zeros((b, 6, n * m), dtype=np.int64),
        np.zeros((b, 4), dtype=np.int64),
        np.zeros((b, n, m)),
        np.ascontiguousarray(neighbors, dtype=np.int64),
        np.ascontiguousarray(degrees, dtype=np.int64),
    )


@njit(cache=True, nogil=True, **ARITHMETIC, **UNCOUNTED)
def refresh_bounds(own: FloatArray, ucb: UcbParams, l_ref: float) -> None:  # pragma: no cover
    """The lazy argmax's widths and bounds of every arm at the reference log time
    ``l_ref``, in place on one agent's rows ``own`` ``(F, M)`` (:data:`STATE_FIELDS`):
    eq. (11) or eq. (12), :func:`ucb_width` and :func:`ucb_join` arm by arm.

    Out of line from :func:`gossip_step` (its own registers: in the step, every pass
    over the arms reloaded a dozen spilled values; measured with the step at N = 50,
    M = 100, see :func:`lazy_argmax`). Gossip_UCB's width is :func:`gossip_ucb_width`'s
    arithmetic with its first product, ``2 N log t``, taken once (the same operations in
    the same order, so the same bits), and no test before the division (``ARITHMETIC``:
    an arm never pulled has an infinite width, as in the per-agent index), so the pass
    runs four arms at a time.

    Examples:
        >>> own = agent_state(1, 1, 2)[0, 0]
        >>> own[COUNTS], own[THETA] = [1.0, 4.0], [0.5, 0.1]
        >>> refresh_bounds(own, UcbParams(False, 2, np.inf, 1.0, True, 128.0, 0, 0.0, 0.0,
        ...                True), 0.0)
        >>> own[WIDTH].tolist(), own[BOUND].tolist()
        ([1.0, 1.0], [1.5, 1.1])
    """
    m = own.shape[1]
    if ucb.fed:
        for k in range(m):
            own[WIDTH, k] = ucb_width(ucb, own[COUNTS, k], l_ref)
            own[BOUND, k] = ucb_join(ucb, own[THETA, k], own[WIDTH, k])
    else:
        scaled, alpha_1 = 2.0 * ucb.n * l_ref, ucb.alpha_1
        for k in range(m):
            own[WIDTH, k] = np.sqrt(scaled / own[COUNTS, k] + alpha_1)
            own[BOUND, k] = own[THETA, k] + own[WIDTH, k]


@njit(cache=True, nogil=True, **UNCOUNTED)
def lazy_argmax(
    own: FloatArray, ucb: UcbParams, top: int, log_t: float
) -> tuple[int, int]:  # pragma: no cover
    """Lines 9-10 of one agent (its rows ``own`` ``(F, M)``, :data:`STATE_FIELDS`),
    lazily: the arm with the highest index at ``log_t`` and how many share it, the index
    computed exactly only for ``top`` and the arms whose ``bound`` (the index at a later
    log time, so at least the index, operation by operation) is not below an exact index
    already seen. Exact when the maximum is unique; a tied arm is never ruled out, so the
    count is exact, and :func:`gossip_step` recomputes the whole index on a tie.

    Any arm may be ``top`` (the pass rules every other arm in or out against it); the
    step passes the last pull, mostly the winner, which costs nothing where a scan for
    the highest bound is a chain of dependent compares (0.65 -> 0.77x the loop at N = 10).

    Out of line from :func:`gossip_step`: inside the step this pass and the exact
    indices reloaded spilled registers on every arm. Measured as
    ``examples/vector_gate.py`` measures (the vector form over the loop, timed in one
    process, best of 7, half the default horizon), the step's module before and after
    copied under two names and run one process each, alternating: at N = 50, M = 100
    the vector form went from 0.70-1.02x the loop (median 0.74, 8 runs) to 0.73-1.07x
    (median 0.96, 11 runs) with :func:`refresh_bounds` out of line too; at N = 10,
    M = 10 from 0.66-0.92x (median 0.73, 9 runs) to 0.45-0.74x (median 0.67, 9 runs),
    within this machine's noise there.

    Examples:
        >>> own = agent_state(1, 1, 3)[0, 0]
        >>> own[COUNTS], own[THETA] = [1.0, 1.0, 1.0], [0.2, 0.9, 0.4]
        >>> ucb = UcbParams(False, 1, np.inf, 0.0, True, 128.0, 0, 0.0, 0.0, True)
        >>> refresh_bounds(own, ucb, 0.0)
        >>> lazy_argmax(own, ucb, 0, 0.0)
        (1, 1)
    """
    best = ucb_value(ucb, own[THETA, top], own[COUNTS, top], log_t)
    pick, ties = top, 1
    for k in range(own.shape[1]):
        if k != top and own[BOUND, k] >= best:
            v = ucb_value(ucb, own[THETA, k], own[COUNTS, k], log_t)
            if v > best:
                best, pick, ties = v, k, 1
            elif v == best:
                ties += 1
                pick = min(pick, k)
    return pick, ties


@njit(cache=True, nogil=True, **UNCOUNTED)
def gossip_step(
    last: IntArray,
    seen: np.ndarray,
    t: int,
    heard: Float32Array,
    mask: np.ndarray,
    state: FloatArray,
    public: BoolArray,
    params: GossipStepParams,
    table: np.ndarray,
    bound_epoch: IntArray,
    clock: FloatArray,
    index: FloatArray,
    partners: IntArray,
    lag: IntArray,
    flagged: BoolArray,
    lists: IntArray,
    sizes: IntArray,
    wire: FloatArray,
    neighbors: IntArray,
    degrees: IntArray,
    changes: WireChanges,
    arms: IntArray,
    sent: FloatArray,
) -> None:  # pragma: no cover
    """Every agent of ``B`` envs: :class:`~baselines.gossip.GossipUCB`'s (or
    :class:`~baselines.gossip.FedUCB`'s) ``act``, in its order of operations and its
    floating-point order, through the same kernels (:func:`gossip_update`,
    :func:`update_n_tilde`, :func:`forced_count`, :func:`forced_pick`, the index of eq.
    11 or 12 arm by arm, :func:`ucb_value`), so a trial is the per-agent team's to the
    bit.

    ``last`` ``(B, N)`` and ``seen`` ``(B, N)`` float32: the last arms and what their
    rewards read as (``params.private``: the pulled arm's private mean); ``t`` the steps
    played; ``heard`` ``(B, N, D)`` float32 by sender, ``[n~, theta]`` in its first
    ``2M`` (read as float32: the kernels widen each number as the policy's ``astype``
    does); ``mask`` ``(B, N, N)`` whose whole message arrived (the gossip partners, line
    20) and ``public`` ``(B, N, N)`` bool whose count estimates arrived (line 5; the
    env's ``public_mask``, or ``mask`` where it has none). ``state`` ``(B, N, F, M)``
    (:func:`agent_state`): every agent's ``counts``, ``sums``, ``xbar``, ``theta``,
    ``n_tilde``, ``n_tilde_next``, ``bound`` and ``width`` side by side, at the indices
    :data:`STATE_FIELDS` names. ``table``:
    every agent's generator (:func:`~fedbandit_env.rng_kernels.generator_table`, env
    ``b``'s agent ``i`` at row ``b N + i``: forced picks and ties).

    Lines 9-10's argmax is taken lazily, as the trial loop of :mod:`baselines.gossip.fast`
    takes it: ``bound`` holds each arm's index at a reference log time ``clock[1] >=
    log t`` (its ``width`` beside it), valid while the agent's
    ``bound_epoch`` ``(B, N)`` is the epoch ``clock[0]``; an arm whose bound is below an
    exact index already seen (the last pulled arm's first) cannot win or tie, so a step
    evaluates a few arms exactly,
    and a tie recomputes the whole index (exact: the index is non-decreasing in ``log
    t`` to the bit, :func:`gossip_ucb_value`). ``index`` ``(M,)`` and ``partners`` ``(1,
    N)``: work space. The arms go to ``arms`` and the messages ``[n~(t+1), theta]`` to
    ``sent`` ``(B, N, D)`` (the rest of a row left).

    With ``params.incremental`` (the rolled-out step: ``public`` is the graph and every
    count estimate heard is what its sender sent, so each only grows), lines 5-6 are
    kept entry by entry in the books ``lag`` .. ``degrees`` (:class:`CountBooks`' fields,
    passed one by one: an array taken out of a tuple costs reference counts every call),
    as the trial loop keeps them: ``n~(t)`` copies only the entries that changed, each
    entry that changed on the wire raises its sender's neighbours' ``n~(t+1)`` (``max``
    is order-free: the integers :func:`update_n_tilde` computes), line 6's count follows
    every entry that moves, and only after a step that recomputed them whole (the first
    after ``M``, or after a step without ``incremental``, or while some arm is unseen)
    are the books in step. Without it the books are marked out of step. While the books
    are in step, and messages long enough that the fewest entries a step can move (one
    estimate an agent, a gossip pair's rows) are at most ``1 / SPARSE_WIRE`` of them
    (:data:`~fedbandit_env.core.kernels.SPARSE_WIRE`), the messages are kept the same way:
    ``sent`` is taken to hold last step's (the rollout keeps it), only the entries that
    moved are written (the pulled arm's estimate, the whole estimate row after a gossip,
    the count estimates that moved), and ``changes``
    (:class:`~fedbandit_env.core.kernels.WireChanges`) lists them for the rollout's wire;
    any other step writes whole rows and says so (``listed`` -1).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rngs = [np.random.default_rng(0), np.random.default_rng(1)]  # kept alive
        >>> b, n, m = 1, 2, 2
        >>> ucb = UcbParams(False, n, np.inf, 1.0, True, 128.0, 0, 0.0, 0.0, True)
        >>> arms, sent = np.zeros((b, n), np.int64), np.zeros((b, n, 2 * m))
        >>> books = count_books(b, n, m, np.array([[1], [0]]), np.ones(n, np.int64))
        >>> gossip_step(arms.copy(), np.zeros((b, n), np.float32), 0,
        ...             np.zeros((b, n, 2 * m), np.float32), np.zeros((b, n, n), np.int8),
        ...             agent_state(b, n, m), np.zeros((b, n, n), np.bool_),
        ...             GossipStepParams(False, ucb), generator_table(rngs),
        ...             np.full((b, n), -1), np.array([0.0, -1.0]), np.zeros(m),
        ...             np.zeros((1, n), np.int64), *books, WireChanges.of(b, n, 2 * m), arms,
        ...             sent)
        >>> arms.tolist(), sent[0, 0].tolist()
        ([[0, 0]], [1.0, 1.0, 0.0, 0.0])
    """
    n_envs, n = last.shape
    m = state.shape[3]
    ucb = params.ucb
    done = t
    log_t = log_time(done - m + 1)
    if done >= m and log_t > clock[1]:  # every bound expires: a new reference time
        t_now = done - m + 1
        clock[1] = log_time(t_now + max(1, t_now // 512))
        clock[0] += 1.0
    epoch, l_ref = np.int64(clock[0]), clock[1]
    # Only the entries that moved go out when even the fewest a step can move (each
    # agent's estimate, a gossip pair's rows) are few enough for the rollout to take
    # them one by one (SPARSE_WIRE); else whole rows, which its plain passes copy faster.
    listing = (n + 2 * m) * SPARSE_WIRE <= n * sent.shape[2]
    for b in range(n_envs):
        kept = params.incremental and done > m and sizes[b, 3] == 1
        sparse = kept and listing
        n_listed = 0  # the message entries written (sparse: only those that moved)
        if kept:
            for c in range(sizes[b, 1]):  # n~(t) = n~(t+1) of the last step, entry by entry
                j, kk = lists[b, 2, c], lists[b, 3, c]
                was = inconsistent(state[b, j, COUNTS, kk], state[b, j, N_TILDE, kk], n)
                state[b, j, N_TILDE, kk] = state[b, j, N_TILDE_NEXT, kk]
                lag[b, j] += (
                    inconsistent(state[b, j, COUNTS, kk], state[b, j, N_TILDE, kk], n) - was
                )
            n_pend = 0
            for c in range(sizes[b, 2]):  # line 5's neighbour part, pushed
                j, kk = lists[b, 4, c], lists[b, 5, c]
                v = float(heard[b, j, kk])
                for e in range(degrees[j]):
                    i = neighbors[j, e]
                    if v > state[b, i, N_TILDE_NEXT, kk]:
                        state[b, i, N_TILDE_NEXT, kk] = v
                        if not flagged[b, i, kk]:
                            flagged[b, i, kk] = True
                            lists[b, 0, n_pend] = i
                            lists[b, 1, n_pend] = kk
                            n_pend += 1
            sizes[b, 0] = n_pend
        unseen_any = False
        for i in range(n):
            own = state[b, i]  # this agent's rows (F, M): STATE_FIELDS
            p = 0
            if done > 0:  # absorb the last pull (lines 14-15, or 16-17 private)
                arm = last[b, i]
                if kept:
                    was = inconsistent(own[COUNTS, arm], own[N_TILDE, arm], n)
                    own[COUNTS, arm] += 1.0
                    lag[b, i] += inconsistent(own[COUNTS, arm], own[N_TILDE, arm], n) - was
                else:
                    own[COUNTS, arm] += 1.0
                if params.private:
                    new = float(seen[b, i])
                else:
                    own[SUMS, arm] += float(seen[b, i])
                    new = own[SUMS, arm] / own[COUNTS, arm]
                change = new - own[XBAR, arm]
                if done == m:  # line 1: initialisation complete
                    for k in range(m):
                        own[THETA, k] = own[XBAR, k]
                    own[THETA, arm] = new
                elif done > m:  # lines 19-22 with the partners, in increasing order
                    anyone = mask[b, i, 0] != 0
                    for j in range(1, n):  # branch-free first (it vectorizes): mostly none
                        anyone |= mask[b, i, j] != 0
                    if anyone:
                        for j in range(n):
                            if mask[b, i, j]:
                                partners[0, p] = j
                                p += 1
                    if p:  # a call with array arguments costs reference counts: only then
                        gossip_update(own[THETA : THETA + 1], 0, heard[b, :, m : 2 * m], partners,
                                      p, arm, change)  # fmt: skip
                    else:  # gossip_update without partners
                        own[THETA, arm] = own[THETA, arm] + change
                own[XBAR, arm] = new
            if done < m:  # line 1: every arm once, in order
                arms[b, i] = done
            else:
                if kept:  # line 5: n~ and n only grow; the neighbours' part was pushed
                    a = last[b, i]
                    if own[COUNTS, a] > own[N_TILDE_NEXT, a]:
                        own[N_TILDE_NEXT, a] = own[COUNTS, a]
                        if not flagged[b, i, a]:
                            flagged[b, i, a] = True
                            lists[b, 0, sizes[b, 0]] = i
                            lists[b, 1, sizes[b, 0]] = a
                            sizes[b, 0] += 1
                else:
                    for k in range(m):
                        own[N_TILDE, k] = own[N_TILDE_NEXT, k]
                    update_n_tilde(own[COUNTS], heard[b, :, :m], public[b, i], own[N_TILDE_NEXT])
                if bound_epoch[b, i] != epoch or done == m:  # a new reference time
                    refresh_bounds(own, ucb, l_ref)
                    bound_epoch[b, i] = epoch
                else:  # the pulled arm's count moved; with partners, every estimate
                    a = last[b, i]
                    own[WIDTH, a] = ucb_width(ucb, own[COUNTS, a], l_ref)
                    if p:
                        for k in range(m):
                            own[BOUND, k] = ucb_join(ucb, own[THETA, k], own[WIDTH, k])
                    else:
                        own[BOUND, a] = ucb_join(ucb, own[THETA, a], own[WIDTH, a])
                unseen = -1
                if kept:  # every arm was seen when the books came in step
                    lagging = lag[b, i]
                else:
                    lagging = forced_count(own[COUNTS], own[N_TILDE], n)
                    lag[b, i] = lagging
                    for k in range(m):
                        if own[COUNTS, k] == 0.0:
                            unseen = k
                            unseen_any = True
                            break
                if unseen >= 0:  # another chose this agent's pulls: an infinite index
                    arms[b, i] = unseen
                elif lagging:  # line 13: forced_pick written out on the rows (a call
                    # with array arguments costs reference counts): the same draw and arm
                    draw = integer_below(generator_at(table, b * n + i), lagging)
                    for k in range(m):
                        if inconsistent(own[COUNTS, k], own[N_TILDE, k], n):
                            if draw == 0:
                                arms[b, i] = k
                                break
                            draw -= 1
                else:  # lines 9-10, lazily: bounds rule arms out, a tie is recomputed
                    pick, ties = lazy_argmax(own, ucb, last[b, i], log_t)
                    if ties > 1:  # the whole index, as the policy computes it
                        for k in range(m):
                            index[k] = ucb_value(ucb, own[THETA, k], own[COUNTS, k], log_t)
                        pick, ties = argmax_count(index)
                        pick = tie_pick(index, ties, generator_at(table, b * n + i))
                    arms[b, i] = pick
            if sparse:  # theta moved at the pulled arm, or everywhere after a gossip;
                # the count estimates that moved go out below
                a = last[b, i]
                for k in range(0 if p else a, m if p else a + 1):
                    sent[b, i, m + k] = own[THETA, k]
                    changes.changed[b, 0, n_listed] = i
                    changes.changed[b, 1, n_listed] = m + k
                    n_listed += 1
            else:
                for k in range(m):  # the message [n~(t+1), theta]
                    sent[b, i, k] = own[N_TILDE_NEXT, k]
                    sent[b, i, m + k] = own[THETA, k]
        changes.listed[b] = -1  # whole rows, unless sparse (below)
        if not params.incremental or done < m:
            sizes[b, 3] = 0
            continue
        if not kept:  # recomputed whole: every entry listed, every wire value new
            c = 0
            for i in range(n):
                for k in range(m):
                    flagged[b, i, k] = True
                    wire[b, i, k] = np.nan
                    lists[b, 0, c] = i
                    lists[b, 1, c] = k
                    c += 1
            sizes[b, 0] = c
            sizes[b, 3] = 0 if unseen_any else 1
        n_changed = 0  # the listed entries move into n~ next step; those whose float32
        for c in range(sizes[b, 0]):  # value changed go out on the wire
            i, k = lists[b, 0, c], lists[b, 1, c]
            lists[b, 2, c] = i
            lists[b, 3, c] = k
            flagged[b, i, k] = False
            if sparse:
                sent[b, i, k] = state[b, i, N_TILDE_NEXT, k]
                changes.changed[b, 0, n_listed] = i
                changes.changed[b, 1, n_listed] = k
                n_listed += 1
            v = float(np.float32(state[b, i, N_TILDE_NEXT, k]))
            if v != wire[b, i, k]:
                wire[b, i, k] = v
                lists[b, 4, n_changed] = i
                lists[b, 5, n_changed] = k
                n_changed += 1
        sizes[b, 1] = sizes[b, 0]
        sizes[b, 2] = n_changed
        sizes[b, 0] = 0
        if sparse:
            changes.listed[b] = n_listed
