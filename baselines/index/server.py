"""The index on the server's average: for the settings whose messages go through rounds
(``server``, ``hybrid``, ``flooding``; Li & Song's protocols).

Every agent uploads, each ``period`` steps, its local posterior of every arm: the mean
``m_j = (S_j + alpha mu0) / (n_j + alpha)`` and the variance ``v_j`` of
:class:`~baselines.index.policies.IndexPolicy` (message ``[1, m_j (M), v_j (M)]``, the
send flag first, as the rounds protocols read it). The server averages the uploads and
broadcasts ``[k, mean m, mean v]`` (``k`` uploaders; ``ServerRounds``; the hybrid
protocol's sinks average their components first, weighted by size, so the result is the
same average over agents). The average of the local means estimates the
global mean of each arm, with variance ``mean v / k``; an agent scores

    index = mean m + sqrt(mean v / k) * (draw_scale * z + bonus)

on the newest broadcast it holds (its own local posterior before the first), and pulls
the argmax. Over ``flooding`` every agent receives every upload, indexed by origin, and
averages the newest payload it holds of each agent the same way. This is Thompson
sampling on the averaged posterior (``draw_scale = 1, bonus = 0``, the defaults) or a
UCB-type index on the server's average (``draw_scale = 0``): the single-UCB form of Shi
& Shen (AAAI 2021) for the exact model (global mean = average of local means) reads
``bonus`` as its width's constant, and its uploads every round, where theirs double.

Readings chosen: uploads every ``period`` steps (``period = 1``: a round every step, as
the issue's server Thompson sampling; a round costs ``c1`` per uploader), and never while
its last round is in flight (the hybrid and flooding rounds take the network's delay; an
agent flags again once the round's result reached it, whether it kept the result or
dropped it as no honest round's: a forged upload costs one round, not the rest of the
run); the variance of
the average ignores which agents a partial round drew (the subset's means estimate the
global mean with the agents' spread added, which the draw scale absorbs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import baselines.index.kernels as kernels
from baselines.index.policies import PARAMETERS, IndexPolicy
from fedbandit_env.policies import Requirements
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import VectorObs, VectorSpec


class ServerIndexPolicy(IndexPolicy):
    """:class:`~baselines.index.policies.IndexPolicy` on the server's average of the
    agents' local posteriors (module docstring).

    Args:
        prior_strength: See :class:`~baselines.index.policies.IndexPolicy`.
        prior_mean: See there.
        draw_scale: See there.
        bonus: See there.
        period: Steps between uploads (1: every step).
        epsilon: Read rewards through ``PrivateRewards(epsilon)`` (``None``: raw).
        sensitivity: ``PrivateRewards``' clip width.
        sigma: Sub-Gaussian scale of one reward (default: half the reward range).

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> spec = VectorSpec(2, tuple(AgentSpec(i, 3, 4, 10, message_dim=9) for i in range(3)))
        >>> policy = ServerIndexPolicy()
        >>> policy.reset(spec, [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32), "server": np.zeros((2, 3, 9)),
        ...        "server_mask": np.zeros((2, 3, 1), np.int8)}
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages[0, 0, 0]
        ((2, 3), np.float64(1.0))
    """

    name = "server_ts"

    def __init__(
        self,
        prior_strength: float | FloatArray = PARAMETERS["prior_strength"][2],
        prior_mean: float | FloatArray = PARAMETERS["prior_mean"][2],
        draw_scale: float | FloatArray = PARAMETERS["draw_scale"][2],
        bonus: float | FloatArray = PARAMETERS["bonus"][2],
        period: int = 1,
        epsilon: float | None = None,
        sensitivity: float = 1.0,
        sigma: float | None = None,
    ) -> None:
        super().__init__(prior_strength, prior_mean, draw_scale, bonus, epsilon, sensitivity,
                         sigma)  # fmt: skip
        if isinstance(period, bool) or not isinstance(period, int | np.integer) or period < 1:
            raise ValueError(f"period must be an int >= 1, got {period!r}")
        self.period = int(period)

    def _honest_payload(self, payload: FloatArray) -> np.ndarray:
        """Which payloads ``[means (M), variances (M)]`` an honest upload (or average of
        uploads) can be: finite, variances non-negative and no larger than the prior's
        (``sigma^2 / alpha`` plus the tree's), and the means inside the reward range
        (or the prior mean) where one is known. With private sums a local mean is
        ``(S + alpha mu0) / (n + alpha)`` with ``S`` within
        :func:`~fedbandit_env.privacy.mechanisms.tree_sum_slack` of the clip range's
        ``[lo n, hi n]`` (``S = 0`` exactly while ``n = 0``), so it lies within
        ``slack / (1 + alpha)`` of ``[lo, hi]``, and so does an average of such means;
        the rest are dropped and counted in :attr:`rejected` (issue 63)."""
        m = self.m
        alpha = float(np.min(self.alpha))
        top = (self.var / alpha + self.extra / (alpha * alpha)) * (1 + 1e-6) + 1e-12
        lo, hi = self.bounds if self.clip is None else self.clip
        check = (
            (not self.noisy_sums or self.clip is not None) and np.isfinite(lo) and np.isfinite(hi)
        )
        low = high = 0.0
        if check:
            mu0 = float(np.min(self.mu0)), float(np.max(self.mu0))
            low, high = min(lo, mu0[0]), max(hi, mu0[1])
            slack = 1e-6 * (abs(low) + abs(high) + 1.0) + self.sum_slack / (1.0 + alpha)
            low, high = low - slack, high + slack
        ok = np.empty(payload.shape[:2], dtype=bool)
        kernels.honest_payloads(payload[..., : 2 * m], top, bool(check), low, high, ok)
        return ok

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages ``[flag, means (M), variances (M)]``; private rewards with ``epsilon``."""
        return Requirements(message_dim=1 + 2 * n_arms, epsilon=self.epsilon)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty statistics and no broadcast held."""
        super().reset(spec, rngs)
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        self.global_mean = np.zeros((b, n, m))
        self.global_var = np.zeros((b, n, m))
        self.have = np.zeros((b, n), dtype=bool)
        self.payloads = np.zeros((b, n, n, 2 * m))  # flooding: newest payload of each origin
        self.origins = np.zeros((b, n, n), dtype=bool)  # flooding: origins held
        self.waiting = np.zeros((b, n), dtype=bool)  # its round in flight

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Fold in the last pull and any broadcast; pull the best index; upload on
        schedule."""
        t = int(observations["step"][0, 0, 0])
        self._fold_own(observations, t)
        m = self.m
        if "server" in observations:
            server = np.asarray(observations["server"], dtype=np.float64)
            payload_ok = self._honest_payload(server[..., 1 : 1 + 2 * m])
            kernels.take_broadcast(server, np.asarray(observations["server_mask"]), payload_ok,
                                   self.global_mean, self.global_var, self.have,
                                   self.rejected, self.waiting)  # fmt: skip
        elif "mask" in observations:  # flooding: every upload, indexed by origin
            mask = np.asarray(observations["mask"], dtype=bool)
            payload = np.asarray(observations["messages"], dtype=np.float64)[..., 1 : 1 + 2 * m]
            whole = np.asarray(observations["messages"], dtype=np.float64)
            honest = self._honest_payload(payload) & np.isfinite(whole).all(axis=-1)
            self.rejected += (mask & ~honest[:, None, :]).sum(axis=2)
            mask = mask & honest[:, None, :]
            if mask.any():  # a round completed (most steps none does: nothing to redo)
                kernels.flood_average(mask, payload, self.payloads, self.origins,
                                      self.global_mean, self.global_var, self.have)  # fmt: skip
            self.waiting &= ~mask.any(axis=2)
        own = self._posteriors(self.counts, self.sums)  # [mean (M), variance (M)]
        draws = bool(np.any(self.draw_scale > 0))
        z = self._normals(t) if draws else self.global_mean
        arms: IntArray = np.empty(self.counts.shape[:2], dtype=np.int64)
        kernels.server_index(own, self.global_mean, self.global_var, self.have,
                             self._per_env["bonus"], self._per_env["draw_scale"], draws, z,
                             arms)  # fmt: skip
        send = ~self.waiting & (t % self.period == 0)
        self.waiting |= send
        flag = send[..., None].astype(np.float64)
        messages: FloatArray = np.concatenate([flag, own], axis=2)
        return arms, messages


def server_ts(**kwargs: Any) -> ServerIndexPolicy:
    """The server index with its defaults (Thompson sampling on the server's average).

    Examples:
        >>> server_ts().period
        1
    """
    return ServerIndexPolicy(**kwargs)


__all__ = ["ServerIndexPolicy", "server_ts"]
