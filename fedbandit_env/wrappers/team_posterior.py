"""The team posterior as a learner's observation: what cooperative Thompson sampling knows,
per arm, in numbers a network reads at any horizon.

The global mean of an arm is the average of the agents' local means (``ALGORITHMS.md``,
section 5), so the best an agent can know of it is a posterior over that average, built
from every ``(count, sum)`` pair it holds: its own, exact, and the newest pair heard from
each other agent. :class:`TeamPosterior` is the agent's statistics module, in the
learner's stack:

- it keeps the agent's own pull counts and reward sums (or, under
  :class:`~fedbandit_env.wrappers.PrivateRewards`, its private counts and sums,
  ``counts * private_means``: the tree's view, as ``private_coop_ts`` reads it);
- it **sends** them to the agent's neighbours every step (the ``2 M`` numbers,
  counts then sums, that ``coop_ts`` sends), so the learner chooses only arms (its
  action is ``Discrete(M)``);
- it keeps the newest pair heard from each sender, dropping what no honest agent can
  send (non-finite numbers, counts that are not whole, not non-negative or add up to more
  than the step, sums outside the reward range's ``count``-fold, widened by
  ``POISON_SCALES`` noise standard deviations under privacy), counted in
  ``infos["rejected_messages"]``;
- it observes, per arm ``a``, ``POSTERIOR_FEATURES`` (``posterior``, ``(M, F)``), the
  last arm it pulled (``arm``) and the step (``step``: for a critic during training, which
  may read the horizon; the posterior net's actor does not read it).

With a prior of ``alpha`` pseudo-pulls at ``mu0`` (the reward range's midpoint) and a
reward variance ``sigma^2`` (half the range, squared: the largest a bounded reward has),
each held row ``j`` gives a local posterior ``m_j = (S_j + alpha mu0) / (n_j + alpha)``
of variance ``v_j = sigma^2 / (n_j + alpha)`` (``+ extra / (n_j + alpha)^2`` with private
sums, ``extra`` the tree noise's variance on one prefix sum), and over the ``K`` rows
held (the agent's own included)::

    mean = avg_j m_j                       std = sqrt(sum_j v_j) / K
    z    = (mean - max_b mean_b) / std     gap = mean - max_b mean_b

``POSTERIOR_FEATURES`` in order: ``z``, ``mean``, ``std``, ``gap``, ``log_pooled``
(``log(1 + sum_j n_j)``), ``log_own`` (``log(1 + n_own)``), ``own_mean`` (``m_own``),
``own_dev`` (``m_own - mean``: how far the agent's own arm is from the team's),
``log_step`` (``log(1 + t)``) and ``coverage`` (``K / N``: the share of the team heard).
None is bounded by the horizon, so a model reads the same numbers at any ``T``.
``index_ts`` (and ``tuned_ts``) score arms on the same ``mean`` and ``std`` (with tuned
priors); the learner gets these and decides how to weigh them.

The arithmetic is written once against the array API (:mod:`fedbandit_env.backend`):
:class:`PosteriorState` runs for the PettingZoo wrapper (one env), for its vector form
(:class:`~fedbandit_env.vector.wrappers.VecTeamPosterior`, ``B`` envs on any device) and
for the learned reference policies, which keep the same statistics from the raw
observations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.backend import Backend, backend
from fedbandit_env.privacy.mechanisms import tree_noise_variance
from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import BanditSpaces, ParallelWrapper, refuse_twice, step_of
from fedbandit_env.wrappers.posterior_kernels import (
    fold_own,
    pack_rows,
    receive_senders,
    team_features,
)

POSTERIOR_FEATURES = (
    "z",
    "mean",
    "std",
    "gap",
    "log_pooled",
    "log_own",
    "own_mean",
    "own_dev",
    "log_step",
    "coverage",
)
"""The per-arm inputs of :class:`TeamPosterior`'s ``posterior`` entry, in order (module
docstring)."""

POISON_SCALES = 6.0
"""Under privacy, a held sum may lie this many tree-noise standard deviations outside
the reward range's ``count``-fold before it is dropped (an honest release does with
probability below 1e-6 per arm: Chebyshev's bound is 1/36, Laplace tails far lighter)."""


@dataclass(frozen=True)
class Prior:
    """The local posterior's prior and noise (module docstring).

    Attributes:
        strength: ``alpha``, pseudo-pulls per agent and arm.
        mean: ``mu0``.
        variance: ``sigma^2`` of one reward.
        extra: Variance of the tree noise on one private prefix sum (0: raw sums).
        bounds: The rewards' range, for the honesty checks.

    Examples:
        >>> Prior.for_rewards((0.0, 1.0))
        Prior(strength=1.0, mean=0.5, variance=0.25, extra=0.0, bounds=(0.0, 1.0))
    """

    strength: float = 1.0
    mean: float = 0.5
    variance: float = 0.25
    extra: float = 0.0
    bounds: tuple[float, float] = (0.0, 1.0)

    @classmethod
    def for_rewards(
        cls, bounds: tuple[float, float], extra: float = 0.0, strength: float = 1.0
    ) -> Prior:
        """The prior of rewards in ``bounds`` (midpoint, half the range squared); an
        unbounded range reads as ``[0, 1]`` for the prior and skips the range check.

        Examples:
            >>> Prior.for_rewards((-1.0, 3.0)).variance
            4.0
        """
        lo, hi = bounds
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            return cls(strength, 0.5, 0.25, float(extra), (float(lo), float(hi)))
        half = (hi - lo) / 2.0
        return cls(strength, (lo + hi) / 2.0, half * half, float(extra), (float(lo), float(hi)))

    @classmethod
    def for_private(
        cls, clip: tuple[float, float], horizon: int, epsilon: float, strength: float = 1.0
    ) -> Prior:
        """The prior of ``PrivateRewards(epsilon, clip)``'s rewards over ``horizon`` steps:
        the clip range, and the tree noise's variance bound on one prefix sum
        (:func:`~fedbandit_env.privacy.mechanisms.tree_noise_variance`, sensitivity the
        clip width).

        Examples:
            >>> Prior.for_private((0.0, 1.0), 8, 1.0).extra  # 4 levels, b = 4: 4 * 2 * 16
            128.0
        """
        lo, hi = (float(v) for v in clip)
        return cls.for_rewards((lo, hi), tree_noise_variance(horizon, epsilon, hi - lo), strength)


def honest_rows(be: Backend, counts: Any, sums: Any, t: int, prior: Prior) -> Any:
    """Which ``[counts, sums]`` rows (``(..., M)`` each) an honest agent can send after
    ``t`` steps: every number finite, counts whole, non-negative and adding up to at most
    ``t``, sums within ``[lo n, hi n]`` (with raw rewards in a known range; widened by
    ``POISON_SCALES`` standard deviations of the tree noise under privacy). Returns a
    ``(...)`` boolean array.

    Examples:
        >>> be = backend(None)
        >>> c = np.array([[1.0, 2.0], [1.5, 0.0], [np.nan, 0.0], [3.0, 3.0]])
        >>> s = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
        >>> honest_rows(be, c, s, 5, Prior()).tolist()
        [True, False, False, False]
    """
    with np.errstate(all="ignore"):  # a forged inf or NaN is an answer here, not an error
        return _honest(be.xp, counts, sums, t, prior)


def screen_of(prior: Prior) -> tuple[bool, float, float, float, float]:
    """The constants of the honest-row screen: whether the reward range is finite, its
    ``lo`` and ``hi``, the relative pad of a sum and the privacy slack (``POISON_SCALES``
    tree-noise standard deviations; 0 with raw sums). :func:`honest_rows` and the
    compiled screen (:func:`~fedbandit_env.wrappers.posterior_kernels.receive_senders`)
    both read them here.

    Examples:
        >>> screen_of(Prior())
        (True, 0.0, 1.0, 2e-06, 0.0)
    """
    lo, hi = prior.bounds
    ranged = bool(np.isfinite(lo) and np.isfinite(hi))
    pad = 1e-6 * (abs(lo) + abs(hi) + 1.0) if ranged else 0.0
    poison = POISON_SCALES * float(np.sqrt(prior.extra)) if prior.extra else 0.0
    return ranged, float(lo), float(hi), pad, poison


def _honest(xp: Any, counts: Any, sums: Any, t: int, prior: Prior) -> Any:
    # n == |floor(n)|: whole and non-negative (NaN and -inf fail; +inf fails the sum)
    whole = xp.all(counts == xp.abs(xp.floor(counts)), axis=-1)
    ok = whole & (xp.sum(counts, axis=-1) <= t)
    ranged, lo, hi, pad, poison = screen_of(prior)
    if ranged:  # a comparison with NaN or the wrong inf fails
        slack = pad * xp.maximum(counts, xp.ones_like(counts))
        if prior.extra:
            slack = slack + poison
        ok = ok & xp.all((sums >= lo * counts - slack) & (sums <= hi * counts + slack), axis=-1)
    else:
        ok = ok & xp.all(xp.isfinite(sums), axis=-1)
    return ok


class PosteriorState:
    """The statistics of :class:`TeamPosterior` for every agent of ``B`` envs, on any
    device: the agents' own counts and sums, the newest honest row held from each
    sender, and the features of the module docstring.

    Two layouts of what is held, one arithmetic each:

    - **per sender** (``graph`` given, while every delivery is that graph's broadcast:
      each receiver hears each neighbour every step, so what a receiver holds of a sender
      is the sender's newest honest row, the same for all its neighbours): ``O(B N M)``
      memory and work a step (on a complete graph the receivers' sums are the senders'
      total less their own row; on another graph, a gather over each receiver's
      neighbour list, ``O(B N d M)``);
    - **per receiver and sender** (every other delivery: gossip, faults): the ``(B, N,
      N)`` table. A per-sender state turns into it, once, at the first delivery that is
      not the broadcast (checked on NumPy; on a torch device the caller vouches for it,
      ``verify=False``, a check being a host round-trip).

    Every user (the PettingZoo wrapper, its vector form, the learned references) takes
    the same layout at the same step, so all compute the same bits.

    Args:
        be: Where the arrays live.
        shape: ``(B, N, M)``.
        prior: The local posteriors' prior and noise.
        graph: The ``(N, N)`` adjacency of a broadcast protocol (``None``: the table).
        verify: Check each delivery against the broadcast (default: on NumPy).

    Examples:
        >>> state = PosteriorState(backend(None), (1, 2, 3), Prior())
        >>> state.fold(np.array([[0, 2]]), np.array([[1.0, 0.0]]))
        >>> state.message()[0, 0].tolist()  # counts, then sums
        [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
        >>> rows = state.message()
        >>> state.receive(rows[:, None], np.array([[[0, 1], [1, 0]]]), t=1)
        >>> f = state.features(t=1)
        >>> f.shape, float(f[0, 0, 0, POSTERIOR_FEATURES.index("coverage")])
        ((1, 2, 3, 10), 1.0)
    """

    def __init__(
        self,
        be: Backend,
        shape: tuple[int, int, int],
        prior: Prior,
        graph: np.ndarray | None = None,
        verify: bool | None = None,
    ) -> None:
        self.backend, self.shape, self.prior = be, shape, prior
        b, n, _ = shape
        self._envs = be.arange(b)[:, None]
        self._agents = be.arange(n)[None, :]
        self._others = be.asarray(~np.eye(n, dtype=bool)[None])
        self.graph: np.ndarray | None = None
        if graph is not None:
            adjacency = np.asarray(graph, dtype=bool) & ~np.eye(n, dtype=bool)
            self.graph = adjacency
            self._adjacency = be.asarray(adjacency[None])
            self._fan_in = be.asarray(adjacency.sum(axis=1).astype(np.float64)[None])
            self._complete = bool(adjacency.sum() == n * (n - 1))
            degree = max(1, int(adjacency.sum(axis=1).max()))
            lists = np.full((n, degree), n, dtype=np.int64)  # n: a padding row of zeros
            for r in range(n):
                found = np.flatnonzero(adjacency[r])
                lists[r, : found.size] = found
            self._lists = be.asarray(lists)
        self.verify = be.is_numpy if verify is None else bool(verify)
        self._screen = screen_of(prior)  # the compiled screen's constants
        self.compiled = be.is_numpy
        """Whether the per-sender step runs compiled (on NumPy, by default; the same bits:
        :mod:`~fedbandit_env.wrappers.posterior_kernels`); ``False``: the array statement."""
        self._prior = (prior.strength, prior.strength * prior.mean, prior.variance, prior.extra)
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new episode)."""
        be, (b, n, m) = self.backend, self.shape
        self.counts, self.sums = be.zeros((b, n, m)), be.zeros((b, n, m))
        self.rejected = be.zeros((b, n), be.int64)
        self.per_sender = self.graph is not None
        if self.per_sender:  # each sender's newest honest row: count, mean, variance
            self.last = be.zeros((b, n, 3, m))
            self.ever = be.zeros((b, n), be.boolean)
        else:  # per receiver and sender
            self.held = be.zeros((b, n, n, 3, m))
            self.heard = be.zeros((b, n, n), be.boolean)

    def _to_table(self) -> None:
        """Turn the per-sender state into the per-receiver table (what each receiver
        holds: its neighbours' newest honest rows)."""
        xp, be = self.backend.xp, self.backend
        heard = self._adjacency & self.ever[:, None, :]
        self.heard = heard
        self.held = xp.where(heard[..., None, None], self.last[:, None], be.zeros((1,)))
        self.per_sender = False

    def fold(self, arms: Any, rewards: Any) -> None:
        """Each agent's pull of ``arms`` with ``rewards`` (``(B, N)``) into its own row."""
        be = self.backend
        if self.compiled:  # the same additions, compiled
            fold_own(self.counts, self.sums, np.asarray(arms, dtype=np.int64), np.asarray(rewards))
            return
        index = (self._envs, self._agents, be.xp.astype(arms, be.int64))
        be.add_at(self.counts, index, 1.0)
        be.add_at(self.sums, index, be.xp.astype(rewards, be.float64))

    def set_private(self, counts: Any, private_means: Any) -> None:
        """The own rows from ``PrivateRewards``' view: ``counts`` and ``counts *
        private_means`` (the private sums)."""
        xp, be = self.backend.xp, self.backend
        self.counts = xp.astype(counts, be.float64)
        self.sums = xp.astype(private_means, be.float64) * self.counts

    def message(self) -> Any:
        """What every agent sends: ``(B, N, 2M)`` float32, its counts then its sums."""
        xp, be = self.backend.xp, self.backend
        if self.compiled:
            b, n, m = self.shape
            return pack_rows(self.counts, self.sums, np.empty((b, n, 2 * m), np.float32))
        return xp.astype(xp.concat([self.counts, self.sums], axis=-1), be.float32)

    def receive(self, rows: Any, mask: Any, t: int) -> None:
        """Hold what arrived: ``rows`` ``(B, N_r or 1, N, 2M)`` the rows receivers got from
        each sender (a broadcast shape for sender-indexed deliveries), ``mask`` ``(B, N,
        N)`` who got what; dishonest rows are dropped and counted."""
        be, xp = self.backend, self.backend.xp
        m = self.shape[2]
        if self.per_sender and self.verify:
            broadcast = int(rows.shape[1]) == 1 or bool(
                np.all(np.asarray(rows) == np.asarray(rows)[:, :1])
            )
            if not (broadcast and self._graph_delivered(mask)):
                self._to_table()
        if self.per_sender and self.compiled:  # the same arithmetic, compiled
            self.rejected = self.rejected.copy()
            receive_senders(rows[:, 0], mask, t, self._screen, self._prior, self.last,
                            self.ever, self.rejected)  # fmt: skip
            return
        arrived = xp.astype(mask, be.boolean) & self._others
        if self.per_sender:
            rows = rows[:, :1]  # one row per sender: what its neighbours all got
        got = xp.astype(rows, be.float64)
        counts, sums = got[..., :m], got[..., m:]
        honest = honest_rows(be, counts, sums, t, self.prior)
        self.rejected = self.rejected + xp.sum(xp.astype(arrived & ~honest, be.int64), axis=2)
        # the local posterior of each arriving row, once per row as it came (a broadcast
        # delivery: once per sender), then kept where it reached a receiver honestly
        safe = xp.where(honest[..., None], counts, xp.zeros_like(counts))
        mean, var = self._local(safe, xp.where(honest[..., None], sums, xp.zeros_like(sums)))
        fresh = xp.stack([safe, mean, var], axis=-2)
        if self.per_sender:
            self.last = xp.where(honest[:, 0, :, None, None], fresh[:, 0], self.last)
            self.ever = self.ever | honest[:, 0]
            return
        kept = arrived & honest
        self.held = xp.where(kept[..., None, None], fresh, self.held)
        self.heard = self.heard | kept

    def _graph_delivered(self, mask: Any) -> bool:
        """Whether every receiver got the rows of exactly its graph neighbours (``mask``
        ``(B, N, N)``, the diagonal ignored). A NumPy mask broadcast over the envs (the
        env's one graph, stride 0) is checked once, not once an env: the same answer."""
        xp, be = self.backend.xp, self.backend
        if be.is_numpy:
            mask = np.asarray(mask)
            if mask.ndim == 3 and mask.strides[0] == 0:
                mask = mask[:1]
        arrived = xp.astype(mask, be.boolean) & self._others
        return bool(xp.all(arrived == self._adjacency))

    def features(self, t: int) -> Any:
        """``(B, N, M, F)`` float32: ``POSTERIOR_FEATURES`` of every agent and arm."""
        be, xp = self.backend, self.backend.xp
        n = self.shape[1]
        if self.per_sender and self.compiled:  # the same arithmetic, compiled
            out = np.empty((*self.shape, len(POSTERIOR_FEATURES)), np.float32)
            pooled = np.empty(self.shape)
            team_features(self.counts, self.sums, self.last, self.ever, self._lists, self._complete,
                          self._prior, float(np.log1p(t)), pooled, out)  # fmt: skip
            out[..., 4] = np.log1p(pooled, out=pooled)  # (pooled: this call's work space)
            out[..., 5] = np.log1p(self.counts)
            return out
        own_mean, own_var = self._local(self.counts, self.sums)
        if self.per_sender:
            w = xp.astype(self.ever, be.float64)  # (B, N)
            x = w[..., None, None] * self.last  # each sender's row, 0 if never honest
            if self._complete:  # the senders' total less the receiver's own row
                held = xp.sum(x, axis=1, keepdims=True) - x
                heard = xp.sum(w, axis=1, keepdims=True) - w
            else:  # each receiver's neighbour list (padding: a row of zeros)
                padded = xp.concat([x, xp.zeros_like(x[:, :1])], axis=1)
                held = xp.sum(padded[:, self._lists], axis=2)
                w_pad = xp.concat([w, xp.zeros_like(w[:, :1])], axis=1)
                heard = xp.sum(w_pad[:, self._lists], axis=2)
            rows = (1.0 + heard)[..., None]
        else:
            w = xp.astype(self.heard, be.float64)  # (B, N, N)
            rows = (1.0 + xp.sum(w, axis=2))[..., None]  # K, (B, N, 1)
            held = xp.sum(w[..., None, None] * self.held, axis=2)  # (B, N, 3, M)
        mean = (own_mean + held[..., 1, :]) / rows
        std = xp.sqrt(own_var + held[..., 2, :]) / rows
        pooled = self.counts + held[..., 0, :]
        gap = mean - xp.max(mean, axis=2, keepdims=True)
        out = be.zeros((*self.shape, len(POSTERIOR_FEATURES)), be.float32)
        cols = (
            gap / std,
            mean,
            std,
            gap,
            xp.log1p(pooled),
            xp.log1p(self.counts),
            own_mean,
            own_mean - mean,
        )
        for k, col in enumerate(cols):  # written in place: no stacked float64 copy
            out[..., k] = col
        out[..., 8] = float(np.log1p(t))
        out[..., 9] = rows / n
        return out

    def _local(self, counts: Any, sums: Any) -> tuple[Any, Any]:
        """Each row's local posterior mean and variance, per arm."""
        p = self.prior
        pulls = counts + p.strength
        mean = (sums + p.strength * p.mean) / pulls
        var = p.variance / pulls
        if p.extra:
            var = var + self.backend.xp.astype(counts > 0, self.backend.float64) * (
                p.extra / (pulls * pulls)
            )
        return mean, var


def posterior_space(n_arms: int) -> spaces.Box:
    """One agent's ``posterior`` entry: ``(M, F)`` float32, unbounded.

    Examples:
        >>> posterior_space(3).shape
        (3, 10)
    """
    return spaces.Box(-np.inf, np.inf, (n_arms, len(POSTERIOR_FEATURES)), np.float32)


def broadcast_graph(env: Any) -> np.ndarray | None:
    """The graph's adjacency when ``env`` delivers every message to every neighbour each
    step (a ``Broadcast`` protocol with nothing between it and ``env`` that drops or
    delays messages: only ``PrivateRewards``, which touches rewards alone), else
    ``None`` (PettingZoo or vector).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.protocols import Broadcast, RandomEdgeGossip
        >>> env = federated_mab_v0.parallel_env(n_agents=3, message_dim=2, protocol=Broadcast())
        >>> broadcast_graph(env).astype(int).tolist()
        [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
        >>> broadcast_graph(federated_mab_v0.parallel_env(
        ...     n_agents=3, message_dim=2, protocol=RandomEdgeGossip())) is None
        True
    """
    from fedbandit_env.protocols.broadcast import Broadcast

    layer = env
    while getattr(layer, "env", None) is not None and layer.env is not layer:
        if type(layer).__name__ not in ("PrivateRewards", "VecPrivateRewards"):
            return None
        layer = layer.env
    protocol, network = getattr(layer, "protocol", None), getattr(layer, "network", None)
    if type(protocol) is not Broadcast or network is None:
        return None
    return np.asarray(network.adjacency, dtype=bool)


def private_layer(env: Any) -> Any:
    """The ``PrivateRewards`` layer (PettingZoo or vector) under ``env``, or ``None``.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> private_layer(federated_mab_v0.parallel_env(horizon=3)) is None
        True
    """
    layer = env
    while layer is not None:
        if type(layer).__name__ in ("PrivateRewards", "VecPrivateRewards"):
            return layer
        layer = getattr(layer, "env", None)
        if layer is not None and getattr(layer, "env", None) is layer:
            break
    return None


def prior_of(env: Any, bounds: tuple[float, float], horizon: int, strength: float = 1.0) -> Prior:
    """The prior for an env's rewards: with a ``PrivateRewards`` layer below, the clip
    range and the tree noise's variance on one prefix sum, from the mechanism's public
    facts (:meth:`Prior.for_private`).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.wrappers import PrivateRewards
        >>> env = PrivateRewards(federated_mab_v0.parallel_env(horizon=8), epsilon=1.0)
        >>> prior_of(env, (0.0, 1.0), 8).extra  # 4 levels, b = 4: 4 * 2 * 16
        128.0
    """
    private = private_layer(env)
    if private is None:
        return Prior.for_rewards(bounds, strength=strength)
    return Prior.for_private(private.clip, horizon, private.epsilon, strength)


class TeamPosterior(ParallelWrapper):
    """The team posterior per arm as the observation; the agent's statistics sent as its
    message; arms as the only action (module docstring).

    The env below must carry messages of ``2 M`` numbers (``message_dim = 2 * n_arms``),
    its agents seeing their raw rewards or, under ``PrivateRewards``, their private view.

    Args:
        env: The env (or a ``PrivateRewards`` over it).
        strength: The prior's pseudo-pulls ``alpha``.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = TeamPosterior(federated_mab_v0.parallel_env(
        ...     n_agents=3, n_arms=2, horizon=5, message_dim=4))
        >>> obs, _ = env.reset(seed=0)
        >>> obs, *_ = env.step({a: 1 for a in env.agents})
        >>> sorted(obs["agent_0"]), obs["agent_0"]["posterior"].shape, env.action_space("agent_0")
        (['arm', 'posterior', 'step'], (2, 10), Discrete(2))
    """

    vector_form = "fedbandit_env.vector.wrappers.team_posterior:VecTeamPosterior"

    STEP_INFO = {"rejected_messages": 0}  # noqa: RUF012 (ParallelWrapper's ClassVar)

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action], strength: float = 1.0):
        super().__init__(env)
        refuse_twice(env, TeamPosterior)
        agent = env.possible_agents[0]
        info = BanditSpaces.of(env, agent, "TeamPosterior")
        m = info.n_arms
        messages = info.base.spaces.get("messages")
        if not isinstance(messages, spaces.Box) or messages.shape[-1] != 2 * m:
            raise ValueError(
                f"TeamPosterior sends each agent's counts and sums: the env must carry "
                f"messages of 2 * n_arms = {2 * m} numbers (message_dim={2 * m})"
            )
        self.n_arms, self.horizon = m, int(info.horizon)
        self._private = "private_means" in info.base.spaces
        bounds = (info.reward_low, info.reward_high)
        self.prior = prior_of(env, bounds, self.horizon, strength)
        n = len(env.possible_agents)
        self._graph = broadcast_graph(env)
        self._spaces = {
            a: spaces.Dict(
                {
                    "arm": spaces.Discrete(m),
                    "posterior": posterior_space(m),
                    "step": spaces.Box(0.0, float(self.horizon), (1,), np.float32),
                }
            )
            for a in env.possible_agents
        }
        self._arms = {a: spaces.Discrete(m) for a in env.possible_agents}
        self._state = PosteriorState(backend(None), (1, n, m), self.prior, self._graph)
        self._t = 0

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """``arm`` (the last pull), ``posterior`` ``(M, F)`` and ``step``."""
        return self._spaces[agent]

    def action_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The arm alone: the message is the wrapper's."""
        return self._arms[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env and the statistics."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._state.reset()
        self._t = 0
        return self._observe(obs), self.with_step_info(infos)

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Send every agent's statistics with its arm; fold in what it saw and heard."""
        sent = self._state.message()[0]
        row = {a: i for i, a in enumerate(self.possible_agents)}
        full = {a: {"arm": int(arm), "message": sent[row[a]]} for a, arm in actions.items()}
        obs, rewards, terms, truncs, infos = self.env.step(full)
        if obs:
            self._t = step_of(next(iter(obs.values())))
            ordered = [obs.get(a) for a in self.possible_agents]
            if any(o is None for o in ordered):
                raise ValueError("TeamPosterior needs every agent's observation each step")
            state = self._state
            if self._private:
                counts = np.stack([o["counts"] for o in ordered])[None]
                state.set_private(counts, np.stack([o["private_means"] for o in ordered])[None])
            else:
                arms = np.array([[o["arm"] for o in ordered]])
                got = np.array([[float(np.asarray(o["reward"]).reshape(-1)[0]) for o in ordered]])
                state.fold(arms, got)
            inbox = np.stack([np.asarray(o["messages"], dtype=np.float32) for o in ordered])
            mask = np.stack([np.asarray(o["mask"]) for o in ordered])
            before = state.rejected.copy()
            if state.per_sender:  # one row per sender, as its neighbours all got it
                heard = mask.astype(bool)
                first = heard.argmax(axis=0)  # a receiver that heard each sender
                anyone = np.asarray(heard.any(axis=0))
                picked = inbox[first, np.arange(len(first))]
                rows = np.where(anyone[:, None], picked, np.float32(0.0))[None, None]
            else:
                rows = inbox[None]
            state.receive(rows, mask[None], self._t)
            dropped = (state.rejected - before)[0]
            for a in infos:
                infos[a] = {**infos[a], "rejected_messages": int(dropped[row[a]])}
        return self._observe(obs), rewards, terms, truncs, infos

    def _observe(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        if not obs:
            return {}
        features = list(self._state.features(self._t)[0])
        row = {a: i for i, a in enumerate(self.possible_agents)}
        step = np.full(1, self._t, dtype=np.float32)
        return {
            a: {"arm": o["arm"], "posterior": features[row[a]], "step": step.copy()}
            for a, o in obs.items()
        }


__all__ = [
    "POISON_SCALES",
    "POSTERIOR_FEATURES",
    "PosteriorState",
    "Prior",
    "TeamPosterior",
    "broadcast_graph",
    "honest_rows",
    "posterior_space",
    "prior_of",
    "private_layer",
]
