"""Decentralized FedUCB as a vector policy: every agent of ``B`` linear envs over
:class:`~fedbandit_env.protocols.GammaHops` (Dubey & Pentland's LOCAL protocol) in one
compiled step.

This is the fast path of ``dec_fedlin_ucb`` and ``private_dec_fedlin_ucb`` (issue 62: a
family's fast path is a compiled step over the vector env, not a trial loop of its
own): the linear core's rollout (:meth:`LinearCore.rollout
<fedbandit_env.core.linear.LinearCore.rollout>`, which routes GammaHops' messages,
:func:`~fedbandit_env.core.hops.rollout_linear_hops`) calls :func:`dec_fedlin_step` once
a step for every env, and :meth:`DecFedLinUCBVector.act` calls the same function on the
vector env's observations. Each agent keeps
:class:`~baselines.linear.decentralized.DecFedLinUCB`'s ``gamma`` estimators (its own
pairs, the latest statistic of every sender, ``V^-1``, ``u``, ``log det V``, the
synchronisation books, and privately one tree each) as ``(B, N, gamma, ..)`` arrays,
reads its inbox in origin order, drops a message no honest agent sends (counted in
:attr:`~DecFedLinUCBVector.rejected`), calls the same kernels
(:mod:`baselines.linear.kernels`) and draws its trees' noise from the generator the
per-agent policy draws from, so a trial is the per-agent team's to the bit
(``tests/families/linear/test_dec_vector.py``, ``tests/runner/test_replay.py``). The
readings are the per-agent policy's (the module docstring of
:mod:`baselines.linear.decentralized`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.linear.decentralized import HEADER, DecFedLinUCB
from baselines.linear.kernels import (
    add_outer_fixed,
    clip_norm,
    confidence_width,
    dimension_marker,
    draw_node_noise,
    mat_vec_fixed,
    new_scratch,
    noise_prior,
    rank_one_fixed,
    rebuild,
    set_scorer,
    tree_commit,
    tree_release,
)
from baselines.linear.vector import TreePrivateVector, observed
from fedbandit_env.policies import AgentSpec
from fedbandit_env.rng_kernels import bit_generator_at
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray
from fedbandit_env.vector.policy import CompiledAct, VectorObs, VectorSpec


class DecConstants(NamedTuple):
    """Decentralized FedUCB's numbers, read from a reset
    :class:`~baselines.linear.decentralized.DecFedLinUCB`: ``lambda``, ``sigma``,
    ``alpha``, ``S``, a fixed width (``-1``: OFUL's), the threshold ``D``, the schedule
    (``fixed``: the fixed schedule's ``batch`` and ``rounds``) and the noise
    (``private``: the trees' node std, ``feature_bound`` and the bounds ``Lambda``,
    ``H``; ``joint``: ``noise_bound="joint"``)."""

    lam: float
    sigma: float
    alpha: float
    norm_bound: float
    fixed_beta: float
    threshold: float
    fixed: bool
    batch: int
    rounds: int
    private: bool
    noise_std: float
    feature_bound: float
    gram_bound: float
    vec_bound: float
    joint: bool


def dec_constants(policy: DecFedLinUCB) -> DecConstants:
    """The constants of a reset ``policy``.

    Examples:
        >>> pol = DecFedLinUCB(gamma=2)
        >>> pol.reset(AgentSpec(0, 3, 4, 20, HEADER + 9, context_dim=2), seed=0)
        >>> c = dec_constants(pol)
        >>> c.fixed, c.private, c.lam
        (False, False, 1.0)
    """
    assert policy.threshold is not None
    return DecConstants(
        float(policy.regularizer), float(policy.sigma), float(policy.alpha),
        float(policy.norm_bound), -1.0 if policy.beta is None else float(policy.beta),
        float(policy.threshold), policy.sync == "fixed", int(policy.batch), int(policy.rounds),
        policy.epsilon is not None, float(policy.noise_std), float(policy.feature_bound),
        float(policy.gram_bound), float(policy.vec_bound), policy.noise_bound == "joint",
    )  # fmt: skip


@njit(cache=True, nogil=True)
def honest_message(message: Float32Array, gamma: int) -> bool:  # pragma: no cover
    """:meth:`DecFedLinUCB.honest <baselines.linear.decentralized.DecFedLinUCB.honest>`:
    every entry finite, both flags 0 or 1, and the estimator an integer in ``[0,
    gamma)``.

    Examples:
        >>> [honest_message(np.array([0, 1, g, 0.5], np.float32), 2) for g in (1, 2, 0.5)]
        [True, False, False]
    """
    finite = True  # branch-free, so that it vectorizes: v - v is NaN for inf and NaN
    for k in range(message.shape[0]):
        v = message[k]
        finite &= v - v == 0.0
    if not finite:
        return False
    for k in range(2):
        if message[k] != 0.0 and message[k] != 1.0:
            return False
    g = float(message[2])
    return g == math.floor(g) and 0.0 <= g < gamma


@njit(cache=True, nogil=True)
def dec_fedlin_step(
    last: IntArray,
    seen: Float32Array,
    t: int,
    pools: Float32Array,
    pool_of: IntArray,
    sets: IntArray,
    heard: Float32Array,
    slot: IntArray,
    mask: np.ndarray,
    fp: DecConstants,
    own: FloatArray,
    others: FloatArray,
    got: np.ndarray,
    invs: FloatArray,
    vecs: FloatArray,
    log_dets: FloatArray,
    refs: FloatArray,
    terms: FloatArray,
    books: IntArray,
    flags: np.ndarray,
    leaf: FloatArray,
    acc: FloatArray,
    node: FloatArray,
    noise_next: FloatArray,
    last_x: FloatArray,
    table: np.ndarray,
    marker: tuple[int, ...],
    scorer: Any,
    xt: Float32Array,
    scores: Float32Array,
    vectors: FloatArray,
    matrices: FloatArray,
    honest: np.ndarray,
    arms: IntArray,
    sent: FloatArray,
) -> None:  # pragma: no cover
    """One step of decentralized FedUCB (:meth:`DecFedLinUCB.act
    <baselines.linear.decentralized.DecFedLinUCB.act>`) for every agent of ``B`` envs, in
    its order of operations and its floating-point order.

    Agent ``i`` of env ``b`` uses estimator ``g = t mod gamma``. After step 0 it adds its
    last pair (clipped privately) to the estimator it used (``books[b, i, 3 gamma]``),
    then reads ``heard[b, slot[i, v], v]`` for each origin ``v`` with ``mask[b, i, v]``,
    in origin order (the ring of sent messages in a rollout, or the inbox with ``slot[i,
    v] = i``: :func:`~fedbandit_env.core.hops.rollout_linear_hops`): a message no honest
    agent sends (:func:`honest_message`) is dropped and counted (``books[b, i, 3 gamma +
    1]``); a request marks its estimator pending, a statistic
    replaces ``others[b, i, g', v]``. A synchronised estimator is rebuilt (one Cholesky,
    :func:`~baselines.linear.kernels.rebuild`, with the prior
    :func:`~baselines.linear.kernels.noise_prior` gives for the senders heard), the
    choice is OFUL's over its decision set (``pools[pool_of[b]][sets[b, i]]``, the
    compiled scorer), and the agent talks (``_talk``: the adaptive rule or the fixed
    schedule): ``sent[b, i]`` is ``[request, respond, g, statistic]``, the statistic
    (float32) the exact one or its tree's next release (the next node's noise drawn
    from the agent's generator, row ``b N + i`` of ``table``), zeros when it does not
    respond (``sent`` holds the last step's messages: only a statistic sent then is
    zeroed).

    State, per agent ``(B, N, gamma, ..)``: ``own`` and ``others`` (``(.., N, e, e)``)
    with ``got`` ``(.., N)``, ``invs``, ``vecs``, ``log_dets``, ``refs``, ``terms``
    (``rho_min``, ``rho_max``, ``kappa``), the integer ``books`` ``(B, N, 3 gamma + 2)``
    (each estimator's uses since its last synchronisation, pairs since its last release
    and releases; the estimator used last; messages dropped), ``flags`` ``(B, N, gamma,
    2)`` (dirty, pending), the trees' ``leaf``, ``acc``, ``node`` and
    ``noise_next``, and ``last_x`` ``(B, N, d)``. Work space: ``vectors`` ``(4, e)``,
    ``matrices`` ``(2, e, e)``, ``honest`` ``(B, S, N)`` bool with ``S`` at least
    ``heard.shape[1]`` (each message's :func:`honest_message`, judged once for all its
    receivers: in a rollout ``heard`` is the ring, whose ``gamma N`` messages every
    receiver in reach reads). ``marker``: :func:`~baselines.linear.kernels.dimension_marker`
    of ``d`` (the statistics written out for ``d``, :func:`~baselines.linear.kernels.
    rank_one_fixed`).
    """
    n_envs, n = arms.shape
    gamma, d = invs.shape[2], invs.shape[3]
    e = d + 1
    g = t % gamma
    work, theta, xc, z = vectors[0, :d], vectors[1, :d], vectors[2, :d], vectors[3]
    release, raw = matrices[0], matrices[1]
    if t > 0:  # every message's honesty, once (its receivers read the same entries)
        for b in range(n_envs):
            for s in range(heard.shape[1]):
                for v in range(n):
                    honest[b, s, v] = honest_message(heard[b, s, v], gamma)
    for b in range(n_envs):
        pool = pools[pool_of[b]]
        for i in range(n):
            bk = books[b, i]  # since, fresh, released per estimator; last g; rejected
            if t > 0:
                lg = bk[3 * gamma]
                y = float(seen[b, i])
                x = last_x[b, i]
                if fp.private:
                    x = clip_norm(last_x[b, i], fp.feature_bound, xc)
                    y = min(max(y, -1.0), 1.0)
                log_dets[b, i, lg] += rank_one_fixed(invs[b, i, lg], x, work, marker)
                for a in range(d):
                    vecs[b, i, lg, a] += y * x[a]
                    z[a] = x[a]
                z[d] = y
                add_outer_fixed(own[b, i, lg], z, marker)
                if fp.private:  # the tree's next leaf
                    add_outer_fixed(leaf[b, i, lg], z, marker)
                bk[gamma + lg] += 1
                for v in range(n):  # what arrived, in origin order
                    if not mask[b, i, v]:
                        continue
                    if not honest[b, slot[i, v], v]:
                        bk[3 * gamma + 1] += 1
                        continue
                    msg = heard[b, slot[i, v], v]
                    gg = int(msg[2])
                    if msg[0] > 0.5:
                        flags[b, i, gg, 1] = True
                    if msg[1] > 0.5:
                        for a in range(e):
                            for c in range(e):
                                others[b, i, gg, v, a, c] = float(msg[HEADER + a * e + c])
                        got[b, i, gg, v] = True
                        flags[b, i, gg, 0] = True
            if flags[b, i, g, 0]:  # synchronised since its last use: rebuild
                senders = 0
                for v in range(n):
                    senders += 1 if got[b, i, g, v] else 0
                rho_min, rho_max, kappa, prior = noise_prior(
                    fp.lam, senders, fp.gram_bound, fp.vec_bound, fp.joint
                )
                log_det = rebuild(own[b, i, g], others[b, i, g], prior, invs[b, i, g],
                                  vecs[b, i, g])  # fmt: skip
                if log_det > -np.inf:
                    log_dets[b, i, g] = log_det
                    terms[b, i, g, 0] = rho_min
                    terms[b, i, g, 1] = rho_max
                    terms[b, i, g, 2] = kappa
                    refs[b, i, g], bk[g] = log_det, 0
                flags[b, i, g, 0] = False
            mat_vec_fixed(invs[b, i, g], vecs[b, i, g], theta, marker)
            beta = fp.fixed_beta
            if beta < 0.0:
                beta = confidence_width(
                    fp.sigma, fp.alpha, log_dets[b, i, g], d, 1, terms[b, i, g, 0],
                    terms[b, i, g, 1], terms[b, i, g, 2], fp.norm_bound,
                )  # fmt: skip
            k = scorer(pool, sets[b, i], invs[b, i, g], theta, beta, xt, scores)
            arms[b, i] = k
            row = sets[b, i, k]
            for a in range(d):
                last_x[b, i, a] = pool[row, a]
            bk[3 * gamma] = g
            request = False
            if fp.fixed:
                respond = bk[gamma + g] >= fp.batch and bk[2 * gamma + g] < fp.rounds
            else:
                request = (log_dets[b, i, g] - refs[b, i, g]) * (bk[g] + 1) > fp.threshold
                if request:  # the requester counts as synchronised from now
                    refs[b, i, g], bk[g] = log_dets[b, i, g], 0
                else:
                    bk[g] += 1
                respond = request or flags[b, i, g, 1]
                flags[b, i, g, 1] = False
            was_sent = sent[b, i, 1] > 0.5  # the statistic on the wire from the last step
            sent[b, i, 0] = 1.0 if request else 0.0
            sent[b, i, 1] = 1.0 if respond else 0.0
            sent[b, i, 2] = float(g)
            if respond:
                if fp.private:
                    nth = bk[2 * gamma + g] + 1
                    tree_release(acc[b, i, g], node[b, i, g], leaf[b, i, g], noise_next[b, i, g],
                                 nth, release)  # fmt: skip
                    tree_commit(acc[b, i, g], node[b, i, g], leaf[b, i, g], noise_next[b, i, g],
                                nth)  # fmt: skip
                    draw_node_noise(bit_generator_at(table, b * n + i), fp.noise_std, raw,
                                    noise_next[b, i, g])  # fmt: skip
                    for a in range(e):
                        for c in range(e):
                            leaf[b, i, g, a, c] = 0.0
                else:
                    for a in range(e):
                        for c in range(e):
                            release[a, c] = own[b, i, g, a, c]
                for a in range(e):
                    for c in range(e):
                        sent[b, i, HEADER + a * e + c] = float(np.float32(release[a, c]))
                bk[2 * gamma + g] += 1
                bk[gamma + g] = 0
            elif was_sent:  # zeros (as the policy's message) where it had a statistic
                for k in range(HEADER, sent.shape[2]):
                    sent[b, i, k] = 0.0


@njit(cache=True, nogil=True)
def _dec_start(
    private: bool, noise_std: float, table: np.ndarray, noise_next: FloatArray
) -> None:  # pragma: no cover
    """Every agent's first node noise of each tree, in estimator order, from its
    generator (:meth:`DecFedLinUCB.reset`'s draws)."""
    if not private:
        return
    n_envs, n, gamma, e = noise_next.shape[:4]
    raw = np.empty((e, e))
    for b in range(n_envs):
        for i in range(n):
            for g in range(gamma):
                draw_node_noise(bit_generator_at(table, b * n + i), noise_std, raw,
                                noise_next[b, i, g])  # fmt: skip


class DecFedLinUCBVector(TreePrivateVector):
    """Decentralized FedUCB (:class:`~baselines.linear.decentralized.DecFedLinUCB`) for
    every agent of ``B`` linear envs over GammaHops: :func:`dec_fedlin_step` on arrays,
    rolled out by the linear core or stepped through :meth:`act` (the vector env's
    per-receiver ``messages`` ``(B, N, N, D)``).

    Args:
        **kwargs: :class:`~baselines.linear.decentralized.DecFedLinUCB`'s options
            (``gamma`` and the rest), checked there.

    Examples:
        >>> from fedbandit_env.network.graph import Network
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> from fedbandit_env.protocols import GammaHops
        >>> from fedbandit_env.vector import FederatedLinearVecEnv
        >>> venv = FederatedLinearVecEnv(dubey_synthetic(3, dim=2, seed=0), Network.path(3),
        ...                              GammaHops(2), horizon=20, message_dim=12, num_envs=2)
        >>> obs, _ = venv.reset(seed=0)
        >>> agents = tuple(AgentSpec(i, 3, venv.n_arms, 20, 12, context_dim=2) for i in range(3))
        >>> policy = DecFedLinUCBVector(gamma=2)
        >>> policy.reset(VectorSpec(2, agents), [np.random.default_rng(b) for b in range(2)])
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages.shape
        ((2, 3), (2, 3, 12))
    """

    name = "dec_fedlin_ucb"
    kernel_talks = True
    kernel_hops = True

    template: DecFedLinUCB

    def __init__(self, **kwargs: Any) -> None:
        self.template = DecFedLinUCB(**kwargs)  # checks the options; holds them

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Every agent's reset of DecFedLinUCB: ``gamma`` empty estimators and, privately,
        a tree each with its first node's noise."""
        d = spec.agents[0].context_dim
        if d < 1:
            raise ValueError("DecFedLinUCB needs a linear env (observations with 'contexts')")
        b, n, k, e = spec.num_envs, spec.n_agents, spec.n_arms, d + 1
        gamma = self.template.gamma
        if spec.message_dim != HEADER + e * e:
            raise ValueError(
                f"DecFedLinUCB sends {HEADER + e * e} numbers a step for d={d}, the env "
                f"carries {spec.message_dim}"
            )
        probe = copy.deepcopy(self.template)
        probe.reset(AgentSpec(0, n, k, spec.horizon, spec.message_dim, context_dim=d), seed=0)
        self.constants = dec_constants(probe)
        self._table = self._noise_table(spec, rngs)
        lam, levels = self.constants.lam, int(probe.levels)
        self.own = np.zeros((b, n, gamma, e, e))
        self.others = np.zeros((b, n, gamma, n, e, e))
        self.got = np.zeros((b, n, gamma, n), dtype=np.bool_)
        self.invs = np.zeros((b, n, gamma, d, d))
        self.invs[..., np.arange(d), np.arange(d)] = 1.0 / lam
        self.vecs = np.zeros((b, n, gamma, d))
        self.log_dets = np.full((b, n, gamma), d * math.log(lam))
        self.refs = self.log_dets.copy()
        self.terms = np.zeros((b, n, gamma, 3))
        self.terms[..., 0], self.terms[..., 1] = lam, lam
        # per agent: since (gamma), fresh (gamma), released (gamma), last g, rejected
        self.books = np.zeros((b, n, 3 * gamma + 2), dtype=np.int64)
        self.flags = np.zeros((b, n, gamma, 2), dtype=np.bool_)  # dirty, pending
        self.leaf = np.zeros((b, n, gamma, e, e))
        self.acc = np.zeros((b, n, gamma, levels, e, e))
        self.node = np.zeros((b, n, gamma, levels, e, e))
        self.noise_next = np.zeros((b, n, gamma, e, e))
        _dec_start(self.constants.private, self.constants.noise_std, self._table, self.noise_next)
        self.last_x = np.zeros((b, n, d))
        self._sent = np.zeros((b, n, spec.message_dim))
        self._scorer, self._marker = set_scorer(d), dimension_marker(d)
        self._xt, self._scores = new_scratch(d, k)
        self._vectors, self._matrices = np.zeros((4, e)), np.zeros((2, e, e))
        self._honest = np.zeros((b, max(n, gamma), n), dtype=np.bool_)
        self._rows = np.tile(np.arange(n * k, dtype=np.int64).reshape(1, n, k), (b, 1, 1))
        self._envs = np.arange(b, dtype=np.int64)
        self._receivers = np.repeat(np.arange(n, dtype=np.int64)[:, None], n, axis=1)

    @property
    def rejected(self) -> IntArray:
        """Each agent's messages dropped as ones no honest agent sends ``(B, N)``."""
        return self.books[..., -1]

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Observe, read the inbox, rebuild, choose, talk (:func:`dec_fedlin_step` on the
        observations)."""
        pools, t, seen, last = observed(observations)
        b, n = last.shape
        inbox = np.ascontiguousarray(observations["messages"], np.float32)
        if inbox.ndim != 4:
            raise ValueError(
                "DecFedLinUCBVector reads each receiver's inbox (messages (B, N, N, D), as the "
                f"linear vector env gives them under GammaHops), got shape {inbox.shape}"
            )
        mask = np.ascontiguousarray(observations["mask"], np.int8)
        step, state = self.kernel()
        arms = np.empty((b, n), dtype=np.int64)
        step(last, seen, t, pools, self._envs, self._rows, inbox, self._receivers, mask,
             *state, arms, self._sent)  # fmt: skip
        return arms, self._sent.copy()

    def kernel(self) -> CompiledAct:
        """:func:`dec_fedlin_step` and its statistics (the step a linear rollout plays
        under GammaHops)."""
        state = (self.constants, self.own, self.others, self.got, self.invs, self.vecs,
                 self.log_dets, self.refs, self.terms, self.books, self.flags, self.leaf,
                 self.acc, self.node, self.noise_next, self.last_x, self._table,
                 self._marker, self._scorer, self._xt, self._scores, self._vectors, self._matrices,
                 self._honest)  # fmt: skip
        return dec_fedlin_step, state


def dec_fedlin_ucb(**kwargs: Any) -> DecFedLinUCBVector:
    """Decentralized FedUCB as a vector policy (``dec_fedlin_ucb``, and
    ``private_dec_fedlin_ucb`` with its registered options).

    Examples:
        >>> dec_fedlin_ucb(gamma=3).template.gamma
        3
    """
    return DecFedLinUCBVector(**kwargs)


__all__ = [
    "DecConstants",
    "DecFedLinUCBVector",
    "dec_constants",
    "dec_fedlin_step",
    "dec_fedlin_ucb",
    "honest_message",
]
