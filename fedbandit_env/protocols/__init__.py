"""Delivery rules: who may hear whom at each step, and what it costs."""

from fedbandit_env.protocols.base import Delivery, Protocol, deliver_mask
from fedbandit_env.protocols.broadcast import Broadcast

PROTOCOLS: dict[str, type[Protocol]] = {"broadcast": Broadcast}
"""Protocol classes by name (the command line's ``--protocol``)."""

__all__ = ["PROTOCOLS", "Broadcast", "Delivery", "Protocol", "deliver_mask"]
