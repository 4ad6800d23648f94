"""Private index policies with an additive privacy cost: each agent releases, per arm,
the sums of **disjoint doubling epochs** of its rewards with fresh Laplace noise, and
everything it sends or decides is computed from those releases.

The construction is the one behind the private eliminations of Li & Song (fresh
Laplace noise on epoch means, each reward in one release) and Chowdhury & Zhou,
"Distributed differential privacy in multi-armed bandits" (ICLR 2023), and Sajed &
Sheffet's DP-SE before them, under the index rule of :mod:`baselines.index.policies`
(a Thompson-type draw on the average of the local means held):

- Rewards are clipped to ``[lo, hi]`` (the env's declared range, or ``clip``), width
  ``w = hi - lo``.
- Arm ``k``'s epochs at an agent hold ``1, 2, 4, ...`` pulls: when the open epoch is
  full, the agent releases its reward sum plus ``Laplace(w / epsilon)`` and opens the
  next, twice as long. After ``r`` epochs the agent holds ``n = 2^r - 1`` released pulls
  and a private sum ``S~ = S + (r Laplace draws)``; the pulls of the open epoch wait.
- Each clipped reward is in exactly one release and each release is ``epsilon``-DP for
  the rewards in it (sensitivity ``w``), and the releases are of disjoint data chosen by
  public history (parallel composition): the agent's whole stream of releases is
  ``epsilon``-DP, at every horizon. Its messages ``[n (M), S~ (M)]`` (``coop_ts``'s
  format), its uploads and its arm choices are functions of its releases, what it
  heard, and draws independent of its rewards: post-processing.
- The index reads ``S~`` as ``S`` plus noise of variance ``2 r (w / epsilon)^2``: a held
  row's local posterior is ``N((S~ + alpha mu0) / (n + alpha), sigma^2 / (n + alpha) +
  2 r (w / epsilon)^2 / (n + alpha)^2)`` with ``r = log2(n + 1)``.

**Where the privacy model differs from the ``+private`` settings.** There every agent
sees its own rewards only through ``PrivateRewards``' binary tree (a continual release of
every prefix sum, noise growing as ``log^1.5 t``), and anything a policy does is
post-processing of that view. Here the agent reads its raw rewards (it owns them) and
runs the mechanism itself, as Li & Song's eliminations do, so these policies run in the
settings without ``+private`` (``neighbours``, ``gossip``; the server form in
``server``, ``hybrid``, ``flooding``), and the table's ``privacy_spent`` column reports
their ``epsilon`` beside the ``+private`` settings' tree at the same ``epsilon``: the
claim is the same (one agent's reward stream, ``epsilon``-DP per episode, against every
observer but the agent itself; docs/privacy.md), the mechanism is not.

Readings chosen: epochs double from 1 (the first release after the first pull); the
noise is seeded from the policy's generator of each env (``noise="seeded"``, replayable)
or fresh OS entropy (``"secure"``); with ``epsilon = None`` no noise is added (the
same schedule, for ablations; its privacy is then ``inf``).

Examples:
    >>> from fedbandit_env.policies import AgentSpec
    >>> from fedbandit_env.vector.policy import VectorSpec
    >>> agents = tuple(AgentSpec(i, 2, 2, 50, reward_bounds=(0.0, 1.0), message_dim=4)
    ...                for i in range(2))
    >>> spec = VectorSpec(1, agents)
    >>> policy = EpochIndexPolicy(epsilon=1.0)
    >>> policy.reset(spec, [np.random.default_rng(0)])
    >>> policy.privacy_epsilon(2, 2), policy.requirements(2, 2).epsilon is None
    (1.0, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.index.policies import PARAMETERS, IndexPolicy
from baselines.index.server import ServerIndexPolicy
from fedbandit_env.privacy.mechanisms import Noise, check_noise, clip_range, noise_generator
from fedbandit_env.type_aliases import FloatArray
from fedbandit_env.vector.policy import VectorObs, VectorSpec

_SPREAD = 60.0  # a Laplace draw beyond 60 scales: probability e^-60 per draw


class _EpochReleases:
    """The epoch mechanism of the module docstring, shared by the neighbour and the
    server forms (a mixin before :class:`IndexPolicy` in their bases)."""

    counts: FloatArray
    sums: FloatArray
    index: tuple[Any, Any]
    var: float
    extra: float

    def _epoch_init(
        self, epsilon: float | None, clip: tuple[float, float] | None, noise: Noise
    ) -> None:
        if epsilon is not None and not (np.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"epsilon must be a finite number > 0 or None, got {epsilon!r}")
        self.own_epsilon = None if epsilon is None else float(epsilon)
        self.clip = clip
        self.noise = check_noise(noise, type(self).__name__)

    def _epoch_reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        name = type(self).__name__
        self.lo, self.hi = clip_range(self.clip, spec.reward_bounds, name)
        self.scale = 0.0 if self.own_epsilon is None else (self.hi - self.lo) / self.own_epsilon
        # the noise's own streams: one per env, spawned from the env's policy generator
        self.noise_rngs = [noise_generator(self.noise, g.spawn(1)[0]) for g in rngs]
        self.batch_counts = np.zeros((b, n, m))
        self.batch_sums = np.zeros((b, n, m))
        self.epoch_size = np.ones((b, n, m))
        self.counts, self.sums = np.zeros((b, n, m)), np.zeros((b, n, m))
        self.var = ((self.hi - self.lo) / 2.0) ** 2
        # the largest noise variance a row can carry (for the receivers' checks)
        self.extra = 2.0 * self.scale**2 * np.log2(spec.horizon + 1.0)

    def _fold_own(self, observations: VectorObs, t: int) -> None:
        """Fold the last pull into its open epoch; release every full epoch (its clipped
        sum plus Laplace noise) into the own counts and private sums."""
        if t == 0:
            return
        arm = observations["arm"]
        reward = np.clip(np.asarray(observations["reward"][..., 0], np.float64), self.lo, self.hi)
        at = (*self.index, arm)
        self.batch_counts[at] += 1.0
        self.batch_sums[at] += reward
        full = self.batch_counts >= self.epoch_size
        if not full.any():
            return
        noise = np.zeros(full.shape)
        if self.scale > 0:
            for b in np.flatnonzero(full.any(axis=(1, 2))):  # env b's draws, in (agent, arm) order
                noise[b][full[b]] = self.noise_rngs[b].laplace(0.0, self.scale, int(full[b].sum()))
        self.counts = np.where(full, self.counts + self.batch_counts, self.counts)
        self.sums = np.where(full, self.sums + self.batch_sums + noise, self.sums)
        self.batch_counts[full] = 0.0
        self.batch_sums[full] = 0.0
        self.epoch_size[full] *= 2.0

    def _noise_variance(self, counts: FloatArray) -> FloatArray | float:
        """A private sum's ``r = log2(n + 1)`` Laplace draws: variance ``2 r (w /
        epsilon)^2`` (0 without noise)."""
        if self.scale <= 0:
            return 0.0
        return 2.0 * self.scale**2 * np.log2(np.maximum(counts, 0.0) + 1.0)

    def _epoch_honest(self, counts: FloatArray, sums: FloatArray) -> Any:
        """Rows an honest releaser can send: counts of the form ``2^r - 1`` (whole
        epochs) and sums within ``60 r`` noise scales of the clipped range."""
        safe = np.where(np.isfinite(counts) & (counts >= 0), counts, 0.5)
        epochs = np.log2(safe + 1.0)
        ok = (epochs == np.round(epochs)).all(axis=-1)
        slack = _SPREAD * self.scale * epochs + 1e-6 * (abs(self.lo) + abs(self.hi) + 1.0) * (
            safe + 1.0
        )
        s = np.where(np.isfinite(sums), sums, 0.0)
        ok &= ((s >= self.lo * safe - slack) & (s <= self.hi * safe + slack)).all(axis=-1)
        return ok

    def privacy_epsilon(self, n_agents: int, n_arms: int) -> float | None:
        """``epsilon`` per agent per episode (every horizon); ``inf`` without noise."""
        return np.inf if self.own_epsilon is None else self.own_epsilon

    def noise_source(self) -> str | None:
        """``noise`` when the releases are noised, ``None`` without privacy."""
        return None if self.own_epsilon is None else self.noise


class EpochIndexPolicy(_EpochReleases, IndexPolicy):
    """:class:`~baselines.index.policies.IndexPolicy` on epoch-private releases (module
    docstring): every agent sends its released counts and private sums to its
    neighbours (``neighbours``, ``gossip``).

    Args:
        prior_strength: See :class:`~baselines.index.policies.IndexPolicy`.
        prior_mean: See there.
        draw_scale: See there.
        bonus: See there.
        epsilon: Each agent's privacy (``None``: no noise, no privacy).
        clip: The range rewards are clipped to (default: the env's declared range).
        noise: ``"seeded"`` (replayable) or ``"secure"`` (fresh OS entropy).

    Examples:
        >>> EpochIndexPolicy(epsilon=0.5).privacy_epsilon(4, 3)
        0.5
        >>> EpochIndexPolicy(noise="loud")
        Traceback (most recent call last):
        ...
        ValueError: EpochIndexPolicy: noise must be 'seeded' or 'secure', got 'loud'
    """

    name = "epoch_private_ts"

    def __init__(
        self,
        prior_strength: float | FloatArray = PARAMETERS["prior_strength"][2],
        prior_mean: float | FloatArray = PARAMETERS["prior_mean"][2],
        draw_scale: float | FloatArray = PARAMETERS["draw_scale"][2],
        bonus: float | FloatArray = PARAMETERS["bonus"][2],
        epsilon: float | None = 1.0,
        clip: tuple[float, float] | None = None,
        noise: Noise = "seeded",
    ) -> None:
        IndexPolicy.__init__(self, prior_strength, prior_mean, draw_scale, bonus)
        self._epoch_init(epsilon, clip, noise)
        self.noisy_sums = True

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty statistics and epochs; the noise's streams from ``rngs``."""
        IndexPolicy.reset(self, spec, rngs)
        self._epoch_reset(spec, rngs)

    def _honest(self, counts: FloatArray, sums: FloatArray, t: int) -> np.ndarray:
        """The index's checks (finite, whole counts within the clock) and the releases'
        (:meth:`_EpochReleases._epoch_honest`)."""
        ok = IndexPolicy._honest(self, counts, sums, t) & self._epoch_honest(counts, sums)
        return np.asarray(ok)


class EpochServerPolicy(_EpochReleases, ServerIndexPolicy):
    """:class:`~baselines.index.server.ServerIndexPolicy` on epoch-private releases:
    every agent uploads the local posterior of its releases (``server``, ``hybrid``,
    ``flooding``).

    Args:
        period: Steps between uploads (1: every step).
        epsilon: Each agent's privacy (``None``: no noise, no privacy).
        clip: The range rewards are clipped to (default: the env's declared range).
        noise: ``"seeded"`` (replayable) or ``"secure"`` (fresh OS entropy).
        **parameters: The index's four parameters (see ``IndexPolicy``).

    Examples:
        >>> EpochServerPolicy(period=5).period, EpochServerPolicy().privacy_epsilon(4, 3)
        (5, 1.0)
    """

    name = "epoch_private_server_ts"

    def __init__(
        self,
        period: int = 1,
        epsilon: float | None = 1.0,
        clip: tuple[float, float] | None = None,
        noise: Noise = "seeded",
        **parameters: float,
    ) -> None:
        ServerIndexPolicy.__init__(self, period=period, **parameters)
        self._epoch_init(epsilon, clip, noise)
        self.noisy_sums = True

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty statistics and epochs; the noise's streams from ``rngs``."""
        ServerIndexPolicy.reset(self, spec, rngs)
        self._epoch_reset(spec, rngs)


def epoch_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """``epoch_private_ts``'s constructor arguments from the setting options: the
    ``epsilon`` of the bench (``inf``: no noise) and ``noise`` when ``privacy_noise`` is
    not the default.

    Examples:
        >>> epoch_options({"epsilon": 2.0, "privacy_noise": "secure", "period": 3}, None)
        {'epsilon': 2.0, 'noise': 'secure'}
    """
    epsilon = float(options.get("epsilon", 1.0))
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0 (inf: no privacy), got {epsilon!r}")
    kw: dict[str, Any] = {"epsilon": epsilon if np.isfinite(epsilon) else None}
    if options.get("privacy_noise", "seeded") != "seeded":
        kw["noise"] = options["privacy_noise"]
    return kw


def epoch_server_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """``epoch_private_server_ts``'s: :func:`epoch_options` and the upload ``period``.

    Examples:
        >>> epoch_server_options({"epsilon": float("inf"), "period": 5}, None)
        {'epsilon': None, 'period': 5}
    """
    return {**epoch_options(options, problem), "period": options.get("period", 1)}


__all__ = ["EpochIndexPolicy", "EpochServerPolicy", "epoch_options", "epoch_server_options"]
