"""Delivery rules: who may hear whom at each step, and what it costs."""

import warnings

from fedbandit_env.protocols.base import Delivery, Protocol, deliver_mask
from fedbandit_env.protocols.broadcast import Broadcast
from fedbandit_env.protocols.gamma_hops import GammaHops
from fedbandit_env.protocols.gossip import NeighbourGossip, RandomEdgeGossip, _Gossip
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
    "gamma_hops": GammaHops,
}
"""Protocol classes by name (the command line's ``--protocol``)."""

PROTOCOL_ALIASES: dict[str, str] = {"local": "gamma_hops"}
"""Former protocol names, still read (saved scenarios, old scripts) with a warning:
``"local"`` was Dubey & Pentland's LOCAL protocol, renamed ``"gamma_hops"`` so that
"local" means one thing on the command line (the setting without messages)."""


def protocol_name(name: str) -> str:
    """The current name of a protocol: ``name`` itself, or the name a former one
    (:data:`PROTOCOL_ALIASES`) was renamed to, with a ``DeprecationWarning``. Unknown names
    pass through unchanged (the caller's check names the choices).

    Examples:
        >>> protocol_name("server")
        'server'
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     protocol_name("local")
        'gamma_hops'
    """
    if isinstance(name, str) and name in PROTOCOL_ALIASES:
        new = PROTOCOL_ALIASES[name]
        warnings.warn(
            f"the protocol {name!r} is now called {new!r}; the old name will go",
            DeprecationWarning,
            stacklevel=2,
        )
        return new
    return name


def make_protocol(
    kind: str, public_dim: int = 0, participation: float = 1.0, gamma: int = 1
) -> Protocol:
    """Build a protocol by name; ``public_dim`` is ignored by protocols that deliver
    whole messages to every neighbour anyway (broadcast, rounds), ``participation`` by
    all but ``"server"``, ``gamma`` (hops) by all but ``"gamma_hops"``.

    Examples:
        >>> make_protocol("random_edge_gossip", public_dim=3)
        RandomEdgeGossip(public_dim=3)
        >>> make_protocol("server", participation=0.4)
        ServerRounds(participation=0.4)
    """
    kind = protocol_name(kind)
    if kind not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {kind!r}")
    cls = PROTOCOLS[kind]
    if issubclass(cls, _Gossip):
        return cls(public_dim=public_dim)
    if cls is ServerRounds:
        return ServerRounds(participation)
    if cls is GammaHops:
        return GammaHops(gamma)
    return cls()


def __getattr__(name: str) -> type[Protocol]:
    """``LocalProtocol``, the former name of :class:`GammaHops`, with a warning."""
    if name == "LocalProtocol":
        warnings.warn("LocalProtocol is now called GammaHops", DeprecationWarning, stacklevel=2)
        return GammaHops
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PROTOCOLS",
    "PROTOCOL_ALIASES",
    "Broadcast",
    "Delivery",
    "Flooding",
    "GammaHops",
    "Hybrid",
    "NeighbourGossip",
    "Protocol",
    "RandomEdgeGossip",
    "ServerRounds",
    "Synchronize",
    "deliver_mask",
    "find_sinks",
    "make_protocol",
    "participants",
    "protocol_name",
    "round_schedule",
]
