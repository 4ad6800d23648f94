"""What each agent of a PettingZoo view observes of a step's delivery: its inbox, masks
and the server's message, one row per agent, from a core's
:class:`~fedbandit_env.core.routing.Routed` (both envs build them here)."""

from __future__ import annotations

import numpy as np

from fedbandit_env.core.routing import Routed, inbox
from fedbandit_env.protocols.base import Protocol

_ZERO = np.float32(0.0)


def message_entries(
    routed: Routed | None, n: int, d: int, protocol: Protocol
) -> dict[str, list[np.ndarray]]:
    """The message entries of every agent's observation in env 0 of ``routed`` (``None``:
    before the first step, nothing heard): ``messages`` (receiver ``r``'s row of what it
    got from each sender, zeros where nothing arrived), ``mask``, and with the protocol's
    public prefix ``public_mask``, with a server ``server`` and ``server_mask``; each a
    list of ``n`` rows of fresh arrays.

    Examples:
        >>> from fedbandit_env.protocols import Broadcast
        >>> rows = np.array([[[1.0], [2.0]]], np.float32)
        >>> routed = Routed(rows, np.array([[[0, 1], [1, 0]]], np.int8), np.ones(1, int),
        ...                 np.zeros(1, int))
        >>> got = message_entries(routed, 2, 1, Broadcast())
        >>> sorted(got), got["messages"][0].tolist()
        (['mask', 'messages'], [[0.0], [2.0]])
    """
    public_dim, has_server = protocol.public_dim, protocol.has_server
    if routed is None:
        got = np.zeros((n, n, d), dtype=np.float32)
        mask = np.zeros((n, n), dtype=np.int8)
        public = mask
    else:
        mask = routed.mask[0].copy()  # fresh: the router's may be shared
        pm = routed.public_mask
        public = mask if pm is None else pm[0].copy()
        if routed.inbox is not None:  # a relay: copies differ by receiver
            got = routed.inbox[0]
        elif public_dim:
            got = inbox(routed.messages, mask[None], public[None], public_dim)[0]
        else:  # the common case: inbox() for one env
            got = np.where(mask.astype(bool)[:, :, None], routed.messages[0], _ZERO)
    # row views made by iterating (list(a)): half the cost of indexing row by row
    out: dict[str, list[np.ndarray]] = {"messages": list(got), "mask": list(mask)}
    if public_dim:
        out["public_mask"] = list(public)
    if has_server:
        if routed is not None and routed.server is not None:
            assert routed.server_mask is not None
            server, smask = routed.server[0], routed.server_mask[0]
        else:
            server = np.zeros((n, d), dtype=np.float32)
            smask = np.zeros((n, 1), dtype=np.int8)
        out["server"], out["server_mask"] = list(server), list(smask)
    return out


__all__ = ["message_entries"]
