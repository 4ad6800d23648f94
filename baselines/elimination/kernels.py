"""Li & Song's elimination: epoch sizes, confidence radii, private means, elimination.

Called by :class:`~baselines.elimination.EliminationPolicy` (CDP/DDP/HDP-MAB), by its
vector form's step (:func:`elimination_step`, :mod:`baselines.elimination.vector`), which
the fast path rolls out (:mod:`baselines.elimination.fast`): one source of truth for every
path.
Line numbers are Algorithm 1's (``ALGORITHMS.md`` section 2).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from fedbandit_env.core.kernels import UNCOUNTED, WireChanges
from fedbandit_env.core.packed import packs_state
from fedbandit_env.core.rounds import QuietSteps
from fedbandit_env.rng_kernels import generator_at, laplace_at
from fedbandit_env.type_aliases import BoolArray, Float32Array, FloatArray, IntArray


@njit(cache=True)
def elim_delta(r: int, rounds: int, min_gap: float) -> float:  # pragma: no cover
    """Algorithm 1 line 3: ``Delta_r = 2^-r``; with at most ``rounds = R`` rounds (Sec.
    IV-B) ``Delta_r = Delta^(r/R)``, ``Delta`` the smallest gap (assumed known).

    Examples:
        >>> elim_delta(3, 0, 0.0), round(elim_delta(1, 2, 0.01), 6)
        (0.125, 0.1)
    """
    if rounds <= 0:
        return 2.0 ** (-r)
    return min_gap ** (r / rounds)


@njit(cache=True)
def epoch_target(
    r: int,
    n_active: int,
    n_arms: int,
    n_up: int,
    horizon: int,
    epsilon: float,
    delta_r: float,
) -> float:  # pragma: no cover
    """Algorithm 1 line 4 (``S^p`` of Sec. IV-B with ``n_up = ceil(pM)``):
    ``S(r) = max{8 log(8|I| r^2 T) / (n Delta_r^2), 8 r sqrt(2 log(8 K r^2 T)) / (n^1.5 eps
    Delta_r)}``; the second term vanishes without privacy (``epsilon = inf``).

    Examples:
        >>> round(epoch_target(1, 10, 10, 5, 1000, np.inf, 0.5), 3)
        72.255
    """
    first = 8.0 * np.log(8.0 * n_active * r * r * horizon) / (n_up * delta_r * delta_r)
    if not np.isfinite(epsilon):
        return first
    second = (
        8.0
        * r
        * np.sqrt(2.0 * np.log(8.0 * n_arms * r * r * horizon))
        / (n_up**1.5 * epsilon * delta_r)
    )
    return max(first, second)


@njit(cache=True)
def elim_radius(
    r: int,
    n_active: int,
    n_arms: int,
    n_up: int,
    horizon: int,
    epsilon: float,
    s_r: float,
) -> float:  # pragma: no cover
    """Algorithm 1 line 5: ``C(r) = sqrt(log(8|I| r^2 T) / (2 n S(r))) + r sqrt(8 log(8 K
    r^2 T)) / (n^1.5 eps S(r))`` (second term 0 without privacy).

    Examples:
        >>> round(elim_radius(1, 10, 10, 5, 1000, np.inf, 72.255), 4)
        0.125
    """
    c = np.sqrt(np.log(8.0 * n_active * r * r * horizon) / (2.0 * n_up * s_r))
    if np.isfinite(epsilon):
        c += r * np.sqrt(8.0 * np.log(8.0 * n_arms * r * r * horizon)) / (n_up**1.5 * epsilon * s_r)
    return c


@njit(cache=True)
def epoch_total(s_r: float, previous: int) -> int:  # pragma: no cover
    """Pulls per active arm up to the end of epoch ``r``: ``ceil(S(r))``, kept at least one
    above the previous epoch's (our integer reading of ``S(r) - S(r-1)`` pulls).

    Examples:
        >>> epoch_total(28.4, 0), epoch_total(3.0, 29)
        (29, 30)
    """
    return max(int(np.ceil(s_r)), previous + 1)


@njit(cache=True)
def running_private_mean(
    ybar: FloatArray, yhat: FloatArray, active: BoolArray, previous: int, total: int
) -> FloatArray:  # pragma: no cover
    """Eq. (6) in place: ``ybar <- (S(r-1) ybar + (S(r) - S(r-1)) yhat) / S(r)`` on the active
    arms (``yhat`` holds one value per active arm, in arm order).

    Examples:
        >>> running_private_mean(np.array([0.5, 0.0]), np.array([1.0]),
        ...                      np.array([True, False]), 1, 2).tolist()
        [0.75, 0.0]
    """
    j = 0
    for k in range(ybar.size):
        if active[k]:
            ybar[k] = (previous * ybar[k] + (total - previous) * yhat[j]) / total
            j += 1
    return ybar


@njit(cache=True)
def eliminate(values: FloatArray, active: BoolArray, radius: float) -> int:  # pragma: no cover
    """Algorithm 1 lines 13-15 in place: drop every active arm with ``max - value >= 2C``;
    returns how many remain.

    Examples:
        >>> act = np.ones(3, bool)
        >>> eliminate(np.array([0.9, 0.5, 0.8]), act, 0.1), act.tolist()
        (2, [True, False, True])
    """
    best = -np.inf
    for k in range(values.size):
        if active[k] and values[k] > best:
            best = values[k]
    left = 0
    for k in range(values.size):
        if active[k]:
            if best - values[k] >= 2.0 * radius:
                active[k] = False
            else:
                left += 1
    return left


@njit(cache=True)
def argmax_active(values: FloatArray, active: BoolArray) -> int:  # pragma: no cover
    """The first active arm with the largest value.

    Examples:
        >>> argmax_active(np.array([0.9, 0.5, 0.8]), np.array([False, True, True]))
        2
    """
    arg = -1
    best = -np.inf
    for k in range(values.size):
        if active[k] and (arg < 0 or values[k] > best):
            arg, best = k, values[k]
    return arg


@njit(cache=True)
def local_best(sums: FloatArray, counts: FloatArray, active: BoolArray) -> int:  # pragma: no cover
    """Local exploitation (Algorithm 2 line 3): the first active arm with the largest local
    empirical mean (unpulled arms count as mean 0).

    Examples:
        >>> local_best(np.array([1.0, 3.0, 5.0]), np.array([2.0, 4.0, 5.0]),
        ...            np.array([True, True, False]))
        1
    """
    arg = -1
    best = -np.inf
    for k in range(sums.size):
        if active[k]:
            v = sums[k] / counts[k] if counts[k] > 0 else 0.0
            if arg < 0 or v > best:
                arg, best = k, v
    return arg


EXPLORE, UPLOAD, WAIT, COMMIT = 0, 1, 2, 3
"""An agent's phase in its epoch (:class:`~baselines.elimination.EliminationPolicy`):
local exploration, the upload step, waiting for the round (local exploitation), committed
to one arm."""

KIND_SERVER, KIND_FLOODING = 0, 1
"""Where a round's result arrives: from the server (``server``, ``server_mask``: CDP's
server rounds, HDP's hybrid), or as the ``M`` payloads flooded to every agent, which it
averages with its own (DDP's GIS flooding)."""


class EliminationSetup(NamedTuple):
    """:func:`elimination_step`'s constants: where results arrive (``kind``), the
    uploaders ``n_up``, ``epsilon`` (``inf``: no noise), the clip range ``[lo, hi]`` and
    its ``width`` (the noise's sensitivity times the pulls), ``rounds`` (0: unlimited)
    and ``min_gap``, and the horizon."""

    kind: int
    n_up: int
    epsilon: float
    lo: float
    hi: float
    width: float
    rounds: int
    min_gap: float
    horizon: int


@njit(cache=True, nogil=True)
def start_epoch(
    setup: EliminationSetup,
    active: BoolArray,
    order: IntArray,
    epoch_sums: FloatArray,
    books: IntArray,
    radius: FloatArray,
    c: int,
) -> None:  # pragma: no cover
    """``EliminationPolicy._start_epoch`` for agent row ``c`` (``books[c]``: phase,
    commit, ``r``, previous, total, ``pos``, order length, rounds done, last arm,
    explored, ``pos`` modulo the order length): one active arm left commits to it;
    else epoch ``r + 1`` with ``Delta_r``, ``S(r)`` (its integer total) and ``C(r)``
    (lines 3-5), the active arms in arm order, the epoch sums cleared.

    Examples:
        >>> setup = EliminationSetup(0, 2, np.inf, -np.inf, np.inf, 1.0, 0, 0.0, 100)
        >>> active, order = np.array([[True, False, True]]), np.zeros((1, 3), np.int64)
        >>> books, radius = np.zeros((1, 11), np.int64), np.zeros(1)
        >>> start_epoch(setup, active, order, np.zeros((1, 3)), books, radius, 0)
        >>> books[0, :3].tolist(), order[0, :2].tolist(), int(books[0, 6])
        ([0, 0, 1], [0, 2], 2)
    """
    m = active.shape[1]
    n_active = 0
    for k in range(m):
        if active[c, k]:
            order[c, n_active] = k
            n_active += 1
    if n_active == 1:
        books[c, 0] = COMMIT
        books[c, 1] = order[c, 0]
        return
    books[c, 2] += 1
    r = books[c, 2]
    delta = elim_delta(r, setup.rounds, setup.min_gap)
    s_r = epoch_target(r, n_active, m, setup.n_up, setup.horizon, setup.epsilon, delta)
    books[c, 4] = epoch_total(s_r, books[c, 3])
    radius[c] = elim_radius(r, n_active, m, setup.n_up, setup.horizon, setup.epsilon, s_r)
    books[c, 5] = 0
    books[c, 6] = n_active
    books[c, 10] = 0
    for k in range(m):
        epoch_sums[c, k] = 0.0
    books[c, 0] = EXPLORE


@njit(cache=True, nogil=True, inline="always")
def record_reward(
    setup: EliminationSetup,
    seen: float,
    c: int,
    counts: FloatArray,
    sums: FloatArray,
    epoch_sums: FloatArray,
    books: IntArray,
) -> None:  # pragma: no cover
    """Row ``c``'s last pull (``books[c, 8]``, -1: none yet) gets its reward ``seen``
    clipped to ``[lo, hi]``: counted and summed, and summed into the epoch where that pull
    explored (``books[c, 9]``), as ``EliminationPolicy.observe`` records it.

    Examples:
        >>> setup = EliminationSetup(0, 1, np.inf, 0.0, 1.0, 1.0, 0, 0.0, 10)
        >>> books, counts = np.zeros((1, 11), np.int64), np.zeros((1, 2))
        >>> books[0, 8], books[0, 9] = 1, 1
        >>> epoch_sums = np.zeros((1, 2))
        >>> record_reward(setup, 1.5, 0, counts, np.zeros((1, 2)), epoch_sums, books)
        >>> counts.tolist(), epoch_sums.tolist()
        ([[0.0, 1.0]], [[0.0, 1.0]])
    """
    prev = books[c, 8]
    if prev >= 0:
        rw = min(max(float(seen), setup.lo), setup.hi)
        counts[c, prev] += 1.0
        sums[c, prev] += rw
        if books[c, 9]:
            epoch_sums[c, prev] += rw


@njit(cache=True, nogil=True, inline="always")
def explore_arm(order: IntArray, books: IntArray, c: int) -> int:
    """Row ``c``'s next exploring pull (Algorithm 1, line 6: the active arms in turn):
    ``order[pos mod length]`` (kept without a division), its position and pull count
    advanced, the pull marked as exploring, and the phase ``UPLOAD`` once the epoch's
    ``C(r) (S(r) - S(r - 1))`` pulls are done (:func:`start_epoch`'s books).

    Examples:
        >>> books, order = np.zeros((1, 11), np.int64), np.array([[2, 0, 0]])
        >>> books[0, 4], books[0, 6] = 1, 1  # one pull an arm, one arm active
        >>> explore_arm(order, books, 0), int(books[0, 0]) == UPLOAD
        (2, True)
    """
    arm = order[c, books[c, 10]]
    books[c, 10] = 0 if books[c, 10] + 1 == books[c, 6] else books[c, 10] + 1
    books[c, 5] += 1
    books[c, 9] = 1
    if books[c, 5] == books[c, 6] * (books[c, 4] - books[c, 3]):
        books[c, 0] = UPLOAD
    return arm


@njit(cache=True, nogil=True, **UNCOUNTED)
def plan_quiet(
    quiet: QuietSteps, order: IntArray, books: IntArray, arms: IntArray, sent: FloatArray
) -> None:  # pragma: no cover
    """After :func:`elimination_step` chose this step's arms: how many steps from this one
    every agent of every env is sure to play the short way (:func:`record_reward`, then
    :func:`explore_arm` or its committed arm; no flag, no message), and their arms
    (:class:`~fedbandit_env.core.rounds.QuietSteps`). An agent that flagged this step,
    or waits for a round, plans none; one exploring plans its epoch's pulls left (the
    pull that ends the epoch included: the step after it uploads); a committed one,
    any number. At most ``room + 1`` steps (``quiet.counts[2]``, the rollout's) and the
    plan's size.

    Examples:
        >>> from fedbandit_env.core.rounds import QuietSteps
        >>> quiet = QuietSteps.of(8, 1, 2)
        >>> quiet.counts[2] = 5
        >>> order = np.array([[0, 1, 2], [2, 1, 0]])
        >>> books = np.zeros((2, 11), np.int64)
        >>> books[:, 0], books[:, 4], books[:, 6] = EXPLORE, 2, 3  # 6 pulls an epoch
        >>> books[:, 5], books[:, 10] = 2, 2  # two pulled, the third next
        >>> plan_quiet(quiet, order, books, np.array([[1, 1]]), np.zeros((1, 2, 4)))
        >>> quiet.counts.tolist(), quiet.arms[:5, 0, 0].tolist(), quiet.arms[:5, 0, 1].tolist()
        ([5, 0, 5], [1, 2, 0, 1, 2], [1, 0, 2, 1, 0])
    """
    n_envs, n = arms.shape
    q = min(quiet.counts[2] + 1, quiet.arms.shape[0])
    for b in range(n_envs):
        for i in range(n):
            c = b * n + i
            phase = books[c, 0]
            if sent[b, i, 0] != 0.0 or not ((phase == EXPLORE) | (phase == COMMIT)):
                q = 1
            elif phase == EXPLORE:  # the epoch's pulls left, after this step's
                q = min(q, 1 + books[c, 6] * (books[c, 4] - books[c, 3]) - books[c, 5])
    quiet.counts[0] = q
    if q < 2:
        return
    for b in range(n_envs):
        for i in range(n):
            c = b * n + i
            quiet.arms[0, b, i] = arms[b, i]
            if books[c, 0] == COMMIT:
                for j in range(1, q):
                    quiet.arms[j, b, i] = books[c, 1]
                continue
            at, length = books[c, 10], books[c, 6]  # explore_arm's position, then in turn
            for j in range(1, q):
                quiet.arms[j, b, i] = order[c, at]
                at = 0 if at + 1 == length else at + 1


@njit(cache=True, nogil=True, **UNCOUNTED)
def take_in_quiet(
    setup: EliminationSetup,
    quiet: QuietSteps,
    counts: FloatArray,
    sums: FloatArray,
    epoch_sums: FloatArray,
    books: IntArray,
) -> None:  # pragma: no cover
    """The ``p = quiet.counts[1]`` steps a rollout played from :func:`plan_quiet`'s plan,
    taken in as :func:`elimination_step`'s short way would have, step by step: each
    agent records the pulls of steps ``0 .. p - 1`` (``quiet.arms``, the observations
    ``quiet.seen``; clipped, counted and summed in step order, into the epoch where it
    explores, :func:`record_reward`'s arithmetic), and its books move past the ``p``
    pulls after step 0 at once (:func:`explore_arm`'s position, count and the phase
    ``UPLOAD`` where they end the epoch; a committed agent's pulls explore nothing), its
    last pull step ``p``'s, whose observation the step records next as usual.

    Examples:
        >>> from fedbandit_env.core.rounds import QuietSteps
        >>> setup = EliminationSetup(0, 1, np.inf, 0.0, 1.0, 1.0, 0, 0.0, 100)
        >>> quiet = QuietSteps.of(4, 1, 1)
        >>> quiet.arms[:3, 0, 0], quiet.seen[:3, 0, 0] = [0, 1, 0], [0.5, 2.0, 0.25]
        >>> quiet.counts[1] = 2
        >>> books = np.zeros((1, 11), np.int64)
        >>> books[0, 0], books[0, 4], books[0, 6], books[0, 9] = EXPLORE, 2, 2, 1
        >>> books[0, 5], books[0, 10] = 1, 1  # step 0 pulled arm 0, arm 1 next
        >>> sums, counts = np.zeros((1, 2)), np.zeros((1, 2))
        >>> take_in_quiet(setup, quiet, counts, sums, np.zeros((1, 2)), books)
        >>> sums.tolist(), counts.tolist(), books[0, [5, 8, 10]].tolist(), int(quiet.counts[1])
        ([[0.5, 1.0]], [[1.0, 1.0]], [3, 0, 1], 0)
    """
    played = quiet.counts[1]
    n_envs, n = quiet.arms.shape[1], quiet.arms.shape[2]
    lo, hi = setup.lo, setup.hi
    for b in range(n_envs):
        for i in range(n):
            c = b * n + i
            explored = books[c, 0] == EXPLORE
            for j in range(played):
                arm = quiet.arms[j, b, i]
                rw = min(max(float(quiet.seen[j, b, i]), lo), hi)
                counts[c, arm] += 1.0
                sums[c, arm] += rw
                if explored:
                    epoch_sums[c, arm] += rw
            if explored:  # explore_arm, played times
                length = books[c, 6]
                books[c, 5] += played
                books[c, 10] = (books[c, 10] + played) % length
                books[c, 9] = 1
                if books[c, 5] == length * (books[c, 4] - books[c, 3]):
                    books[c, 0] = UPLOAD
            else:
                books[c, 9] = 0
            books[c, 8] = quiet.arms[played, b, i]
    quiet.counts[1] = 0


@njit(cache=True, nogil=True, **UNCOUNTED)
def agent_step(
    b: int,
    i: int,
    c: int,
    n_listed: int,
    listing: bool,
    seen: Float32Array,
    server: Float32Array,
    server_mask: np.ndarray,
    heard: Float32Array,
    mask: np.ndarray,
    dropped: np.ndarray,
    setup: EliminationSetup,
    counts: FloatArray,
    sums: FloatArray,
    epoch_sums: FloatArray,
    ybar: FloatArray,
    kept: FloatArray,
    active: BoolArray,
    order: IntArray,
    books: IntArray,
    radius: FloatArray,
    table: np.ndarray,
    work: FloatArray,
    changes: WireChanges,
    arms: IntArray,
    sent: FloatArray,
) -> int:  # pragma: no cover
    """:func:`elimination_step` for agent ``i`` of env ``b`` (row ``c``) in full: its
    record, its message back to zeros after an upload (listed from ``n_listed`` on where
    ``listing``), a round's result arriving (or dropped) while it waits, and every phase's
    pull; returns the count listed. A function of its own, called only where the step's
    short way does not hold: inline, its size and arguments slowed the short way (one
    read-modify-write cost 12.4 ns an agent inside the whole step, 3.7 ns alone). Out of
    line, the step went 18.1-21.9 -> 14.1-16.6 ns an agent (three runs, each one
    process, best of 15, the same trials), and CDP-MAB's vector form at the small
    ``fedbandit speed`` size 0.59-0.69x -> 0.76-0.90x its loop's speed
    (``examples/vector_gate.py``).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rngs = [np.random.default_rng(0)]  # kept alive: the table holds its address
        >>> setup = EliminationSetup(0, 1, np.inf, -np.inf, np.inf, 1.0, 0, 0.0, 100)
        >>> active, order = np.ones((1, 2), np.bool_), np.zeros((1, 2), np.int64)
        >>> books, radius, sums = np.zeros((1, 11), np.int64), np.zeros(1), np.zeros((1, 2))
        >>> books[0, 8] = -1
        >>> start_epoch(setup, active, order, sums, books, radius, 0)
        >>> arms, sent = np.zeros((1, 1), np.int64), np.ones((1, 1, 3))
        >>> agent_step(0, 0, 0, 0, False, np.zeros((1, 1), np.float32),
        ...            np.zeros((1, 1, 3), np.float32), np.zeros((1, 1, 1), np.int8),
        ...            np.zeros((1, 1, 3), np.float32), np.zeros((1, 1, 1), np.int8),
        ...            np.zeros((1, 1), np.int8), setup, np.zeros((1, 2)), np.zeros((1, 2)),
        ...            sums, np.zeros((1, 2)), np.zeros((1, 2)), active, order, books,
        ...            radius, generator_table(rngs), np.zeros((2, 2)),
        ...            WireChanges.of(1, 1, 3), arms, sent)
        0
        >>> arms.tolist(), sent[0, 0].tolist()
        ([[0]], [0.0, 0.0, 0.0])
    """
    n = arms.shape[1]
    m = counts.shape[1]
    d = sent.shape[2]
    private = np.isfinite(setup.epsilon)
    yhat, aggregate = work[0], work[1]
    record_reward(setup, seen[b, i], c, counts, sums, epoch_sums, books)
    if not listing:
        for k in range(d):
            sent[b, i, k] = 0.0
    elif sent[b, i, 0] != 0.0:  # its upload of the step before: back to zeros
        for k in range(d):
            sent[b, i, k] = 0.0
            changes.changed[b, 0, n_listed] = i
            changes.changed[b, 1, n_listed] = k
            n_listed += 1
    phase = books[c, 0]
    if phase == WAIT:
        arrived = False
        if setup.kind == KIND_SERVER:
            if server_mask[b, i, 0]:  # _arrived: the server's aggregate
                arrived = True
                for k in range(m):
                    aggregate[k] = float(server[b, i, 1 + k])
        else:
            count = 0
            for j in range(n):
                if mask[b, i, j]:
                    count += 1
            if count:  # _arrived: mean_rows over the heard rows and its own
                arrived = True
                count = 0
                for k in range(m):
                    aggregate[k] = 0.0
                for j in range(n):
                    if j == i or mask[b, i, j]:
                        count += 1
                        for k in range(m):
                            aggregate[k] += kept[c, k] if j == i else float(heard[b, j, 1 + k])
                for k in range(m):
                    aggregate[k] /= count
        if arrived:  # _finish_round
            books[c, 7] += 1
            eliminate(aggregate, active[c], radius[c])
            books[c, 3] = books[c, 4]
            if setup.rounds > 0 and books[c, 7] >= setup.rounds:
                books[c, 0] = COMMIT
                books[c, 1] = argmax_active(aggregate, active[c])
            else:
                start_epoch(setup, active, order, epoch_sums, books, radius, c)
        elif dropped[b, i]:  # _skip_round
            books[c, 3] = books[c, 4]
            start_epoch(setup, active, order, epoch_sums, books, radius, c)
    books[c, 9] = 0
    phase = books[c, 0]
    if phase == EXPLORE:
        arm = explore_arm(order, books, c)
    elif phase == UPLOAD:  # _privatise (lines 8-10), then exploit
        previous, total = books[c, 3], books[c, 4]
        pulls = total - previous
        scale = (setup.width / pulls) / (setup.n_up * setup.epsilon) if private else 0.0
        slot = generator_at(table, c)
        j = 0
        for k in range(m):
            if active[c, k]:
                x = epoch_sums[c, k] / pulls
                yhat[j] = x + scale * laplace_at(slot) if private else x
                j += 1
        j = 0  # eq. (6), running_private_mean's arithmetic (that helper returns an
        for k in range(m):  # array: an uncounted caller must not call it)
            if active[c, k]:
                ybar[c, k] = (previous * ybar[c, k] + (total - previous) * yhat[j]) / total
                j += 1
        sent[b, i, 0] = 1.0
        for k in range(m):
            v = float(np.float32(ybar[c, k])) if active[c, k] else 0.0
            sent[b, i, 1 + k] = v
            kept[c, k] = v
        if listing:
            for k in range(d):
                changes.changed[b, 0, n_listed] = i
                changes.changed[b, 1, n_listed] = k
                n_listed += 1
        books[c, 0] = WAIT
        arm = local_best(sums[c], counts[c], active[c])
    elif phase == WAIT:
        arm = local_best(sums[c], counts[c], active[c])
    else:
        arm = books[c, 1]
    books[c, 8] = arm
    arms[b, i] = arm
    return n_listed


@njit(cache=True, nogil=True, **UNCOUNTED)
def elimination_step(
    last: IntArray,
    seen: Float32Array,
    t: int,
    server: Float32Array,
    server_mask: np.ndarray,
    heard: Float32Array,
    mask: np.ndarray,
    dropped: np.ndarray,
    setup: EliminationSetup,
    counts: FloatArray,
    sums: FloatArray,
    epoch_sums: FloatArray,
    ybar: FloatArray,
    kept: FloatArray,
    active: BoolArray,
    order: IntArray,
    books: IntArray,
    radius: FloatArray,
    table: np.ndarray,
    work: FloatArray,
    quiet: QuietSteps,
    primed: IntArray,
    changes: WireChanges,
    arms: IntArray,
    sent: FloatArray,
) -> None:  # pragma: no cover
    """:meth:`EliminationPolicy.act <baselines.elimination.EliminationPolicy.act>` for
    every agent of ``B`` envs (env ``b``'s agent ``i`` at row ``c = b N + i`` of the
    state), in its order of operations and its floating-point order, through the same
    kernels, so a trial is the per-agent team's to the bit. Its first five arguments are
    a talking step's over ``ServerRounds`` (:func:`~fedbandit_env.core.rounds.rollout_rounds`
    rolls it out; ``last`` and ``t`` are not read: each agent keeps its own books).

    ``seen`` ``(B, N)``: the last pull's reward as observed (clipped here to ``[lo,
    hi]``); ``server`` ``(B, N, D)`` float32 and ``server_mask`` ``(B, N, 1)``: the
    server's result (``KIND_SERVER``); ``heard`` ``(B, N, D)`` float32 by sender and
    ``mask`` ``(B, N, N)``: the flooded payloads (``KIND_FLOODING``); ``dropped`` ``(B,
    N)``: a round's result the agent's inbox screen dropped (``server_dropped``). State by row:
    ``counts``, ``sums``, ``epoch_sums``, ``ybar`` and ``kept`` (what it last uploaded,
    float32 values widened) ``(C, M)``, ``active`` and ``order`` ``(C, M)``, ``books``
    ``(C, 11)`` (:func:`start_epoch`'s), ``radius`` ``(C,)``; ``table``: each row's noise
    generator (:func:`~fedbandit_env.rng_kernels.generator_table`); ``work`` ``(2,
    M)``: space. The arms go to ``arms`` ``(B, N)`` and the messages ``[flag, ybar]``
    to ``sent`` ``(B, N, D)``: every entry written where ``primed[0]`` is 0 (``sent`` is
    not what the step wrote last: ``act``'s fresh array, a rollout's first step), and
    ``changes.listed[b]`` -1; else only the rows that move, an upload and the zeros that
    follow it, listed in ``changes`` (:class:`~fedbandit_env.core.kernels.WireChanges`:
    a rollout then checks only those). The step sets ``primed[0]`` to 1.

    Nearly every agent-step explores or plays a committed arm with nothing to clear:
    that short way (:func:`record_reward`, :func:`explore_arm`) runs here, every other
    one through :func:`agent_step`, the agents in order either way, so the listed
    entries keep their order. In a round rollout (``quiet.counts[2]``, the room it gives,
    above 0) the step then plans the steps every agent is sure to take the short way
    (:func:`plan_quiet`, :class:`~fedbandit_env.core.rounds.QuietSteps`), which the
    rollout may play without calling it; its next call first takes in the steps played
    so (:func:`take_in_quiet`), the same numbers as step by step.

    The upload (lines 8-10) draws one ``Lap(width / (n_up eps pulls))`` per active arm
    in arm order from the row's generator, as ``LaplaceMechanism.release`` does
    (``rng.laplace(0, scale, size)``: NumPy's ``0 -/+ scale log(.)`` is ``scale`` times
    :func:`~fedbandit_env.rng_kernels.laplace_at`'s draw to the bit, the sign symmetric).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rngs = [np.random.default_rng(0), np.random.default_rng(1)]  # kept alive
        >>> setup = EliminationSetup(0, 2, np.inf, -np.inf, np.inf, 1.0, 0, 0.0, 100)
        >>> c, m, f32 = 2, 3, np.float32
        >>> active, order = np.ones((c, m), np.bool_), np.zeros((c, m), np.int64)
        >>> books, radius, sums = np.zeros((c, 11), np.int64), np.zeros(c), np.zeros((c, m))
        >>> books[:, 8] = -1  # nothing pulled yet
        >>> for row in range(c):
        ...     start_epoch(setup, active, order, sums, books, radius, row)
        >>> arms, sent = np.zeros((1, c), np.int64), np.zeros((1, c, 1 + m))
        >>> elimination_step(arms.copy(), np.zeros((1, c), f32), 0,
        ...                  np.zeros((1, c, 1 + m), f32), np.zeros((1, c, 1), np.int8),
        ...                  np.zeros((1, c, 1 + m), f32), np.zeros((1, c, c), np.int8),
        ...                  np.zeros((1, c), np.int8), setup, np.zeros((c, m)),
        ...                  np.zeros((c, m)), sums, np.zeros((c, m)), np.zeros((c, m)),
        ...                  active, order, books, radius, generator_table(rngs),
        ...                  np.zeros((2, m)), QuietSteps.of(1, 1, c), np.zeros(1, np.int64),
        ...                  WireChanges.of(1, c, 1 + m), arms, sent)
        >>> arms.tolist(), sent[0, 0].tolist()
        ([[0, 0]], [0.0, 0.0, 0.0, 0.0])
    """
    n_rows = counts.shape[0]
    n = arms.shape[1]
    listing = primed[0] != 0
    if quiet.counts[1] > 0:  # the quiet steps the rollout played since the last call
        take_in_quiet(setup, quiet, counts, sums, epoch_sums, books)
    for b in range(n_rows // n):
        n_listed = 0
        for i in range(n):
            c = b * n + i
            phase = books[c, 0]
            if listing and sent[b, i, 0] == 0.0 and (phase == EXPLORE) | (phase == COMMIT):
                record_reward(setup, seen[b, i], c, counts, sums, epoch_sums, books)
                if phase == EXPLORE:
                    arm = explore_arm(order, books, c)
                else:
                    books[c, 9] = 0
                    arm = books[c, 1]
                books[c, 8] = arm
                arms[b, i] = arm
            else:  # nearly every step of every agent goes the way above
                n_listed = agent_step(b, i, c, n_listed, listing, seen, server, server_mask,
                                      heard, mask, dropped, setup, counts, sums, epoch_sums,
                                      ybar, kept, active, order, books, radius, table, work,
                                      changes, arms, sent)  # fmt: skip
        changes.listed[b] = n_listed if listing else -1
    primed[0] = 1
    quiet.counts[0] = 1
    if quiet.counts[2] > 0:  # a rollout could play steps after this one unasked
        plan_quiet(quiet, order, books, arms, sent)


@njit(cache=True, nogil=True, **UNCOUNTED)
def flooding_step(
    last: IntArray,
    seen: Float32Array,
    t: int,
    heard: Float32Array,
    mask: np.ndarray,
    server: Float32Array,
    server_mask: np.ndarray,
    dropped: np.ndarray,
    setup: EliminationSetup,
    counts: FloatArray,
    sums: FloatArray,
    epoch_sums: FloatArray,
    ybar: FloatArray,
    kept: FloatArray,
    active: BoolArray,
    order: IntArray,
    books: IntArray,
    radius: FloatArray,
    table: np.ndarray,
    work: FloatArray,
    quiet: QuietSteps,
    primed: IntArray,
    changes: WireChanges,
    arms: IntArray,
    sent: FloatArray,
) -> None:  # pragma: no cover
    """:func:`elimination_step` as a talking step over GIS flooding (DDP-MAB): the
    flooded payloads ``heard`` and ``mask`` first, as
    :func:`~fedbandit_env.core.rounds.rollout_flooding` hands them, the server's
    arrays (not read by ``KIND_FLOODING``) in the state.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rngs = [np.random.default_rng(0)]  # kept alive
        >>> setup = EliminationSetup(1, 1, np.inf, -np.inf, np.inf, 1.0, 0, 0.0, 100)
        >>> m, f32 = 2, np.float32
        >>> active, order = np.ones((1, m), np.bool_), np.zeros((1, m), np.int64)
        >>> books, radius, sums = np.zeros((1, 11), np.int64), np.zeros(1), np.zeros((1, m))
        >>> books[:, 8] = -1  # nothing pulled yet
        >>> start_epoch(setup, active, order, sums, books, radius, 0)
        >>> arms, sent = np.zeros((1, 1), np.int64), np.zeros((1, 1, 1 + m))
        >>> flooding_step(arms.copy(), np.zeros((1, 1), f32), 0,
        ...               np.zeros((1, 1, 1 + m), f32), np.zeros((1, 1, 1), np.int8),
        ...               np.zeros((1, 1, 1 + m), f32), np.zeros((1, 1, 1), np.int8),
        ...               np.zeros((1, 1), np.int8), setup, np.zeros((1, m)), np.zeros((1, m)),
        ...               sums, np.zeros((1, m)), np.zeros((1, m)), active, order, books,
        ...               radius, generator_table(rngs), np.zeros((2, m)), QuietSteps.of(1, 1, 1),
        ...               np.zeros(1, np.int64), WireChanges.of(1, 1, 1 + m), arms, sent)
        >>> arms.tolist()
        [[0]]
    """
    elimination_step(last, seen, t, server, server_mask, heard, mask, dropped, setup, counts,
                     sums, epoch_sums, ybar, kept, active, order, books, radius, table, work,
                     quiet, primed, changes, arms, sent)  # fmt: skip


packs_state(flooding_step)  # rollout_flooding takes its state packed (core.packed)
