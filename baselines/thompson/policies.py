"""Thompson sampling for one agent, alone or sharing its statistics with its neighbours.

Cooperative Thompson sampling (ours; ``ALGORITHMS.md`` section 5 defines it, no paper
does): an agent sends its own per-arm pull counts and reward sums; a receiver keeps the
newest pair it holds of every agent, draws each held agent's *local* mean of every arm
from its posterior, averages the draws per arm (the global mean of an arm is the average
of the local means) and pulls the argmax (:func:`~baselines.thompson.kernels.team_sample`).
For rewards in a finite range the cooperative forms draw that average from the Gaussian
of its mean and variance (``posterior="moment"``, the default since issue 52: one normal
per arm instead of a Beta draw per held row and arm; ``posterior="beta"`` keeps the
exact average of Beta draws; regret equal within intervals, ``docs/references.md``).

On a sparse graph an agent hears only its neighbours, so it has two choices (``share``):

- ``"hold"``: average over what it holds, its own row and every neighbour it has heard
  (a message of ``2M`` numbers). On a graph that is not complete the average runs over
  the neighbourhood only: on heterogeneous instances it estimates the neighbourhood's
  mean, not the network's.
- ``"relay"``: every agent forwards its whole table, one row per agent with the step its
  owner measured it at (a message of ``N (2M + 1)`` numbers); a receiver takes every row
  newer than its own copy (:func:`~baselines.thompson.kernels.merge_relayed`), so after
  ``diameter`` steps every agent averages over the whole network, each row as old as
  its owner's distance.

Timing. What an agent sends at env step ``s`` (its statistics after the pull of step
``s - 1``, and for ``relay`` its table after the messages of step ``s - 1``) is read
when choosing the action of step ``s + 1``. Messages travel as float32 (counts are
exact below ``2^24``).

Private form (``epsilon``): rewards are seen only through
:class:`~fedbandit_env.wrappers.PrivateRewards`; the pulled arm's sum is the private
prefix ``private_means * counts`` (refreshed for the pulled arm only, as Fed_UCB's
line 17 does), so everything sent is post-processing of an ``epsilon``-DP view. The
posterior is Gaussian with the tree's noise added to each sum's variance:
``levels * 2 b^2`` with ``b = levels * sensitivity / epsilon`` (the Laplace scale of
``PrivateRewards``' nodes, ``levels = floor(log2 T) + 1``; a bound for Honaker's
estimator, whose variance is lower).
"""

from __future__ import annotations

import numpy as np

from baselines.thompson.kernels import (
    BETA,
    GAUSSIAN,
    MOMENT,
    Posterior,
    first_argmax,
    held_rows,
    merge_held,
    merge_relayed,
    team_sample,
)
from fedbandit_env.policies import AgentSpec, Policy, Requirements
from fedbandit_env.privacy.mechanisms import tree_noise_variance, tree_sum_slack
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray, Observation, SeedLike

SHARES = ("hold", "relay")
"""The cooperative forms: average what is held, or relay every row with its stamp."""
POSTERIORS = ("auto", "beta", "gaussian", "moment")
"""``auto``: Beta where the env declares rewards in a finite range, Gaussian otherwise;
``moment``: the Gaussian of the averaged Beta posteriors' mean and variance (one normal
per arm; rewards in a finite range)."""


private_extra_variance = tree_noise_variance
"""The variance bound of ``PrivateRewards``' noise on one private prefix sum
(:func:`~fedbandit_env.privacy.mechanisms.tree_noise_variance`, under this family's
former name)."""


def resolve_posterior(
    posterior: str,
    bounds: tuple[float, float],
    scale: float,
    extra: float,
    cooperative: bool = False,
    private: tuple[float, float, float] | None = None,
) -> Posterior:
    """The posterior an agent uses (the policy's and the batched loop's one rule).

    ``"auto"``: for rewards in a finite range, :data:`~baselines.thompson.kernels.MOMENT`
    when the agent averages several rows (``cooperative``; one normal per arm instead of a
    Beta draw per held row and arm: equal regret within intervals, measured in
    ``docs/references.md``) and :data:`~baselines.thompson.kernels.BETA` alone;
    Gaussian for unbounded or private rewards; ``private`` ``(lo, hi, slack)``: the
    clip range of private rewards and how far the tree's noise may carry a sum beyond it
    (what a received row is checked against).

    Examples:
        >>> resolve_posterior("auto", (0.0, 1.0), 1.0, 0.0).family == BETA
        True
        >>> resolve_posterior("auto", (0.0, 1.0), 1.0, 0.0, cooperative=True).family == MOMENT
        True
        >>> resolve_posterior("auto", (-np.inf, np.inf), 2.0, 0.0).scale
        2.0
    """
    lo, hi = bounds
    finite = bool(np.isfinite(lo) and np.isfinite(hi) and hi > lo)
    if posterior in ("beta", "moment") and not finite:
        raise ValueError(f"a {posterior} posterior needs rewards in a finite range, got {bounds}")
    if extra > 0 or posterior == "gaussian" or (posterior == "auto" and not finite):
        if private is not None and extra > 0:
            lo, hi, slack = (float(v) for v in private)
            return Posterior(GAUSSIAN, lo, hi - lo, float(scale), float(extra), slack)
        return Posterior(GAUSSIAN, 0.0, 1.0, float(scale), float(extra))
    if posterior == "moment" or (posterior == "auto" and cooperative):
        return Posterior(MOMENT, float(lo), float(hi - lo), float(scale), 0.0)
    return Posterior(BETA, float(lo), float(hi - lo), float(scale), 0.0)


class CooperativeTS(Policy):
    """Thompson sampling on the average of the local means' posteriors (module docstring).

    Args:
        share: ``"hold"`` (send its own counts and sums; average what is held),
            ``"relay"`` (forward every row with its stamp), or ``None``: no messages
            (:class:`LocalTS`).
        posterior: ``"auto"``, ``"beta"``, ``"gaussian"`` or ``"moment"``
            (:data:`POSTERIORS`; :func:`resolve_posterior` says what ``"auto"`` picks).
        scale: Noise scale of the Gaussian posterior (the rewards' sub-Gaussian
            ``sigma``); with privacy, default half the sensitivity.
        epsilon: See rewards only through ``PrivateRewards(epsilon)`` and widen the
            posterior by its noise (``None``: raw rewards).
        sensitivity: ``PrivateRewards``' clip width (its sensitivity).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.policies import IndependentTeam
        >>> from fedbandit_env.protocols import Broadcast
        >>> env = federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=5,
        ...                                     message_dim=4, protocol=Broadcast())
        >>> team = IndependentTeam(CooperativeTS)
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> sorted(team.act(obs)["agent_0"])
        ['arm', 'message']
    """

    def __init__(
        self,
        share: str | None = "hold",
        posterior: str = "auto",
        scale: float | None = None,
        epsilon: float | None = None,
        sensitivity: float = 1.0,
    ) -> None:
        if share is not None and share not in SHARES:
            raise ValueError(f"share must be one of {SHARES} or None, got {share!r}")
        if posterior not in POSTERIORS:
            raise ValueError(f"posterior must be one of {POSTERIORS}, got {posterior!r}")
        if scale is not None and not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale!r}")
        if epsilon is not None and not (epsilon > 0 and np.isfinite(epsilon)):
            raise ValueError(f"epsilon must be a finite number > 0 or None, got {epsilon!r}")
        if not (sensitivity > 0 and np.isfinite(sensitivity)):
            raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity!r}")
        if epsilon is not None and posterior in ("beta", "moment"):
            raise ValueError("the private form's posterior is Gaussian (the tree's noise)")
        self.share = share
        self.posterior = posterior
        self.epsilon = None if epsilon is None else float(epsilon)
        self.sensitivity = float(sensitivity)
        default = self.sensitivity / 2 if epsilon is not None else 1.0
        self.scale = float(default if scale is None else scale)
        self.spec = AgentSpec(0, 1, 1, 1)
        self.post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
        self.rng = np.random.default_rng()
        self.counts: FloatArray = np.zeros((1, 1))
        self.sums: FloatArray = np.zeros((1, 1))
        self.stamps: FloatArray = np.zeros(1)
        self.rows: IntArray = np.zeros(1, dtype=np.int64)
        self.draws: FloatArray = np.zeros(1)

    def message_dim(self, n_agents: int, n_arms: int) -> int:
        """Numbers sent a step: ``2M`` (hold), ``N (2M + 1)`` (relay), 0 (alone).

        Examples:
            >>> CooperativeTS("relay").message_dim(3, 2), CooperativeTS("hold").message_dim(3, 2)
            (15, 4)
        """
        if self.share is None:
            return 0
        return 2 * n_arms if self.share == "hold" else n_agents * (2 * n_arms + 1)

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Its messages (none when alone), and ``PrivateRewards(epsilon)`` if private."""
        return Requirements(message_dim=self.message_dim(n_agents, n_arms), epsilon=self.epsilon)

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Forget every statistic; resolve the posterior from the env's reward range."""
        need = self.message_dim(spec.n_agents, spec.n_arms)
        if spec.message_dim < need:
            raise ValueError(
                f"{type(self).__name__}(share={self.share!r}) sends {need} numbers a step; "
                f"the env carries {spec.message_dim}"
            )
        n, m = spec.n_agents, spec.n_arms
        self.spec = spec
        extra, private = 0.0, None
        if self.epsilon is not None:
            extra = private_extra_variance(spec.horizon, self.epsilon, self.sensitivity)
            if spec.private_clip is not None:
                lo, hi = spec.private_clip
                private = (lo, hi, tree_sum_slack(spec.horizon, self.epsilon, hi - lo))
        self.post = resolve_posterior(
            self.posterior, spec.reward_bounds, self.scale, extra, self.share is not None, private
        )
        self.rng = np.random.default_rng(seed)
        # the rows it may hold, in increasing sender order: every agent's when relaying;
        # when holding its own and its neighbours' (degree x M: a sender heard outside
        # the graph, under another protocol, gets a row when first heard); alone its own
        me = spec.index
        if self.share == "relay":
            self.members = np.arange(n, dtype=np.int64)
        elif self.share == "hold":
            self.members = np.unique(np.array([me, *spec.neighbors], dtype=np.int64))
        else:
            self.members = np.array([me], dtype=np.int64)
        rows = self.members.size
        self.counts, self.sums = np.zeros((rows, m)), np.zeros((rows, m))
        self.stamps = np.zeros(rows)
        self.rows = np.zeros(rows, dtype=np.int64)
        self.draws = np.zeros(m)
        self._work = np.zeros(3 * m)  # team_sample's work space
        self.rejected = 0

    def _slot(self, sender: int) -> int:
        """The table row of ``sender``, made (in sender order) if it has none yet."""
        at = int(np.searchsorted(self.members, sender))
        if at < self.members.size and self.members[at] == sender:
            return at
        self.members = np.insert(self.members, at, sender)
        self.counts = np.insert(self.counts, at, 0.0, axis=0)
        self.sums = np.insert(self.sums, at, 0.0, axis=0)
        self.stamps = np.insert(self.stamps, at, 0.0)
        self.rows = np.zeros(self.members.size, dtype=np.int64)
        return at

    def absorb(self, observation: Observation, done: int) -> None:
        """Record the agent's own last pull (raw reward, or the private prefix sum)."""
        me, arm = self._slot(self.spec.index), int(observation["arm"])
        self.counts[me, arm] += 1.0
        if self.epsilon is None:
            self.sums[me, arm] += float(observation["reward"][0])
        else:
            if "private_means" not in observation:
                raise ValueError("the private form needs PrivateRewards (no 'private_means')")
            mean = float(observation["private_means"][arm])
            self.sums[me, arm] = mean * self.counts[me, arm]
        self.stamps[me] = done

    def listen(self, observation: Observation, done: int) -> None:
        """Keep what the last step's senders sent (senders in increasing order)."""
        me, m = self.spec.index, self.spec.n_arms
        messages = observation["messages"]
        for j in np.flatnonzero(observation["mask"]):
            sent = messages[j].astype(np.float64)
            if self.share == "hold":
                row = self._slot(int(j))
                bad = merge_held(self.counts, self.sums, self.stamps, row, sent, done, self.post)
            else:
                table = sent[: self.spec.n_agents * (2 * m + 1)].reshape(self.spec.n_agents, -1)
                bad = merge_relayed(self.counts, self.sums, self.stamps, table, me, done, self.post)
            self.rejected += bad

    def message(self) -> Float32Array:
        """What it sends: its own row, or its whole table with stamps (float32)."""
        me = self._slot(self.spec.index)
        if self.share == "hold":
            row = np.concatenate([self.counts[me], self.sums[me]])
        else:
            row = np.concatenate([self.counts, self.sums, self.stamps[:, None]], axis=1).ravel()
        out = np.zeros(self.spec.message_dim, dtype=np.float32)
        out[: row.size] = row
        return out

    def act(self, observation: Observation) -> int | dict[str, object]:
        """Absorb the last pull and messages, sample, pull the argmax (and send)."""
        done = int(observation["step"][0])
        if done > 0:
            self.absorb(observation, done)
            if self.share is not None:
                self.listen(observation, done)
        n_rows = held_rows(self.stamps, self._slot(self.spec.index), self.rows)
        team_sample(self.counts, self.sums, self.rows, n_rows, self.post, self.rng, self.draws,
                    self._work)  # fmt: skip
        arm = int(first_argmax(self.draws))
        if self.share is None:
            return arm
        return {"arm": arm, "message": self.message()}


class PrivateCooperativeTS(CooperativeTS):
    """:class:`CooperativeTS` on private rewards only (``private_coop_ts``): an
    ``epsilon`` is required, so the private id never runs without noise.

    Examples:
        >>> PrivateCooperativeTS(epsilon=0.5).requirements(3, 2).epsilon
        0.5
        >>> PrivateCooperativeTS(epsilon=None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: PrivateCooperativeTS sees rewards only through PrivateRewards: ...
    """

    def __init__(
        self,
        share: str | None = "hold",
        posterior: str = "auto",
        scale: float | None = None,
        epsilon: float | None = 1.0,
        sensitivity: float = 1.0,
    ) -> None:
        if epsilon is None:
            raise ValueError(
                "PrivateCooperativeTS sees rewards only through PrivateRewards: it needs an "
                "epsilon (coop_ts is the non-private form)"
            )
        super().__init__(share, posterior, scale, epsilon, sensitivity)


class LocalTS(CooperativeTS):
    """Thompson sampling on the agent's own rewards only (Thompson 1933; Agrawal and
    Goyal 2012/2013): the no-communication reference beside UCB1 and KL-UCB.

    Examples:
        >>> pol = LocalTS()
        >>> pol.reset(AgentSpec(index=0, n_agents=2, n_arms=3, horizon=10,
        ...                     reward_bounds=(0.0, 1.0)), seed=0)
        >>> 0 <= pol.act({"arm": 0, "reward": np.zeros(1), "step": np.zeros(1)}) < 3
        True
    """

    def __init__(
        self, posterior: str = "auto", scale: float | None = None, epsilon: float | None = None
    ) -> None:
        super().__init__(None, posterior, scale, epsilon)


__all__ = [
    "POSTERIORS",
    "SHARES",
    "CooperativeTS",
    "LocalTS",
    "PrivateCooperativeTS",
    "private_extra_variance",
    "resolve_posterior",
]
