"""Fed1-UCB: Shi & Shen's algorithm for the exact model (global mean = average of the
local means; "Federated multi-armed bandits", AAAI 2021, Section 6, the exact model as a
special case of Fed2-UCB), in the rounds settings (``server``, ``hybrid``, ``flooding``).

The algorithm is a phased elimination on the server's average of the clients' local
sample means:

1. *Local exploration* (phase ``p``): every client pulls every active arm ``f(p)`` times,
   arm after arm, in index order.
2. *Upload*: every client sends the local sample mean of every arm over all its pulls so
   far (and, here, its pull counts: ``[flag, means (M), counts (M)]``).
3. *Global update*: the average ``mu_k`` of the uploaded means estimates the global mean
   of arm ``k``; with ``n_k`` pulls of it per client and ``K`` clients averaged, the
   width is ``B_k = sqrt(c sigma^2 log T / (K n_k))``; an active arm ``k`` with
   ``mu_k + B_k < max_j (mu_j - B_j)`` (``j`` active) is eliminated.
4. With one arm left, every client pulls it to the horizon and stops uploading.

Readings chosen (and where they come from):

- ``f(p) = floor(kappa log T)`` pulls per arm per phase, constant over phases, with
  ``kappa = 10``: the authors' code (ShenGroup/FMAB, ``Fed1_UCB_CR.py``, run for the
  paper's Fig. 3) and the paper's choice of a constant ``f(p)`` of order ``log T`` for
  the exact model, where the update periodicity does not depend on the number of
  clients.
- ``c = 4``: the width's constant in the authors' code, which says it was "tuned from
  the original ones in the paper to get better performance"; ``c`` is an option. The
  code takes the maximum in step 3 over every arm, eliminated ones included (their stale
  means); we take it over the active arms, as the algorithm's text reads.
- ``sigma``: the rewards' sub-Gaussian scale, by default half the reward range (1/2 for
  rewards in ``[0, 1]``, the authors' ``sigma = 1/2``), 1 for unbounded rewards.
- The env carries a round's result one step (``server``) or more (``hybrid``,
  ``flooding``: the network's delay) after the upload, so a client starts phase ``p + 1``
  on the active set it holds and drops arms from the rest of the phase when the result
  arrives; the upload goes with the first step after a phase's last pull (when that
  pull's reward is in), and never while the client's last round is in flight.
- Over ``flooding`` each client receives the round's uploads indexed by origin and
  averages them itself (the same average the server forms); ``hybrid``'s sinks weight
  components by size, so its result is the same average over agents.

Communication: one upload per client per phase, ``O(log T)`` rounds in all (the number of
phases until one arm is left), ``1 + 2 M`` numbers each.

Examples:
    >>> from fedbandit_env.policies import AgentSpec
    >>> spec = VectorSpec(1, tuple(AgentSpec(i, 2, 3, 100, message_dim=7) for i in range(2)))
    >>> policy = Fed1UCB(kappa=1.0)
    >>> policy.reset(spec, [np.random.default_rng(0)])
    >>> policy.pulls_per_phase
    4
    >>> obs = {"arm": np.zeros((1, 2), int), "reward": np.zeros((1, 2, 1), np.float32),
    ...        "step": np.zeros((1, 2, 1), np.float32), "server": np.zeros((1, 2, 7)),
    ...        "server_mask": np.zeros((1, 2, 1), np.int8)}
    >>> policy.act(obs)[0].tolist()  # phase 1 starts with arm 0 everywhere
    [[0, 0]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedbandit_env.policies import Requirements
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import VectorObs, VectorPolicy, VectorSpec


class Fed1UCB(VectorPolicy):
    """Shi & Shen's Fed1-UCB for the exact model (module docstring), every agent of
    ``B`` envs as arrays.

    Args:
        kappa: ``f(p) = floor(kappa log T)`` pulls of each active arm per phase.
        c: The width's constant: ``B_k = sqrt(c sigma^2 log T / (K n_k))``.
        sigma: Sub-Gaussian scale of one reward (default: half the reward range; 1 for
            unbounded rewards).

    Examples:
        >>> Fed1UCB().requirements(n_agents=4, n_arms=3).message_dim
        7
        >>> Fed1UCB(kappa=0.0)
        Traceback (most recent call last):
        ...
        ValueError: kappa must be a finite number > 0, got 0.0
    """

    name = "fed1_ucb"

    def __init__(self, kappa: float = 10.0, c: float = 4.0, sigma: float | None = None) -> None:
        for label, value in (("kappa", kappa), ("c", c)):
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{label} must be a finite number > 0, got {value!r}")
        if sigma is not None and not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0 or None, got {sigma!r}")
        self.kappa, self.c, self.sigma = float(kappa), float(c), sigma

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages ``[flag, means (M), counts (M)]`` through the rounds protocols."""
        return Requirements(message_dim=1 + 2 * n_arms)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """All arms active, phase 1 ahead, no round in flight (the policy draws nothing:
        ``rngs`` are not used)."""
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        horizon = max(int(spec.horizon), 2)
        self.pulls_per_phase = max(1, int(self.kappa * math.log(horizon)))
        lo, hi = spec.reward_bounds
        bounded = bool(np.isfinite(lo) and np.isfinite(hi) and hi > lo)
        sigma = self.sigma if self.sigma is not None else ((hi - lo) / 2 if bounded else 1.0)
        self.width2 = self.c * sigma * sigma * math.log(horizon)
        self.bounds = (float(lo), float(hi)) if bounded else (-np.inf, np.inf)
        self.m = m
        self.index = np.arange(b)[:, None], np.arange(n)[None, :]
        self.counts, self.sums = np.zeros((b, n, m)), np.zeros((b, n, m))
        self.active = np.ones((b, n, m), dtype=bool)
        self.remaining = np.zeros((b, n, m), dtype=np.int64)  # pulls left this phase
        self.phase = np.zeros((b, n), dtype=np.int64)
        self.pending = np.zeros((b, n), dtype=bool)  # a finished phase not yet uploaded
        self.waiting = np.zeros((b, n), dtype=bool)  # its round in flight
        self.rejected = np.zeros((b, n), dtype=np.int64)

    def _honest(self, k: FloatArray, means: FloatArray, counts: FloatArray, t: int) -> Any:
        """Which round results ``k`` (uploaders), means and counts an honest round can
        give after ``t`` steps: ``k`` a whole number in ``[1, N]``, every number finite,
        counts in ``[0, t]`` and means in the reward range; the rest are dropped and
        counted in :attr:`rejected`."""
        n = self.counts.shape[1]
        ok = np.isfinite(k) & (k >= 1) & (k <= n) & (k == np.floor(np.where(np.isfinite(k), k, 0)))
        ok &= np.isfinite(means).all(axis=-1) & np.isfinite(counts).all(axis=-1)
        safe = np.where(np.isfinite(counts), counts, -1.0)
        ok &= ((safe >= 0) & (safe <= t)).all(axis=-1)
        lo, hi = self.bounds
        if np.isfinite(lo):
            mu = np.where(np.isfinite(means), means, lo)
            slack = 1e-6 * (abs(lo) + abs(hi) + 1.0)
            ok &= ((mu >= lo - slack) & (mu <= hi + slack)).all(axis=-1)
        return ok

    def _eliminate(self, got: Any, mu: FloatArray, n_avg: FloatArray, k: FloatArray) -> None:
        """Step 3 on the round results ``got`` (B, N) received: drop every active arm
        whose upper bound is below the best lower bound among the active arms."""
        width = np.sqrt(self.width2 / (k[..., None] * np.maximum(n_avg, 1.0)))
        width = np.where(n_avg > 0, width, np.inf)  # an arm no one pulled stays
        lower = np.where(self.active, mu - width, -np.inf).max(axis=2, keepdims=True)
        drop = got[..., None] & self.active & (mu + width < lower)
        self.active &= ~drop
        self.remaining[drop] = 0

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Fold in the last pull and a round's result; pull the phase's next arm; upload
        a finished phase."""
        t = int(observations["step"][0, 0, 0])
        m = self.m
        if t > 0:
            arm = observations["arm"]
            self.counts[(*self.index, arm)] += 1.0
            self.sums[(*self.index, arm)] += observations["reward"][..., 0]
        if "server" in observations:
            got = np.asarray(observations["server_mask"], dtype=bool)[..., 0]  # (B, N)
            server = np.asarray(observations["server"], dtype=np.float64)
            k, mu, n_avg = server[..., 0], server[..., 1 : 1 + m], server[..., 1 + m : 1 + 2 * m]
            honest = self._honest(k, mu, n_avg, t)
            self.rejected += got & ~honest
            got &= honest
            safe = np.where(got[..., None], server, 1.0)
            self._eliminate(got, safe[..., 1 : 1 + m], safe[..., 1 + m : 1 + 2 * m], safe[..., 0])
            self.waiting &= ~np.asarray(observations["server_mask"], dtype=bool)[..., 0]
        elif "mask" in observations:  # flooding: the round's uploads, indexed by origin
            mask = np.asarray(observations["mask"], dtype=bool)  # (B, N, origins)
            rows = np.asarray(observations["messages"], dtype=np.float64)  # (B, origins, D)
            ones = np.ones(rows.shape[:2])
            honest = self._honest(ones, rows[..., 1 : 1 + m], rows[..., 1 + m : 1 + 2 * m], t)
            honest &= np.isfinite(rows[..., 0])  # the flag: no honest upload's is NaN
            self.rejected += (mask & ~honest[:, None, :]).sum(axis=2)
            arrived = mask.any(axis=2)
            use = mask & honest[:, None, :]
            k = use.sum(axis=2).astype(np.float64)  # (B, N)
            weight = use[..., None].astype(np.float64)
            payload = np.where(honest[..., None], rows[..., 1:], 0.0)[:, None, :, :]
            total = (weight * payload).sum(axis=2) / np.maximum(k, 1.0)[..., None]
            self._eliminate(k > 0, total[..., :m], total[..., m : 2 * m], np.maximum(k, 1.0))
            self.waiting &= ~arrived
        # a phase over: upload (when no round is in flight) and start the next
        done = (self.remaining.sum(axis=2) == 0) & (self.active.sum(axis=2) > 1)
        self.pending |= done & (self.phase > 0)
        start = done[..., None] & self.active
        self.remaining = np.where(start, self.pulls_per_phase, self.remaining)
        self.phase += done
        send = self.pending & ~self.waiting & (self.active.sum(axis=2) > 1)
        self.pending &= ~send
        self.waiting |= send
        # the phase's next arm: the lowest active arm with pulls left; one arm left: it
        left = self.remaining > 0
        arms: IntArray = np.where(left.any(axis=2), left.argmax(axis=2), self.active.argmax(axis=2))
        self.remaining[(*self.index, arms)] -= left.any(axis=2)
        means = self.sums / np.maximum(self.counts, 1.0)
        flag = send[..., None].astype(np.float64)
        messages: FloatArray = np.concatenate([flag, means, self.counts], axis=2)
        return arms, messages


def fed1_ucb(**kwargs: Any) -> Fed1UCB:
    """Fed1-UCB with the authors' constants (``kappa = 10``, ``c = 4``).

    Examples:
        >>> fed1_ucb().kappa, fed1_ucb(kappa=2.0).kappa
        (10.0, 2.0)
    """
    return Fed1UCB(**kwargs)


__all__ = ["Fed1UCB", "fed1_ucb"]
