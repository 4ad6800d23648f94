"""Tunable index policies over exactly a setting's information: each agent's own and
heard per-arm counts and sums (the ``2 M`` numbers cooperative TS sends).

Every agent sends its own counts and sums, keeps the newest pair heard from each sender,
and scores arm ``a`` on the average of the local means it holds (the global mean of an
arm is the average of the local means; ``ALGORITHMS.md`` section 5)::

    m_j = (S_j + alpha * mu0) / (n_j + alpha)            # agent j's local mean, prior (alpha, mu0)
    v_j = sigma^2 / (n_j + alpha)  [+ extra / (n_j + alpha)^2 with private sums]
    mean = avg_j m_j,  std = sqrt(sum_j v_j) / K           # over the K rows held
    index = mean + std * (draw_scale * z + bonus),  z ~ N(0, 1) per agent and arm

and pulls the argmax. ``draw_scale = 1, bonus = 0`` with a flat prior is Thompson
sampling on the averaged Gaussian posterior (coop_ts's moment-matched form);
``draw_scale = 0`` makes it a UCB-type index (``bonus`` standard deviations of optimism).
The four parameters (``prior_strength``, ``prior_mean``, ``draw_scale``, ``bonus``) are
what ``fedbandit tune`` searches (:data:`PARAMETERS`); ``tuned_ts`` and
``tuned_private_ts`` ship the values it found.

Private form: under ``PrivateRewards`` the own sums are ``private_means * counts`` (the
tree's view, as ``private_coop_ts`` reads it) and each sum's tree noise widens its local
mean's variance by ``extra = private_extra_variance(T, epsilon, sensitivity)``.

The policy is a :class:`~fedbandit_env.vector.policy.VectorPolicy`: every agent of ``B``
envs in one call, so it runs on the vector env (tuning, ``bench``) and, through
``VectorTeam``, on the PettingZoo env with the same draws.

**Held rows: degree x M, not N x M** (issue 62 item 4). A receiver keeps a column per
sender that can reach it (:func:`sender_slots`: its graph neighbours, ascending), so the
table is ``(B, N, degree, 2 M)`` and a step costs ``O(N degree M)``: flat in ``N`` at a
fixed degree. A protocol that delivers from beyond the neighbours (flooding, a server)
widens the table to every other agent the first time it does (:meth:`IndexPolicy._widen`),
so nothing heard is lost. Either way the held rows are summed in ascending sender order
with exact zeros for the unheard, so the trials are those of the dense table's to the bit.

**A compiled step.** ``act`` screens, keeps and scores in numba
(:mod:`baselines.index.kernels`), in the floating-point order of the NumPy statement it
replaced (``tests/families/index/test_index_kernels.py`` holds it to a NumPy reference),
and a held row is kept as its local posterior, computed once, when the row arrives. The normal
draws stay NumPy's, taken ``_BLOCK`` steps at a time from each env's generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import baselines.index.kernels as kernels
from baselines.thompson.policies import private_extra_variance
from fedbandit_env.policies import Requirements
from fedbandit_env.privacy.mechanisms import tree_sum_slack
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import VectorObs, VectorPolicy, VectorSpec

PARAMETERS: dict[str, tuple[float, float, float]] = {
    "prior_strength": (0.05, 8.0, 1.0),
    "prior_mean": (0.0, 1.0, 0.5),
    "draw_scale": (0.0, 2.0, 1.0),
    "bonus": (-1.0, 3.0, 0.0),
}
"""Each tunable parameter: ``(low, high, default)`` (the search box of ``fedbandit tune``;
the default is Thompson sampling on the averaged posterior with a weak prior at 1/2)."""

_BLOCK = 64  # steps of normal draws taken from each env's generator at a time


def sender_slots(adjacency: np.ndarray) -> IntArray:
    """Each receiver's possible senders, ascending, padded with ``-1`` to the widest
    row: the columns of the held table (a graph without edges: every other agent).

    Examples:
        >>> ring = np.array([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]], bool)
        >>> sender_slots(ring).tolist()
        [[1, 3], [0, 2], [1, 3], [0, 2]]
        >>> sender_slots(np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]], bool)).tolist()
        [[1, 2], [0, -1], [0, -1]]
    """
    n = adjacency.shape[0]
    others = np.asarray(adjacency, dtype=bool) & ~np.eye(n, dtype=bool)
    if not others.any():
        others = ~np.eye(n, dtype=bool)
    width = int(others.sum(axis=1).max())
    slots = np.full((n, width), -1, dtype=np.int64)
    for r in range(n):
        senders = np.flatnonzero(others[r])
        slots[r, : senders.size] = senders
    return slots


class IndexPolicy(VectorPolicy):
    """The tunable index policy of the module docstring.

    Each of the four parameters is a number or an array with one value per env (how
    ``fedbandit tune`` plays a generation's candidates side by side).

    Args:
        prior_strength: ``alpha > 0``, pseudo-pulls of the prior per agent and arm.
        prior_mean: ``mu0``, the prior's mean reward.
        draw_scale: Scale of the Gaussian draw (0: no draw, a UCB-type index).
        bonus: Optimism in standard deviations of the averaged mean.
        epsilon: Read rewards through ``PrivateRewards(epsilon)`` (``None``: raw).
        sensitivity: ``PrivateRewards``' clip width.
        sigma: Sub-Gaussian scale of one reward (default: half the reward range, 1/2
            for rewards in ``[0, 1]``).

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> spec = VectorSpec(2, tuple(AgentSpec(i, 3, 4, 10, message_dim=8) for i in range(3)))
        >>> policy = IndexPolicy()
        >>> policy.reset(spec, [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32), "messages": np.zeros((2, 3, 8)),
        ...        "mask": np.zeros((2, 3, 3), np.int8)}
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages.shape
        ((2, 3), (2, 3, 8))
    """

    name = "index_ts"
    held: FloatArray
    """``(B, N, S, 2 M)``: the local posterior ``[mean (M), variance (M)]`` of each
    receiver's newest row from the sender of each column, computed when the row arrived
    (all the index reads of a row)."""
    heard: np.ndarray
    """``(B, N, S)``: which columns hold a row."""
    slots: IntArray
    """``(N, S)``: each column's sender (:func:`sender_slots`; ``-1``: padding)."""
    TUNABLE = PARAMETERS
    """What ``fedbandit tune`` searches (:data:`PARAMETERS`)."""

    def __init__(
        self,
        prior_strength: float | FloatArray = PARAMETERS["prior_strength"][2],
        prior_mean: float | FloatArray = PARAMETERS["prior_mean"][2],
        draw_scale: float | FloatArray = PARAMETERS["draw_scale"][2],
        bonus: float | FloatArray = PARAMETERS["bonus"][2],
        epsilon: float | None = None,
        sensitivity: float = 1.0,
        sigma: float | None = None,
    ) -> None:
        checks = (
            ("prior_strength", prior_strength, lambda v: np.all(v > 0), "> 0"),
            ("prior_mean", prior_mean, lambda v: np.all(np.isfinite(v)), "finite"),
            ("draw_scale", draw_scale, lambda v: np.all(v >= 0), ">= 0"),
            ("bonus", bonus, lambda v: np.all(np.isfinite(v)), "finite"),
        )
        values = {}
        for name, value, ok, what in checks:
            array = np.asarray(value, dtype=np.float64)
            if array.ndim > 1 or not ok(array) or not np.all(np.isfinite(array)):
                raise ValueError(f"{name} must be {what} (a number or one per env), got {value!r}")
            values[name] = array
        if epsilon is not None and not epsilon > 0:
            raise ValueError(f"epsilon must be > 0 or None, got {epsilon!r}")
        if not sensitivity > 0:
            raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
        if sigma is not None and not sigma > 0:
            raise ValueError(f"sigma must be > 0, got {sigma!r}")
        self._values = values
        self.epsilon, self.sensitivity, self.sigma = epsilon, float(sensitivity), sigma
        self.noisy_sums = epsilon is not None  # sums that may leave the reward range

    @property
    def parameters(self) -> dict[str, Any]:
        """The four tunable parameters' values (a number, or one per env)."""
        return {k: (float(v) if v.ndim == 0 else v.copy()) for k, v in self._values.items()}

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages of ``2 M`` numbers (counts, then sums); private rewards with
        ``epsilon``."""
        return Requirements(message_dim=2 * n_arms, epsilon=self.epsilon)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty statistics; env ``b``'s draws from ``rngs[b]``."""
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        if len(rngs) != b:
            raise ValueError(f"need one generator per env ({b}), got {len(rngs)}")
        self.rngs = list(rngs)
        self.m = m
        shaped = {}
        for name, value in self._values.items():
            if value.ndim == 1 and value.size != b:
                raise ValueError(f"{name} has {value.size} values for {b} envs")
            shaped[name] = value.reshape(-1, 1, 1) if value.ndim == 1 else value
        self.alpha, self.mu0 = shaped["prior_strength"], shaped["prior_mean"]
        # the compiled index's form: every parameter one value per env
        self._per_env = {
            name: np.ascontiguousarray(np.broadcast_to(value, (b,)), dtype=np.float64)
            for name, value in self._values.items()
        }
        self.draw_scale, self.bonus = shaped["draw_scale"], shaped["bonus"]
        lo, hi = spec.reward_bounds
        if self.sigma is not None:
            sigma = self.sigma
        elif self.epsilon is None and np.isfinite(lo) and np.isfinite(hi) and hi > lo:
            sigma = (hi - lo) / 2.0
        else:
            sigma = self.sensitivity / 2.0
        self.var = sigma * sigma
        self.bounds = (float(lo), float(hi))
        self.rejected = np.zeros((b, n), dtype=np.int64)
        self.extra = (
            0.0
            if self.epsilon is None
            else private_extra_variance(spec.horizon, self.epsilon, self.sensitivity)
        )
        # private sums: the clipped range of n rewards, widened by what the tree's noise
        # reaches but with chance 1e-9 (None: no clip range known, sums unchecked)
        self.clip = spec.agents[0].private_clip if self.epsilon is not None else None
        self.sum_slack = (
            0.0
            if self.clip is None or self.epsilon is None
            else tree_sum_slack(spec.horizon, self.epsilon, self.clip[1] - self.clip[0])
        )
        self.counts, self.sums = np.zeros((b, n, m)), np.zeros((b, n, m))
        self.index = np.arange(b)[:, None], np.arange(n)[None, :]
        self._use_slots(sender_slots(spec.adjacency), b, 2 * m)
        self.draws = np.zeros((b, 0, n, m))

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Fold in the last pull and what was heard; pull the best index (the compiled
        steps of :mod:`baselines.index.kernels`)."""
        t = int(observations["step"][0, 0, 0])
        m = self.m
        self._fold_own(observations, t)
        if "mask" in observations:
            mask = np.asarray(observations["mask"])
            rows = np.asarray(observations["messages"], dtype=np.float64)
            counts, sums = rows[..., :m], rows[..., m : 2 * m]
            honest = self._honest(counts, sums, t)  # (B, senders)
            post = self._posteriors(counts, sums)  # each sender's, once
            table = (self.slots, self.allowed, post, self.held, self.heard, self.rejected)
            if not kernels.keep_heard(mask, honest, *table):
                self._widen()  # heard from beyond the table's senders: widen, then keep
                table = (self.slots, self.allowed, post, self.held, self.heard, self.rejected)
                kernels.keep_heard(mask, honest, *table)
        own = self._posteriors(self.counts, self.sums)
        draws = bool(np.any(self.draw_scale > 0))
        z = self._normals(t) if draws else own
        arms: IntArray = np.empty(self.counts.shape[:2], dtype=np.int64)
        kernels.team_index(own, self.held, self.heard, self._per_env["bonus"],
                           self._per_env["draw_scale"], draws, z, arms)  # fmt: skip
        messages: FloatArray = np.concatenate([self.counts, self.sums], axis=2)
        return arms, messages

    def _posteriors(self, counts: FloatArray, sums: FloatArray) -> FloatArray:
        """Each row's local posterior ``[mean (M), variance (M)]`` ``(B, J, 2 M)``
        (``(S + alpha mu0) / (n + alpha)`` and ``var / (n + alpha) + noise / (n +
        alpha)^2``, compiled: :func:`~baselines.index.kernels.local_posteriors`); the
        noise variance is the tree's ``extra`` where a row has pulls (this class's
        :meth:`_noise_variance`), or a subclass's :meth:`_noise_variance` of the counts."""
        given = counts
        if type(self)._noise_variance is IndexPolicy._noise_variance:
            noise = kernels.TREE_NOISE if self.extra else kernels.NO_NOISE
        else:
            variance = self._noise_variance(counts)
            noise = kernels.GIVEN_NOISE
            if np.ndim(variance) == 0 and float(variance) == 0.0:
                noise = kernels.NO_NOISE
            given = np.broadcast_to(np.asarray(variance, dtype=np.float64), counts.shape)
        out = np.empty((*counts.shape[:2], 2 * counts.shape[2]))
        kernels.local_posteriors(counts, sums, self._per_env["prior_strength"],
                                 self._per_env["prior_mean"], self.var, noise,
                                 float(self.extra), given, out)  # fmt: skip
        return out

    def _use_slots(self, slots: IntArray, b: int, width: int) -> None:
        """Hold a column per sender of ``slots`` ``(N, S)``: ``held`` ``(B, N, S, width)``
        (the newest row heard from each), ``heard`` ``(B, N, S)``, both empty."""
        n = slots.shape[0]
        self.slots = slots
        self._valid = slots >= 0
        self._gather = np.where(self._valid, slots, 0)  # a padded column reads sender 0, unkept
        self._receivers = np.arange(n)[:, None]
        self.allowed = np.eye(n, dtype=bool)  # who may be heard (itself: ignored anyway)
        self.allowed[np.nonzero(self._valid)[0], slots[self._valid]] = True
        self.held = np.zeros((b, n, slots.shape[1], width))
        self.heard = np.zeros((b, n, slots.shape[1]), dtype=bool)

    def _widen(self) -> None:
        """A column for every other agent (a protocol reached beyond the graph's
        neighbours), keeping every row held so far in its sender's column."""
        old_slots, old_valid = self.slots, self._valid
        held, heard = self.held, self.heard
        b, n, _, width = held.shape
        self._use_slots(sender_slots(np.zeros((n, n), dtype=bool)), b, width)
        receivers, columns = np.nonzero(old_valid)
        senders = old_slots[receivers, columns]
        new_columns = senders - (senders > receivers)  # every other agent, ascending
        self.held[:, receivers, new_columns] = held[:, receivers, columns]
        self.heard[:, receivers, new_columns] = heard[:, receivers, columns]

    def _honest(self, counts: FloatArray, sums: FloatArray, t: int) -> np.ndarray:
        """Which senders' ``[counts, sums]`` an honest agent can send after ``t`` steps:
        every number finite, counts non-negative integers adding up to at most ``t``, and
        with raw rewards in a known range every sum between ``lo n`` and ``hi n`` (up to
        float32's rounding on the wire), with private sums the clip range's, widened by
        :func:`~fedbandit_env.privacy.mechanisms.tree_sum_slack` (what a liar can still
        shift a sum by); a message that fails is dropped and counted in
        :attr:`rejected` (as ``coop_ts``'s receivers do)."""
        lo, hi = self.bounds if self.clip is None else self.clip
        check = (
            (not self.noisy_sums or self.clip is not None) and np.isfinite(lo) and np.isfinite(hi)
        )
        rounding = 1e-6 * (abs(lo) + abs(hi) + 1.0)
        ok = np.empty(counts.shape[:2], dtype=bool)
        kernels.honest_rows(counts, sums, t, bool(check), float(lo), float(hi), rounding,
                            float(self.sum_slack), ok)  # fmt: skip
        return ok

    def _fold_own(self, observations: VectorObs, t: int) -> None:
        """The own counts and sums: the last pull folded in, or the private view's (the
        tree's private sums ``private_means * counts``) under ``PrivateRewards``."""
        if "private_means" in observations:
            self.counts = np.asarray(observations["counts"], dtype=np.float64)
            self.sums = np.asarray(observations["private_means"], dtype=np.float64) * self.counts
        elif t > 0:
            arm = observations["arm"]
            self.counts[(*self.index, arm)] += 1.0
            self.sums[(*self.index, arm)] += observations["reward"][..., 0]

    def _noise_variance(self, counts: FloatArray) -> FloatArray | float:
        """The variance of the noise in a row's sums (the tree's, with private sums; 0
        with raw ones), per arm."""
        if not self.extra:
            return 0.0
        return np.asarray(self.extra * (counts > 0), dtype=np.float64)

    def _normals(self, t: int) -> FloatArray:
        """This step's standard normals ``(B, N, M)``: env ``b``'s drawn ``_BLOCK`` steps
        at a time from ``rngs[b]`` (the same numbers at any batch size)."""
        k = t % _BLOCK
        if k == 0 or self.draws.shape[1] == 0:
            n, m = self.counts.shape[1], self.counts.shape[2]
            self.draws = np.stack([g.standard_normal((_BLOCK, n, m)) for g in self.rngs])
        return self.draws[:, k]


__all__ = ["PARAMETERS", "IndexPolicy", "sender_slots"]
