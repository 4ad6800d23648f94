"""Delivery rules: who may hear whom at each step, and what it costs."""

from fedbandit_env.protocols.base import Delivery, Protocol, deliver_mask
from fedbandit_env.protocols.broadcast import Broadcast
from fedbandit_env.protocols.gossip import NeighbourGossip, RandomEdgeGossip, _Gossip

PROTOCOLS: dict[str, type[Protocol]] = {
    "broadcast": Broadcast,
    "random_edge_gossip": RandomEdgeGossip,
    "neighbour_gossip": NeighbourGossip,
}
"""Protocol classes by name (the command line's ``--protocol``)."""


def make_protocol(kind: str, public_dim: int = 0) -> Protocol:
    """Build a protocol by name; ``public_dim`` is ignored by protocols that deliver
    whole messages to every neighbour anyway (broadcast).

    Example:
        >>> make_protocol("random_edge_gossip", public_dim=3)
        RandomEdgeGossip(public_dim=3)
    """
    if kind not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {kind!r}")
    cls = PROTOCOLS[kind]
    return cls(public_dim=public_dim) if issubclass(cls, _Gossip) else cls()


__all__ = [
    "PROTOCOLS",
    "Broadcast",
    "Delivery",
    "NeighbourGossip",
    "Protocol",
    "RandomEdgeGossip",
    "deliver_mask",
    "make_protocol",
]
