"""Thompson sampling's mathematics, written once for the policies and the batched loop.

:func:`team_sample` draws, for every arm, the average over the agents an agent holds
statistics of of one posterior draw of each such agent's *local* mean: the global mean
of an arm is the average of the local means (the papers' heterogeneous model), and the
average of independent posterior draws is a draw of that average's posterior. An agent
holding only its own row is plain Thompson sampling. :func:`merge_relayed` and
:func:`merge_held` are the two ways a receiver keeps what it hears (see
:mod:`baselines.thompson.policies`).

Posteriors (``family``):

- :data:`BETA`: Beta(1 + s, 1 + n - s) on the reward rescaled to [0, 1] with ``s`` the
  rescaled sum clipped to ``[0, n]`` (Agrawal and Goyal 2012's Beta-Bernoulli sampler
  on [0, 1] rewards, which it keeps without the Bernoulli trial: the sum is used as a
  fractional success count); the draw is mapped back to ``[lo, lo + width]``.
- :data:`GAUSSIAN`: ``N(S / n, scale^2 / n + extra / n^2)`` under a flat prior,
  ``extra`` the variance of noise added to the sum (the private form's tree noise; 0
  otherwise); the average runs over the held rows that have pulled the arm, and an arm
  no held row has pulled is pulled (index ``+inf``, the first such arm). The average of
  Gaussian draws is itself Gaussian, so one standard normal per arm is drawn: the same
  distribution as one draw per row, at a cost that does not grow with them.

  Reading decided by measurement: Agrawal and Goyal's ``N(S / (n + 1), scale^2 / (n +
  1))`` (prior ``N(0, scale^2)``) shrinks every row with few pulls towards 0, and an
  average over many rows is then confidently low for any arm most agents have left: on
  DDUCB's instance (ring of 100, 17 arms, means 1.0 and 0.8, sigma = 1, T = 1e4, 10
  trials) the relaying form scored 609.6 +- 959.4 per agent, ``[6.9, 1999.8]``, half its
  trials stuck on a 0.8 arm; under the flat prior it is the figure in
  ``docs/references.md``.
- :data:`MOMENT`: the average of the held rows' Beta posteriors (as :data:`BETA`)
  replaced by the Gaussian of the same mean and variance: row ``j``'s Beta(1 + s, 1 + n -
  s) has mean ``mu_j = (1 + s) / (2 + n)`` and variance ``mu_j (1 - mu_j) / (3 + n)``;
  their average over the ``H`` held rows has mean ``avg mu_j`` and variance ``sum var_j /
  H^2``, and one standard normal per arm draws it (mapped back to ``[lo, lo + width]``).
  The average of ``H`` independent Betas is close to Gaussian for large ``H`` (its law is
  a convolution), and one normal per arm replaces ``H`` Beta draws, each a pair of Gamma
  draws: the cost no longer grows with the rows held times a Beta draw.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from fedbandit_env.core.kernels import SPARSE_WIRE, UNCOUNTED, WireChanges
from fedbandit_env.rng_kernels import beta_of, bit_generator_at, standard_normal_of
from fedbandit_env.type_aliases import FloatArray, IntArray

BETA = 0
"""Posterior code: Beta posteriors of rewards in a known range."""
GAUSSIAN = 1
"""Posterior code: Gaussian posteriors (unbounded or private rewards)."""
MOMENT = 2
"""Posterior code: the Gaussian of the averaged Beta posteriors' mean and variance."""


class Posterior(NamedTuple):
    """What a posterior draw needs: the family code, the reward range's low end and
    width (:data:`BETA`; with private sums the clip range's), the noise scale and the
    extra variance of the sums (:data:`GAUSSIAN`), and how far a :data:`GAUSSIAN`
    row's private sums may leave the clip range's ``[lo n, (lo + width) n]``
    (:func:`~fedbandit_env.privacy.mechanisms.tree_sum_slack`; negative: sums unchecked,
    as for unbounded rewards).

    Examples:
        >>> Posterior(BETA, 0.0, 1.0, 1.0, 0.0).family, Posterior(BETA, 0.0, 1.0, 1.0, 0.0).slack
        (0, -1.0)
    """

    family: int
    lo: float
    width: float
    scale: float
    extra: float
    slack: float = -1.0


@njit(cache=True, inline="always")
def moment_cell(n: float, raw_sum: float, lo: float, width: float) -> tuple[float, float]:
    """One held row's Beta posterior of one arm, as its mean and variance (the moment
    sampler's terms): ``Beta(1 + s, 1 + n - s)`` with ``s`` the sum rescaled to ``[0, 1]``
    rewards.

    Examples:
        >>> moment_cell(2.0, 1.0, 0.0, 1.0)
        (0.5, 0.05)
    """
    s = min(max((raw_sum - lo * n) / width, 0.0), n)
    mu = (1.0 + s) / (2.0 + n)
    return mu, mu * (1.0 - mu) / (3.0 + n)


@njit(cache=True, inline="always")  # called by an uncounted step: see UNCOUNTED
def moment_sample(
    mus: FloatArray,
    variances: FloatArray,
    rows: IntArray,
    n_rows: int,
    post: Posterior,
    rng: Any,
    out: FloatArray,
    work: FloatArray,
) -> FloatArray:  # pragma: no cover
    """:func:`team_sample`'s moment sampler on each row's terms kept beside the table
    (``mus``/``variances``: :func:`moment_cell` of every held row and arm, refreshed where
    a row changes): the same sums in the same order, so the same numbers, without
    recomputing every row's terms every step.

    Examples:
        >>> post = Posterior(MOMENT, 0.0, 1.0, 1.0, 0.0)
        >>> counts, sums = np.array([[2.0, 1.0], [4.0, 0.0]]), np.array([[1.0, 1.0], [3.0, 0.0]])
        >>> mus, var = np.zeros((2, 2)), np.zeros((2, 2))
        >>> for j in range(2):
        ...     for k in range(2):
        ...         mus[j, k], var[j, k] = moment_cell(counts[j, k], sums[j, k], 0.0, 1.0)
        >>> rows = np.array([0, 1])
        >>> a = moment_sample(mus, var, rows, 2, post, np.random.default_rng(3), np.empty(2),
        ...                   np.empty(6))
        >>> b = team_sample(counts, sums, rows, 2, post, np.random.default_rng(3), np.empty(2),
        ...                 np.empty(6))
        >>> a.tolist() == b.tolist()
        True
    """
    lo = post.lo
    width = post.width
    m = out.size
    inv = 1.0 / n_rows
    locs, spread = work[:m], work[m : 2 * m]
    locs[:] = 0.0
    spread[:] = 0.0
    for c in range(n_rows):
        j = rows[c]
        row_mu, row_var = mus[j], variances[j]
        for k in range(m):
            locs[k] += row_mu[k]
            spread[k] += row_var[k]
    for k in range(m):
        z = standard_normal_of(rng)
        out[k] = lo + width * (inv * locs[k] + inv * math.sqrt(spread[k]) * z)
    return out


@njit(cache=True, inline="always")  # called by an uncounted step: see UNCOUNTED
def team_sample(
    counts: FloatArray,
    sums: FloatArray,
    rows: IntArray,
    n_rows: int,
    post: Posterior,
    rng: Any,
    out: FloatArray,
    work: FloatArray,
) -> FloatArray:  # pragma: no cover
    """``out[k]``: the average over ``rows[:n_rows]`` of one posterior draw of each row's
    mean of arm ``k`` (``counts``/``sums`` are ``(agents, M)``). Draws are taken arm by
    arm, rows in the order given (increasing: the policy's and the loop's order), from
    ``rng``: a Generator, or a row of a generator table as numba's bit generator
    (:func:`~fedbandit_env.rng_kernels.bit_generator_at`), the same numbers either way.
    ``work``: ``3 M`` numbers of work space (nothing is allocated, so a step compiled
    without numba's runtime may call it).

    Examples:
        >>> post = Posterior(GAUSSIAN, 0.0, 1.0, 0.0, 0.0)  # scale 0: the posterior mean
        >>> team_sample(np.array([[3.0, 0.0], [1.0, 0.0]]), np.array([[3.0, 0.0], [0.0, 0.0]]),
        ...             np.array([0, 1]), 2, post, np.random.default_rng(0), np.empty(2),
        ...             np.empty(6)).tolist()
        [0.5, inf]
    """
    family = post.family
    lo = post.lo
    width = post.width
    scale = post.scale
    extra = post.extra
    m = out.size
    inv = 1.0 / n_rows
    if family in (GAUSSIAN, MOMENT):
        # rows outer, arms inner (each row read along its arms); every arm's sum still
        # runs over the rows in order, so the numbers are those of arm-by-arm sums
        locs, variances, known = work[:m], work[m : 2 * m], work[2 * m : 3 * m]
        locs[:] = 0.0
        variances[:] = 0.0
        known[:] = 0.0  # a count of rows, as a float (exact)
        for c in range(n_rows):
            j = rows[c]
            row_n, row_s = counts[j], sums[j]
            if family == GAUSSIAN:
                for k in range(m):
                    n = row_n[k]
                    if n > 0.0:
                        locs[k] += row_s[k] / n
                        variances[k] += scale * scale / n + extra / (n * n)
                        known[k] += 1.0
            else:
                for k in range(m):
                    mu, var = moment_cell(row_n[k], row_s[k], lo, width)
                    locs[k] += mu
                    variances[k] += var
        for k in range(m):  # draws arm by arm, as before
            if family == MOMENT:
                z = standard_normal_of(rng)
                out[k] = lo + width * (inv * locs[k] + inv * math.sqrt(variances[k]) * z)
            elif known[k] == 0:  # nobody held has pulled it: pull it (no draw)
                out[k] = math.inf
            else:
                h = 1.0 / known[k]
                out[k] = h * locs[k] + h * math.sqrt(variances[k]) * standard_normal_of(rng)
        return out
    for k in range(m):
        acc = 0.0
        for c in range(n_rows):
            j = rows[c]
            n = counts[j, k]
            s = min(max((sums[j, k] - lo * n) / width, 0.0), n)
            acc += beta_of(rng, 1.0 + s, 1.0 + n - s)
        out[k] = lo + width * (inv * acc)
    return out


@njit(cache=True)
def first_argmax(values: FloatArray) -> int:  # pragma: no cover
    """The first index of the largest value (``np.argmax``'s rule; continuous draws tie
    with probability 0).

    Examples:
        >>> first_argmax(np.array([0.1, 0.7, 0.7]))
        1
    """
    best = 0
    for k in range(1, values.size):
        if values[k] > values[best]:
            best = k
    return best


@njit(cache=True)
def honest_row(
    counts: FloatArray, sums: FloatArray, limit: float, post: Posterior
) -> bool:  # pragma: no cover
    """Whether per-arm ``counts`` and ``sums`` are what an honest agent can hold after at
    most ``limit`` pulls: every number finite, every count a non-negative integer, the
    counts adding up to at most ``limit``, and (:data:`BETA`, :data:`MOMENT`: rewards in
    ``[lo, lo + width]``) every sum between ``lo n`` and ``(lo + width) n``, up to
    float32's rounding on the wire. A :data:`GAUSSIAN` posterior's sums of private
    rewards may leave that range by ``post.slack`` (the tree's noise; issue 63); with
    unbounded rewards (``slack < 0``) they need only be finite.

    Examples:
        >>> post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
        >>> honest_row(np.array([2.0, 1.0]), np.array([1.0, 1.0]), 3.0, post)
        True
        >>> [honest_row(np.array(c), np.array(s), 3.0, post) for c, s in
        ...  [([-1.0, 1.0], [0.0, 0.0]), ([2.5, 0.0], [1.0, 0.0]), ([3.0, 1.0], [0.0, 0.0]),
        ...   ([2.0, 1.0], [2.5, 0.0])]]
        [False, False, False, False]
    """
    total = 0.0
    for k in range(counts.size):
        n, sm = counts[k], sums[k]
        if not (math.isfinite(n) and math.isfinite(sm)) or n < 0.0 or n != math.floor(n):
            return False
        total += n
        if post.family != GAUSSIAN or post.slack >= 0.0:  # rewards in a known range
            lo, hi = post.lo * n, (post.lo + post.width) * n
            slack = 1e-6 * (abs(lo) + abs(hi) + 1.0) + max(post.slack, 0.0)
            if sm < min(lo, hi) - slack or sm > max(lo, hi) + slack:
                return False
    return total <= limit


@njit(cache=True)
def merge_relayed(
    counts: FloatArray,
    sums: FloatArray,
    stamps: FloatArray,
    table: FloatArray,
    me: int,
    step: int,
    post: Posterior,
) -> int:  # pragma: no cover
    """Relay: take every row of a sender's ``table`` (``(agents, 2M + 1)``: counts, sums,
    stamp) whose stamp (the step its owner measured it at) is newer than the one held;
    the receiver's own row is its own. A row an honest relay cannot send (a stamp that
    is not an integer in ``[0, step]``, or counts and sums that fail
    :func:`honest_row` for ``stamp`` pulls) is dropped; returns how many were.

    Examples:
        >>> c, s, st = np.zeros((2, 1)), np.zeros((2, 1)), np.zeros(2)
        >>> post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
        >>> merge_relayed(c, s, st, np.array([[2.0, 1.5, 4.0], [9.0, 9.0, 9.0]]), 1, 5, post)
        0
        >>> c.ravel().tolist(), s.ravel().tolist(), st.tolist()
        ([2.0, 0.0], [1.5, 0.0], [4.0, 0.0])
        >>> merge_relayed(c, s, st, np.array([[2.0, 1.5, 1e9], [0.0, 0.0, 0.0]]), 1, 5, post)
        1
    """
    m = counts.shape[1]
    dropped = 0
    for j in range(table.shape[0]):
        stamp = table[j, 2 * m]
        if j == me or not stamp > stamps[j]:  # older than what is held (NaN: not newer)
            continue
        if (
            stamp > step
            or stamp != math.floor(stamp)
            or not honest_row(table[j, :m], table[j, m : 2 * m], stamp, post)
        ):
            dropped += 1
            continue
        for k in range(m):
            counts[j, k] = table[j, k]
            sums[j, k] = table[j, m + k]
        stamps[j] = stamp
    return dropped


@njit(cache=True)
def merge_held(
    counts: FloatArray,
    sums: FloatArray,
    stamps: FloatArray,
    sender: int,
    message: FloatArray,
    step: int,
    post: Posterior,
) -> int:  # pragma: no cover
    """Hold: a neighbour's message (its own counts and sums, ``2M``) replaces what was
    held of it; its stamp is the step it was heard at. A message an honest neighbour
    cannot send after ``step`` steps (:func:`honest_row`) is dropped: returns 1 if it
    was, else 0.

    Examples:
        >>> c, s, st = np.zeros((2, 1)), np.zeros((2, 1)), np.zeros(2)
        >>> post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
        >>> merge_held(c, s, st, 0, np.array([3.0, 2.0]), 5, post)
        0
        >>> c[0].tolist(), s[0].tolist(), st.tolist()
        ([3.0], [2.0], [5.0, 0.0])
        >>> merge_held(c, s, st, 0, np.array([-3.0, 2.0]), 6, post), c[0].tolist()
        (1, [3.0])
    """
    m = counts.shape[1]
    if not honest_row(message[:m], message[m : 2 * m], step, post):
        return 1
    for k in range(m):
        counts[sender, k] = message[k]
        sums[sender, k] = message[m + k]
    stamps[sender] = step
    return 0


@njit(cache=True)
def held_rows(stamps: FloatArray, me: int, rows: IntArray) -> int:  # pragma: no cover
    """Write the rows an agent holds (its own, and every row with a stamp) into ``rows``
    in increasing order; return how many.

    Examples:
        >>> rows = np.zeros(3, np.int64)
        >>> held_rows(np.array([0.0, 0.0, 2.0]), 0, rows), rows[:2].tolist()
        (2, [0, 2])
    """
    c = 0
    for j in range(stamps.size):
        if j == me or stamps[j] > 0:
            rows[c] = j
            c += 1
    return c


@njit(cache=True, nogil=True, **UNCOUNTED)
def thompson_step(
    last: IntArray,
    seen: np.ndarray,
    t: int,
    heard: np.ndarray,
    mask: np.ndarray,
    counts: FloatArray,
    sums: FloatArray,
    stamps: FloatArray,
    mom_mu: FloatArray,
    mom_var: FloatArray,
    members: IntArray,
    own: IntArray,
    share: int,
    post: Posterior,
    private: bool,
    agents: Any,
    rejected: IntArray,
    strict: bool,
    scratch: FloatArray,
    rows: IntArray,
    primed: IntArray,
    changes: WireChanges,
    arms: IntArray,
    sent: FloatArray,
) -> bool:  # pragma: no cover
    """Every agent of ``B`` envs: :class:`~baselines.thompson.CooperativeTS`'s ``act``
    (absorb the last pull, keep what was heard, sample, pull the argmax) and its message,
    in the per-agent policy's order of operations and floating-point order, so a trial is
    the per-agent team's to the bit.

    ``last`` ``(B, N)`` int64 and ``seen`` ``(B, N)`` float32: the last arms and what
    their rewards read as (with ``private``, the pulled arm's private mean: its sum is
    then ``seen * count``); ``t`` the steps played. ``heard`` ``(B, N, D)`` float32 by
    sender and ``mask`` ``(B, N, N)`` what arrived last step. Agent ``i``'s table holds
    a row per sender of ``members[i]`` (increasing; ``-1`` pads; its own at ``own[i]``):
    ``counts``/``sums`` ``(B, N, S, M)``, ``stamps`` ``(B, N, S)``; ``share`` is -1
    (alone), 0 (hold: a neighbour's ``2M`` numbers replace its row, each sender checked
    once a step by :func:`honest_row`, as :func:`merge_held` checks it) or 1 (relay:
    :func:`merge_relayed` of each sender's table, senders in order). ``mom_mu`` and
    ``mom_var`` ``(B, N, S, M)``: with hold and :data:`MOMENT`, each held cell's
    :func:`moment_cell`, refreshed where a row changes (:func:`moment_sample`), else
    ``(1, 1, 1, 1)``. ``agents``: every agent's generator as a
    :func:`~fedbandit_env.rng_kernels.generator_table`, env ``b``'s agent ``i`` at row
    ``b N + i``. Messages dropped as ones no honest agent sends are counted in
    ``rejected`` ``(B, N)``; the arms go to ``arms`` ``(B, N)`` and the messages to
    ``sent`` ``(B, N, D)`` (the own row, or the table with its stamps; the rest of a row
    left as it is). With hold, messages at least ``4 SPARSE_WIRE`` long and room for
    two entries an agent in ``changes``
    (:class:`~fedbandit_env.core.kernels.WireChanges`), an env whose ``primed`` ``(B,)``
    is set (``sent`` holds last step's: the core's rollout keeps it) gets only the
    pulled arm's count and sum written and listed; else whole rows, ``listed`` -1, and
    ``primed`` set (a caller whose ``sent`` is fresh each step clears it after).
    ``scratch`` ``(6 M + N)`` and ``rows`` ``(S,)``: work space (the step
    allocates nothing: it runs in the core's rollout without numba's runtime,
    :data:`~fedbandit_env.core.kernels.UNCOUNTED`). With
    ``strict`` (a protocol that may deliver off the graph's edges), returns ``False`` if
    an agent heard a sender it holds no row of (hold: only the graph's neighbours are
    held), else ``True``.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rngs = [np.random.default_rng(0)]  # kept alive: the table holds its address
        >>> post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
        >>> z = np.zeros((1, 1, 1, 2))
        >>> arms = np.zeros((1, 1), np.int64)
        >>> thompson_step(arms.copy(), np.zeros((1, 1), np.float32), 0,
        ...               np.zeros((1, 1, 0), np.float32), np.zeros((1, 1, 1), np.int8),
        ...               z.copy(), z.copy(), np.zeros((1, 1, 1)), z, z,
        ...               np.zeros((1, 1), np.int64), np.zeros(1, np.int64), -1, post, False,
        ...               generator_table(rngs), np.zeros((1, 1), np.int64),
        ...               True, np.zeros(13), np.zeros(1, np.int64), np.zeros(1, np.int64),
        ...               WireChanges.of(1, 1, 0), arms, np.zeros((1, 1, 0)))
        True
        >>> int(arms[0, 0]) in (0, 1)
        True
    """
    n_envs, n = last.shape
    m = counts.shape[3]
    width = members.shape[1]
    wide = 2 * m + 1
    cached = mom_mu.shape[3] == m and share == 0
    lo_r, width_r = post.lo, post.width
    done = t
    row64, draws, honest = scratch[: 2 * m], scratch[2 * m : 3 * m], scratch[3 * m : 3 * m + n]
    work = scratch[3 * m + n : 6 * m + n]
    complete = True
    # hold: only the pulled arm's two entries of a row move, so where that is a small
    # share of the message and sent holds last step's (primed), only they go. Twice the
    # rollout's own bound (SPARSE_WIRE): at 2M = 20 numbers, listing 2 an agent lost to
    # whole rows (the rollout's per-row pass), at 200 it won (coop_ts, measured)
    room = changes.changed.shape[2] >= 2 * n
    listing = share == 0 and sent.shape[2] >= 4 * SPARSE_WIRE and room
    for b in range(n_envs):
        if share == 0 and done > 0:  # each sender heard checked once (merge_held's check)
            for j in range(n):
                reached = False  # only a sender someone heard is read (gossip: two)
                for i in range(n):
                    if mask[b, i, j]:
                        reached = True
                        break
                if not reached:
                    continue
                for k in range(2 * m):
                    row64[k] = heard[b, j, k]
                honest[j] = 1.0 if honest_row(row64[:m], row64[m : 2 * m], done, post) else 0.0
        for i in range(n):
            me = own[i]
            if done > 0:  # CooperativeTS.absorb, then .listen (senders in order)
                a = last[b, i]
                counts[b, i, me, a] += 1.0
                if private:  # the private prefix sum, private_means[arm] * counts[arm]
                    sums[b, i, me, a] = float(seen[b, i]) * counts[b, i, me, a]
                else:
                    sums[b, i, me, a] += float(seen[b, i])
                stamps[b, i, me] = done
                if cached:
                    mom_mu[b, i, me, a], mom_var[b, i, me, a] = moment_cell(
                        counts[b, i, me, a], sums[b, i, me, a], lo_r, width_r
                    )
                if share == 0:  # its neighbours' rows (degree x M)
                    kept = 0
                    for row in range(width):
                        j = members[i, row]
                        if j < 0 or j == i or not mask[b, i, j]:
                            continue
                        kept += 1
                        if honest[j] == 0.0:
                            rejected[b, i] += 1
                            continue
                        for k in range(m):
                            counts[b, i, row, k] = heard[b, j, k]
                            sums[b, i, row, k] = heard[b, j, m + k]
                            if cached:
                                mom_mu[b, i, row, k], mom_var[b, i, row, k] = moment_cell(
                                    counts[b, i, row, k], sums[b, i, row, k], lo_r, width_r
                                )
                        stamps[b, i, row] = done
                    if strict:
                        arrived = 0
                        for j in range(n):
                            if j != i and mask[b, i, j]:
                                arrived += 1
                        complete &= arrived == kept
                elif share == 1:  # every agent's rows (row j is agent j's)
                    for j in range(n):
                        if mask[b, i, j]:  # float32 as heard (merge_relayed widens each)
                            table = heard[b, j, : n * wide].reshape(n, wide)
                            rejected[b, i] += merge_relayed(
                                counts[b, i], sums[b, i], stamps[b, i], table, i, done, post
                            )
            n_rows = held_rows(stamps[b, i], me, rows)
            if cached:
                moment_sample(mom_mu[b, i], mom_var[b, i], rows, n_rows, post,
                              bit_generator_at(agents, b * n + i), draws, work)  # fmt: skip
            else:
                team_sample(counts[b, i], sums[b, i], rows, n_rows, post,
                            bit_generator_at(agents, b * n + i), draws, work)  # fmt: skip
            arms[b, i] = first_argmax(draws)
        if share == 0 and primed[b] and done > 0 and listing:  # the pulled arm's entries
            c = 0
            for j in range(n):
                a = last[b, j]
                sent[b, j, a] = counts[b, j, own[j], a]
                sent[b, j, m + a] = sums[b, j, own[j], a]
                changes.changed[b, 0, c], changes.changed[b, 1, c] = j, a
                changes.changed[b, 0, c + 1], changes.changed[b, 1, c + 1] = j, m + a
                c += 2
            changes.listed[b] = c
        elif share == 0:  # its own row: counts, sums
            for j in range(n):
                for k in range(m):
                    sent[b, j, k] = counts[b, j, own[j], k]
                    sent[b, j, m + k] = sums[b, j, own[j], k]
            changes.listed[b] = -1
            primed[b] = 1
        elif share == 1:  # its table, a row per agent: counts, sums, stamp
            for j in range(n):
                for row in range(n):
                    for k in range(m):
                        sent[b, j, row * wide + k] = counts[b, j, row, k]
                        sent[b, j, row * wide + m + k] = sums[b, j, row, k]
                    sent[b, j, row * wide + 2 * m] = stamps[b, j, row]
    return complete


@njit(cache=True, nogil=True, **UNCOUNTED)
def thompson_alone(
    last: IntArray,
    seen: np.ndarray,
    t: int,
    counts: FloatArray,
    sums: FloatArray,
    stamps: FloatArray,
    mom_mu: FloatArray,
    mom_var: FloatArray,
    members: IntArray,
    own: IntArray,
    share: int,
    post: Posterior,
    private: bool,
    agents: Any,
    rejected: IntArray,
    strict: bool,
    scratch: FloatArray,
    rows: IntArray,
    arms: IntArray,
) -> None:  # pragma: no cover
    """:func:`thompson_step` of agents that neither hear nor send (``share`` -1, local
    Thompson sampling): the silent form of a compiled step.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rngs = [np.random.default_rng(0)]  # kept alive: the table holds its address
        >>> post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
        >>> z, arms = np.zeros((1, 1, 1, 2)), np.zeros((1, 1), np.int64)
        >>> thompson_alone(arms.copy(), np.zeros((1, 1), np.float32), 0, z.copy(), z.copy(),
        ...                np.zeros((1, 1, 1)), z, z, np.zeros((1, 1), np.int64),
        ...                np.zeros(1, np.int64), -1, post, False,
        ...                generator_table(rngs),
        ...                np.zeros((1, 1), np.int64), False, np.zeros(13), np.zeros(1, np.int64),
        ...                arms)
        >>> arms.shape
        (1, 1)
    """
    # views of the work space, not allocations (it runs without numba's runtime): the
    # messages heard and sent, and the mask, which a silent agent never reads
    nothing = scratch[:0].reshape((1, 1, 0))
    unheard = rows[:1].reshape((1, 1, 1))
    unlisted = WireChanges(rows[:0].reshape((1, 2, 0)), rows[:1])  # never written: silent
    thompson_step(last, seen, t, nothing, unheard, counts, sums, stamps, mom_mu, mom_var,
                  members, own, share, post, private, agents, rejected, strict, scratch, rows,
                  rows[:1], unlisted, arms, nothing)  # fmt: skip


__all__ = [
    "BETA",
    "GAUSSIAN",
    "MOMENT",
    "Posterior",
    "first_argmax",
    "held_rows",
    "honest_row",
    "merge_held",
    "merge_relayed",
    "moment_cell",
    "moment_sample",
    "team_sample",
    "thompson_alone",
    "thompson_step",
]
