"""Decentralized FedUCB (Dubey & Pentland, Sec. 4.2), without privacy, over the LOCAL
protocol (:class:`~fedbandit_env.protocols.LocalProtocol`: a message travels ``gamma``
hops, one a step).

Our copy of the paper has the section's text but not the appendix's pseudo-code; the
readings chosen, from the text:

- *Subsampling.* Every agent keeps ``gamma`` estimators and uses estimator ``g = (t - 1)
  mod gamma`` at step ``t`` (round robin, the same ``g`` for every agent); the pair of
  step ``t`` goes into estimator ``g(t)`` only.
- *Statistics.* Agent ``i``'s estimator ``g`` is ``V = lambda I + own_g + sum_j
  others_g[j]`` (and ``u`` alike), ``own_g`` its own pairs, ``others_g[j]`` the latest
  statistic agent ``j`` sent for ``g`` (each agent sends its *cumulative* statistic, so
  the latest one replaces the earlier).
- *Request* (the paper's rule): at a use of ``g``, when ``(log det V_g - log det V_g at
  its last synchronisation) (Delta_g + 1) > D`` (``Delta_g``: uses of ``g`` since then),
  the agent raises a request for ``g`` and sends its statistic with it.
- *Response*: an agent that sees a request for ``g`` (from within ``gamma`` hops, the
  LOCAL protocol's reach) sends its statistic for ``g`` at its next use of ``g``; it
  reaches every agent within ``gamma`` hops before their next use of ``g`` after that,
  i.e. "within ``2 gamma`` trials" as the paper says. Receiving a statistic for ``g``
  marks ``g`` synchronised; ``V_g`` is rebuilt (one Cholesky) at its next use.
- A message is ``[request, respond, g, statistic ((d + 1)^2)]``; ``D`` by default Theorem
  1's formula with ``T / gamma`` uses per estimator. The confidence width is OFUL's for
  each estimator (``M = 1``, ``rho = lambda``): privacy (the per-estimator trees of
  Remark 5) is not implemented for this variant.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from baselines.linear.kernels import (
    confidence_width,
    mat_vec,
    rank_one_update,
    rebuild,
    ucb_choice,
)
from baselines.linear.policies import LinUCB
from fedbandit_env.policies import AgentSpec, Requirements
from fedbandit_env.type_aliases import Observation, SeedLike

HEADER = 3
"""Entries before the statistic in a message: request, respond, estimator."""


class DecFedLinUCB(LinUCB):
    """Decentralized FedUCB over LOCAL with ``gamma`` hops (readings in the module).

    Args:
        gamma: Hops a message travels, and number of round-robin estimators.
        threshold: ``D`` of the request rule (``None``: Theorem 1's with ``T / gamma``).
        **kwargs: :class:`~baselines.linear.LinUCB`'s options.

    Example:
        >>> pol = DecFedLinUCB(gamma=2)
        >>> pol.requirements(4, 9).protocol, pol.requirements(4, 9).gamma
        ('local', 2)
    """

    def __init__(self, gamma: int = 2, threshold: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(gamma, bool) or not isinstance(gamma, int | np.integer) or gamma < 1:
            raise ValueError(f"gamma must be an int >= 1, got {gamma!r}")
        self.gamma = int(gamma)
        if threshold is not None and not (math.isfinite(threshold) and threshold > 0):
            raise ValueError(f"threshold must be a finite number > 0, got {threshold!r}")
        self.threshold_arg = threshold

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """A header of 3 (the linear env adds the statistic) over LOCAL with ``gamma``."""
        return Requirements(message_dim=HEADER, protocol="local", gamma=self.gamma)

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """``gamma`` empty estimators."""
        super().reset(spec, seed)
        d, n, k = self.dim, spec.n_agents, self.gamma
        if spec.message_dim != HEADER + (d + 1) ** 2:
            raise ValueError(
                f"DecFedLinUCB sends {HEADER + (d + 1) ** 2} numbers a step for d={d}, the "
                f"env carries {spec.message_dim}"
            )
        uses = max(2, spec.horizon // k)
        lam = self.regularizer
        self.threshold = self.threshold_arg or 2 * uses * d / (math.log(1 + uses / (d * lam)) + 1)
        self.own = np.zeros((k, d + 1, d + 1))
        self.others = np.zeros((k, n, d + 1, d + 1))
        self.invs = np.tile(np.eye(d) / lam, (k, 1, 1))
        self.vecs = np.zeros((k, d))
        self.log_dets = np.full(k, d * math.log(lam))
        self.refs = self.log_dets.copy()
        self.since = np.zeros(k, dtype=np.int64)
        self.dirty = np.zeros(k, dtype=bool)
        self.pending = np.zeros(k, dtype=bool)
        self.last_g = 0
        self._z = np.zeros(d + 1)

    def _receive(self, observation: Observation) -> None:
        """Requests and statistics that arrived, in origin order."""
        messages, mask = observation["messages"], observation["mask"]
        for v in range(mask.shape[0]):
            if not mask[v]:
                continue
            msg = messages[v]
            g = int(msg[2])
            if msg[0] > 0.5:
                self.pending[g] = True
            if msg[1] > 0.5:
                e = self.dim + 1
                self.others[g, v] = np.asarray(msg[HEADER:], dtype=np.float64).reshape(e, e)
                self.dirty[g] = True

    def act(self, observation: Observation) -> Any:
        """Observe, read the messages, rebuild a synchronised estimator, choose, talk."""
        contexts = np.asarray(observation["contexts"], dtype=np.float64)
        step = int(observation["step"][0])
        d, g = self.dim, step % self.gamma  # the estimator of step ``step + 1``
        if step > 0:
            x, y, last = self.last_x, float(observation["reward"][0]), self.last_g
            self.log_dets[last] += rank_one_update(self.invs[last], x, self._work)
            self.vecs[last] += y * x
            z = self._z
            z[:d], z[d] = x, y
            self.own[last] += np.outer(z, z)
            self._receive(observation)
        if self.dirty[g]:
            self.log_dets[g] = rebuild(self.own[g], self.others[g], self.regularizer,
                                       self.invs[g], self.vecs[g])  # fmt: skip
            self.refs[g], self.since[g], self.dirty[g] = self.log_dets[g], 0, False
        theta = mat_vec(self.invs[g], self.vecs[g], self._theta)
        beta = self.beta
        if beta is None:
            lam = self.regularizer
            beta = confidence_width(
                self.sigma, self.alpha, self.log_dets[g], d, 1, lam, lam, 0.0, self.norm_bound
            )
        k = int(ucb_choice(contexts, self._rows, self.invs[g], theta, beta))
        self.last_x, self.last_g = contexts[k].copy(), g
        growth = (self.log_dets[g] - self.refs[g]) * (self.since[g] + 1)
        request = bool(growth > self.threshold)
        if request:  # the requester counts as synchronised from now
            self.refs[g], self.since[g] = self.log_dets[g], 0
        else:
            self.since[g] += 1
        respond = request or bool(self.pending[g])
        self.pending[g] = False
        message = np.zeros(HEADER + (d + 1) ** 2, dtype=np.float32)
        message[0], message[1], message[2] = float(request), float(respond), float(g)
        if respond:
            message[HEADER:] = self.own[g].ravel()
        return {"arm": k, "message": message}


__all__ = ["HEADER", "DecFedLinUCB"]
