"""Centralized synchronisation (Dubey & Pentland, Algorithm 1, lines 12-20).

Entry 0 of a message is the **sync flag**, entries ``1:`` the payload. When *any*
agent raises its flag, *every* agent uploads its payload (the controller asks all of
them, line 16: "[all agents] Agent sends ..."), the controller sums them (line 18) and
sends ``[N, sum]`` back to every agent in the same step (lines 19-20), seen with the
next observation (``server``). Steps without a flag carry nothing and cost nothing.

Readings chosen: the payloads are *summed*, not averaged (the paper's ``S = sum_i U_i``);
a round costs ``c1`` per uploading agent, the broadcast back is free and the flag (a
one-bit request) is not counted, as Li & Song's rounds count uplinks only. The sum runs
over agents in index order, so the fast path's sum is the same bits.
"""

from __future__ import annotations

import numpy as np

from fedbandit_env.network.graph import Network
from fedbandit_env.protocols.base import Delivery, Protocol
from fedbandit_env.type_aliases import FloatArray

SYNC_FLAG = 0
"""Index of the sync flag in a message."""


def sync_message_dim(dim: int) -> int:
    """Message length of the linear family over this protocol: the flag and one
    ``(d + 1) x (d + 1)`` statistic ``sum [x y]^T [x y]``, flattened.

    Examples:
        >>> sync_message_dim(10)
        122
    """
    return 1 + (dim + 1) ** 2


class Synchronize(Protocol):
    """Any flag starts a round in which every agent uploads; the server returns the sum.

    Examples:
        >>> proto = Synchronize()
        >>> proto.reset(Network.complete(3), np.random.default_rng(0))
        >>> d = proto.route(np.array([[0, 1.0], [1, 2.0], [0, 4.0]]), t=1)
        >>> d.server_links, d.server[0].tolist(), bool(d.server_mask.all())
        (3, [3.0, 7.0], True)
        >>> proto.route(np.zeros((3, 2)), t=2).server_links
        0
    """

    requires_connected = False
    name = "sync"
    has_server = True

    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Sum every payload if any agent asked for a round."""
        n, d = messages.shape
        nothing = np.zeros((n, d))  # no peer messages
        no_mask = np.zeros((n, n), dtype=bool)
        if d < 2 or not (messages[:, SYNC_FLAG] > 0.5).any():
            return Delivery(
                None,
                no_mask,
                server=np.zeros((n, d)),
                server_mask=np.zeros(n, dtype=bool),
                rows=nothing,
            )
        total = np.zeros(d - 1)
        for i in range(n):  # index order: the fast path sums the same way
            total += messages[i, 1:]
        server = np.empty((n, d))
        server[:, 0] = n
        server[:, 1:] = total
        return Delivery(
            None,
            no_mask,
            server_links=n,
            server=server,
            server_mask=np.ones(n, dtype=bool),
            rows=nothing,
        )

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Bind to the network (any graph: agents talk only to the controller)."""
        super().reset(network, rng)
