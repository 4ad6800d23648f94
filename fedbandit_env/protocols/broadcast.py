"""Broadcast to neighbours: every agent's message reaches all its neighbours each step."""

from __future__ import annotations

from fedbandit_env.protocols.base import Delivery, Protocol, deliver_mask
from fedbandit_env.type_aliases import FloatArray


class Broadcast(Protocol):
    """Every message reaches every neighbour in the same step.

    This is the default protocol of the envs, and the information model under which
    Zhu et al. let neighbours see each other's pull counts every step.  It uses every
    edge in both directions, so it counts ``|E|`` peer links per step.

    Examples:
        >>> import numpy as np
        >>> from fedbandit_env.network import Network
        >>> b = Broadcast()
        >>> b.reset(Network.star(3), np.random.default_rng(0))
        >>> d = b.route(np.array([[1.0], [2.0], [3.0]]), t=1)
        >>> d.inbox[0, :, 0].tolist(), d.peer_links
        ([0.0, 2.0, 3.0], 2)
    """

    name = "broadcast"

    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Deliver every message to all neighbours of its sender."""
        net = self.network
        return deliver_mask(messages, net.adjacency, peer_links=net.n_edges)
