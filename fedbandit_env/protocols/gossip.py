"""Gossip protocols: which pairs exchange messages at each step.

Zhu et al. (Sec. 2, "gossip model") activate exactly one edge ``(i, j)`` of ``E`` per
step, uniformly at random, and its two agents exchange their estimates.  The variant in
which every agent contacts one uniformly random neighbour (and that neighbour answers)
is also common.  A receiver learns its gossip partner(s) from the delivery mask: the
senders whose bit is set.

Who talks is a :class:`~fedbandit_env.protocols.schedules.Schedule`, the mechanism the
:class:`~fedbandit_env.wrappers.Gossip` wrapper shares. The draws are vectorized NumPy;
the fast path's compiled
:mod:`fedbandit_env.protocols.kernels` consume the same numbers (tests/runner/test_replay.py).

Zhu et al. also let every agent see its neighbours' pull-count estimates every step
(Algorithm 1, line 5), while estimates travel only over the activated edge.  Both
protocols carry that with ``public_dim``: the first ``public_dim`` entries of every
message reach all neighbours each step (``public_mask``), the rest only the partners.
"""

from __future__ import annotations

from fedbandit_env.protocols.base import Delivery, Protocol, deliver_mask
from fedbandit_env.protocols.schedules import NeighbourCalls, RandomEdge, Schedule
from fedbandit_env.type_aliases import BoolArray, FloatArray
from fedbandit_env.validation import check_int


class _Gossip(Protocol):
    """Shared constructor and delivery of the gossip protocols: the partners of a step
    are :attr:`schedule`'s draw from the protocol's generator."""

    schedule: Schedule

    def __init__(self, public_dim: int = 0) -> None:
        super().__init__()
        self.public_dim = check_int("public_dim", public_dim, 0)

    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Deliver to the partners the schedule draws (and the public prefix to all)."""
        mask, calls = self.schedule.draw(self.network, self._rng, t)
        return self._deliver(messages, mask, calls)

    def _deliver(self, messages: FloatArray, mask: BoolArray, calls: int) -> Delivery:
        net = self.network
        if not self.public_dim:
            return deliver_mask(messages, mask, peer_links=calls)
        links = calls + net.n_edges  # the public prefix uses every edge as well
        return deliver_mask(messages, mask, links, 0, net.adjacency, self.public_dim)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(public_dim={self.public_dim})"


class RandomEdgeGossip(_Gossip):
    """One uniformly random edge per step; its two agents swap messages.

    Examples:
        >>> import numpy as np
        >>> from fedbandit_env.network import Network
        >>> g = RandomEdgeGossip()
        >>> g.reset(Network.ring(5), np.random.default_rng(0))
        >>> d = g.route(np.zeros((5, 1)), t=1)
        >>> int(d.mask.sum()), d.peer_links
        (2, 1)
    """

    name = "random_edge_gossip"
    schedule = RandomEdge()


class NeighbourGossip(_Gossip):
    """Every agent calls one uniformly random neighbour; both ends of a call exchange.

    An agent may therefore hear from several agents in one step (its own callee and
    whoever called it).  Each distinct call is one peer link.

    Examples:
        >>> import numpy as np
        >>> from fedbandit_env.network import Network
        >>> g = NeighbourGossip()
        >>> g.reset(Network.star(4), np.random.default_rng(0))
        >>> g.route(np.zeros((4, 1)), t=1).mask.astype(int).tolist()[0]
        [0, 1, 1, 1]
    """

    name = "neighbour_gossip"
    schedule = NeighbourCalls()
