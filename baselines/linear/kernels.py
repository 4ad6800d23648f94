"""The compiled mathematics of the linear family, called by the per-agent policies, the
vector policies' compiled steps (:mod:`baselines.linear.vector`) and the decentralized
trial loop alike (one source of truth, two speeds).

- :func:`rank_one_update`: ``V <- V + x x^T`` on the inverse (Sherman-Morrison) and its
  log-determinant (the matrix determinant lemma): ``O(d^2)``, no inversion per step
  (:func:`rank_one_fixed`: the same numbers written out for one ``d``, as the vector
  steps call it, with :func:`mat_vec_fixed` and :func:`add_outer_fixed`);
- :func:`ucb_choice`: the OFUL choice ``argmax_x <theta_hat, x> + beta ||x||_{V^-1}``
  (Algorithm 1, line 8), its scores in float32 by a scorer generated for ``d``
  (:func:`set_scorer`);
- :func:`confidence_width`: ``beta`` of Proposition 2;
- :func:`spd_inverse`: inverse and log-determinant of a synchronised Gram matrix
  (Cholesky), once per synchronisation;
- :func:`tree_release` / :func:`tree_commit`: PRIVATIZER (Algorithm 2), the binary-tree
  mechanism over synchronisation rounds with symmetrised Gaussian noise on the
  ``(d + 1) x (d + 1)`` matrix ``sum [x y]^T [x y]`` (a node's: :func:`draw_node_noise`).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from llvmlite import ir
from numba import cfunc, njit, types
from numba.core.extending import intrinsic, overload
from numba.np.random.distributions import random_standard_normal

from fedbandit_env.core.caching import generated_module
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


@njit(cache=True, nogil=True, inline="always")
def rank_one_update(inv: FloatArray, x: FloatArray, work: FloatArray) -> float:  # pragma: no cover
    """``inv <- (V + x x^T)^-1`` from ``inv = V^-1``; returns ``log(1 + x^T V^-1 x)``, the
    increase of ``log det V``.

    Examples:
        >>> inv = np.eye(2) / 2.0
        >>> inc = rank_one_update(inv, np.array([1.0, 0.0]), np.empty(2))
        >>> np.allclose(inv, np.linalg.inv(np.diag([3.0, 2.0]))), round(inc, 6)
        (True, 0.405465)
    """
    d = x.shape[0]
    q = 0.0
    for a in range(d):
        s = 0.0
        for b in range(d):
            s += inv[a, b] * x[b]
        work[a] = s
        q += x[a] * s
    c = 1.0 / (1.0 + q)
    for a in range(d):
        wa = c * work[a]
        for b in range(d):
            inv[a, b] -= wa * work[b]
    return math.log1p(q)


def _transpose8_typing(typingctx: Any, features: Any, rows: Any, k: Any, col: Any,
                       xt: Any) -> Any:  # fmt: skip
    """``xt[col + a, k + j] = features[rows[k + j], col + a]`` for ``a, j < 8``: eight
    vectors' components ``col .. col + 7`` gathered into the transposed buffer as eight
    8-wide loads, an 8 x 8 transpose in three rounds of shuffles (pairs of floats,
    pairs of pairs, 128-bit halves) and eight 8-wide stores, where the scalar gather
    moves each float alone (64 loads and 64 stores; measured at ``d = 10, K = 100``: a
    set scored in 615 ns instead of 840, the picks the same). The caller keeps ``k +
    8 <= rows.shape[0]`` and ``col + 8 <= d``; both arrays C-contiguous."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pool, picks, buffer = (context.make_array(signature.args[i])(context, builder, args[i])
                               for i in (0, 1, 4))  # fmt: skip
        word, lanes = ir.IntType(64), ir.VectorType(ir.FloatType(), 8)
        pool_width = builder.extract_value(pool.shape, 1)
        buffer_width = builder.extract_value(buffer.shape, 1)
        first, column = args[2], args[3]

        def at(data: Any, offset: Any) -> Any:
            return builder.bitcast(builder.gep(data, [offset]), lanes.as_pointer())

        def shuffle(a: Any, b: Any, mask: list[int]) -> Any:
            return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), 8), mask))

        vectors = []
        for j in range(8):
            row = builder.load(builder.gep(picks.data, [builder.add(first, ir.Constant(word, j))]))
            offset = builder.add(builder.mul(row, pool_width), column)
            vectors.append(builder.load(at(pool.data, offset), align=4))
        low, high = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
        pairs = [
            shuffle(vectors[p], vectors[p + 1], m) for p in range(0, 8, 2) for m in (low, high)
        ]
        even, odd = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
        quads = [shuffle(pairs[p], pairs[p + 2], m) for p in (0, 1, 4, 5) for m in (even, odd)]
        halves = ([0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15])
        for a in range(8):  # component a: quads a % 4 (vectors 0-3) and a % 4 + 4 (4-7)
            value = shuffle(quads[a % 4], quads[a % 4 + 4], halves[a // 4])
            offset = builder.add(builder.mul(builder.add(column, ir.Constant(word, a)),
                                             buffer_width), first)  # fmt: skip
            builder.store(value, at(buffer.data, offset), align=4)
        return context.get_dummy_value()

    return types.none(features, rows, types.int64, types.int64, xt), codegen


transpose8: Any = intrinsic(_transpose8_typing)
"""The intrinsic of :func:`_transpose8_typing` (compiled code only), which the generated
choosers of ``d >= 8`` gather with (:func:`scorer_source`).

Examples:
    >>> @njit
    ... def gather(features, rows, xt):
    ...     transpose8(features, rows, 0, 0, xt)
    >>> features = np.arange(80, dtype=np.float32).reshape(10, 8)
    >>> xt = np.zeros((8, 8), np.float32)
    >>> gather(features, np.arange(9, 1, -1), xt)
    >>> bool((xt == features[np.arange(9, 1, -1)].T).all())
    True
"""


#: The signature of a set chooser (:func:`set_scorer`): ``(features, rows, inv, theta,
#: beta, xt, out) -> k``: the pool ``(P, d)`` (float32) and the set's rows ``(K,)``, the
#: statistics (float64), a float32 ``(d, K')`` buffer for the set transposed and ``K'``
#: scores (``K' >= K``, :class:`SetScratch` rounds it up to 16).
SCORER_SIGNATURE = types.int64(
    types.float32[:, ::1],
    types.int64[::1],
    types.float64[:, ::1],
    types.float64[::1],
    types.float64,
    types.float32[:, ::1],
    types.float32[::1],
)
#: Up to this ``d`` the chooser is generated straight-line code (:func:`set_scorer`);
#: above it, the loops of :func:`generic_choose` (compile time grows as ``d^2``: 0.3 s
#: at ``d = 10``, 3 s at ``d = 32``, 30 s at ``d = 64``, measured on 2 shared cores).
UNROLLED_MAX_DIM = 32


def scorer_source(dim: int) -> str:
    """The Python source of the straight-line chooser for dimension ``dim`` (what
    :func:`set_scorer` compiles), with no loop over ``d``: the gather of each vector into
    the transposed buffer ``xt`` (for ``d >= 8`` eight vectors at a time by
    :data:`transpose8`, the set's last ``n % 8`` and any ``d < 8`` by ``d`` named copies
    a vector), the coefficients as
    named float32 scalars (``c_ab`` the upper triangle of ``V^-1`` with the diagonal
    halved, ``t_a = theta_a``), a loop over the set computing ``y_a = sum_{b >= a} c_ab
    x_b``, ``q = sum_a x_a y_a`` (so ``2 q = x^T V^-1 x``), ``m = sum_a t_a x_a`` and the
    score ``m + beta sqrt(2 q)``, then the first argmax. The compiler keeps the scalars
    in registers and runs the scoring loop over 16 vectors at once (AVX-512) or 8
    (AVX2). Measured at ``d = 10, K = 100`` against the same sums in loops over ``a``
    and ``b`` (:func:`generic_choose`): 1.6x faster.

    Examples:
        >>> print(scorer_source(2))  # doctest: +NORMALIZE_WHITESPACE
        def choose(features, rows, inv, theta, beta, xt, out):
            n = rows.shape[0]
            for k in range(n):
                r = rows[k]
                xt[0, k] = features[r, 0]
                xt[1, k] = features[r, 1]
            c0_0 = np.float32(0.5 * inv[0, 0])
            c0_1 = np.float32(inv[0, 1])
            c1_1 = np.float32(0.5 * inv[1, 1])
            t0 = np.float32(theta[0])
            t1 = np.float32(theta[1])
            bb = np.float32(beta)
            zero = np.float32(0.0)
            for k in range(xt.shape[1]):
                x0 = xt[0, k]
                x1 = xt[1, k]
                y0 = c0_0 * x0 + c0_1 * x1
                y1 = c1_1 * x1
                q = x0 * y0 + x1 * y1
                m = t0 * x0 + t1 * x1
                out[k] = m + bb * np.sqrt(max(q + q, zero))
            k_best, best = 0, out[0]
            for k in range(1, n):
                if out[k] > best:
                    k_best, best = k, out[k]
            return k_best
    """
    d = range(dim)
    lines = ["def choose(features, rows, inv, theta, beta, xt, out):", "    n = rows.shape[0]"]
    first = ""
    if dim >= 8:  # eight vectors at a time by transpose8, blocks of 8 components
        columns = sorted({*range(0, dim - 7, 8), dim - 8})  # the last block may overlap
        lines += ["    first = n - n % 8", "    for k in range(0, first, 8):"]
        lines += [f"        transpose8(features, rows, k, {c}, xt)" for c in columns]
        first = "first, "
    lines += [
        f"    for k in range({first}n):",
        "        r = rows[k]",
        *(f"        xt[{a}, k] = features[r, {a}]" for a in d),
    ]
    for a in d:
        lines.append(f"    c{a}_{a} = np.float32(0.5 * inv[{a}, {a}])")
        lines += [f"    c{a}_{b} = np.float32(inv[{a}, {b}])" for b in range(a + 1, dim)]
    lines += [f"    t{a} = np.float32(theta[{a}])" for a in d]
    lines += ["    bb = np.float32(beta)", "    zero = np.float32(0.0)"]
    lines += ["    for k in range(xt.shape[1]):", *(f"        x{a} = xt[{a}, k]" for a in d)]
    for a in d:
        lines.append(f"        y{a} = " + " + ".join(f"c{a}_{b} * x{b}" for b in range(a, dim)))
    lines.append("        q = " + " + ".join(f"x{a} * y{a}" for a in d))
    lines.append("        m = " + " + ".join(f"t{a} * x{a}" for a in d))
    lines += [
        "        out[k] = m + bb * np.sqrt(max(q + q, zero))",
        "    k_best, best = 0, out[0]",
        "    for k in range(1, n):",
        "        if out[k] > best:",
        "            k_best, best = k, out[k]",
        "    return k_best",
    ]
    return "\n".join(lines) + "\n"


def generic_choose(
    features: Float32Array,
    rows: IntArray,
    inv: FloatArray,
    theta: FloatArray,
    beta: float,
    xt: Float32Array,
    out: Float32Array,
) -> int:  # pragma: no cover
    """The chooser for any ``d`` (:func:`generic_scorer` compiles it; :func:`set_scorer`
    uses it above ``UNROLLED_MAX_DIM``): the same sums as :func:`scorer_source`'s, in
    loops over ``a`` and ``b`` that run over the set at once (``y`` kept in memory).

    Examples:
        >>> x = np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
        >>> xt, out = np.zeros((2, 16), np.float32), np.zeros(16, np.float32)
        >>> generic_choose(x, np.arange(2), np.eye(2), np.zeros(2), 1.0, xt, out)
        1
    """
    d, n, width = features.shape[1], rows.shape[0], xt.shape[1]
    for k in range(n):
        r = rows[k]
        for a in range(d):
            xt[a, k] = features[r, a]
    y, q = np.empty(width, dtype=np.float32), np.zeros(width, dtype=np.float32)
    m = np.zeros(width, dtype=np.float32)
    for a in range(d):
        c = np.float32(0.5 * inv[a, a])
        for k in range(width):
            y[k] = c * xt[a, k]
        for b in range(a + 1, d):
            c = np.float32(inv[a, b])
            for k in range(width):
                y[k] += c * xt[b, k]
        for k in range(width):
            q[k] += xt[a, k] * y[k]
    for a in range(d):
        t = np.float32(theta[a])
        for k in range(width):
            m[k] += t * xt[a, k]
    bb, zero = np.float32(beta), np.float32(0.0)
    for k in range(width):
        out[k] = m[k] + bb * np.sqrt(max(q[k] + q[k], zero))
    k_best, best = 0, out[0]
    for k in range(1, n):
        if out[k] > best:
            k_best, best = k, out[k]
    return k_best


@functools.cache
def generic_scorer() -> Any:
    """:func:`generic_choose` compiled as a chooser callback (on first use, not at import;
    cached on disk).

    Examples:
        >>> x = np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
        >>> ucb_choice(generic_scorer(), x, np.arange(2), np.eye(2), np.zeros(2), 1.0,
        ...            new_scratch(2, 2))
        1
    """
    return cfunc(SCORER_SIGNATURE, cache=True, nogil=True, fastmath={"contract"})(generic_choose)


@functools.cache
def set_scorer(dim: int) -> Any:
    """The compiled chooser over decision sets of dimension ``dim`` (a C callback of
    :data:`SCORER_SIGNATURE` that :func:`ucb_choice` calls through its address):
    :func:`scorer_source`'s straight-line code up to ``UNROLLED_MAX_DIM``,
    :func:`generic_scorer` above. Compiled once per ``dim`` (0.3 s at ``d = 10``, 30 s
    at 32) and cached on disk: the generated source is written to a file
    (:func:`~fedbandit_env.core.caching.generated_module`) and imported as a module of its
    own, so numba can stamp it.

    Examples:
        >>> set_scorer(3) is set_scorer(3), set_scorer(99) is generic_scorer()
        (True, True)
    """
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim!r}")
    if dim > UNROLLED_MAX_DIM:
        return generic_scorer()
    source = scorer_source(dim)
    # A module of its own, from a file: numba caches only a function that has one (the
    # salt: this module, where transpose8 lives)
    module = generated_module(
        "scorers", f"set_scorer_d{dim}", SCORER_PRELUDE + source, Path(__file__).read_bytes()
    )
    if module is None:  # no folder to write in: compiled in each process
        namespace: dict[str, Any] = {"np": np, "transpose8": transpose8}
        exec(compile(source, f"<set_scorer d={dim}>", "exec"), namespace)
        return cfunc(SCORER_SIGNATURE, nogil=True, fastmath={"contract"})(namespace["choose"])
    return cfunc(SCORER_SIGNATURE, cache=True, nogil=True, fastmath={"contract"})(module.choose)


SCORER_PRELUDE = "import numpy as np\n\nfrom baselines.linear.kernels import transpose8\n\n\n"
"""What a generated chooser's file imports (:func:`set_scorer`)."""


class SetScratch(NamedTuple):
    """:func:`ucb_choice`'s float32 buffers: the set transposed ``(d, K')`` and the
    scores ``(K',)``, ``K'`` the set size rounded up to 16 (the scoring loop then runs
    in whole vectors).

    Examples:
        >>> s = SetScratch.of(dim=3, set_size=5)
        >>> s.xt.shape, s.scores.shape
        ((3, 16), (16,))
    """

    xt: Float32Array
    scores: Float32Array

    @classmethod
    def of(cls, dim: int, set_size: int) -> SetScratch:
        """Buffers for sets of ``set_size`` vectors of dimension ``dim``
        (:func:`new_scratch`)."""
        return cls(*new_scratch(dim, set_size))


@njit(cache=True, nogil=True)
def new_scratch(dim: int, set_size: int) -> SetScratch:  # pragma: no cover
    """A :class:`SetScratch` for sets of ``set_size`` vectors of dimension ``dim``, the set
    size rounded up to 16 (callable from the compiled loops, unlike ``SetScratch.of``).

    Examples:
        >>> new_scratch(3, 17).xt.shape
        (3, 32)
    """
    width = -(-set_size // 16) * 16
    return SetScratch(np.zeros((dim, width), np.float32), np.zeros(width, np.float32))


@njit(cache=True, nogil=True)
def ucb_choice(
    scorer: Any,
    features: Float32Array,
    rows: IntArray,
    inv: FloatArray,
    theta: FloatArray,
    beta: float,
    scratch: SetScratch,
) -> int:  # pragma: no cover
    """Position ``k`` of ``argmax_k <theta, x_k> + beta sqrt(x_k^T inv x_k)`` over the
    decision set ``x_k = features[rows[k]]`` (the first on ties); ``scorer`` is
    :func:`set_scorer`'s for ``d``, ``features`` the pool in float32.

    ``inv`` is symmetric, so only its upper triangle is read (``d (d + 1) / 2``
    products a vector). *Reading*: the scores are float32 while the statistics
    (``V^-1``, ``theta``, ``beta``) stay float64; a choice differs from float64 scores
    only where two scores agree to about 1e-7 relative, and the regret is unchanged
    (measured in ``tests/families/linear/test_linear_batched.py`` against the float64
    batched NumPy implementation). Both paths call this function and the scorer is one
    compiled callback, so every choice is the same bit for bit on both.

    Examples:
        >>> x = np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
        >>> scratch = new_scratch(2, 2)
        >>> ucb_choice(set_scorer(2), x, np.arange(2), np.eye(2), np.zeros(2), 1.0, scratch)
        1
    """
    return scorer(features, rows, inv, theta, beta, scratch.xt, scratch.scores)


@njit(cache=True, nogil=True, inline="always")
def clip_norm(x: FloatArray, bound: float, out: FloatArray) -> FloatArray:  # pragma: no cover
    """``out = x`` scaled down to norm ``bound`` if it is longer (a sequential sum, the
    same bits on both paths).

    Examples:
        >>> clip_norm(np.array([3.0, 4.0]), 1.0, np.empty(2)).round(6).tolist()
        [0.6, 0.8]
    """
    sq = 0.0
    for a in range(x.shape[0]):
        sq += x[a] * x[a]
    norm = math.sqrt(sq)
    scale = bound / norm if norm > bound else 1.0
    for a in range(x.shape[0]):
        out[a] = x[a] * scale
    return out


@njit(cache=True, nogil=True, inline="always")
def mat_vec(a: FloatArray, v: FloatArray, out: FloatArray) -> FloatArray:  # pragma: no cover
    """``out = a @ v`` (row by row, in a fixed order).

    Examples:
        >>> mat_vec(np.eye(2) * 2, np.array([1.0, 3.0]), np.empty(2)).tolist()
        [2.0, 6.0]
    """
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * v[j]
        out[i] = s
    return out


#: Up to this ``d`` the vector steps' statistics (:func:`rank_one_fixed`,
#: :func:`mat_vec_fixed`) are straight-line code; above it, the loops of
#: :func:`rank_one_update` and :func:`mat_vec` (the code grows as ``d^2``).
UNROLLED_STATISTICS_MAX_DIM = 16


def dimension_marker(dim: int) -> tuple[int, ...]:
    """The context dimension ``dim`` as a value whose numba type holds it: a tuple of
    ``dim`` zeros (a tuple's length is part of its type), or ``()`` above
    :data:`UNROLLED_STATISTICS_MAX_DIM`. A compiled step that carries it in its state and
    hands it to :func:`rank_one_fixed`, :func:`mat_vec_fixed` and :func:`add_outer_fixed`
    compiles once per ``dim``, its statistics unrolled (the vector steps of
    :mod:`baselines.linear.vector` and :mod:`baselines.linear.dec_vector`).

    Examples:
        >>> dimension_marker(3), dimension_marker(UNROLLED_STATISTICS_MAX_DIM + 1)
        ((0, 0, 0), ())
    """
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim!r}")
    return (0,) * dim if dim <= UNROLLED_STATISTICS_MAX_DIM else ()


def statistics_source(dim: int) -> str:
    """The Python source of :func:`rank_one_update` and :func:`mat_vec` written out for
    dimension ``dim``, and of FedUCB's leaf update ``m += z z^T`` for ``z = [x, y]`` of
    length ``dim + 1`` (what :func:`rank_one_fixed`, :func:`mat_vec_fixed` and
    :func:`add_outer_fixed` compile):
    no loop, the ``d`` sums of the product ``V^-1 x`` (``s_a``) kept as named scalars and
    built together, term ``b`` of every sum after term ``b - 1`` of every sum. Each sum
    adds the same products in the same order from the same ``0.0`` as the loops, and the
    rank-one step subtracts the same products, so the results are the loops' to the bit
    (``tests/families/linear/test_linear.py``); the compiler keeps the sums in registers
    and runs them side by side, where each sum of the loops waits on its last addition.
    Measured at ``d = 10`` (a rank-one update and a product, an agent-step's
    statistics): about 106 ns with the loops, 64 ns written out. The leaf's entries are
    each one product added, in any order the same.

    Examples:
        >>> print(statistics_source(2))  # doctest: +NORMALIZE_WHITESPACE
        def rank_one(inv, x, work):
            x0 = x[0]
            x1 = x[1]
            s0 = 0.0
            s1 = 0.0
            s0 += inv[0, 0] * x0
            s1 += inv[1, 0] * x0
            s0 += inv[0, 1] * x1
            s1 += inv[1, 1] * x1
            work[0] = s0
            work[1] = s1
            q = 0.0
            q += x0 * s0
            q += x1 * s1
            c = 1.0 / (1.0 + q)
            w0 = c * s0
            w1 = c * s1
            inv[0, 0] -= w0 * s0
            inv[0, 1] -= w0 * s1
            inv[1, 0] -= w1 * s0
            inv[1, 1] -= w1 * s1
            return math.log1p(q)
        <BLANKLINE>
        def mat_vec(a, v, out):
            v0 = v[0]
            v1 = v[1]
            s0 = 0.0
            s1 = 0.0
            s0 += a[0, 0] * v0
            s1 += a[1, 0] * v0
            s0 += a[0, 1] * v1
            s1 += a[1, 1] * v1
            out[0] = s0
            out[1] = s1
            return out
        <BLANKLINE>
        def add_outer(m, z):
            z0 = z[0]
            z1 = z[1]
            z2 = z[2]
            m[0, 0] += z0 * z0
            m[0, 1] += z0 * z1
            m[0, 2] += z0 * z2
            m[1, 0] += z1 * z0
            m[1, 1] += z1 * z1
            m[1, 2] += z1 * z2
            m[2, 0] += z2 * z0
            m[2, 1] += z2 * z1
            m[2, 2] += z2 * z2
    """
    d = range(dim)

    def sums(matrix: str, vector: str) -> list[str]:
        lines = [f"    {vector}{b} = {vector}[{b}]" for b in d]
        lines += [f"    s{a} = 0.0" for a in d]
        for b in d:
            lines += [f"    s{a} += {matrix}[{a}, {b}] * {vector}{b}" for a in d]
        return lines

    lines = ["def rank_one(inv, x, work):", *sums("inv", "x")]
    lines += [f"    work[{a}] = s{a}" for a in d]
    lines += ["    q = 0.0", *(f"    q += x{a} * s{a}" for a in d), "    c = 1.0 / (1.0 + q)"]
    lines += [f"    w{a} = c * s{a}" for a in d]
    for a in d:
        lines += [f"    inv[{a}, {b}] -= w{a} * s{b}" for b in d]
    lines += ["    return math.log1p(q)", "", "", "def mat_vec(a, v, out):", *sums("a", "v")]
    lines += [*(f"    out[{a}] = s{a}" for a in d), "    return out", "", ""]
    e = range(dim + 1)
    lines += ["def add_outer(m, z):", *(f"    z{a} = z[{a}]" for a in e)]
    for a in e:
        lines += [f"    m[{a}, {c}] += z{a} * z{c}" for c in e]
    return "\n".join(lines) + "\n"


@functools.cache
def _statistics(dim: int) -> tuple[Any, ...]:
    """:func:`statistics_source`'s three functions for ``dim``, compiled inline where
    they are called (by the overloads of :func:`rank_one_fixed`, :func:`mat_vec_fixed`
    and :func:`add_outer_fixed`)."""
    namespace: dict[str, Any] = {"math": math}
    exec(compile(statistics_source(dim), f"<statistics d={dim}>", "exec"), namespace)
    inline = njit(nogil=True, inline="always")
    return tuple(inline(namespace[name]) for name in ("rank_one", "mat_vec", "add_outer"))


def rank_one_fixed(
    inv: FloatArray, x: FloatArray, work: FloatArray, marker: tuple[int, ...]
) -> float:  # pragma: no cover
    """:func:`rank_one_update` (the same numbers, to the bit) unrolled for the dimension
    that ``marker`` (:func:`dimension_marker`) holds: compiled code only, inlined where
    it is called; ``inv``, ``x`` and ``work`` must be of that dimension.

    Examples:
        >>> @njit
        ... def update(inv, x, work, marker):
        ...     return rank_one_fixed(inv, x, work, marker)
        >>> inv = np.eye(2) / 2.0
        >>> inc = update(inv, np.array([1.0, 0.0]), np.empty(2), dimension_marker(2))
        >>> np.allclose(inv, np.linalg.inv(np.diag([3.0, 2.0]))), round(inc, 6)
        (True, 0.405465)
    """
    raise NotImplementedError("rank_one_fixed runs in compiled code only")


def mat_vec_fixed(
    a: FloatArray, v: FloatArray, out: FloatArray, marker: tuple[int, ...]
) -> FloatArray:  # pragma: no cover
    """:func:`mat_vec` (the same numbers, to the bit) unrolled for the dimension that
    ``marker`` (:func:`dimension_marker`) holds: compiled code only, inlined where it is
    called; ``a``, ``v`` and ``out`` must be of that dimension.

    Examples:
        >>> @njit
        ... def product(a, v, out, marker):
        ...     return mat_vec_fixed(a, v, out, marker)
        >>> product(np.eye(2) * 2, np.array([1.0, 3.0]), np.empty(2), dimension_marker(2)).tolist()
        [2.0, 6.0]
    """
    raise NotImplementedError("mat_vec_fixed runs in compiled code only")


def add_outer_fixed(
    m: FloatArray, z: FloatArray, marker: tuple[int, ...]
) -> None:  # pragma: no cover
    """``m += z z^T`` for ``z`` of length ``d + 1`` (``d`` the dimension that ``marker``
    holds, :func:`dimension_marker`): FedUCB's leaf ``[x y]^T [x y]`` added to, unrolled
    (each entry one product added, as the loops add it); compiled code only, inlined.

    Examples:
        >>> @njit
        ... def add(m, z, marker):
        ...     add_outer_fixed(m, z, marker)
        >>> m = np.ones((3, 3))
        >>> add(m, np.array([1.0, 2.0, 3.0]), dimension_marker(2))
        >>> m[1].tolist()
        [3.0, 5.0, 7.0]
    """
    raise NotImplementedError("add_outer_fixed runs in compiled code only")


@overload(rank_one_fixed, inline="always")
def _overload_rank_one_fixed(inv: Any, x: Any, work: Any, marker: Any) -> Any:
    if len(marker) == 0:  # above the unrolled sizes: the loops

        def loops(inv: Any, x: Any, work: Any, marker: Any) -> float:
            return rank_one_update(inv, x, work)

        return loops
    unrolled = _statistics(len(marker))[0]

    def written_out(inv: Any, x: Any, work: Any, marker: Any) -> float:
        return unrolled(inv, x, work)

    return written_out


@overload(mat_vec_fixed, inline="always")
def _overload_mat_vec_fixed(a: Any, v: Any, out: Any, marker: Any) -> Any:
    if len(marker) == 0:

        def loops(a: Any, v: Any, out: Any, marker: Any) -> FloatArray:
            return mat_vec(a, v, out)

        return loops
    unrolled = _statistics(len(marker))[1]

    def written_out(a: Any, v: Any, out: Any, marker: Any) -> FloatArray:
        return unrolled(a, v, out)

    return written_out


@njit(cache=True, nogil=True, inline="always")
def confidence_width(
    sigma: float,
    alpha: float,
    log_det: float,
    dim: int,
    n_agents: int,
    rho_min: float,
    rho_max: float,
    kappa: float,
    norm_bound: float,
) -> float:  # pragma: no cover
    """``beta`` of Proposition 2, completed as
    ``sigma sqrt(2 log(2/alpha) + log det V - d log(M rho_min)) + S sqrt(M rho_max) + M kappa``
    (our copy is cut after ``+ S``; this is the completion of Shariff & Sheffet's
    Proposition 4 that the paper extends; with ``M = 1``, ``rho_min = rho_max = lambda``
    and ``kappa = 0`` it is OFUL's radius, Abbasi-Yadkori et al. 2011, Thm 2).

    Examples:
        >>> round(confidence_width(0.5, 0.1, 0.0, 2, 1, 1.0, 1.0, 0.0, 1.0), 4)
        2.2239
    """
    inner = 2.0 * math.log(2.0 / alpha) + log_det - dim * math.log(n_agents * rho_min)
    return (
        sigma * math.sqrt(max(inner, 0.0))
        + norm_bound * math.sqrt(n_agents * rho_max)
        + n_agents * kappa
    )


@njit(cache=True, nogil=True)
def spd_inverse(a: FloatArray, out: FloatArray) -> float:  # pragma: no cover
    """``out = a^-1`` of a symmetric positive definite ``a`` by Cholesky; returns
    ``log det a`` (``-inf`` and ``out`` untouched if ``a`` is not positive definite).

    Examples:
        >>> out = np.empty((2, 2))
        >>> round(spd_inverse(np.array([[4.0, 2.0], [2.0, 3.0]]), out), 6), out.round(3).tolist()
        (2.079442, [[0.375, -0.25], [-0.25, 0.5]])
    """
    d = a.shape[0]
    low = np.zeros((d, d))
    log_det = 0.0
    for j in range(d):
        s = a[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        if s <= 0.0:
            return -np.inf
        low[j, j] = math.sqrt(s)
        log_det += 2.0 * math.log(low[j, j])
        for i in range(j + 1, d):
            s = a[i, j]
            for k in range(j):
                s -= low[i, k] * low[j, k]
            low[i, j] = s / low[j, j]
    inv_low = np.zeros((d, d))  # L^-1 by forward substitution
    for j in range(d):
        inv_low[j, j] = 1.0 / low[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for k in range(j, i):
                s -= low[i, k] * inv_low[k, j]
            inv_low[i, j] = s / low[i, i]
    for i in range(d):  # a^-1 = L^-T L^-1
        for j in range(i, d):
            s = 0.0
            for k in range(j, d):
                s += inv_low[k, i] * inv_low[k, j]
            out[i, j] = s
            out[j, i] = s
    return log_det


@njit(cache=True, nogil=True)
def lowest_level(r: int) -> int:  # pragma: no cover
    """Level of the tree node completed at round ``r`` (the lowest set bit of ``r``).

    Examples:
        >>> [lowest_level(r) for r in (1, 2, 3, 4, 6)]
        [0, 1, 0, 2, 1]
    """
    level = 0
    while (r >> level) & 1 == 0:
        level += 1
    return level


@njit(cache=True, nogil=True)
def symmetric_noise(
    raw: FloatArray, scale: float, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """``scale (N + N^T) / sqrt(2)`` of standard normal draws ``raw`` (Algorithm 2, line 6).

    Examples:
        >>> raw = np.array([[1.0, 2.0], [0.0, 1.0]])
        >>> symmetric_noise(raw, 1.0, np.empty((2, 2))).round(3).tolist()
        [[1.414, 1.414], [1.414, 1.414]]
    """
    n = raw.shape[0]
    root = math.sqrt(2.0)
    for a in range(n):
        for b in range(n):
            out[a, b] = scale * (raw[a, b] + raw[b, a]) / root
    return out


@njit(cache=True, nogil=True)
def draw_node_noise(
    bits: Any, scale: float, raw: FloatArray, out: FloatArray
) -> FloatArray:  # pragma: no cover
    """A tree node's noise (Algorithm 2, lines 5-6: :meth:`FedLinUCB._draw_noise
    <baselines.linear.FedLinUCB._draw_noise>`) into ``out``: ``e x e`` standard normals in
    C order from numba's bit generator ``bits`` (a Generator's ``bit_generator``, or a
    row of a generator table: :func:`~fedbandit_env.rng_kernels.bit_generator_at`), the
    numbers ``Generator.standard_normal((e, e))`` gives, into ``raw``, symmetrised by
    :func:`symmetric_noise`.

    Examples:
        >>> from numba import njit
        >>> @njit
        ... def draw(rng, out):
        ...     return draw_node_noise(rng.bit_generator, 1.0, np.empty((2, 2)), out)
        >>> mine = draw(np.random.default_rng(3), np.empty((2, 2)))
        >>> raw = np.random.default_rng(3).standard_normal((2, 2))
        >>> bool(np.allclose(mine, (raw + raw.T) / np.sqrt(2)))
        True
    """
    e = raw.shape[0]
    for a in range(e):
        for b in range(e):
            raw[a, b] = random_standard_normal(bits)
    return symmetric_noise(raw, scale, out)


@njit(cache=True, nogil=True)
def tree_release(
    acc: FloatArray,
    node: FloatArray,
    leaf: FloatArray,
    pending: FloatArray,
    r: int,
    out: FloatArray,
) -> FloatArray:  # pragma: no cover
    """What round ``r``'s release *would* be with ``leaf`` inserted (nothing changes):
    the node completed at round ``r`` (its open block plus ``leaf`` plus the ``pending``
    noise drawn for it) and the nodes of the higher set bits of ``r``. A tree of ``L``
    levels holds rounds ``1 .. 2^L - 1``; any other ``r`` raises ``IndexError`` (never an
    index past the arrays).

    ``acc[l]`` is the exact sum of the open block of level ``l``, ``node[l]`` the noisy
    sum of the last completed one (Chan et al.'s binary counter; Jain et al.'s Alg. 5).

    Examples:
        >>> acc, node = np.zeros((2, 1, 1)), np.zeros((2, 1, 1))
        >>> tree_release(acc, node, np.ones((1, 1)), np.zeros((1, 1)), 1, np.empty((1, 1))).tolist()
        [[1.0]]
    """
    levels, n, _ = acc.shape
    if r < 1 or r >= (1 << levels):
        raise IndexError("tree_release: round outside the tree's capacity 1 .. 2^levels - 1")
    top = lowest_level(r)
    for a in range(n):
        for b in range(n):
            out[a, b] = acc[top, a, b] + leaf[a, b] + pending[a, b]
    for lvl in range(top + 1, levels):
        if (r >> lvl) & 1:
            for a in range(n):
                for b in range(n):
                    out[a, b] += node[lvl, a, b]
    return out


@njit(cache=True, nogil=True)
def tree_commit(
    acc: FloatArray, node: FloatArray, leaf: FloatArray, pending: FloatArray, r: int
) -> None:  # pragma: no cover
    """Insert ``leaf`` as round ``r``: add it to every open block, close the block of
    level ``lowest_level(r)`` with the ``pending`` noise, reopen the levels below.
    Rounds outside ``1 .. 2^L - 1`` raise ``IndexError``, as :func:`tree_release`.

    Examples:
        >>> acc, node = np.zeros((2, 1, 1)), np.zeros((2, 1, 1))
        >>> tree_commit(acc, node, np.ones((1, 1)), np.full((1, 1), 0.5), 1)
        >>> node[:, 0, 0].tolist(), acc[:, 0, 0].tolist()
        ([1.5, 0.0], [0.0, 1.0])
    """
    levels, n, _ = acc.shape
    if r < 1 or r >= (1 << levels):
        raise IndexError("tree_commit: round outside the tree's capacity 1 .. 2^levels - 1")
    top = lowest_level(r)
    for lvl in range(levels):
        for a in range(n):
            for b in range(n):
                acc[lvl, a, b] += leaf[a, b]
    for a in range(n):
        for b in range(n):
            node[top, a, b] = acc[top, a, b] + pending[a, b]
    for lvl in range(top + 1):
        for a in range(n):
            for b in range(n):
                acc[lvl, a, b] = 0.0


@njit(cache=True, nogil=True)
def rebuild(
    own: FloatArray, others: FloatArray, lam: float, inv: FloatArray, vec: FloatArray
) -> float:  # pragma: no cover
    """Decentralized FedUCB's ``V = lambda I + own + sum_j others[j]`` (Gram blocks of the
    ``(d + 1) x (d + 1)`` statistics, summed in this order) into ``inv = V^-1`` and ``vec =
    u``; returns ``log det V`` (``-inf``, ``inv`` and ``vec`` untouched, if ``V`` is not
    positive definite: noise beyond its bound, or a forged statistic).

    Examples:
        >>> own, others = np.zeros((3, 3)), np.zeros((2, 3, 3))
        >>> own[0, 0], own[0, 2], others[1, 1, 1] = 1.0, 0.5, 3.0
        >>> inv, vec = np.empty((2, 2)), np.empty(2)
        >>> round(rebuild(own, others, 1.0, inv, vec), 6), vec.tolist()
        (2.079442, [0.5, 0.0])
        >>> others[0, 0, 0] = -9.0
        >>> rebuild(own, others, 1.0, inv, vec), vec.tolist()
        (-inf, [0.5, 0.0])
    """
    d = own.shape[0] - 1
    gram = np.zeros((d, d))
    u = np.zeros(d)
    for a in range(d):
        gram[a, a] = lam
    for a in range(d):
        u[a] = own[a, d]
        for b in range(d):
            gram[a, b] += own[a, b]
    for j in range(others.shape[0]):
        for a in range(d):
            u[a] += others[j, a, d]
            for b in range(d):
                gram[a, b] += others[j, a, b]
    log_det = spd_inverse(gram, inv)
    if log_det > -np.inf:
        vec[:] = u
    return log_det


@njit(cache=True, nogil=True)
def noise_prior(
    lam: float, heard: int, gram_bound: float, vec_bound: float, joint: bool
) -> tuple[float, float, float, float]:  # pragma: no cover
    """Decentralized private FedUCB's regulariser for an estimator holding ``heard``
    other agents' noisy statistics, each agent's noise bounded by ``gram_bound``
    (``Lambda``, operator norm) and ``vec_bound`` (``H``, the reward vector's norm):
    their sum is bounded by ``k Lambda`` and ``k H`` with ``k = heard`` (``"each"``) or
    ``k = sqrt(heard)`` (``joint``: one Gaussian). Returns ``(rho_min, rho_max, kappa,
    prior)``: ``V``'s prior ``lambda + 2 k Lambda`` (the shift that keeps it positive
    definite), the bounds ``lambda + k Lambda <= prior + noise <= lambda + 3 k Lambda``
    and ``kappa = k H / sqrt(rho_min) >= ||h||_{V^-1}``, the terms of
    :func:`confidence_width` with ``M = 1``. Without noise (``gram_bound = 0``) or
    before anything is heard: ``(lambda, lambda, 0, lambda)``, OFUL's.

    Examples:
        >>> noise_prior(1.0, 4, 2.0, 3.0, True)
        (5.0, 13.0, 2.6832815729997477, 9.0)
        >>> noise_prior(1.0, 0, 2.0, 3.0, True)
        (1.0, 1.0, 0.0, 1.0)
    """
    if heard == 0 or gram_bound == 0.0:
        return lam, lam, 0.0, lam
    k = math.sqrt(heard) if joint else float(heard)
    rho_min = lam + k * gram_bound
    return (
        rho_min,
        lam + 3.0 * k * gram_bound,
        k * vec_bound / math.sqrt(rho_min),
        lam + 2.0 * k * gram_bound,
    )


@overload(add_outer_fixed, inline="always")
def _overload_add_outer_fixed(m: Any, z: Any, marker: Any) -> Any:
    if len(marker) == 0:

        def loops(m: Any, z: Any, marker: Any) -> None:
            for a in range(z.shape[0]):
                for c in range(z.shape[0]):
                    m[a, c] += z[a] * z[c]

        return loops
    unrolled = _statistics(len(marker))[2]

    def written_out(m: Any, z: Any, marker: Any) -> None:
        unrolled(m, z)

    return written_out
