"""A Byzantine-robust Gossip_UCB (ours, not from the papers): trimmed aggregation.

Gossip_UCB (Zhu et al., Algorithm 1) trusts every neighbour twice: line 20/22 averages
the partners' estimates into ``theta`` and line 5 takes the *largest* neighbour count
estimate. One agent that keeps sending the same values is a stubborn node of the
averaging dynamics, and every honest estimate converges to what it sends
(:class:`~fedbandit_env.wrappers.Byzantine` with ``"boost"`` drives the team onto the
worst arm); one huge count estimate keeps every agent in forced exploration (line 13).

Trimming the gossip average itself does not work: line 20's update is gradient
tracking (the agents' average of ``theta`` follows the average of the local means
because the averaging preserves sums), and a trimmed mean drops exactly the one agent
whose local mean just moved, so new information never spreads (measured: the team
freezes on its first estimates). :class:`RobustGossipUCB` therefore aggregates *local
means* instead, with a trim level ``f`` (the liars among an agent's neighbours it is
meant to survive):

- **estimates** (replaces lines 19-22): agents send their local means ``xbar`` in
  place of ``theta``; each agent keeps the latest ``xbar`` heard from every neighbour,
  clipped to the reward range, and ``theta_k`` is the coordinate-wise *trimmed mean* of
  its own ``xbar`` and that table: the ``f`` largest and ``f`` smallest values dropped
  when at least ``2 f + 1`` are present, otherwise the median. On a complete graph this
  estimates the global mean (the average of the local means) directly; on a sparse
  graph it is the neighbourhood's mean, biased where neighbourhoods differ from the
  network (the price of not relaying what may be forged);
- **counts** (line 5): received count estimates are clipped to ``[0, t]`` (no agent can
  have pulled an arm more often than the env has stepped) and the ``(f + 1)``-th
  largest is used in place of the largest (none when fewer than ``f + 1`` arrived).

Under Zhu's one random edge a step the table fills as edges are drawn, so the variant
runs in the ``gossip`` setting too; it is meant for ``neighbours``.

Examples:
    >>> p = RobustGossipUCB(trim=1)
    >>> p.trim, p.requirements(n_agents=3, n_arms=2).message_dim
    (1, 4)
"""

from __future__ import annotations

import numpy as np

from baselines.gossip.policies import GossipUCB
from fedbandit_env.policies import AgentSpec
from fedbandit_env.type_aliases import BoolArray, FloatArray, IntArray, SeedLike


def trimmed_mean(values: FloatArray, trim: int) -> FloatArray:
    """Column-wise mean of ``values`` ``(n, M)`` without the ``trim`` largest and smallest
    of each column when ``n >= 2 trim + 1``, else the column median.

    Examples:
        >>> trimmed_mean(np.array([[0.1], [0.2], [0.3], [9.0]]), 1).round(6).tolist()
        [0.25]
        >>> trimmed_mean(np.array([[0.1], [9.0]]), 1).tolist()
        [4.55]
    """
    n = values.shape[0]
    if n < 2 * trim + 1:
        return np.median(values, axis=0)
    ordered = np.sort(values, axis=0)
    return ordered[trim : n - trim].mean(axis=0)


class RobustGossipUCB(GossipUCB):
    """Gossip_UCB with trimmed gossip (see the module docstring).

    Args:
        trim: ``f``, the values dropped at each end (``>= 0``).
        alpha_1: See :class:`~baselines.gossip.GossipUCB`.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.policies import IndependentTeam
        >>> env = federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=5, message_dim=4)
        >>> team = IndependentTeam(lambda: RobustGossipUCB(trim=1))
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)["agent_0"]["arm"]
        0
    """

    def __init__(self, trim: int = 1, alpha_1: float | None = None) -> None:
        super().__init__(alpha_1)
        self.latest: FloatArray = np.zeros((0, 0))
        self.heard: BoolArray = np.zeros(0, dtype=bool)
        if isinstance(trim, bool) or not isinstance(trim, int) or trim < 0:
            raise ValueError(f"trim must be an int >= 0, got {trim!r}")
        self.trim = trim

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Start afresh; nothing heard from anyone yet."""
        super().reset(spec, seed)
        self.latest = np.zeros((spec.n_agents, spec.n_arms))
        self.heard = np.zeros(spec.n_agents, dtype=bool)

    def combine(self, sent: FloatArray, partners: IntArray, arm: int, change: float) -> None:
        """Record the partners' local means (clipped to the reward range); ``theta`` is
        the trimmed mean of the own local means and every neighbour's latest."""
        lo, hi = self.spec.reward_bounds
        self.latest[partners] = np.clip(sent[partners], lo, hi)
        self.heard[partners] = True
        self.heard[self.spec.index] = False
        own = self.xbar.copy()
        own[arm] += change  # the local means after this pull (xbar(t))
        self.theta = trimmed_mean(np.vstack([own, self.latest[self.heard]]), self.trim)

    def _message(self, arm: int) -> dict[str, object]:
        """``[n~, xbar]``: the local means travel in ``theta``'s place."""
        out = super()._message(arm)
        message = out["message"]
        assert isinstance(message, np.ndarray)
        m = self.spec.n_arms
        message[m : 2 * m] = self.xbar
        return out

    def count_estimate(self, sent: FloatArray, senders: BoolArray) -> FloatArray:
        """Trimmed line 5: the own counts, or the ``(f+1)``-th largest received estimate
        (clipped to ``[0, t]``) where that is larger."""
        out = self.counts.copy()
        received = sent[senders]
        if received.shape[0] > self.trim:
            step = float(self.counts.sum())  # this agent's pulls so far: the env's step
            ordered = -np.sort(-np.clip(received, 0.0, step), axis=0)
            out = np.maximum(out, ordered[self.trim])
        return out


__all__ = ["RobustGossipUCB", "trimmed_mean"]
