"""Local LinUCB, the pooled linear oracle and centralized FedUCB as vector policies:
every agent of ``B`` linear envs in one compiled step.

These are the fast paths of ``lin_ucb``, ``pooled_lin_ucb`` (:class:`LinUCBVector`)
and ``fedlin_ucb``, ``fedlin_ucb_fixed``, ``fedlin_ucb_dp``, ``private_fedlin_ucb``
(:class:`FedLinUCBVector`; issue 62: a family's fast path is a compiled step over the
vector env, not a trial loop of its own): the core's rollout (:meth:`LinearCore.rollout
<fedbandit_env.core.linear.LinearCore.rollout>`, which routes Synchronize's rounds for
FedUCB) calls :func:`lin_ucb_step` or :func:`fedlin_ucb_step` once a step for every env,
and ``act`` calls the same function on the vector env's observations. Each agent keeps
the per-agent policy's statistics (``V^-1``, ``log det V``, ``u = sum y x``; FedUCB's
``S``, ``W^-1``, its leaf and tree) as ``(B, N, ..)`` arrays and calls the same kernels
(:mod:`baselines.linear.kernels`: the rank-one update, ``theta``, the width, the
compiled set scorer, the tree), draws its tree noise from the generator the per-agent
policy draws from, so a trial is the per-agent team's to the bit
(``tests/families/linear/test_linear_vector.py``, ``tests/runner/test_replay.py``).
The per-agent classes stay for use in any PettingZoo loop.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.linear.kernels import (
    add_outer_fixed,
    clip_norm,
    confidence_width,
    dimension_marker,
    draw_node_noise,
    mat_vec_fixed,
    new_scratch,
    rank_one_fixed,
    set_scorer,
    spd_inverse,
    tree_commit,
    tree_release,
)
from baselines.linear.policies import FedLinUCB, LinUCB, TreePrivateLinUCB, linear_message_dim
from fedbandit_env.policies import AgentSpec, Requirements
from fedbandit_env.privacy.mechanisms import noise_generator
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.rng_kernels import bit_generator_at, generator_table
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray
from fedbandit_env.vector.policy import (
    CompiledAct,
    VectorObs,
    VectorPolicy,
    VectorSpec,
    agent_generators,
)


@njit(cache=True, nogil=True)
def lin_ucb_step(
    last: IntArray,
    seen: Float32Array,
    t: int,
    pools: Float32Array,
    pool_of: IntArray,
    sets: IntArray,
    pooled: bool,
    lam: float,
    sigma: float,
    alpha: float,
    norm_bound: float,
    fixed_beta: float,
    inv: FloatArray,
    log_det: FloatArray,
    u: FloatArray,
    last_x: FloatArray,
    work: FloatArray,
    theta: FloatArray,
    marker: tuple[int, ...],
    scorer: Any,
    xt: Float32Array,
    scores: Float32Array,
    arms: IntArray,
) -> None:  # pragma: no cover
    """One step of LinUCB for every agent of ``B`` envs (``pooled``: of the pooled oracle).

    Agent ``i`` of env ``b`` first adds its last pair (``last_x[b, i]``, the float32
    reward ``seen[b, i]``) to its statistics (``inv``: ``V^-1`` ``(B, N, d, d)``,
    ``log_det`` ``(B, N)``, ``u`` ``(B, N, d)``; :meth:`LinUCB.observe
    <baselines.linear.LinUCB.observe>`), then chooses ``argmax <theta, x> + beta
    ||x||_{V^-1}`` over its set ``pools[pool_of[b]][sets[b, i]]`` with ``theta = V^-1
    u`` and OFUL's ``beta`` (or ``fixed_beta`` where it is ``>= 0``), as
    :meth:`LinUCB.act <baselines.linear.LinUCB.act>`; the chosen vector (float64 of
    the float32 context) becomes its next pair. Pooled
    (:class:`~baselines.linear.PooledLinUCB`), env ``b`` keeps one learner in slot 0:
    every agent's pair goes in, in agent order, before anyone chooses. Nothing is
    observed at ``t = 0``. ``last`` is not read (the chosen vectors are kept).
    ``marker``: :func:`~baselines.linear.kernels.dimension_marker` of ``d``, so the
    statistics (:func:`~baselines.linear.kernels.rank_one_fixed`,
    :func:`~baselines.linear.kernels.mat_vec_fixed`) are written out for ``d``.

    Examples:
        >>> from baselines.linear.kernels import dimension_marker, new_scratch, set_scorer
        >>> pools = np.array([[[1.0, 0.0], [0.0, 1.0]]], np.float32)
        >>> inv, u = np.eye(2)[None, None].copy(), np.zeros((1, 1, 2))
        >>> xt, scores = new_scratch(2, 2)
        >>> arms = np.zeros((1, 1), np.int64)
        >>> lin_ucb_step(arms, np.zeros((1, 1), np.float32), 0, pools, np.zeros(1, np.int64),
        ...              np.array([[[0, 1]]]), False, 1.0, 0.5, 0.1, 1.0, -1.0, inv,
        ...              np.zeros((1, 1)), u, np.zeros((1, 1, 2)), np.zeros(2), np.zeros(2),
        ...              dimension_marker(2), set_scorer(2), xt, scores, arms)
        >>> arms.tolist()  # equal widths: the first
        [[0]]
    """
    n_envs, n = arms.shape
    d = inv.shape[3]
    for b in range(n_envs):
        pool = pools[pool_of[b]]
        if pooled and t > 0:  # every agent's pair into the one learner, in agent order
            for i in range(n):
                log_det[b, 0] += rank_one_fixed(inv[b, 0], last_x[b, i], work, marker)
                y = float(seen[b, i])
                for a in range(d):
                    u[b, 0, a] += y * last_x[b, i, a]
        for i in range(n):
            j = 0 if pooled else i  # whose statistics agent i chooses with
            if t > 0 and not pooled:
                log_det[b, i] += rank_one_fixed(inv[b, i], last_x[b, i], work, marker)
                y = float(seen[b, i])
                for a in range(d):
                    u[b, i, a] += y * last_x[b, i, a]
            mat_vec_fixed(inv[b, j], u[b, j], theta, marker)
            if fixed_beta >= 0.0:
                beta = fixed_beta
            else:
                beta = confidence_width(sigma, alpha, log_det[b, j], d, 1, lam, lam, 0.0,
                                        norm_bound)  # fmt: skip
            k = scorer(pool, sets[b, i], inv[b, j], theta, beta, xt, scores)
            arms[b, i] = k
            row = sets[b, i, k]
            for a in range(d):
                last_x[b, i, a] = pool[row, a]


def observed(observations: VectorObs) -> tuple[Float32Array, int, Float32Array, IntArray]:
    """The observations of a linear vector env as a linear step reads them: every env's
    agents' sets as one float32 pool ``(B, N K, d)`` (agent ``i``'s vectors at rows ``i K
    .. i K + K - 1``), the step, the float32 rewards ``(B, N)`` and the last arms ``(B,
    N)``.

    Examples:
        >>> obs = {"contexts": np.zeros((2, 3, 4, 5)), "step": np.full((2, 3, 1), 7.0),
        ...        "reward": np.zeros((2, 3, 1)), "arm": np.zeros((2, 3), np.int64)}
        >>> pools, t, seen, last = observed(obs)
        >>> pools.shape, t, seen.dtype.name
        ((2, 12, 5), 7, 'float32')
    """
    contexts = np.asarray(observations["contexts"])
    b, n, k, d = contexts.shape
    pools = np.ascontiguousarray(contexts, dtype=np.float32).reshape(b, n * k, d)
    t = int(np.asarray(observations["step"]).reshape(-1)[0])
    seen = np.ascontiguousarray(np.asarray(observations["reward"])[..., 0], np.float32)
    last = np.ascontiguousarray(observations["arm"], dtype=np.int64)
    return pools, t, seen, last


class LinUCBVector(VectorPolicy):
    """OFUL on every agent's own data (:class:`~baselines.linear.LinUCB`), or with
    ``pooled`` one OFUL per env on every agent's data, each agent choosing from its own
    set (:class:`~baselines.linear.PooledLinUCB`, the linear pooled reference).

    Args:
        pooled: One learner per env fed every agent's pair (the pooled oracle).
        **kwargs: :class:`~baselines.linear.LinUCB`'s options (``regularizer``,
            ``sigma``, ``alpha``, ``norm_bound``, ``beta``), checked there.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> from fedbandit_env.vector import FederatedLinearVecEnv
        >>> venv = FederatedLinearVecEnv(dubey_synthetic(3, dim=2, seed=0), horizon=20,
        ...                              num_envs=2)
        >>> obs, _ = venv.reset(seed=0)
        >>> agents = tuple(AgentSpec(i, 3, venv.n_arms, 20, context_dim=2) for i in range(3))
        >>> policy = LinUCBVector()
        >>> policy.reset(VectorSpec(2, agents), [])
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages is None
        ((2, 3), True)
    """

    name = "lin_ucb"

    def __init__(self, pooled: bool = False, **kwargs: Any) -> None:
        self.options = LinUCB(**kwargs)  # checks the options; holds them
        self.pooled = bool(pooled)
        if self.pooled:
            self.name = "pooled_lin_ucb"

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Every agent's ``V = lambda I``, ``u = 0`` (LinUCB draws nothing: ``rngs`` is
        not read)."""
        d = spec.agents[0].context_dim
        if d < 1:
            raise ValueError("LinUCB needs a linear env (observations with 'contexts')")
        if spec.message_dim:
            raise ValueError("LinUCB says nothing: it plays envs without messages")
        b, n, k = spec.num_envs, spec.n_agents, spec.n_arms
        lam = self.options.regularizer
        self.dim = d
        self.inv = np.zeros((b, n, d, d))
        self.inv[..., np.arange(d), np.arange(d)] = 1.0 / lam
        self.log_det = np.full((b, n), d * math.log(lam))
        self.u, self.last_x = np.zeros((b, n, d)), np.zeros((b, n, d))
        self._work, self._theta = np.zeros(d), np.zeros(d)
        self._scorer, self._marker = set_scorer(d), dimension_marker(d)
        self._xt, self._scores = new_scratch(d, k)
        # act's view of the observations: env b's pool is its agents' sets one after
        # the other, agent i's vectors at rows i K .. i K + K - 1
        self._rows = np.tile(np.arange(n * k, dtype=np.int64).reshape(1, n, k), (b, 1, 1))
        self._envs = np.arange(b, dtype=np.int64)

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Add the last pair, then choose by the OFUL index (:func:`lin_ucb_step` on the
        observations' ``contexts``)."""
        pools, t, seen, last = observed(observations)
        b, n = last.shape
        step, state = self.kernel()
        arms = np.empty((b, n), dtype=np.int64)
        step(last, seen, t, pools, self._envs, self._rows, *state, arms)
        return arms, None

    def kernel(self) -> CompiledAct:
        """:func:`lin_ucb_step` and its statistics (the step a linear rollout plays)."""
        o = self.options
        fixed = -1.0 if o.beta is None else float(o.beta)
        state = (self.pooled, o.regularizer, o.sigma, o.alpha, o.norm_bound, fixed, self.inv,
                 self.log_det, self.u, self.last_x, self._work, self._theta, self._marker,
                 self._scorer, self._xt, self._scores)  # fmt: skip
        return lin_ucb_step, state


class LinearConstants(NamedTuple):
    """FedUCB's numbers, read from a reset :class:`~baselines.linear.FedLinUCB` (module
    docstring of :mod:`baselines.linear.policies`): the noise's sub-Gaussian ``sigma``,
    ``alpha``, the norm bound ``S``, a fixed width (``-1``: Proposition 2's), the sync
    threshold ``D``, ``rho_min``, ``rho_max``, the release's shift, ``kappa``, ``M
    (rho_max - rho_min)``, the noise's std, the feature bound ``L`` and ``M``."""

    sigma: float
    alpha: float
    norm_bound: float
    fixed_beta: float
    threshold: float
    rho_min: float
    rho_max: float
    shift: float
    kappa: float
    extra: float
    noise_std: float
    feature_bound: float
    n_rho: int


class LinearSwitches(NamedTuple):
    """Which FedUCB it is: private, adaptive schedule, the fixed schedule's batch, rounds
    and tree levels."""

    private: bool
    adaptive: bool
    batch: int
    rounds: int
    levels: int


def fedlin_constants(
    policy: FedLinUCB, n_agents: int, set_size: int, dim: int, horizon: int
) -> tuple[LinearConstants, LinearSwitches]:
    """Reset ``policy`` as agent 0 of an env of ``n_agents`` agents, decision sets of
    ``set_size`` vectors of dimension ``dim`` and ``horizon`` steps (the noise drawn at
    that reset is not used), and read its constants.

    Examples:
        >>> constants, switches = fedlin_constants(FedLinUCB(), 3, 4, 2, horizon=10)
        >>> switches.adaptive, constants.n_rho
        (True, 3)
    """
    spec = AgentSpec(0, n_agents, set_size, horizon, linear_message_dim(dim), context_dim=dim)
    policy.reset(spec, seed=0)
    assert policy.threshold is not None
    beta = -1.0 if policy.beta is None else float(policy.beta)
    constants = LinearConstants(
        policy.sigma, policy.alpha, policy.norm_bound, beta, float(policy.threshold),
        float(policy.rho_min), float(policy.rho_max), float(policy.shift), float(policy.kappa),
        float(policy.extra), float(policy.noise_std), float(policy.feature_bound), int(n_agents),
    )  # fmt: skip
    switches = LinearSwitches(
        policy.epsilon is not None,
        policy.sync == "adaptive",
        int(policy.batch),
        int(policy.rounds),
        int(policy.levels),
    )
    return constants, switches


@njit(cache=True, nogil=True)
def _sync_agent(
    gram: FloatArray,
    vector: FloatArray,
    extra: float,
    inv: FloatArray,
    winv: FloatArray,
    logs: FloatArray,
    s: FloatArray,
    u: FloatArray,
    scratch: FloatArray,
) -> bool:  # pragma: no cover
    """:meth:`FedLinUCB._sync_to <baselines.linear.FedLinUCB._sync_to>` of one agent:
    ``S, s <-`` a round's sum, ``U = u = 0`` (``logs`` holds ``log det V``, ``log det
    W``, ``log det S``); a sum that is not finite or whose Gram blocks are not positive
    definite is dropped (returns ``False``, nothing changed). ``scratch`` ``(3, d, d)``:
    the shifted Gram block and both inverses before they are taken."""
    d = vector.shape[0]
    for a in range(d):
        if not np.isfinite(vector[a]):
            return False
        for c in range(d):
            if not np.isfinite(gram[a, c]):
                return False
    shifted, new_inv, new_winv = scratch[0], scratch[1], scratch[2]
    for a in range(d):
        for c in range(d):
            shifted[a, c] = gram[a, c]
        shifted[a, a] = gram[a, a] + extra
    log_s = spd_inverse(gram, new_inv)
    log_w = spd_inverse(shifted, new_winv)
    if not (np.isfinite(log_s) and np.isfinite(log_w)):
        return False
    for a in range(d):
        s[a] = vector[a]
        u[a] = 0.0
        for c in range(d):
            inv[a, c] = new_inv[a, c]
            winv[a, c] = new_winv[a, c]
    logs[0], logs[1], logs[2] = log_s, log_w, log_s
    return True


@njit(cache=True, nogil=True)
def fedlin_ucb_step(
    last: IntArray,
    seen: Float32Array,
    t: int,
    pools: Float32Array,
    pool_of: IntArray,
    sets: IntArray,
    server: Float32Array,
    synced: np.ndarray,
    fp: LinearConstants,
    ip: LinearSwitches,
    guarded: bool,
    inv: FloatArray,
    winv: FloatArray,
    logs: FloatArray,
    s_vec: FloatArray,
    u: FloatArray,
    last_x: FloatArray,
    leaf: FloatArray,
    total: FloatArray,
    acc: FloatArray,
    node: FloatArray,
    pending: FloatArray,
    public: FloatArray,
    counters: IntArray,
    flagged: np.ndarray,
    table: np.ndarray,
    marker: tuple[int, ...],
    scorer: Any,
    xt: Float32Array,
    scores: Float32Array,
    vectors: FloatArray,
    matrices: FloatArray,
    arms: IntArray,
    sent: FloatArray,
) -> None:  # pragma: no cover
    """One step of centralized FedUCB (:class:`~baselines.linear.FedLinUCB`, Algorithm 1,
    with PRIVATIZER where ``ip.private``) for every agent of ``B`` envs, in its order of
    operations and its floating-point order, so a trial is the per-agent team's to the
    bit.

    Agent ``i`` of env ``b``: where the server sent a round after the last step
    (``synced[b]``; ``server[b]`` ``[N, sum]`` float32), it commits its pending leaf
    (the tree's, privately, drawing the next node's noise from its generator, row ``b N
    + i`` of ``table``) and takes the sum as ``S, s`` (a sum no honest round gives is
    dropped and counted in ``counters[b, i, 3]``; the private fixed schedule ignores a
    round it did not flag, ``guarded``: ``counters[b, i, 2]``); then it observes its
    last pair (clipped privately), chooses by the index with ``V^-1 (s + u)`` and
    Proposition 2's width (or a fixed one), and raises its flag (line 12, or a full batch
    of the fixed schedule). Its message ``sent[b, i]``: the flag, and where some agent of
    the env flags, the release it would upload (:meth:`FedLinUCB.upload
    <baselines.linear.FedLinUCB.upload>`, as float32); without a flag in the env the
    payloads are left as they were (Synchronize reads them only in a round, and the
    uploads change no state then).

    State, per agent ``(B, N, ..)``: ``inv`` and ``winv`` (``V^-1``, ``W^-1``), ``logs``
    (``log det V``, ``log det W``, ``log det S``), ``s_vec``, ``u``, ``last_x``, the
    leaf, the committed ``total`` (non-private), the tree's ``acc``/``node`` ``(.., L,
    e, e)``, the ``pending`` node noise, the last ``public`` release, ``counters``
    (round, observations since the last round, ignored rounds, rejected sums) and
    ``flagged``. Work space: ``vectors`` ``(6, e)`` and ``matrices`` ``(6, e, e)``
    (allocated once: an allocation a call cost 10% of a step at ``M = 10``). ``marker``:
    :func:`~baselines.linear.kernels.dimension_marker` of ``d`` (the rank-one updates
    and ``V^-1 (s + u)`` written out for ``d``, :func:`~baselines.linear.kernels.
    rank_one_fixed`).
    """
    n_envs, n = arms.shape
    d = inv.shape[3]
    e = d + 1
    private, adaptive = ip.private, ip.adaptive
    vec, theta, x, vector = vectors[0, :d], vectors[1, :d], vectors[2, :d], vectors[3, :d]
    z = vectors[4]
    rel, raw, gram, scratch = matrices[0], matrices[1], matrices[2, :d, :d], matrices[3:, :d, :d]
    for b in range(n_envs):
        pool = pools[pool_of[b]]
        if t > 0 and synced[b]:
            for a in range(d):
                vector[a] = float(server[b, 1 + a * e + d])
                for c in range(d):
                    gram[a, c] = float(server[b, 1 + a * e + c])
        any_flag = False
        for i in range(n):
            cnt = counters[b, i]
            if t > 0:
                if synced[b] and guarded and not flagged[b, i]:
                    cnt[2] += 1  # not on its schedule: nothing committed or adopted
                elif synced[b]:  # _commit, then _sync_to
                    cnt[0] += 1
                    if private:
                        tree_commit(acc[b, i], node[b, i], leaf[b, i], pending[b, i], cnt[0])
                        draw_node_noise(bit_generator_at(table, b * n + i), fp.noise_std, raw,
                                         pending[b, i])  # fmt: skip
                    else:
                        for a in range(e):
                            for c in range(e):
                                total[b, i, a, c] += leaf[b, i, a, c]
                    for a in range(e):
                        for c in range(e):
                            leaf[b, i, a, c] = 0.0
                    if _sync_agent(gram, vector, fp.extra, inv[b, i], winv[b, i], logs[b, i],
                                   s_vec[b, i], u[b, i], scratch):  # fmt: skip
                        cnt[1] = 0
                    else:  # the round happened; only its forged sum is dropped
                        cnt[3] += 1
                        cnt[1] = 0
                # observe (line 10-11): the last pair, clipped privately
                y = float(seen[b, i])
                if private:
                    clip_norm(last_x[b, i], fp.feature_bound, x)
                    y = min(max(y, -1.0), 1.0)
                else:
                    for a in range(d):
                        x[a] = last_x[b, i, a]
                logs[b, i, 0] += rank_one_fixed(inv[b, i], x, vec, marker)
                if fp.extra > 0.0:
                    logs[b, i, 1] += rank_one_fixed(winv[b, i], x, vec, marker)
                else:  # W = V exactly
                    logs[b, i, 1] = logs[b, i, 0]
                for a in range(d):
                    u[b, i, a] += y * x[a]
                for a in range(d):
                    z[a] = x[a]
                z[d] = y
                add_outer_fixed(leaf[b, i], z, marker)
                cnt[1] += 1
            for a in range(d):
                vec[a] = s_vec[b, i, a] + u[b, i, a]
            mat_vec_fixed(inv[b, i], vec, theta, marker)
            if fp.fixed_beta >= 0.0:
                beta = fp.fixed_beta
            else:
                beta = confidence_width(
                    fp.sigma, fp.alpha, logs[b, i, 0], d, fp.n_rho, fp.rho_min, fp.rho_max,
                    fp.kappa, fp.norm_bound,
                )  # fmt: skip
            k = scorer(pool, sets[b, i], inv[b, i], theta, beta, xt, scores)
            arms[b, i] = k
            row = sets[b, i, k]
            for a in range(d):
                last_x[b, i, a] = pool[row, a]
            if adaptive:
                flag = cnt[1] > 0 and (logs[b, i, 1] - logs[b, i, 2]) * cnt[1] > fp.threshold
            else:
                flag = cnt[1] >= ip.batch and cnt[0] < ip.rounds
            flagged[b, i] = flag
            sent[b, i, 0] = 1.0 if flag else 0.0
            any_flag |= flag
        if not any_flag:
            continue
        for i in range(n):  # the uploads of a round (FedLinUCB.upload), as float32
            if guarded and not flagged[b, i]:
                for a in range(e):
                    for c in range(e):
                        sent[b, i, 1 + a * e + c] = float(np.float32(public[b, i, a, c]))
                continue
            if private:
                tree_release(acc[b, i], node[b, i], leaf[b, i], pending[b, i],
                             counters[b, i, 0] + 1, rel)  # fmt: skip
            else:
                for a in range(e):
                    for c in range(e):
                        rel[a, c] = total[b, i, a, c] + leaf[b, i, a, c]
            for a in range(d):
                rel[a, a] += fp.shift
            for a in range(e):
                for c in range(e):
                    if guarded:
                        public[b, i, a, c] = rel[a, c]
                    sent[b, i, 1 + a * e + c] = float(np.float32(rel[a, c]))


@njit(cache=True, nogil=True)
def _fedlin_start(
    init: FloatArray,
    extra: float,
    private: bool,
    noise_std: float,
    table: np.ndarray,
    inv: FloatArray,
    winv: FloatArray,
    logs: FloatArray,
    s_vec: FloatArray,
    u: FloatArray,
    pending: FloatArray,
) -> None:  # pragma: no cover
    """Every agent's reset of :class:`~baselines.linear.FedLinUCB`: ``S = init`` (``M
    rho_min I``), ``s = 0``, and privately the first node's noise from its generator."""
    n_envs, n = logs.shape[0], logs.shape[1]
    d, e = init.shape[0], init.shape[0] + 1
    zeros, raw, scratch = np.zeros(d), np.empty((e, e)), np.empty((3, d, d))
    for b in range(n_envs):
        for i in range(n):
            _sync_agent(init, zeros, extra, inv[b, i], winv[b, i], logs[b, i], s_vec[b, i],
                        u[b, i], scratch)  # fmt: skip
            if private:
                draw_node_noise(bit_generator_at(table, b * n + i), noise_std, raw,
                                 pending[b, i])  # fmt: skip


class TreePrivateVector(VectorPolicy):
    """What the vector forms of FedUCB's centralized and decentralized variants share:
    a per-agent ``template`` (a :class:`~baselines.linear.policies.TreePrivateLinUCB`,
    which checks and holds the options) whose requirements and privacy they report, and
    each agent's noise generator as the template draws from it."""

    template: TreePrivateLinUCB

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """The template's: messages over its protocol."""
        return self.template.requirements(n_agents, n_arms)

    def privacy_epsilon(self, n_agents: int, n_arms: int) -> float | None:
        """The template's (``inf`` as published or adaptive, ``epsilon`` corrected,
        ``None`` without noise)."""
        return self.template.privacy_epsilon(n_agents, n_arms)

    def privacy_delta(self, n_agents: int, n_arms: int) -> float:
        """The template's ``delta``."""
        return self.template.privacy_delta(n_agents, n_arms)

    def noise_source(self) -> str | None:
        """The template's (``None`` without noise)."""
        return self.template.noise_source()

    def _noise_table(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """Every agent's noise generator (row ``b N + i``), as the per-agent template's:
        its team stream where the noise is seeded, fresh OS entropy for ``"secure"``; one
        generator never drawn from without noise. The generators stay alive with the
        policy."""
        b, n = spec.num_envs, spec.n_agents
        if self.template.epsilon is not None:
            noise = self.template.noise
            seeded = noise == "seeded"
            streams: list[Any] = agent_generators(spec, rngs) if seeded else [0] * (b * n)
            self._generators = [noise_generator(noise, stream) for stream in streams]
        else:
            self._generators = [np.random.default_rng(0)]
        return generator_table(self._generators)


class FedLinUCBVector(TreePrivateVector):
    """Centralized FedUCB (:class:`~baselines.linear.FedLinUCB`: Dubey & Pentland,
    Algorithm 1, with PRIVATIZER where private) for every agent of ``B`` linear envs over
    :class:`~fedbandit_env.protocols.Synchronize`: :func:`fedlin_ucb_step` on arrays,
    rolled out by the linear core (:meth:`LinearCore.rollout
    <fedbandit_env.core.linear.LinearCore.rollout>`, which routes the rounds) or stepped
    through :meth:`act`. Each agent's tree noise comes from the generator the per-agent
    policy draws it from (its team stream; fresh OS entropy for ``noise="secure"``), so a
    trial is the per-agent team's to the bit.

    Args:
        **kwargs: :class:`~baselines.linear.FedLinUCB`'s options, checked there.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> from fedbandit_env.protocols import Synchronize
        >>> from fedbandit_env.vector import FederatedLinearVecEnv
        >>> venv = FederatedLinearVecEnv(dubey_synthetic(3, dim=2, seed=0), horizon=20,
        ...                              protocol=Synchronize(), message_dim=10, num_envs=2)
        >>> obs, _ = venv.reset(seed=0)
        >>> agents = tuple(AgentSpec(i, 3, venv.n_arms, 20, 10, context_dim=2) for i in range(3))
        >>> policy = FedLinUCBVector(sync="fixed", batch=2)
        >>> policy.reset(VectorSpec(2, agents), [np.random.default_rng(b) for b in range(2)])
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages.shape
        ((2, 3), (2, 3, 10))
    """

    name = "fedlin_ucb"
    kernel_talks = True
    template: FedLinUCB

    def __init__(self, **kwargs: Any) -> None:
        self.template = FedLinUCB(**kwargs)  # checks the options; holds them

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Every agent's reset of FedLinUCB: ``S = M rho_min I``, an empty tree and,
        privately, the first node's noise."""
        d = spec.agents[0].context_dim
        if d < 1:
            raise ValueError("FedLinUCB needs a linear env (observations with 'contexts')")
        b, n, k, e = spec.num_envs, spec.n_agents, spec.n_arms, d + 1
        if spec.message_dim != linear_message_dim(d):
            raise ValueError(
                f"FedLinUCB sends {linear_message_dim(d)} numbers a step for d={d}, the env "
                f"carries {spec.message_dim}"
            )
        probe = copy.deepcopy(self.template)
        self.constants, self.switches = fedlin_constants(probe, n, k, d, spec.horizon)
        self.guarded = bool(probe.guarded)
        levels = self.switches.levels
        self._table = self._noise_table(spec, rngs)
        self.inv, self.winv = np.zeros((b, n, d, d)), np.zeros((b, n, d, d))
        self.logs = np.zeros((b, n, 3))
        self.s, self.u, self.last_x = (np.zeros((b, n, d)) for _ in range(3))
        self.leaf, self.total, self.pending = (np.zeros((b, n, e, e)) for _ in range(3))
        self.acc, self.node = np.zeros((b, n, levels, e, e)), np.zeros((b, n, levels, e, e))
        self.public = np.zeros((b, n, e, e))
        self.public[:, :, np.arange(d), np.arange(d)] = probe.shift
        self.counters = np.zeros((b, n, 4), dtype=np.int64)
        self.flagged = np.zeros((b, n), dtype=np.bool_)
        init = np.eye(d) * (n * probe.rho_min)
        _fedlin_start(init, probe.extra, self.switches.private, probe.noise_std, self._table,
                      self.inv, self.winv, self.logs, self.s, self.u, self.pending)  # fmt: skip
        self._sent = np.zeros((b, n, spec.message_dim))
        self._scorer, self._marker = set_scorer(d), dimension_marker(d)
        self._xt, self._scores = new_scratch(d, k)
        self._vectors, self._matrices = np.zeros((6, e)), np.zeros((6, e, e))
        self._rows = np.tile(np.arange(n * k, dtype=np.int64).reshape(1, n, k), (b, 1, 1))
        self._envs = np.arange(b, dtype=np.int64)

    @property
    def rejected(self) -> IntArray:
        """Each agent's round sums dropped as ones no honest round gives ``(B, N)``."""
        return self.counters[..., 3]

    @property
    def ignored_rounds(self) -> IntArray:
        """Each agent's rounds ignored as off its schedule ``(B, N)`` (the private fixed
        schedule's guard)."""
        return self.counters[..., 2]

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Apply a round the server sent, observe, choose, flag and attach the release
        (:func:`fedlin_ucb_step` on the observations)."""
        pools, t, seen, last = observed(observations)
        b, n = last.shape
        server = np.ascontiguousarray(np.asarray(observations["server"])[:, 0], np.float32)
        synced = np.ascontiguousarray(np.asarray(observations["server_mask"])[:, 0, 0], np.int8)
        step, state = self.kernel()
        arms = np.empty((b, n), dtype=np.int64)
        step(last, seen, t, pools, self._envs, self._rows, server, synced, *state, arms,
             self._sent)  # fmt: skip
        return arms, self._sent.copy()

    def kernel(self) -> CompiledAct:
        """:func:`fedlin_ucb_step` and its statistics (the step a linear rollout plays)."""
        state = (self.constants, self.switches, self.guarded, self.inv, self.winv, self.logs,
                 self.s, self.u, self.last_x, self.leaf, self.total, self.acc, self.node,
                 self.pending, self.public, self.counters, self.flagged, self._table,
                 self._marker, self._scorer, self._xt, self._scores, self._vectors,
                 self._matrices)  # fmt: skip
        return fedlin_ucb_step, state


def fedlin_ucb(**kwargs: Any) -> FedLinUCBVector:
    """Centralized FedUCB as a vector policy (``fedlin_ucb`` and its variants: the
    registered options pick the schedule and the noise).

    Examples:
        >>> fedlin_ucb(sync="fixed", batch=4).template.batch_arg
        4
    """
    return FedLinUCBVector(**kwargs)


def vector_trial(
    policy: LinUCBVector | FedLinUCBVector,
    problem: LinearProblem,
    horizon: int,
    env_seed: int,
    steps: IntArray,
    trace: bool = False,
    team_seed: Any = 0,
    link_costs: tuple[float, float] = (25.0, 1.0),
) -> tuple[FloatArray, IntArray, Float32Array, FloatArray]:
    """One trial of ``policy`` on ``problem``, rolled out by the core: per-agent regret
    ``(N, R)`` at ``steps``; traced, every agent's choice and observed reward ``(T, N)``
    (else empty); the cumulative communication cost ``(R,)``. The env is the PettingZoo
    linear env reset with ``env_seed`` (:class:`~fedbandit_env.vector.FederatedLinearVecEnv`
    with one env; over :class:`~fedbandit_env.protocols.Synchronize` for FedUCB) and the
    agents' generators those of the trial's ``team_seed``, so this is the trial
    ``run_fast`` plays for those seeds.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> p = dubey_synthetic(2, dim=2, seed=0)
        >>> regret, arms, _, cost = vector_trial(lin_ucb(), p, 6, 1, np.array([3, 6]), True)
        >>> regret.shape, arms.shape, cost.tolist()
        ((2, 2), (6, 2), [0.0, 0.0])
        >>> *_, cost = vector_trial(fedlin_ucb(sync="fixed", batch=2), p, 6, 1, np.array([6]))
        >>> cost.tolist()  # rounds after steps 3 and 5 (two observations, a step late)
        [100.0]
    """
    from fedbandit_env.protocols import Synchronize
    from fedbandit_env.vector import FederatedLinearVecEnv

    n, k, d = problem.n_agents, problem.set_size, problem.dim
    talks = isinstance(policy, FedLinUCBVector)
    width = linear_message_dim(d) if talks else 0
    venv = FederatedLinearVecEnv(problem, protocol=Synchronize() if talks else None,
                                 horizon=horizon, message_dim=width, link_costs=link_costs,
                                 num_envs=1)  # fmt: skip
    venv.reset(seed=[int(env_seed)])
    agents = tuple(AgentSpec(i, n, k, int(horizon), width, context_dim=d) for i in range(n))
    if not isinstance(team_seed, np.random.SeedSequence):
        team_seed = np.random.SeedSequence(team_seed)
    policy.reset(VectorSpec(1, agents, (team_seed,)), [])
    steps = np.asarray(steps, dtype=np.int64)
    out, cost = np.zeros((1, n, steps.size)), np.zeros((1, steps.size))
    shape = (1, int(horizon), n) if trace else (0, 0, 0)
    arms, rewards = np.zeros(shape, np.int64), np.zeros(shape, np.float32)
    venv.rollout(*policy.kernel(), steps, out, (arms, rewards), cost)
    venv.close()
    if not trace:
        arms, rewards = np.zeros((1, 0, n), np.int64), np.zeros((1, 0, n), np.float32)
    return out[0], arms[0], rewards[0], cost[0]


def lin_ucb(**kwargs: Any) -> LinUCBVector:
    """``lin_ucb``: OFUL on every agent's own data.

    Examples:
        >>> lin_ucb(beta=0.5).options.beta, lin_ucb().pooled
        (0.5, False)
    """
    return LinUCBVector(**kwargs)


def pooled_lin_ucb(**kwargs: Any) -> LinUCBVector:
    """``pooled_lin_ucb``: one OFUL per env on every agent's data.

    Examples:
        >>> pooled_lin_ucb().name
        'pooled_lin_ucb'
    """
    return LinUCBVector(pooled=True, **kwargs)


__all__ = [
    "FedLinUCBVector",
    "LinUCBVector",
    "LinearConstants",
    "LinearSwitches",
    "TreePrivateVector",
    "fedlin_constants",
    "fedlin_ucb",
    "fedlin_ucb_step",
    "lin_ucb",
    "lin_ucb_step",
    "observed",
    "pooled_lin_ucb",
    "vector_trial",
]
