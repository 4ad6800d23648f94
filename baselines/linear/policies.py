"""Linear contextual policies: local LinUCB/OFUL and Dubey & Pentland's centralized
FedUCB (Algorithm 1) with PRIVATIZER (Algorithm 2), as published and corrected.

Every policy acts on ``federated_linear_v0``'s observation: it picks an index of the
``contexts`` decision set and, federated, sends ``[flag, release]``: the sync flag and
the ``(d + 1) x (d + 1)`` matrix it would upload if a round happens now, flattened
(:class:`~fedbandit_env.protocols.Synchronize` sums the releases of every agent when
any flag is up and returns ``[N, sum]`` in the next observation's ``server``).

Readings chosen (with :mod:`baselines.linear.kernels` and ``ALGORITHMS.md`` section 3):

- *One step of latency.* A flag raised when choosing step ``t`` (with the data of steps
  ``< t``) synchronises at the end of step ``t``; the sum is used from step ``t + 1``,
  and the step-``t`` observation goes into the next round. Algorithm 1 syncs after line
  12 of the same step; messages in this suite arrive with the next observation.
- *Release.* Agent ``i`` uploads ``sum [x y]^T [x y]`` over *all* its data so far plus
  ``shift I`` on the Gram block (privately: the tree's noisy prefix sum and ``shift = 2
  Lambda``, Sec. 4.3; non-privately: exact and ``shift = lambda``), so ``S = sum_i`` of
  the releases holds ``M rho_min I`` as Algorithm 1's initial ``S`` does.
- *Trigger* (line 12): ``log det(S + U + M (rho_max - rho_min) I) - log det S > D / t_i``
  with ``t_i`` the agent's observations since its last round; ``D`` by default Theorem
  1's ``2 T d / (log(rho_max / rho_min + T L^2 / (d rho_min)) + 1)``.
- *Noise* (published): ``m = 1 + ceil(log2 T)`` levels (rounds not fixed, Alg. 2 line 2),
  entries of std ``sigma_N = 4 sqrt(m) (L^2 + 1) log(2/delta) / epsilon`` (line 5),
  ``Lambda = sqrt(m) sigma_N (4 sqrt(d) + 2 log(2 n M / alpha))`` (the operator-norm bound
  of a sum of ``m`` symmetric Gaussian matrices, our reading of the garbled formula),
  ``rho_min = Lambda``, ``rho_max = 3 Lambda``, ``kappa = sqrt(m) sigma_N (sqrt(d) + 2
  log(2 n M / alpha)) / sqrt(rho_min)``.
- *Corrected* (``calibration="gdp"``): a fixed, data-independent schedule of ``n``
  rounds, ``m = 1 + ceil(log2 n)`` levels, and the noise calibrated exactly: one record
  changes ``sum z z^T`` by at most ``sqrt(2) (L^2 + 1)`` in Frobenius norm, which the
  symmetrised noise makes ``(L^2 + 1) / sigma_N``-GDP per node and ``sqrt(m) (L^2 + 1) /
  sigma_N``-GDP over the ``m`` nodes a record reaches
  (:mod:`fedbandit_env.privacy.gaussian`). The calibration holds only if the agent
  releases no more than its ``n`` rounds, so the private fixed schedule *ignores* a round
  it did not flag (a colluding member's request: nothing committed, nothing adopted) and
  re-sends its last public release between rounds (the protocol sums every agent's
  message in any round). Private variants clip ``||x|| <= L`` and
  ``|y| <= 1`` before anything (the sensitivity needs bounded data, assumption (f)).
- *Noise bound* (``noise_bound``), which sets the regulariser and the width. ``"each"``
  (Dubey & Pentland Sec. 4.3, the published variant's default): every agent bounds its
  own noise by ``Lambda`` and shifts by ``2 Lambda``, so the synchronised ``S`` carries
  ``M rho_min = M Lambda``, ``M rho_max`` and ``M kappa`` (the ``M kappa`` of our
  completion of Proposition 2). ``"joint"`` (the corrected variant's default, as Zhou &
  Chowdhury's analysis bounds the sum): the ``M`` agents' noises are independent, so
  their sum is one symmetric Gaussian with ``sqrt(M)`` times the std and ``||sum|| <=
  sqrt(M) Lambda``; each agent shifts by ``2 Lambda / sqrt(M)``, ``S`` carries
  ``sqrt(M) Lambda I`` and the reward vector's noise ``||h||_{S^-1} <= M^(1/4) kappa``
  (kappa as above). The noise itself, hence the privacy, is the same; only public
  constants change. Measured (Dubey rows of ``docs/reproduction.md``): with ``"each"`` the
  corrected variant's ``beta`` is 270-860 at M = 20 against gaps of 0.1-0.3, so it explores by
  width alone for all of T = 5e3; on Dubey's sets width-only exploration is *worse*
  than guessing (the pool's worse vectors can carry longer components orthogonal to
  ``theta``, the least explored directions) and more so the smaller the prior, i.e. the
  larger epsilon (1026 / 1059 / 1086 per agent at epsilon 0.1 / 1 / 10 with ``beta =
  1e6``, guessing 1024). With ``"joint"`` the prior and ``beta`` shrink by ``sqrt(M)``
  and ``M^(3/4)``, and the variant learns: 941 / 894 / 762 at M = 20.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from baselines.linear.kernels import (
    SetScratch,
    clip_norm,
    confidence_width,
    mat_vec,
    rank_one_update,
    set_scorer,
    spd_inverse,
    symmetric_noise,
    tree_commit,
    tree_release,
    ucb_choice,
)
from fedbandit_env.policies import AgentSpec, Policy, Requirements
from fedbandit_env.privacy.gaussian import gdp_mu
from fedbandit_env.privacy.mechanisms import Noise, check_noise, noise_generator
from fedbandit_env.protocols.sync import sync_message_dim as linear_message_dim
from fedbandit_env.type_aliases import FloatArray, Observation, SeedLike


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


class LinUCB(Policy):
    """OFUL (Abbasi-Yadkori et al. 2011) on the agent's own data: no communication.

    Args:
        regularizer: ``lambda`` of ``V = lambda I + sum x x^T``.
        sigma: Sub-Gaussian constant of the reward noise (1/2 for Bernoulli rewards).
        alpha: Failure probability of the confidence set.
        norm_bound: ``S``, a bound on ``||theta||``.
        beta: A fixed exploration width instead of OFUL's radius (``None``: the radius).

    Examples:
        >>> from fedbandit_env import federated_linear_v0
        >>> from fedbandit_env.policies import IndependentTeam
        >>> from fedbandit_env.runner.rollout import rollout
        >>> env = federated_linear_v0.parallel_env(n_agents=2, dim=3, horizon=50)
        >>> t, regret, cost = rollout(env, IndependentTeam(LinUCB), seed=0)
        >>> regret.shape, float(cost[-1])
        ((2, 50), 0.0)
    """

    def __init__(
        self,
        regularizer: float = 1.0,
        sigma: float = 0.5,
        alpha: float = 0.1,
        norm_bound: float = 1.0,
        beta: float | None = None,
    ) -> None:
        self.regularizer = _positive("regularizer", regularizer)
        self.sigma = _positive("sigma", sigma)
        self.alpha = _positive("alpha", alpha)
        if self.alpha >= 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
        self.norm_bound = _positive("norm_bound", norm_bound)
        self.beta = None if beta is None else _positive("beta", beta)
        self.dim = 0

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Start from ``V = lambda I``, ``u = 0``."""
        if spec.context_dim < 1:
            raise ValueError("LinUCB needs a linear env (observations with 'contexts')")
        self.spec, d = spec, spec.context_dim
        self.dim = d
        self.inv = np.eye(d) / self.regularizer
        self.log_det = d * math.log(self.regularizer)
        self.u = np.zeros(d)
        self.last_x = np.zeros(d)
        self.rejected = 0
        self._work, self._theta = np.zeros(d), np.zeros(d)
        self._rows = np.arange(spec.n_arms, dtype=np.int64)
        self._scorer, self._scratch = set_scorer(d), SetScratch.of(d, spec.n_arms)

    def choose(
        self, observation: Observation, inv: FloatArray, theta: FloatArray, beta: float
    ) -> int:
        """The OFUL choice over the observation's decision set (:func:`ucb_choice`,
        the fast path's kernel: float32 scores, the same bits)."""
        contexts = np.ascontiguousarray(observation["contexts"], dtype=np.float32)
        return int(ucb_choice(self._scorer, contexts, self._rows, inv, theta, beta, self._scratch))

    def observe(self, x: FloatArray, y: float) -> None:
        """Add the pair ``(x, y)`` to ``V`` and ``u``."""
        self.log_det += rank_one_update(self.inv, x, self._work)
        self.u += y * x

    def width(self) -> float:
        """The current exploration width ``beta``."""
        if self.beta is not None:
            return self.beta
        lam = self.regularizer
        return float(
            confidence_width(
                self.sigma, self.alpha, self.log_det, self.dim, 1, lam, lam, 0.0, self.norm_bound
            )
        )

    def act(self, observation: Observation) -> int:
        """Observe the last reward, then choose by the OFUL index."""
        contexts = np.asarray(observation["contexts"], dtype=np.float64)
        if float(observation["step"][0]) > 0:
            self.observe(self.last_x, float(observation["reward"][0]))
        theta = mat_vec(self.inv, self.u, self._theta)
        k = self.choose(observation, self.inv, theta, self.width())
        self.last_x = contexts[k].copy()
        return k


Sync = Literal["adaptive", "fixed"]
Calibration = Literal["published", "gdp"]
NoiseBound = Literal["each", "joint"]


class TreePrivateLinUCB(LinUCB):
    """What FedUCB's centralized and decentralized variants share: the schedule options and
    the tree mechanism's calibration (Algorithm 2 as published, or exact Gaussian DP).

    Args:
        sync: ``"adaptive"``: the data's log-det rule decides when to release (as
            published: *when* an agent releases depends on its data, which Zhou &
            Chowdhury (ICLR 2024) show leaks); ``"fixed"``: a release every ``batch``
            observations, whatever the data.
        threshold: ``D`` of the adaptive rule (``None``: Theorem 1's value).
        batch: Observations between releases of the fixed schedule (``None``: the root of
            the number of observations).
        epsilon: Privacy budget of each agent's releases (``None``: no noise).
        delta: The ``delta`` of the claim.
        calibration: ``"published"`` (Algorithm 2's noise; not private as published) or
            ``"gdp"`` (exact Gaussian-DP calibration over the fixed schedule's tree).
        noise_scale: Multiplies the noise (1: as calibrated; below 1 only to show that
            the privacy audits catch a weakened mechanism).
        feature_bound: ``L``: private variants clip ``||x||`` to it (and ``|y|`` to 1).
        noise: ``"seeded"`` (from the agent's stream of the team seed: replayable, so
            private only against observers who do not know the seed) or ``"secure"``
            (fresh OS entropy at every reset; :data:`~fedbandit_env.privacy.Noise`).
        noise_bound: How the regulariser bounds the noise of several agents' sum:
            ``"each"`` (every agent's on its own, the bounds adding up: Sec. 4.3) or
            ``"joint"`` (the sum as one Gaussian: ``sqrt(k)`` times one agent's bound for
            ``k`` agents, not ``k`` times); ``None``: ``"joint"`` for the ``gdp``
            calibration, ``"each"`` as published.
        **kwargs: :class:`LinUCB`'s options (``regularizer``, ``sigma``, ``alpha``,
            ``norm_bound``, ``beta``).

    Examples:
        >>> pol = TreePrivateLinUCB(sync="fixed", epsilon=1.0, calibration="gdp")
        >>> pol.privacy_epsilon(4, 5), pol.noise_bound
        (1.0, 'joint')
        >>> TreePrivateLinUCB(epsilon=1.0).privacy_epsilon(4, 5)
        inf
    """

    def __init__(
        self,
        sync: Sync = "adaptive",
        threshold: float | None = None,
        batch: int | None = None,
        epsilon: float | None = None,
        delta: float = 0.1,
        calibration: Calibration = "published",
        noise_scale: float = 1.0,
        feature_bound: float = 1.0,
        noise: Noise = "seeded",
        noise_bound: NoiseBound | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.noise = check_noise(noise, type(self).__name__)
        if noise_bound not in (None, "each", "joint"):
            raise ValueError(f"noise_bound must be 'each' or 'joint', got {noise_bound!r}")
        default: NoiseBound = "joint" if calibration == "gdp" else "each"
        self.noise_bound: NoiseBound = noise_bound or default
        if sync not in ("adaptive", "fixed"):
            raise ValueError(f"sync must be 'adaptive' or 'fixed', got {sync!r}")
        if calibration not in ("published", "gdp"):
            raise ValueError(f"calibration must be 'published' or 'gdp', got {calibration!r}")
        if calibration == "gdp" and epsilon is not None and sync != "fixed":
            raise ValueError("the gdp calibration needs the fixed schedule (sync='fixed')")
        self.sync, self.calibration = sync, calibration
        self.threshold_arg = None if threshold is None else _positive("threshold", threshold)
        self.threshold: float | None = self.threshold_arg  # the reset's ``D``
        if batch is not None and (
            isinstance(batch, bool) or not isinstance(batch, int) or batch < 1
        ):
            raise ValueError(f"batch must be an int >= 1, got {batch!r}")
        self.batch_arg = batch
        self.epsilon = None if epsilon is None else _positive("epsilon", epsilon)
        if not 0.0 < float(delta) < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        self.delta = float(delta)
        self.noise_scale = _positive("noise_scale", noise_scale)
        self.feature_bound = _positive("feature_bound", feature_bound)

    def privacy_epsilon(self, n_agents: int, n_arms: int) -> float | None:
        """``epsilon`` of the corrected variant; ``inf`` as published (the adaptive
        schedule leaks, whatever the noise); ``None`` without noise."""
        if self.epsilon is None:
            return None
        return self.epsilon if self.calibration == "gdp" else math.inf

    def noise_source(self) -> str | None:
        """``noise`` when the releases are noised, ``None`` without noise.

        Examples:
            >>> FedLinUCB(epsilon=1.0, noise="secure").noise_source()
            'secure'
        """
        return None if self.epsilon is None else self.noise

    def privacy_delta(self, n_agents: int, n_arms: int) -> float:
        """The ``delta`` of the Gaussian mechanism's claim (0 without noise).

        Examples:
            >>> pol = FedLinUCB(sync="fixed", epsilon=1.0, delta=0.05, calibration="gdp")
            >>> pol.privacy_delta(2, 5)
            0.05
        """
        return 0.0 if self.epsilon is None else self.delta

    def _calibrate(self, releases: int, n_agents: int, seed: SeedLike) -> tuple[float, float]:
        """Set the noise generator, the schedule (``batch``, ``rounds``: the releases a
        tree holds, ``levels``) and the nodes' std for ``releases`` observations (the
        fixed schedule's ``batch`` defaults to their root); return the bounds, holding
        with probability ``1 - alpha / (n M)`` each, of one agent's summed noise:
        ``Lambda`` on the Gram block's operator norm and ``H`` on the reward vector's
        Euclidean norm (both 0 without noise; both from the calibrated std: a
        ``noise_scale`` below 1 weakens the noise, not the public constants).

        ``Lambda = sqrt(m) sigma_N (4 sqrt(d) + 2 log(2 n M / alpha))`` (Sec. 4.3, the
        operator norm of a sum of ``m`` symmetric Gaussian matrices, our reading of the
        garbled formula) and ``H = sqrt(m) sigma_N (sqrt(d) + 2 log(2 n M / alpha))``;
        ``sigma_N = 4 sqrt(m) (L^2 + 1) log(2/delta) / epsilon`` as published (Alg. 2
        line 5), ``sqrt(m) (L^2 + 1) / mu(epsilon, delta)`` calibrated
        (:func:`~fedbandit_env.privacy.gaussian.gdp_mu`).
        """
        self.rng = noise_generator(self.noise, seed)  # used for the noise alone
        releases = max(releases, 2)
        self.batch = self.batch_arg or max(1, math.ceil(math.sqrt(releases)))
        self.rounds = max(1, (releases - 1) // self.batch) if self.sync == "fixed" else releases
        self.levels = 1 + math.ceil(math.log2(self.rounds)) if self.rounds > 1 else 1
        self.noise_std = 0.0
        if self.epsilon is None:
            return 0.0, 0.0
        m, bound2 = self.levels, self.feature_bound**2 + 1.0
        if self.calibration == "published":
            std = 4 * math.sqrt(m) * bound2 * math.log(2 / self.delta) / self.epsilon
        else:
            std = math.sqrt(m) * bound2 / gdp_mu(self.epsilon, self.delta)
        self.noise_std = std * self.noise_scale
        tail = 2 * math.log(2 * self.rounds * n_agents / self.alpha)
        spread = math.sqrt(m) * std
        return spread * (4 * math.sqrt(self.dim) + tail), spread * (math.sqrt(self.dim) + tail)

    def _clip(self, x: FloatArray, y: float) -> tuple[FloatArray, float]:
        """Private variants clip ``||x|| <= L`` and ``|y| <= 1`` (assumption (f)); the
        others see the data as it is."""
        if self.epsilon is None:
            return x, y
        return clip_norm(x, self.feature_bound, np.empty(self.dim)), min(max(y, -1.0), 1.0)

    def _draw_noise(self, out: FloatArray) -> None:
        """A tree node's noise (Alg. 2, lines 5-6) into ``out``: drawn when the node
        opens, used when it is released."""
        if self.epsilon is not None:
            symmetric_noise(self.rng.standard_normal(out.shape), self.noise_std, out)


class FedLinUCB(TreePrivateLinUCB):
    """Centralized FedUCB (Dubey & Pentland 2020, Algorithm 1), optionally with
    PRIVATIZER (Algorithm 2); the module docstring gives every reading.

    Args:
        **kwargs: :class:`TreePrivateLinUCB`'s options (``sync``, ``threshold``,
            ``batch``, ``epsilon``, ``delta``, ``calibration``, ``noise_scale``,
            ``feature_bound``, ``noise``, ``noise_bound``) and :class:`LinUCB`'s
            (``regularizer`` is ``lambda = rho_min = rho_max`` without privacy). The
            fixed schedule's ``batch`` defaults to ``ceil(sqrt(T))``.

    Examples:
        >>> pol = FedLinUCB(sync="fixed", epsilon=1.0, calibration="gdp")
        >>> pol.reset(AgentSpec(0, 4, 5, horizon=101, message_dim=10, context_dim=2), seed=0)
        >>> pol.rounds, pol.levels, round(pol.noise_std, 3)
        (9, 5, 4.856)
    """

    # ------------------------------------------------------------------ contract
    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages over the ``sync`` protocol, whose layout (a flag and a ``(d+1)^2``
        statistic, :func:`~fedbandit_env.protocols.sync.sync_message_dim`) the linear
        env sizes from ``d`` (``Scenario.make_env``, :func:`baselines.linear.linear_env`)."""
        return Requirements(message_dim=1, protocol="sync")

    # ------------------------------------------------------------------ set-up
    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Set the schedule, the noise and ``rho_min, rho_max, kappa``; start from
        ``S = M rho_min I``."""
        super().reset(spec, seed)
        d, n_agents, horizon = self.dim, spec.n_agents, max(spec.horizon, 2)
        if spec.message_dim != linear_message_dim(d):
            raise ValueError(
                f"FedLinUCB sends {linear_message_dim(d)} numbers a step for d={d}, the env "
                f"carries {spec.message_dim}: build it with baselines.linear.linear_env"
            )
        lam, noise_norm = self._calibrate(horizon, n_agents, seed)
        kappa = 0.0
        if self.epsilon is None:
            lam = self.regularizer
            self.rho_min = self.rho_max = self.shift = lam
        else:
            kappa = noise_norm / math.sqrt(lam)
            if self.noise_bound == "joint":  # M rho_min = sqrt(M) Lambda, M kappa = M^1/4 kappa
                root = math.sqrt(n_agents)
                lam, kappa = lam / root, kappa / root**1.5
            self.rho_min, self.rho_max, self.shift = lam, 3 * lam, 2 * lam
        self.kappa = kappa
        self.extra = n_agents * (self.rho_max - self.rho_min)
        self.threshold = self.threshold_arg
        if self.threshold is None:
            ratio = self.rho_max / self.rho_min + horizon * self.feature_bound**2 / (
                d * self.rho_min
            )
            self.threshold = 2 * horizon * d / (math.log(ratio) + 1)
        self._sync_to(np.eye(d) * (n_agents * self.rho_min), np.zeros(d))
        e = d + 1
        self.leaf = np.zeros((e, e))  # data since the last round: the next tree leaf
        self.total = np.zeros((e, e))  # committed data (non-private release)
        self.acc = np.zeros((self.levels, e, e))
        self.node = np.zeros((self.levels, e, e))
        self.pending = np.zeros((e, e))
        self.round = 0
        self._draw_pending()
        self._z = np.zeros(e)
        # The corrected variant runs its own schedule and nothing else: a round it did
        # not flag (a colluding or faulty member's request) is ignored, and the release
        # it attaches between its rounds is the last one it made public (re-sending it
        # costs no privacy), never the pending node, whose noise would cancel between
        # two uploads of it.
        self.guarded = self.epsilon is not None and self.sync == "fixed"
        self.flagged = False
        self.ignored_rounds = 0
        self._public = np.zeros((e, e))
        self._public[np.arange(d), np.arange(d)] = self.shift

    def _draw_pending(self) -> None:
        """Noise of the next tree node (drawn once, used when it is released)."""
        self._draw_noise(self.pending)

    def _sync_to(self, gram: FloatArray, vector: FloatArray) -> bool:
        """``S, s <-`` a round's sum; ``U = u = 0``, ``t_i = 0``. A sum no honest round
        gives (not finite, or a Gram block that is not positive definite: a forged or
        faulty member's upload) is dropped and the agent keeps its statistics, as if the
        round had not reached it; returns whether the sum was taken."""
        d = self.dim
        gram = np.ascontiguousarray(gram, dtype=np.float64)
        if not (np.isfinite(gram).all() and np.isfinite(vector).all()):
            return False
        inv, winv = np.empty((d, d)), np.empty((d, d))
        log_det_s = spd_inverse(gram, inv)
        log_det_w = spd_inverse(gram + self.extra * np.eye(d), winv)
        if not math.isfinite(log_det_s) or not math.isfinite(log_det_w):
            return False
        self.s = np.array(vector, dtype=np.float64)
        self.u = np.zeros(d)
        self.inv, self.winv = inv, winv
        self.log_det_s = self.log_det = log_det_s
        self.log_det_w = log_det_w
        self.since = 0
        return True

    # ------------------------------------------------------------------ steps
    def observe(self, x: FloatArray, y: float) -> None:
        """Add ``(x, y)`` to ``U, u`` (line 10) and the pending leaf (line 11)."""
        x, y = self._clip(x, y)
        self.log_det += rank_one_update(self.inv, x, self._work)
        if self.extra > 0.0:
            self.log_det_w += rank_one_update(self.winv, x, self._work)
        else:  # W = V exactly (same start, same updates): skip the second update
            self.log_det_w = self.log_det
        self.u += y * x
        z = self._z
        z[: self.dim], z[self.dim] = x, y
        self.leaf += np.outer(z, z)
        self.since += 1

    def wants_sync(self) -> bool:
        """Line 12 (adaptive) or a full batch (fixed)."""
        if self.sync == "fixed":
            return self.since >= self.batch and self.round < self.rounds
        assert self.threshold is not None
        return self.since > 0 and (self.log_det_w - self.log_det_s) * self.since > self.threshold

    def release(self) -> FloatArray:
        """The ``(d+1) x (d+1)`` matrix this agent uploads if a round happens now."""
        if self.epsilon is None:
            out = self.total + self.leaf
        else:
            out = np.empty_like(self.leaf)
            tree_release(self.acc, self.node, self.leaf, self.pending, self.round + 1, out)
        d = self.dim
        out[np.arange(d), np.arange(d)] += self.shift
        return out

    def _commit(self) -> None:
        """A round happened: the pending leaf is inserted for good (Alg. 2, line 10)."""
        self.round += 1
        if self.epsilon is None:
            self.total += self.leaf
        else:
            tree_commit(self.acc, self.node, self.leaf, self.pending, self.round)
            self._draw_pending()
        self.leaf[:] = 0.0

    def act(self, observation: Observation) -> Any:
        """Apply a round seen in ``server``, observe, choose, flag and attach the release."""
        contexts = np.asarray(observation["contexts"], dtype=np.float64)
        if float(observation["step"][0]) > 0:
            if int(observation["server_mask"][0]) and self.guarded and not self.flagged:
                self.ignored_rounds += 1  # not on its schedule: nothing committed or adopted
            elif int(observation["server_mask"][0]):
                self._commit()
                total = np.asarray(observation["server"][1:], dtype=np.float64)
                total = total.reshape(self.dim + 1, self.dim + 1)
                if not self._sync_to(total[: self.dim, : self.dim], total[: self.dim, self.dim]):
                    self.rejected += 1  # the round happened (its release is committed and
                    self.since = 0  # the schedule moves on); only its forged sum is dropped
            self.observe(self.last_x, float(observation["reward"][0]))
        theta = mat_vec(self.inv, self.s + self.u, self._theta)
        beta = self.beta
        if beta is None:
            beta = confidence_width(
                self.sigma,
                self.alpha,
                self.log_det,
                self.dim,
                self.spec.n_agents,
                self.rho_min,
                self.rho_max,
                self.kappa,
                self.norm_bound,
            )
        k = self.choose(observation, self.inv, theta, beta)
        self.last_x = contexts[k].copy()
        message = np.empty(linear_message_dim(self.dim), dtype=np.float32)
        self.flagged = self.wants_sync()
        message[0] = 1.0 if self.flagged else 0.0
        message[1:] = self.upload().ravel()
        return {"arm": k, "message": message}

    def upload(self) -> FloatArray:
        """What this step's message carries: the release if a round happens now
        (:meth:`release`); for the private fixed schedule, between its own rounds, the
        last release it made public (see :attr:`guarded`)."""
        if self.guarded and not self.flagged:
            return self._public
        release = self.release()
        if self.guarded:
            self._public = release
        return release
