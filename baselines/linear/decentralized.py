"""Decentralized FedUCB (Dubey & Pentland, Sec. 4.2) over the LOCAL protocol
(:class:`~fedbandit_env.protocols.GammaHops`: a message travels ``gamma`` hops, one
a step), without privacy, with PRIVATIZER as published, or privately corrected.

Our copy of the paper has the section's text but not the appendix's pseudo-code; the
readings chosen, from the text:

- *Subsampling.* Every agent keeps ``gamma`` estimators and uses estimator ``g = (t - 1)
  mod gamma`` at step ``t`` (round robin, the same ``g`` for every agent); the pair of
  step ``t`` goes into estimator ``g(t)`` only.
- *Statistics.* Agent ``i``'s estimator ``g`` is ``V = prior I + own_g + sum_j
  others_g[j]`` (and ``u`` alike), ``own_g`` its own pairs (exact: an agent is trusted
  with its own data), ``others_g[j]`` the latest statistic agent ``j`` sent for ``g``
  (each agent sends its *cumulative* statistic, so the latest one replaces the earlier).
  ``V_g`` is rebuilt (one Cholesky) at the next use of ``g`` after a statistic for ``g``
  arrived; a rebuild that is not positive definite (noise beyond its bound, or a
  forged statistic) is skipped and the estimator keeps its previous ``V_g``.
- *Request* (``sync="adaptive"``, the paper's rule): at a use of ``g``, when ``(log det
  V_g - log det V_g at its last synchronisation) (Delta_g + 1) > D`` (``Delta_g``: uses
  of ``g`` since then), the agent raises a request for ``g`` and sends its statistic
  with it. ``D`` by default Theorem 1's formula with ``T / gamma`` uses per estimator.
- *Response*: an agent that sees a request for ``g`` (from within ``gamma`` hops, the
  LOCAL protocol's reach) sends its statistic for ``g`` at its next use of ``g``; it
  reaches every agent within ``gamma`` hops before their next use of ``g`` after that,
  i.e. "within ``2 gamma`` trials" as the paper says. Receiving a statistic for ``g``
  marks ``g`` synchronised.
- *Fixed schedule* (``sync="fixed"``): every agent sends its statistic for ``g`` at the
  use of ``g`` after each ``batch`` new pairs of ``g`` (``batch`` by default the root of
  ``T / gamma``), at most ``rounds = (T / gamma - 1) / batch`` times; no requests, and a
  request it hears changes nothing (the schedule is the data's and the network's
  independent: what a colluder sends cannot make it release more).
- *Privacy* (Sec. 4.3's "results hold almost identically for the decentralized case";
  Remark 5's one tree per estimator): with ``epsilon``, each estimator's statistic goes
  through its own binary tree over that estimator's releases (Algorithm 2; the
  calibration, clipping and bounds of :class:`~baselines.linear.policies.FedLinUCB`,
  with ``T / gamma`` observations and the tree of ``rounds`` releases). A record enters
  exactly one estimator, so it reaches one tree: the trees compose in parallel and each
  is calibrated with the whole budget. The claim (``calibration="gdp"``, which needs the
  fixed schedule) is each agent's releases' ``(epsilon, delta)``-DP with respect to one
  of its pairs, against any coalition of other agents; with the adaptive rule (as
  published) *when* an agent requests leaks its data, and no claim is made (``inf``).
- *Regulariser and width.* The sender adds no shift; the receiver, knowing how many
  agents' noisy statistics ``k`` estimator ``g`` holds, sets the prior to ``lambda + 2
  K Lambda`` with ``K = k`` (``noise_bound="each"``) or ``sqrt(k)`` (``"joint"``) and
  uses Proposition 2's width with ``M = 1``, ``rho_min = lambda + K Lambda``, ``rho_max
  = lambda + 3 K Lambda`` and ``kappa = K H / sqrt(rho_min)``
  (:func:`~baselines.linear.kernels.noise_prior`). Without noise the prior is
  ``lambda`` and the width OFUL's.
- A message is ``[request, respond, g, statistic ((d + 1)^2)]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from baselines.linear.kernels import (
    confidence_width,
    mat_vec,
    noise_prior,
    rank_one_update,
    rebuild,
    tree_commit,
    tree_release,
)
from baselines.linear.policies import TreePrivateLinUCB
from fedbandit_env.policies import AgentSpec, Requirements
from fedbandit_env.type_aliases import Observation, SeedLike

HEADER = 3
"""Entries before the statistic in a message: request, respond, estimator."""


class DecFedLinUCB(TreePrivateLinUCB):
    """Decentralized FedUCB over LOCAL with ``gamma`` hops (readings in the module).

    Args:
        gamma: Hops a message travels, and number of round-robin estimators.
        **kwargs: :class:`~baselines.linear.policies.TreePrivateLinUCB`'s options
            (``sync``, ``threshold``, ``batch``, ``epsilon``, ``delta``,
            ``calibration``, ``noise_scale``, ``feature_bound``, ``noise``,
            ``noise_bound``) and :class:`~baselines.linear.LinUCB`'s.

    Examples:
        >>> pol = DecFedLinUCB(gamma=2)
        >>> pol.requirements(4, 9).protocol, pol.requirements(4, 9).gamma
        ('gamma_hops', 2)
        >>> private = DecFedLinUCB(gamma=2, sync="fixed", epsilon=1.0, calibration="gdp")
        >>> private.privacy_epsilon(4, 9)
        1.0
    """

    def __init__(self, gamma: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(gamma, bool) or not isinstance(gamma, int | np.integer) or gamma < 1:
            raise ValueError(f"gamma must be an int >= 1, got {gamma!r}")
        self.gamma = int(gamma)

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """A header of 3 (the linear env adds the statistic) over LOCAL with ``gamma``."""
        return Requirements(message_dim=HEADER, protocol="gamma_hops", gamma=self.gamma)

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """``gamma`` empty estimators, and a tree (with its first noise) for each."""
        super().reset(spec, seed)
        d, n, k = self.dim, spec.n_agents, self.gamma
        if spec.message_dim != HEADER + (d + 1) ** 2:
            raise ValueError(
                f"DecFedLinUCB sends {HEADER + (d + 1) ** 2} numbers a step for d={d}, the "
                f"env carries {spec.message_dim}"
            )
        uses = max(2, spec.horizon // k)
        self.gram_bound, self.vec_bound = self._calibrate(uses, n, seed)
        lam, e = self.regularizer, d + 1
        self.threshold = self.threshold_arg or 2 * uses * d / (math.log(1 + uses / (d * lam)) + 1)
        self.own = np.zeros((k, e, e))
        self.others = np.zeros((k, n, e, e))
        self.heard = np.zeros((k, n), dtype=bool)
        self.invs = np.tile(np.eye(d) / lam, (k, 1, 1))
        self.vecs = np.zeros((k, d))
        self.log_dets = np.full(k, d * math.log(lam))
        self.refs = self.log_dets.copy()
        self.terms = np.tile([lam, lam, 0.0], (k, 1))  # rho_min, rho_max, kappa of each
        self.since = np.zeros(k, dtype=np.int64)
        self.dirty = np.zeros(k, dtype=bool)
        self.pending = np.zeros(k, dtype=bool)
        self.fresh = np.zeros(k, dtype=np.int64)  # pairs of g since its last release
        self.releases = np.zeros(k, dtype=np.int64)
        self.leaf = np.zeros((k, e, e))  # pairs of g since its last release: its next leaf
        self.acc = np.zeros((k, self.levels, e, e))
        self.node = np.zeros((k, self.levels, e, e))
        self.noise_next = np.zeros((k, e, e))
        for g in range(k):
            self._draw_noise(self.noise_next[g])
        self.last_g = 0
        self._z = np.zeros(e)

    def honest(self, message: np.ndarray) -> bool:
        """Whether ``message`` is one an honest agent can send: finite, flags 0 or 1, and
        an estimator index that is an integer in ``[0, gamma)`` (any other index would
        file a statistic under an estimator it does not belong to, or none).

        Examples:
            >>> pol = DecFedLinUCB(gamma=2)
            >>> [pol.honest(np.array([0.0, 1.0, g, 0.5])) for g in (1.0, 2.0, -1.0, 0.6)]
            [True, False, False, False]
        """
        flags, g = message[:2], float(message[2])
        return bool(
            np.isfinite(message).all()
            and ((flags == 0.0) | (flags == 1.0)).all()
            and g == math.floor(g)
            and 0 <= g < self.gamma
        )

    def _receive(self, observation: Observation) -> None:
        """Requests and statistics that arrived, in origin order; a message no honest
        agent can send (:meth:`honest`) is dropped and counted in :attr:`rejected`."""
        messages, mask = observation["messages"], observation["mask"]
        for v in range(mask.shape[0]):
            if not mask[v]:
                continue
            msg = messages[v]
            if not self.honest(msg):
                self.rejected += 1
                continue
            g = int(msg[2])
            if msg[0] > 0.5:
                self.pending[g] = True
            if msg[1] > 0.5:
                e = self.dim + 1
                self.others[g, v] = np.asarray(msg[HEADER:], dtype=np.float64).reshape(e, e)
                self.heard[g, v] = True
                self.dirty[g] = True

    def _release(self, g: int) -> np.ndarray:
        """Estimator ``g``'s statistic as sent now: exact, or the tree's next release
        (the leaf inserted for good, Alg. 2 line 10, and the next node's noise drawn)."""
        if self.epsilon is None:
            return self.own[g]
        r = int(self.releases[g]) + 1
        out = np.empty_like(self.leaf[g])
        tree_release(self.acc[g], self.node[g], self.leaf[g], self.noise_next[g], r, out)
        tree_commit(self.acc[g], self.node[g], self.leaf[g], self.noise_next[g], r)
        self._draw_noise(self.noise_next[g])
        self.leaf[g] = 0.0
        return out

    def _talk(self, g: int) -> tuple[bool, bool]:
        """Whether this use of ``g`` raises a request and sends a statistic."""
        if self.sync == "fixed":
            send = bool(self.fresh[g] >= self.batch and self.releases[g] < self.rounds)
            return False, send
        growth = (self.log_dets[g] - self.refs[g]) * (self.since[g] + 1)
        request = bool(growth > self.threshold)
        if request:  # the requester counts as synchronised from now
            self.refs[g], self.since[g] = self.log_dets[g], 0
        else:
            self.since[g] += 1
        respond = request or bool(self.pending[g])
        self.pending[g] = False
        return request, respond

    def act(self, observation: Observation) -> Any:
        """Observe, read the messages, rebuild a synchronised estimator, choose, talk."""
        contexts = np.asarray(observation["contexts"], dtype=np.float64)
        step = int(observation["step"][0])
        d, g = self.dim, step % self.gamma  # the estimator of step ``step + 1``
        if step > 0:
            last = self.last_g
            x, y = self._clip(self.last_x, float(observation["reward"][0]))
            self.log_dets[last] += rank_one_update(self.invs[last], x, self._work)
            self.vecs[last] += y * x
            z = self._z
            z[:d], z[d] = x, y
            pair = np.outer(z, z)
            self.own[last] += pair
            if self.epsilon is not None:  # the tree's next leaf
                self.leaf[last] += pair
            self.fresh[last] += 1
            self._receive(observation)
        if self.dirty[g]:
            heard = int(self.heard[g].sum())
            rho_min, rho_max, kappa, prior = noise_prior(
                self.regularizer, heard, self.gram_bound, self.vec_bound,
                self.noise_bound == "joint",
            )  # fmt: skip
            log_det = rebuild(self.own[g], self.others[g], prior, self.invs[g], self.vecs[g])
            if log_det > -math.inf:
                self.log_dets[g], self.terms[g] = log_det, (rho_min, rho_max, kappa)
                self.refs[g], self.since[g] = log_det, 0
            self.dirty[g] = False
        theta = mat_vec(self.invs[g], self.vecs[g], self._theta)
        beta = self.beta
        if beta is None:
            rho_min, rho_max, kappa = self.terms[g]
            beta = confidence_width(
                self.sigma, self.alpha, self.log_dets[g], d, 1, rho_min, rho_max, kappa,
                self.norm_bound,
            )  # fmt: skip
        k = self.choose(observation, self.invs[g], theta, beta)
        self.last_x, self.last_g = contexts[k].copy(), g
        request, respond = self._talk(g)
        message = np.zeros(HEADER + (d + 1) ** 2, dtype=np.float32)
        message[0], message[1], message[2] = float(request), float(respond), float(g)
        if respond:
            message[HEADER:] = self._release(g).ravel()
            self.releases[g] += 1
            self.fresh[g] = 0
        return {"arm": k, "message": message}


__all__ = ["HEADER", "DecFedLinUCB"]
