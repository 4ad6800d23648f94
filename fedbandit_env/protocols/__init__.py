"""Delivery rules: who may hear whom at each step, and what it costs."""

from fedbandit_env.protocols.base import Delivery, Protocol, deliver_mask
from fedbandit_env.protocols.broadcast import Broadcast
from fedbandit_env.protocols.gossip import NeighbourGossip, RandomEdgeGossip

PROTOCOLS: dict[str, type[Protocol]] = {
    "broadcast": Broadcast,
    "random_edge_gossip": RandomEdgeGossip,
    "neighbour_gossip": NeighbourGossip,
}
"""Protocol classes by name (the command line's ``--protocol``)."""

__all__ = [
    "PROTOCOLS",
    "Broadcast",
    "Delivery",
    "NeighbourGossip",
    "Protocol",
    "RandomEdgeGossip",
    "deliver_mask",
]
