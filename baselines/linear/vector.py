"""Local LinUCB and the pooled linear oracle as vector policies: every agent of ``B``
linear envs in one compiled step.

These are ``lin_ucb``'s and ``pooled_lin_ucb``'s fast paths (issue 62: a family's fast
path is a compiled step over the vector env, not a trial loop of its own): the core's
rollout (:meth:`LinearCore.rollout <fedbandit_env.core.linear.LinearCore.rollout>`)
calls :func:`lin_ucb_step` once a step for every env, and :meth:`LinUCBVector.act` calls
the same function on the vector env's observations. Each agent keeps
:class:`~baselines.linear.LinUCB`'s statistics (``V^-1``, ``log det V`` and ``u = sum y
x``) as ``(B, N, ..)`` arrays and calls the same kernels
(:mod:`baselines.linear.kernels`: the rank-one update, ``theta = V^-1 u``, OFUL's width
and the compiled set scorer), so a trial is the per-agent team's to the bit
(``tests/families/linear/test_linear_vector.py``, ``tests/runner/test_replay.py``).
The per-agent classes stay for use in any PettingZoo loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

from baselines.linear.kernels import (
    confidence_width,
    mat_vec,
    new_scratch,
    rank_one_update,
    set_scorer,
)
from baselines.linear.policies import LinUCB
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray
from fedbandit_env.vector.policy import CompiledAct, VectorObs, VectorPolicy, VectorSpec


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

    Examples:
        >>> from baselines.linear.kernels import new_scratch, set_scorer
        >>> pools = np.array([[[1.0, 0.0], [0.0, 1.0]]], np.float32)
        >>> inv, u = np.eye(2)[None, None].copy(), np.zeros((1, 1, 2))
        >>> xt, scores = new_scratch(2, 2)
        >>> arms = np.zeros((1, 1), np.int64)
        >>> lin_ucb_step(arms, np.zeros((1, 1), np.float32), 0, pools, np.zeros(1, np.int64),
        ...              np.array([[[0, 1]]]), False, 1.0, 0.5, 0.1, 1.0, -1.0, inv,
        ...              np.zeros((1, 1)), u, np.zeros((1, 1, 2)), np.zeros(2), np.zeros(2),
        ...              set_scorer(2), xt, scores, arms)
        >>> arms.tolist()  # equal widths: the first
        [[0]]
    """
    n_envs, n = arms.shape
    d = inv.shape[3]
    for b in range(n_envs):
        pool = pools[pool_of[b]]
        if pooled and t > 0:  # every agent's pair into the one learner, in agent order
            for i in range(n):
                log_det[b, 0] += rank_one_update(inv[b, 0], last_x[b, i], work)
                y = float(seen[b, i])
                for a in range(d):
                    u[b, 0, a] += y * last_x[b, i, a]
        for i in range(n):
            j = 0 if pooled else i  # whose statistics agent i chooses with
            if t > 0 and not pooled:
                log_det[b, i] += rank_one_update(inv[b, i], last_x[b, i], work)
                y = float(seen[b, i])
                for a in range(d):
                    u[b, i, a] += y * last_x[b, i, a]
            mat_vec(inv[b, j], u[b, j], theta)
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
        self._scorer = set_scorer(d)
        self._xt, self._scores = new_scratch(d, k)
        # act's view of the observations: env b's pool is its agents' sets one after
        # the other, agent i's vectors at rows i K .. i K + K - 1
        self._rows = np.tile(np.arange(n * k, dtype=np.int64).reshape(1, n, k), (b, 1, 1))
        self._envs = np.arange(b, dtype=np.int64)

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Add the last pair, then choose by the OFUL index (:func:`lin_ucb_step` on the
        observations' ``contexts``)."""
        contexts = np.asarray(observations["contexts"])
        b, n, k, d = contexts.shape
        pools = np.ascontiguousarray(contexts, dtype=np.float32).reshape(b, n * k, d)
        t = int(np.asarray(observations["step"]).reshape(-1)[0])
        seen = np.ascontiguousarray(np.asarray(observations["reward"])[..., 0], np.float32)
        last = np.ascontiguousarray(observations["arm"], dtype=np.int64)
        step, state = self.kernel()
        arms = np.empty((b, n), dtype=np.int64)
        step(last, seen, t, pools, self._envs, self._rows, *state, arms)
        return arms, None

    def kernel(self) -> CompiledAct:
        """:func:`lin_ucb_step` and its statistics (the step a linear rollout plays)."""
        o = self.options
        fixed = -1.0 if o.beta is None else float(o.beta)
        state = (self.pooled, o.regularizer, o.sigma, o.alpha, o.norm_bound, fixed, self.inv,
                 self.log_det, self.u, self.last_x, self._work, self._theta, self._scorer,
                 self._xt, self._scores)  # fmt: skip
        return lin_ucb_step, state


def vector_trial(
    policy: LinUCBVector,
    problem: LinearProblem,
    horizon: int,
    env_seed: int,
    steps: IntArray,
    trace: bool = False,
) -> tuple[FloatArray, IntArray, Float32Array]:
    """One trial of ``policy`` on ``problem``, rolled out by the core: per-agent regret
    ``(N, R)`` at ``steps`` and, traced, every agent's choice and observed reward ``(T,
    N)`` (else empty). The env is the PettingZoo linear env reset with ``env_seed``
    (:class:`~fedbandit_env.vector.FederatedLinearVecEnv` with one env), so this is the
    trial ``run_fast`` plays for that env seed.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> p = dubey_synthetic(2, dim=2, seed=0)
        >>> regret, arms, _ = vector_trial(lin_ucb(), p, 6, 1, np.array([3, 6]), trace=True)
        >>> regret.shape, arms.shape
        ((2, 2), (6, 2))
    """
    from fedbandit_env.policies import AgentSpec
    from fedbandit_env.vector import FederatedLinearVecEnv

    venv = FederatedLinearVecEnv(problem, horizon=horizon, num_envs=1)
    venv.reset(seed=[int(env_seed)])
    n, k, d = problem.n_agents, problem.set_size, problem.dim
    agents = tuple(AgentSpec(i, n, k, int(horizon), context_dim=d) for i in range(n))
    policy.reset(VectorSpec(1, agents), [])
    steps = np.asarray(steps, dtype=np.int64)
    out = np.zeros((1, n, steps.size))
    shape = (1, int(horizon), n) if trace else (0, 0, 0)
    arms, rewards = np.zeros(shape, np.int64), np.zeros(shape, np.float32)
    venv.rollout(*policy.kernel(), steps, out, (arms, rewards))
    venv.close()
    if not trace:
        return out[0], np.zeros((0, n), np.int64), np.zeros((0, n), np.float32)
    return out[0], arms[0], rewards[0]


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


__all__ = ["LinUCBVector", "lin_ucb", "lin_ucb_step", "pooled_lin_ucb", "vector_trial"]
