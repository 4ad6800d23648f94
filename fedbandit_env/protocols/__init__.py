"""Delivery rules: who may hear whom at each step, and what it costs."""

from fedbandit_env.protocols.base import Delivery, Protocol, deliver_mask
from fedbandit_env.protocols.broadcast import Broadcast
from fedbandit_env.protocols.gossip import NeighbourGossip, RandomEdgeGossip, _Gossip
from fedbandit_env.protocols.local import LocalProtocol
from fedbandit_env.protocols.rounds import (
    Flooding,
    Hybrid,
    ServerRounds,
    find_sinks,
    participants,
    round_schedule,
)
from fedbandit_env.protocols.sync import Synchronize

PROTOCOLS: dict[str, type[Protocol]] = {
    "broadcast": Broadcast,
    "random_edge_gossip": RandomEdgeGossip,
    "neighbour_gossip": NeighbourGossip,
    "server": ServerRounds,
    "gis_flooding": Flooding,
    "hybrid": Hybrid,
    "sync": Synchronize,
    "local": LocalProtocol,
}
"""Protocol classes by name (the command line's ``--protocol``)."""


def make_protocol(
    kind: str, public_dim: int = 0, participation: float = 1.0, gamma: int = 1
) -> Protocol:
    """Build a protocol by name; ``public_dim`` is ignored by protocols that deliver
    whole messages to every neighbour anyway (broadcast, rounds), ``participation`` by
    all but ``"server"``, ``gamma`` (hops) by all but ``"local"``.

    Examples:
        >>> make_protocol("random_edge_gossip", public_dim=3)
        RandomEdgeGossip(public_dim=3)
        >>> make_protocol("server", participation=0.4)
        ServerRounds(participation=0.4)
    """
    if kind not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {kind!r}")
    cls = PROTOCOLS[kind]
    if issubclass(cls, _Gossip):
        return cls(public_dim=public_dim)
    if cls is ServerRounds:
        return ServerRounds(participation)
    if cls is LocalProtocol:
        return LocalProtocol(gamma)
    return cls()


__all__ = [
    "PROTOCOLS",
    "Broadcast",
    "Delivery",
    "Flooding",
    "Hybrid",
    "LocalProtocol",
    "NeighbourGossip",
    "Protocol",
    "RandomEdgeGossip",
    "ServerRounds",
    "Synchronize",
    "deliver_mask",
    "find_sinks",
    "make_protocol",
    "participants",
    "round_schedule",
]
