"""The compiled step of :class:`~fedbandit_env.privacy.batched_tree.BatchedTree` on NumPy
(the ``(B, L, N M)`` layout of ``B`` trees; :mod:`~fedbandit_env.privacy.tree_kernels` is
the one tree of ``TreeMechanism``).

:class:`~fedbandit_env.privacy.batched_tree.BatchedTree` states a step of ``B`` binary
trees once against the array API, and that statement runs on a torch device. On NumPy
the same step as whole-array operations costs about ten bare vector-env steps at
``B = 1024`` (fancy-indexed updates of ``(B, L, N M)`` blocks, a cumulative sum and a
gather to hand out the noise, a new prefix from every level). These kernels do the same
arithmetic cell by cell, in the floating-point order of the array statement they
replace, so the releases are the same bits (``tests/privacy/test_tree_kernels.py``
holds them to the array statement on random streams, both estimators; the replay tests
hold the vector wrapper to the PettingZoo one):

- :func:`record_pulls`: Algorithm 3's leaf update, the pulled stream's count, last
  step and every open block's exact sum;
- :func:`laplace_marked`: each tree's next Laplace draws at its marked cells, in
  row-major order (``TreeNoise.draws``'s order), straight from its generator;
- :func:`close_blocks`: the dyadic node of the block closing at ``t`` (exact sum plus
  its noise), the emptied open blocks, the prefix sums of the cover of ``t`` (Algorithm
  2, levels increasing), each agent's increment of its pulled stream and the private
  means handed out;
- :func:`honaker_close`: Honaker's pass over the closing levels (noise drawn as
  ``laplace_marked`` draws it, streams then levels);
- :func:`private_observe`: the step in a compiled rollout, as its observation hook,
  visiting only the streams with pulls (:func:`list_open_blocks`, :func:`list_pulls`,
  :func:`close_listed`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from fedbandit_env.core.kernels import ARITHMETIC, UNCOUNTED
from fedbandit_env.privacy.tree_kernels import honaker_merge
from fedbandit_env.rng_kernels import generator_at, laplace_at
from fedbandit_env.type_aliases import BoolArray, Float32Array, FloatArray, IntArray


@njit(cache=True, nogil=True)
def record_pulls(
    counts: FloatArray,
    last: IntArray,
    acc: FloatArray,
    arms: IntArray,
    values: FloatArray,
    t: int,
) -> None:  # pragma: no cover
    """Agent ``i`` of env ``b`` pulled ``arms[b, i]`` and got the clipped ``values[b, i]``
    at step ``t``: count it (``counts`` ``(B, N, M)``), mark its stream ``i M + arm`` as
    last pulled at ``t`` (``last`` ``(B, N M)``) and add it to that stream's open block at
    every level (``acc`` ``(B, L, N M)``), in place.

    Examples:
        >>> counts, last = np.zeros((1, 1, 2)), np.zeros((1, 2), np.int64)
        >>> acc = np.zeros((1, 2, 2))
        >>> record_pulls(counts, last, acc, np.array([[1]]), np.array([[0.5]]), 3)
        >>> counts[0, 0].tolist(), last[0].tolist(), acc[0, :, 1].tolist()
        ([0.0, 1.0], [0, 3], [0.5, 0.5])
    """
    n_envs, n = arms.shape
    m = counts.shape[2]
    levels = acc.shape[1]
    for b in range(n_envs):
        for i in range(n):
            arm = arms[b, i]
            stream = i * m + arm
            counts[b, i, arm] += 1.0
            last[b, stream] = t
            v = values[b, i]
            for level in range(levels):
                acc[b, level, stream] += v


@njit(cache=True, nogil=True)
def laplace_marked(
    table: npt.NDArray[np.uint64],
    marked: BoolArray,
    scale: float,
    out: FloatArray,
    order: FloatArray,
) -> FloatArray:  # pragma: no cover
    """``out[b, k] = scale * rng_b.laplace(0, 1)`` at each marked cell of row ``b``, the
    cells in row-major order, 0 elsewhere; ``rng_b`` is row ``b`` of ``table`` (a
    :func:`~fedbandit_env.rng_kernels.generator_table`), drawn by
    :func:`~fedbandit_env.rng_kernels.laplace_at`, NumPy's algorithm on the same bit
    generator: the numbers of consecutive ``rng_b.laplace(0.0, scale)`` calls (``scale *
    (0 - log u)`` and ``0 - scale * log u`` are one rounding of the same product).

    Which cells are marked follows the pulls, so a branch per cell mispredicted about
    as often as it drew (measured: 20 ns a draw at half the cells marked, 8 without the
    branch). Each row's marked cells are listed first, branch-free, in ``order`` (work
    space of at least a row's length), then drawn in that order.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> out = laplace_marked(generator_table([rng]), np.array([[True, False, True]]),
        ...                      2.0, np.empty((1, 3)), np.empty(3))
        >>> out[0].tolist() == [*np.random.default_rng(0).laplace(0.0, 2.0, 1), 0.0,
        ...                     *np.random.default_rng(0).laplace(0.0, 2.0, 2)[1:]]
        True
    """
    n_envs, width = marked.shape
    for b in range(n_envs):
        slot = generator_at(table, b)
        listed = 0
        for k in range(width):
            out[b, k] = 0.0
            order[listed] = k  # kept only where marked: the next cell overwrites it
            listed += marked[b, k]
        for j in range(listed):
            out[b, int(order[j])] = scale * laplace_at(slot)
    return out


@njit(cache=True, nogil=True, **ARITHMETIC)
def honaker_close(
    acc: FloatArray,
    node: FloatArray,
    var: FloatArray,
    last: IntArray,
    t: int,
    top: int,
    table: npt.NDArray[np.uint64],
    scale: float,
    var_unit: float,
) -> None:  # pragma: no cover
    """Honaker's bottom-up pass over levels ``0 .. top`` of every stream of ``B`` trees
    (``BatchedTree._honaker``'s array statement, cell by cell in its floating-point
    order): level ``l`` of stream ``s`` gets its exact sum plus ``Lap(scale)`` where its
    block saw a pull (``last[b, s] > t - 2^l``; the draws of tree ``b`` from row ``b``
    of ``table``, streams in order and levels within a stream, the array statement's
    row-major order), its noise variance ``var_unit`` there (``2 scale^2``, else 0), and
    is combined with its children (the sibling's old estimate and the level below's new
    one) by inverse-variance weights; ``node`` and ``var`` ``(B, L, N M)`` in place.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> acc, node, var = np.ones((1, 2, 1)), np.zeros((1, 2, 1)), np.zeros((1, 2, 1))
        >>> honaker_close(acc, node, var, np.array([[2]]), 2, 1, generator_table([rng]),
        ...               1e-12, 2e-24)
        >>> node.round(6).tolist(), bool(var[0, 1, 0] > 0)
        ([[[1.0], [1.0]]], True)
    """
    n_envs, streams = acc.shape[0], acc.shape[2]
    for b in range(n_envs):
        slot = generator_at(table, b)
        for s in range(streams):
            left, left_var = 0.0, 0.0
            for level in range(top + 1):
                marked = last[b, s] > t - (1 << level)
                noise = scale * laplace_at(slot) if marked else 0.0
                own = acc[b, level, s] + noise
                own_var = var_unit if marked else 0.0
                old, old_var = node[b, level, s], var[b, level, s]
                if level == 0:
                    est, v = own, own_var
                else:
                    est, v = honaker_merge(own, own_var, left, left_var, node[b, level - 1, s],
                                           var[b, level - 1, s])  # fmt: skip
                node[b, level, s] = est
                var[b, level, s] = v
                left, left_var = old, old_var


@njit(cache=True, nogil=True)
def cover_sums(
    node: FloatArray, arms: IntArray, m: int, t: int, out: FloatArray
) -> None:  # pragma: no cover
    """The prefix of each agent's pulled stream (``i m + arms[b, i]``) after step ``t``
    into ``out`` ``(B, N)`` (Algorithm 2): the nodes of the cover of ``t`` summed from 0,
    levels increasing, as :func:`release_all` sums every stream's, so the same bits. The
    cover is walked once for all of them (its levels outside, the streams inside, as the
    one-tree :func:`~fedbandit_env.privacy.tree_kernels.tree_prefix_streams`; a walk of
    every level per stream cost about 25 ns an agent-step more at ``N = 10``, 19 levels).

    Examples:
        >>> node = np.array([[[0.5, 1.0], [0.25, 2.0]]])  # levels 0, 1 of two streams
        >>> out = np.empty((1, 2))
        >>> cover_sums(node, np.array([[0, 0]]), 1, 3, out)  # two agents of one arm
        >>> out.tolist()
        [[0.75, 3.0]]
    """
    n_envs, n = arms.shape
    for b in range(n_envs):
        for i in range(n):
            out[b, i] = 0.0
    rest = t
    level = 0
    while rest:
        if rest & 1:
            for b in range(n_envs):
                for i in range(n):
                    out[b, i] = out[b, i] + node[b, level, i * m + arms[b, i]]
        rest >>= 1
        level += 1


@njit(cache=True, nogil=True, **UNCOUNTED, **ARITHMETIC)
def release_all(
    node: FloatArray, counts: FloatArray, t: int, prefix: FloatArray, means32: Float32Array
) -> None:  # pragma: no cover
    """Every stream's release after step ``t`` of ``B`` trees, as :func:`close_blocks`
    writes them (what :func:`private_observe` leaves to the end of a rollout): ``prefix``
    ``(B, N M)`` the nodes of the cover of ``t`` summed from 0, levels increasing, and
    ``means32`` ``(B, N, M)`` each prefix over its count in float32 (0 where unpulled).

    Examples:
        >>> node = np.array([[[0.5, 0.0], [0.25, 1.0]]])  # levels 0, 1 of two streams
        >>> prefix, means = np.zeros((1, 2)), np.zeros((1, 1, 2), np.float32)
        >>> release_all(node, np.array([[[3.0, 0.0]]]), 3, prefix, means)
        >>> prefix.tolist(), means.tolist()
        ([[0.75, 1.0]], [[[0.25, 0.0]]])
    """
    n_envs, levels, streams = node.shape
    flat_counts = counts.reshape(n_envs, streams)  # stream i M + a is agent i's arm a
    flat_means = means32.reshape(n_envs, streams)
    for b in range(n_envs):
        for s in range(streams):
            prefix[b, s] = 0.0
        for level in range(levels):
            if (t >> level) & 1:
                for s in range(streams):
                    prefix[b, s] = prefix[b, s] + node[b, level, s]
        for s in range(streams):  # one flat loop of selects: SIMD (by agent and arm: 2x
            c = flat_counts[b, s]  # slower at M = 5, the arms' loop too short to vectorize)
            pulled = c > 0
            mean = prefix[b, s] / (c if pulled else 1.0)
            flat_means[b, s] = np.float32(mean if pulled else 0.0)


@njit(cache=True, nogil=True, **ARITHMETIC)
def close_blocks(
    acc: FloatArray,
    node: FloatArray,
    prefix: FloatArray,
    counts: FloatArray,
    arms: IntArray,
    noise: FloatArray,
    t: int,
    top: int,
    dyadic: bool,
    new_prefix: FloatArray,
    increments: FloatArray,
    means32: Float32Array,
) -> None:  # pragma: no cover
    """The end of step ``t`` of every tree (``BatchedTree.step`` after the pulls):

    - dyadic: the node of the block closing at ``t`` (level ``top``) is its exact sum
      plus ``noise`` (``(B, N M)``, 0 where the block saw nothing); Honaker's pass has
      set the nodes already (``dyadic=False``, ``noise`` unread);
    - the open blocks of levels ``0 .. top`` are emptied;
    - ``new_prefix[b, s]``: the nodes of the cover of ``t`` summed from 0, levels
      increasing (Algorithm 2);
    - ``increments[b, i]``: the new prefix of agent ``i``'s pulled stream minus its old
      one (``prefix``);
    - ``means32``: each stream's prefix over its count, in float32 (0 where unpulled).

    Examples:
        >>> acc, node = np.array([[[0.5, 0.0]]]), np.zeros((1, 1, 2))
        >>> counts = np.array([[[1.0, 0.0]]])
        >>> prefix, inc = np.zeros((1, 2)), np.zeros((1, 1))
        >>> means = np.zeros((1, 1, 2), np.float32)
        >>> close_blocks(acc, node, np.zeros((1, 2)), counts, np.array([[0]]),
        ...              np.array([[0.25, 0.0]]), 1, 0, True, prefix, inc, means)
        >>> prefix.tolist(), inc.tolist(), means.tolist(), acc.tolist()
        ([[0.75, 0.0]], [[0.75]], [[[0.75, 0.0]]], [[[0.0, 0.0]]])
    """
    n_envs, streams = acc.shape[0], acc.shape[2]
    n, m = counts.shape[1], counts.shape[2]
    for b in range(n_envs):  # loops over streams innermost, without branches: SIMD
        if dyadic:
            for s in range(streams):
                node[b, top, s] = acc[b, top, s] + noise[b, s]
        for level in range(top + 1):
            for s in range(streams):
                acc[b, level, s] = 0.0
    release_all(node, counts, t, new_prefix, means32)
    for b in range(n_envs):
        for i in range(n):
            stream = i * m + arms[b, i]
            increments[b, i] = new_prefix[b, stream] + (-prefix[b, stream])


@njit(cache=True, nogil=True, **UNCOUNTED)
def list_open_blocks(
    last: IntArray,
    node: FloatArray,
    t: int,
    touched: IntArray,
    listed: IntArray,
    live: IntArray,
    alive: IntArray,
) -> None:  # pragma: no cover
    """The lists :func:`private_observe` keeps, read from ``B`` dyadic trees of ``N``
    agents' ``M`` streams each after step ``t`` (before a rollout, which may start
    mid-episode), both increasing: ``touched[b, l, i M : i M + listed[b, l, i]]`` agent
    ``i``'s streams pulled in level ``l``'s open block (``last[b, s] > (t >> l) << l``),
    and ``live[b, l, :alive[b, l]]`` the streams whose level-``l`` node is not 0 (a
    closing block that did not see them sets it back to 0).

    Examples:
        >>> touched, live = np.zeros((1, 2, 3), np.int64), np.zeros((1, 2, 3), np.int64)
        >>> listed, alive = np.zeros((1, 2, 1), np.int64), np.zeros((1, 2), np.int64)
        >>> node = np.array([[[0.0, 0.5, 0.0], [0.0, 0.0, 0.0]]])  # one agent, 3 arms
        >>> list_open_blocks(np.array([[2, 0, 3]]), node, 2, touched, listed, live, alive)
        >>> touched[0, 0, :1].tolist(), touched[0, 1, :1].tolist(), live[0, 0, :1].tolist()
        ([2], [2], [1])
        >>> listed[0, :, 0].tolist(), alive[0].tolist()
        ([1, 1], [1, 0])
    """
    n_envs, levels, streams = node.shape
    n = listed.shape[2]
    m = streams // n
    for b in range(n_envs):
        for level in range(levels):
            start = (t >> level) << level
            for i in range(n):
                k = 0
                for s in range(i * m, i * m + m):
                    touched[b, level, i * m + k] = s  # kept only where pulled: branch-free
                    k += last[b, s] > start
                listed[b, level, i] = k
            k = 0
            for s in range(streams):
                live[b, level, k] = s
                k += node[b, level, s] != 0.0
            alive[b, level] = k


@njit(cache=True, nogil=True)
def list_pulls(
    arms: IntArray, last: IntArray, m: int, t: int, touched: IntArray, listed: IntArray
) -> None:  # pragma: no cover
    """Step ``t``'s pulls listed in the open blocks that had not seen them, before
    :func:`record_pulls` marks them (``last`` still the step each stream was pulled
    before): agent ``i``'s stream at ``touched[b, l, i M + listed[b, l, i]]`` for each
    level ``l`` from 0 up to the first whose open block holds an earlier pull (an open
    block lies in the one above, so the levels a stream is listed at are a range from 0).

    Examples:
        >>> touched, listed = np.zeros((1, 3, 2), np.int64), np.zeros((1, 3, 1), np.int64)
        >>> list_pulls(np.array([[1]]), np.array([[0, 1]]), 2, 2, touched, listed)
        >>> listed[0, :, 0].tolist(), int(touched[0, 0, 0])  # level 1's block saw step 1
        ([1, 0, 0], 1)
    """
    n_envs, n = arms.shape
    levels = listed.shape[1]
    for b in range(n_envs):
        for i in range(n):
            stream = i * m + arms[b, i]
            before = last[b, stream]
            level = 0
            while level < levels and before <= ((t - 1) >> level) << level:
                touched[b, level, i * m + listed[b, level, i]] = stream
                listed[b, level, i] += 1
                level += 1


@njit(cache=True, nogil=True, **ARITHMETIC)
def close_listed(
    acc: FloatArray,
    node: FloatArray,
    last: IntArray,
    t: int,
    top: int,
    table: npt.NDArray[np.uint64],
    scale: float,
    touched: IntArray,
    listed: IntArray,
    live: IntArray,
    alive: IntArray,
) -> None:  # pragma: no cover
    """:func:`close_blocks`' dyadic node and emptied open blocks at step ``t`` (level
    ``top`` closing), visiting only the listed streams (:func:`private_observe`'s lists):
    the level's ``live`` nodes set to 0, its ``touched`` streams' nodes their exact sums
    plus ``Lap(scale)`` (drawn in increasing stream order, as :func:`laplace_marked`
    draws them), which become the level's ``live`` list, and the open blocks of levels
    ``0 .. top`` emptied at their touched streams.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> acc, node = np.array([[[0.0, 0.5]]]), np.zeros((1, 1, 2))
        >>> touched, listed = np.array([[[0, 1]]]), np.array([[[0, 1]]])  # agent 1's arm
        >>> live, alive = np.zeros((1, 1, 2), np.int64), np.zeros((1, 1), np.int64)
        >>> close_listed(acc, node, np.array([[0, 1]]), 1, 0, generator_table([rng]),
        ...              1e-12, touched, listed, live, alive)
        >>> node.round(6).tolist(), acc.tolist(), alive.tolist(), listed.tolist()
        ([[[0.0, 0.5]]], [[[0.0, 0.0]]], [[1]], [[[0, 0]]])
    """
    n_envs, streams = last.shape
    n = listed.shape[2]
    m = streams // n
    since = t - (1 << top)
    for b in range(n_envs):
        for c in range(alive[b, top]):  # the level's last nodes: 0 unless seen again
            node[b, top, live[b, top, c]] = 0.0
        total = 0
        for i in range(n):
            total += listed[b, top, i]
        if total > 32 and 8 * total >= streams:  # a good part of all: read back
            total = 0
            for s in range(streams):
                live[b, top, total] = s
                total += last[b, s] > since
        else:
            total = 0
            for i in range(n):  # each agent's, sorted by insertion: few
                base = i * m
                for c in range(listed[b, top, i]):
                    s = touched[b, top, base + c]
                    d = c
                    while d > 0 and touched[b, top, base + d - 1] > s:
                        touched[b, top, base + d] = touched[b, top, base + d - 1]
                        d -= 1
                    touched[b, top, base + d] = s
                for c in range(listed[b, top, i]):
                    live[b, top, total + c] = touched[b, top, base + c]
                total += listed[b, top, i]
        slot = generator_at(table, b)
        for c in range(total):  # laplace_marked's draws, close_blocks' node
            s = live[b, top, c]
            node[b, top, s] = acc[b, top, s] + scale * laplace_at(slot)
        alive[b, top] = total
        for level in range(top + 1):
            for i in range(n):
                for c in range(listed[b, level, i]):
                    acc[b, level, touched[b, level, i * m + c]] = 0.0
                listed[b, level, i] = 0


@njit(cache=True, nogil=True, **UNCOUNTED, **ARITHMETIC)
def private_observe(
    arms: IntArray,
    rewards: FloatArray,
    t: int,
    counts: FloatArray,
    last: IntArray,
    acc: FloatArray,
    node: FloatArray,
    table: npt.NDArray[np.uint64],
    scale: float,
    lo: float,
    hi: float,
    var: FloatArray,
    var_unit: float,
    values: FloatArray,
    touched: IntArray,
    listed: IntArray,
    live: IntArray,
    alive: IntArray,
    increments: FloatArray,
    seen: Float32Array,
    traced: Float32Array,
) -> None:  # pragma: no cover
    """``VecPrivateRewards``' step of ``B`` dyadic trees as a compiled rollout's
    observation hook (:func:`~fedbandit_env.core.kernels.observe_raw`'s form): the
    rewards of step ``t`` clipped to ``[lo, hi]`` (``values``), :func:`record_pulls`, the
    closing block's node (its exact sum plus ``Lap(scale)`` where it saw a pull, 0
    elsewhere: :func:`close_blocks`' node, the draws in :func:`laplace_marked`'s order;
    with Honaker's estimator, ``var`` not empty: the nodes' noise variances, ``var_unit =
    2 scale^2``, the closing levels through :func:`honaker_close` instead), the open
    blocks of levels ``0 .. top`` emptied; then, for each agent's pulled stream only, its
    prefix before and after the step (the nodes of the covers of ``t - 1`` and ``t``,
    summed from 0, levels increasing, as :func:`close_blocks` sums them), what a private
    policy reads, the pulled arm's private mean (``seen``), and the observation's reward,
    the increment as float32 (``traced``; ``increments`` holds it in float64). The trees'
    ``prefix`` and ``means32`` are not kept step by step: :func:`release_all` writes
    every stream's at the end of the rollout.

    The dyadic trees visit only the streams with pulls, as the one-tree
    :func:`~fedbandit_env.privacy.tree_kernels.tree_complete_listed` does: per tree and
    level, ``touched`` lists each agent's streams pulled in the open block (agent ``i``'s
    at ``i M``, ``listed`` of them) and ``live`` the streams whose node is not 0
    (``alive`` of them), as :func:`list_open_blocks` reads them before the rollout. A
    closing block sets its ``live`` nodes to 0, writes its ``touched`` ones and empties
    the open blocks of its touched streams, so a step costs what its pulls touch instead
    of three passes over all ``N M`` streams of every tree (about 190 ns an agent-step at
    ``N = 50, M = 100``, 8000 steps). The draws go to the streams in increasing order:
    each agent's few streams are sorted by insertion (a list by agents instead of one
    heap-sorted list: about 40 ns an agent-step less there); where a closing block saw
    at least ``1/8`` of all streams they are read back in order from ``last`` instead.
    Honaker's trees keep their dense pass and leave the lists alone.
    ``BatchedTree.step``'s arithmetic in its order, so the releases are its bits
    (``tests/vector/test_private_rollout.py``).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> b, n, m, levels = 1, 1, 2, 2
        >>> z = lambda *shape: np.zeros(shape)
        >>> seen = np.zeros((b, n), np.float32)
        >>> lists = lambda *shape: np.zeros(shape, np.int64)
        >>> private_observe(np.array([[1]]), np.array([[0.5]]), 1, z(b, n, m),
        ...     lists(b, n * m), z(b, levels, n * m), z(b, levels, n * m),
        ...     generator_table([rng]), 1e-12, 0.0, 1.0, z(0, 0, 0), 0.0, z(b, n),
        ...     lists(b, levels, n * m), lists(b, levels, n), lists(b, levels, n * m),
        ...     lists(b, levels), z(b, n), seen, seen.copy())
        >>> round(float(seen[0, 0]), 6)
        0.5
    """
    n_envs, n = arms.shape
    m = counts.shape[2]
    streams = last.shape[1]
    dyadic = var.size == 0
    for b in range(n_envs):
        for i in range(n):
            values[b, i] = min(max(rewards[b, i], lo), hi)  # np.clip's
    if dyadic:
        list_pulls(arms, last, m, t, touched, listed)
    record_pulls(counts, last, acc, arms, values, t)
    top = 0
    while not (t >> top) & 1:  # lowest_bit(t)
        top += 1
    cover_sums(node, arms, m, t - 1, increments)  # the pulled streams' prefixes at t - 1
    if not dyadic:
        honaker_close(acc, node, var, last, t, top, table, scale, var_unit)
        for b in range(n_envs):
            for level in range(top + 1):
                for s in range(streams):
                    acc[b, level, s] = 0.0
    else:
        close_listed(acc, node, last, t, top, table, scale, touched, listed, live, alive)
    cover_sums(node, arms, m, t, values)  # and at t (the clipped rewards are recorded)
    for b in range(n_envs):
        for i in range(n):
            arm = arms[b, i]
            after = values[b, i]
            increments[b, i] = after + (-increments[b, i])
            seen[b, i] = np.float32(after / counts[b, i, arm])  # pulled: a count >= 1
            traced[b, i] = np.float32(increments[b, i])


__all__ = [
    "close_blocks",
    "close_listed",
    "cover_sums",
    "honaker_close",
    "laplace_marked",
    "list_open_blocks",
    "list_pulls",
    "private_observe",
    "record_pulls",
    "release_all",
]
