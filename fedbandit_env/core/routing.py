"""Batched delivery: what a protocol delivered in ``B`` envs at one step, as arrays.

A delivery is kept as **what was heard from each sender plus who heard it**, not one
copy per receiver: ``messages[b, s]`` (``(B, N, D)``) is the message of sender ``s``
that arrived this step (zeros if nobody heard it), ``mask[b, r, s]`` says that ``r``
heard it, and ``public_mask[b, r, s]`` that ``r`` heard only its first ``public_dim``
entries. Every MAB protocol delivers one content per sender (broadcast and gossip:
what it sent; GIS flooding: its payload of the completed round), so a step stays
``O(B N D)`` in message data on a complete graph; :func:`inbox` gives the PettingZoo
per-receiver form ``(B, N, N, D)`` when a consumer wants it.

Three routers, chosen by the protocol's exact type:

- :class:`Broadcast <fedbandit_env.protocols.Broadcast>`: the mask is the adjacency
  (one read-only view shared by all envs);
- :class:`RandomEdgeGossip <fedbandit_env.protocols.RandomEdgeGossip>`: each env's
  edges are drawn a block of steps ahead from its protocol's own generator by NumPy's
  bounded-integer algorithm (:func:`~fedbandit_env.rng_kernels.integer_below`, the same
  numbers and stream consumption as ``rng.integers(n_edges)`` once a step);
- :class:`ServerRounds <fedbandit_env.protocols.ServerRounds>`: every env's round in
  one compiled call (:func:`server_rounds`): the uploaders drawn from each env's protocol
  generator (:func:`~fedbandit_env.protocols.kernels.choose_subset`), their payloads
  averaged in agent order (:func:`~fedbandit_env.protocols.kernels.mean_rows`), as
  ``ServerRounds.route`` does;
- any other protocol: each env's own protocol object routes its step
  (:meth:`Protocol.route <fedbandit_env.protocols.Protocol.route>`), and the delivery is
  converted (refused if a protocol hands two receivers different contents of one sender).
  :class:`Flooding <fedbandit_env.protocols.Flooding>` (Li & Song's GIS) and
  :class:`Hybrid <fedbandit_env.protocols.Hybrid>` are routed so too, under kinds of
  their own: ``MABCore.rollout`` routes them in compiled code
  (:func:`~fedbandit_env.core.rounds.rollout_flooding`,
  :func:`~fedbandit_env.core.rounds.rollout_hybrid`).

``tests/vector/test_vector_replay.py`` holds the first three to ``Protocol.route``.

The first two route on any device (:mod:`fedbandit_env.backend`): the same array code
for NumPy and torch; on a torch device a gossip edge is drawn by the device's generator
(:class:`~fedbandit_env.backend.DeviceStream`) rather than the protocol's own. A protocol
that routes through its own object has no device form: the core refuses it there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from fedbandit_env.backend import Backend, DeviceStream, array_backend, backend
from fedbandit_env.network.graph import Network
from fedbandit_env.protocols.base import Delivery, Protocol
from fedbandit_env.protocols.broadcast import Broadcast
from fedbandit_env.protocols.gossip import NeighbourGossip, RandomEdgeGossip
from fedbandit_env.protocols.kernels import choose_subset, mean_rows
from fedbandit_env.protocols.rounds import SEND_FLAG, Flooding, Hybrid, ServerRounds
from fedbandit_env.rng_kernels import generator_at, generator_table, integer_below
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


@dataclass(eq=False, slots=True)
class Routed:
    """What a protocol delivered in ``B`` envs at one step.

    Attributes:
        messages: ``(B, N, D)`` float32, the message heard from each sender.
        mask: ``(B, N, N)`` int8, ``mask[b, r, s]``: ``r`` heard all of ``s``'s message
            (possibly a read-only broadcast view).
        peer_links: ``(B,)`` agent-agent links used (Li & Song's ``c2`` links).
        server_links: ``(B,)`` agent-server links used (``c1`` links).
        public_mask: ``(B, N, N)`` int8 or ``None``: only the public prefix arrived.
        server: ``(B, N, D)`` float32 or ``None``: what the server sent each agent.
        server_mask: ``(B, N, 1)`` int8 or ``None``: the server sent something.
        inbox: See below.

    Examples:
        >>> r = Routed(np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 2), np.int8),
        ...            np.zeros(1, np.int64), np.zeros(1, np.int64))
        >>> r.messages.shape
        (1, 2, 1)
    """

    messages: Float32Array
    mask: np.ndarray
    peer_links: IntArray
    server_links: IntArray
    public_mask: np.ndarray | None = None
    server: Float32Array | None = None
    server_mask: np.ndarray | None = None
    inbox: Float32Array | None = None
    """``(B, N, N, D)``: the per-receiver inbox, for a protocol whose copies differ by
    receiver (``Protocol.per_sender`` false; ``messages`` is then zeros)."""


def inbox(
    messages: np.ndarray,
    mask: np.ndarray,
    public_mask: np.ndarray | None = None,
    public_dim: int = 0,
) -> Float32Array:
    """The per-receiver inbox ``(B, N, N, D)`` of a batched delivery: ``[b, r, s]`` is
    what ``r`` got from ``s`` (zeros where nothing arrived), the PettingZoo env's
    ``messages`` observation of agent ``r`` in env ``b``.

    Examples:
        >>> sent = np.array([[[1.0, 10.0], [2.0, 20.0]]], np.float32)
        >>> heard = np.array([[[0, 1], [0, 0]]], np.int8)
        >>> inbox(sent, heard)[0, :, :, 0].tolist()
        [[0.0, 2.0], [0.0, 0.0]]
        >>> inbox(sent, 0 * heard, heard, public_dim=1)[0, 0].tolist()
        [[0.0, 0.0], [2.0, 0.0]]
    """
    be = array_backend(messages)
    xp = be.xp
    rows = xp.astype(be.asarray(messages), be.float32)[:, None, :, :]
    zero = xp.zeros_like(rows)
    heard = xp.astype(be.asarray(mask), be.boolean)[..., None]
    out = xp.where(heard, rows, zero)
    if public_mask is not None and public_dim:
        reached = heard | xp.astype(be.asarray(public_mask), be.boolean)[..., None]
        prefix = rows[..., :public_dim]
        out[..., :public_dim] = xp.where(reached, prefix, zero[..., :public_dim])
    return out


@njit(cache=True, nogil=True)
def draw_below(table: Any, n: IntArray, out: IntArray) -> None:  # pragma: no cover
    """``out[k, b] = rngs[k].integers(n[k])``, draw by draw in NumPy's order.

    Examples:
        >>> rngs = [np.random.default_rng(s) for s in (0, 1)]
        >>> out = np.zeros((2, 3), np.int64)
        >>> draw_below(generator_table(rngs), np.array([5, 7]), out)
        >>> out[1].tolist() == np.random.default_rng(1).integers(7, size=3).tolist()
        True
    """
    for k in range(out.shape[0]):
        slot = generator_at(table, k)
        for b in range(out.shape[1]):
            out[k, b] = integer_below(slot, n[k])


@njit(cache=True, nogil=True)
def server_rounds(
    sent: np.ndarray,
    participation: FloatArray,
    table: Any,
    server: Float32Array,
    server_mask: np.ndarray,
    uploads: IntArray,
) -> None:  # pragma: no cover
    """:meth:`ServerRounds.route <fedbandit_env.protocols.ServerRounds.route>` in every env
    at once: in env ``b``, ``ceil(p_b * flagged)`` of the agents whose send flag is set
    upload (drawn from generator ``b`` of ``table`` as ``choose_subset`` draws them), and
    the server broadcasts ``[uploads, mean payload]`` (float32) to every agent
    (``server``, ``server_mask``); ``uploads[b]`` is the round's ``c1`` links. Envs
    without a flag are left as they are (zeros).

    Examples:
        >>> sent = np.array([[[1, 0.2], [1, 0.4], [0, 9.0]]])
        >>> server, smask = np.zeros((1, 3, 2), np.float32), np.zeros((1, 3, 1), np.int8)
        >>> up = np.zeros(1, np.int64)
        >>> rngs = [np.random.default_rng(0)]
        >>> server_rounds(sent, np.ones(1), generator_table(rngs), server, smask, up)
        >>> server[0, 0].astype(float).round(6).tolist(), smask[0, :, 0].tolist(), up.tolist()
        ([2.0, 0.3], [1, 1, 1], [2])
    """
    b_count, n, d = sent.shape
    chosen = np.zeros(n, dtype=np.bool_)
    aggregate = np.zeros(d - 1)
    for b in range(b_count):
        flagged = np.flatnonzero(sent[b, :, SEND_FLAG] > 0.5)
        if flagged.size == 0:
            continue
        k = max(1, math.ceil(participation[b] * flagged.size - 1e-9))  # rounds.participants
        choose_subset(flagged, k, generator_at(table, b), chosen)
        mean_rows(sent[b, :, 1:], chosen, aggregate)
        for i in range(n):
            server[b, i, 0] = k
            for j in range(d - 1):
                server[b, i, 1 + j] = aggregate[j]
            server_mask[b, i, 0] = 1
        uploads[b] = k


def edge_delivery(
    be: Backend, sent: Any, ends: Any, public_dim: int, heard: Any
) -> tuple[Any, Any]:
    """One gossip edge per env: ``(mask (B, N, N) int8, rows (B, N, D) float32)``, the
    mask marking the edge ``ends[b]`` both ways and ``rows[b]`` its two ends' messages
    (plus every heard sender's public prefix; ``heard`` ``(N,)`` bool).

    Examples:
        >>> be = backend(None)
        >>> mask, rows = edge_delivery(be, np.ones((1, 3, 1)), np.array([[0, 2]]), 0,
        ...                            np.ones(3, np.bool_))
        >>> mask[0].tolist(), rows[0, :, 0].tolist()
        ([[0, 0, 1], [0, 0, 0], [1, 0, 0]], [1.0, 0.0, 1.0])
    """
    xp = be.xp
    b, n, d = (int(v) for v in sent.shape)
    envs = be.arange(b)
    i, j = ends[:, 0], ends[:, 1]
    mask = be.zeros((b, n, n), be.int8)
    mask[envs, i, j] = 1
    mask[envs, j, i] = 1
    rows = be.zeros((b, n, d), be.float32)
    values = xp.astype(sent, be.float32)
    if public_dim:
        heard_rows = xp.astype(be.asarray(heard), be.boolean)[None, :, None]
        rows[..., :public_dim] = xp.where(heard_rows, values[..., :public_dim], 0.0)
    rows[envs, i] = values[envs, i]
    rows[envs, j] = values[envs, j]
    return mask, rows


class Router:
    """Routes the messages of ``B`` envs; one per batched core (see the module docstring).

    Args:
        protocols: Each env's protocol object (reset by the core at every episode).
        network: The graph they share.
        message_dim: ``D``.
        backend: Where the arrays live (default NumPy).

    Raises:
        ValueError: On a torch device, for a protocol routed by its own object.

    Examples:
        >>> from fedbandit_env.protocols import Broadcast
        >>> net = Network.path(3)
        >>> router = Router([Broadcast()], net, 1)
        >>> router.kind
        'broadcast'
    """

    def __init__(
        self,
        protocols: list[Protocol],
        network: Network,
        message_dim: int,
        backend: Backend | None = None,
    ) -> None:
        be = self.backend = backend if backend is not None else _numpy()
        self.protocols = protocols
        self.network = network
        self.n_envs = len(protocols)
        self.n = network.n_agents
        self.d = message_dim
        first = protocols[0]
        kinds = {type(p) for p in protocols}
        self.public_dim = int(first.public_dim)
        self.has_server = bool(first.has_server)
        if kinds == {Broadcast}:
            self.kind = "broadcast"
        elif kinds == {RandomEdgeGossip} and len({p.public_dim for p in protocols}) == 1:
            self.kind = "random_edge"
        elif kinds == {ServerRounds} and be.is_numpy:
            self.kind = "server_rounds"
        elif kinds == {Flooding} and be.is_numpy:
            self.kind = "flooding"  # routed by its objects; MABCore.rollout compiles it
        elif kinds == {Hybrid} and be.is_numpy:
            self.kind = "hybrid"  # the same
        elif (
            kinds == {NeighbourGossip}
            and be.is_numpy
            and not self.public_dim
            and not any(p.public_dim for p in protocols)
        ):
            self.kind = "neighbour_calls"
        else:
            self.kind = "generic"
        if self.kind == "generic" and message_dim and not be.is_numpy:
            raise ValueError(
                f"the protocol {type(first).__name__} routes through its own object, on the "
                f"host: only Broadcast and RandomEdgeGossip route on a torch device "
                f"({be.label}); use device=None"
            )
        adjacency = network.adjacency.astype(np.int8)
        adjacency.flags.writeable = False
        heard: np.ndarray = np.asarray(network.adjacency.any(axis=0))  # heard senders
        self._all_heard = bool(heard.all())
        b, n = self.n_envs, self.n
        self._adjacency = be.asarray(adjacency)
        self._heard = be.asarray(heard)
        self._heard_rows = be.asarray(heard[None, :, None])
        self._edges = be.asarray(network.edges)
        self._adjacency_all = be.xp.broadcast_to(self._adjacency, (b, n, n))  # one view
        self._edge_links = be.full((b,), network.n_edges, be.int64)
        self._no_links = be.zeros((b,), be.int64)
        self._one_link = be.full((b,), 1, be.int64)  # gossip: one call; + |E| with a prefix
        self._gossip_links = be.full((b,), 1 + network.n_edges, be.int64)
        if be.is_numpy:
            for constant in (self._edge_links, self._no_links, self._one_link,
                             self._gossip_links):  # fmt: skip
                constant.flags.writeable = False
        self._neighbors = np.asarray(network.neighbors, dtype=np.int64)
        self._degrees = np.asarray(network.degrees, dtype=np.int64)
        self._edge_block: np.ndarray = self._empty_block()
        self._offset = 0
        self._stream: DeviceStream | None = None

    @property
    def prefix_reaches_graph(self) -> bool:
        """Whether every graph neighbour hears each sender's public prefix every step (the
        first ``public_dim`` entries; with none, the whole message): Broadcast, or
        random-edge gossip with a public prefix.

        Examples:
            >>> from fedbandit_env.protocols import RandomEdgeGossip
            >>> Router([RandomEdgeGossip(public_dim=1)], Network.ring(4), 2).prefix_reaches_graph
            True
            >>> Router([RandomEdgeGossip()], Network.ring(4), 2).prefix_reaches_graph
            False
        """
        return self.kind == "broadcast" or (self.kind == "random_edge" and self.public_dim > 0)

    def reset(self, rngs: list[np.random.Generator], stream: DeviceStream | None = None) -> None:
        """Bind each env's protocol to the network and its generator (a new episode);
        on a torch device, gossip edges come from ``stream``."""
        for protocol, rng in zip(self.protocols, rngs, strict=True):
            protocol.reset(self.network, rng)
        self._edge_block = self._empty_block()
        self._offset = 0
        self._stream = stream
        if self.kind == "server_rounds":  # the protocols' generators, bound for the episode
            self._rngs = list(rngs)  # alive while the table is used
            self._table = generator_table(self._rngs)
            self._rates = np.array([p.participation for p in self.protocols])  # type: ignore[attr-defined]

    def route(self, sent: FloatArray, t: int, ahead: int) -> Routed:
        """Deliver the messages ``sent`` (``(B, N, D)``) at step ``t``; ``ahead``: how
        many steps (this one included) the episode has left, the most a block draws."""
        if self.kind == "broadcast":
            return self._broadcast(sent)
        if self.kind == "random_edge":
            return self._random_edge(sent, ahead)
        if self.kind == "server_rounds":
            return self._server_rounds(sent)
        if self.kind == "neighbour_calls":
            return self._neighbour_calls(sent, ahead)
        return self._generic(sent, t)

    # ------------------------------------------------------------------ routers
    def _broadcast(self, sent: FloatArray) -> Routed:
        rows = self.backend.astype(sent, self.backend.float32)
        if not self._all_heard:
            # where, not a product: a forged NaN or inf times 0 is no zero
            rows = self.backend.xp.where(self._heard_rows, rows, 0.0)
        return Routed(rows, self._adjacency_all, self._edge_links, self._no_links)

    def _empty_block(self) -> np.ndarray:
        """No draws held: ``(B, 0)`` edges, or ``(B, 0, N)`` uniforms of neighbour calls."""
        if self.kind == "neighbour_calls":
            return np.zeros((self.n_envs, 0, self.n))
        return np.zeros((self.n_envs, 0), dtype=np.int64)

    def _draw_block(self, size: int) -> np.ndarray:
        """The protocols' draws of the next ``size`` steps, each env's from its own
        generator in the order ``route`` consumes them: an edge index a step
        (``rng.integers(n_edges)``, ``(B, size)``) for random-edge gossip, a uniform per
        agent a step (``rng.random(N)``, ``(B, size, N)``) for neighbour calls."""
        b, rngs = self.n_envs, [p._rng for p in self.protocols]
        if self.kind == "neighbour_calls":
            return np.stack([rng.random((size, self.n)) for rng in rngs])
        block = np.zeros((b, size), dtype=np.int64)
        draw_below(generator_table(rngs), np.full(b, self.network.n_edges), block)
        return block

    def _next_draws(self, ahead: int) -> np.ndarray:
        """This step's draws of every env (:meth:`_draw_block`'s, a block ahead)."""
        if self._offset >= self._edge_block.shape[1]:
            self._edge_block, self._offset = self._draw_block(max(1, min(256, ahead))), 0
        draws = self._edge_block[:, self._offset]
        self._offset += 1
        return draws

    def _pick_edges(self, ahead: int) -> Any:
        """Each env's edge this step: its protocol's draw (NumPy, in
        ``rng.integers(n_edges)``'s order, a block ahead), or the device stream's."""
        if self._stream is not None:
            return self._stream.integers(self.network.n_edges, (self.n_envs,))
        return self._next_draws(ahead)

    def _neighbour_calls(self, sent: FloatArray, ahead: int) -> Routed:
        """Every agent calls one uniformly random neighbour, both ends hear each other
        (``NeighbourCalls.draw``, from each env's protocol generator a block ahead); a
        sender's row where someone heard it; one link per distinct pair."""
        b, n = self.n_envs, self.n
        picks = (self._next_draws(ahead) * self._degrees).astype(np.int64)
        callee = self._neighbors[np.arange(n), picks]
        mask = np.zeros((b, n, n), dtype=np.int8)
        mask[np.arange(b)[:, None], np.arange(n)[None, :], callee] = 1
        mask |= mask.transpose(0, 2, 1)
        links = np.triu(mask).sum(axis=(1, 2)).astype(np.int64)
        heard = np.asarray(mask.any(axis=1))[..., None]
        # where, not a product: a forged NaN or inf times 0 is no zero
        rows = np.where(heard, np.asarray(sent, dtype=np.float32), np.float32(0.0))
        return Routed(rows, mask, links, self._no_links)

    def take_draws(self, k: int) -> np.ndarray:
        """The protocols' draws of the next ``k`` steps (:meth:`_draw_block`: each env's
        gossip edge, an index into the graph's edges, ``(B, k)``; or each agent's uniform
        of a neighbour call, ``(B, k, N)``): what :meth:`route` would draw at those
        steps, in the same order from the same streams (a compiled rollout routes with
        them).

        Examples:
            >>> from fedbandit_env.protocols import RandomEdgeGossip
            >>> router = Router([RandomEdgeGossip()], Network.ring(4), 1)
            >>> router.reset([np.random.default_rng(3)])
            >>> picks = router.take_draws(5)
            >>> picks.tolist() == [np.random.default_rng(3).integers(4, size=5).tolist()]
            True
        """
        have = self._edge_block[:, self._offset :]
        if have.shape[1] >= k:
            self._offset += k
            return np.ascontiguousarray(have[:, :k])
        more = self._draw_block(k - have.shape[1])
        self._edge_block, self._offset = self._edge_block[:, :0], 0
        return np.ascontiguousarray(np.concatenate([have, more], axis=1))

    def untake_draws(self, picks: np.ndarray) -> None:
        """Put back draws of :meth:`take_draws` that no step used (``picks``: the last
        steps' of them): the next steps route with them first.

        Examples:
            >>> from fedbandit_env.protocols import RandomEdgeGossip
            >>> router = Router([RandomEdgeGossip()], Network.ring(4), 1)
            >>> router.reset([np.random.default_rng(3)])
            >>> picks = router.take_draws(5)
            >>> router.untake_draws(picks[:, 2:])
            >>> router.take_draws(3).tolist() == picks[:, 2:].tolist()
            True
        """
        rest = self._edge_block[:, self._offset :]
        self._edge_block = np.concatenate([np.asarray(picks, dtype=rest.dtype), rest], axis=1)
        self._offset = 0

    def _random_edge(self, sent: FloatArray, ahead: int) -> Routed:
        pick = self._pick_edges(ahead)
        mask, rows = edge_delivery(
            self.backend, sent, self._edges[pick], self.public_dim, self._heard
        )
        if self.public_dim:
            return Routed(rows, mask, self._gossip_links, self._no_links, self._adjacency_all)
        return Routed(rows, mask, self._one_link, self._no_links)

    def _server_rounds(self, sent: FloatArray) -> Routed:
        b, n, d = sent.shape
        server = np.zeros((b, n, d), dtype=np.float32)
        smask = np.zeros((b, n, 1), dtype=np.int8)
        up = np.zeros(b, dtype=np.int64)
        if d >= 2:
            server_rounds(np.asarray(sent), self._rates, self._table, server, smask, up)
        mask = np.zeros((b, n, n), dtype=np.int8)
        rows = np.zeros((b, n, d), dtype=np.float32)
        return Routed(rows, mask, np.zeros(b, dtype=np.int64), up, None, server, smask)

    def _generic(self, sent: FloatArray, t: int) -> Routed:
        b, n, d = sent.shape
        rows = np.zeros((b, n, d), dtype=np.float32)
        mask = np.zeros((b, n, n), dtype=np.int8)
        public = np.zeros((b, n, n), dtype=np.int8) if self.public_dim else None
        server = np.zeros((b, n, d), dtype=np.float32) if self.has_server else None
        smask = np.zeros((b, n, 1), dtype=np.int8) if self.has_server else None
        peer = np.zeros(b, dtype=np.int64)
        up = np.zeros(b, dtype=np.int64)
        per_receiver = None
        if not all(p.per_sender for p in self.protocols):
            per_receiver = np.zeros((b, n, n, d), dtype=np.float32)
        for k, protocol in enumerate(self.protocols):
            delivery = protocol.route(sent[k], t)
            if per_receiver is not None:
                per_receiver[k] = delivery.inbox
                mask[k] = delivery.mask
            else:
                rows[k], mask[k] = sender_rows(delivery, self.public_dim, type(protocol).__name__)
            if public is not None:  # as the PettingZoo env: no public mask -> the mask
                pm = delivery.public_mask
                public[k] = mask[k] if pm is None else pm
            if server is not None and smask is not None and delivery.server is not None:
                server[k] = delivery.server
                smask[k, :, 0] = np.asarray(delivery.server_mask, dtype=np.int8)
            peer[k], up[k] = delivery.peer_links, delivery.server_links
        return Routed(rows, mask, peer, up, public, server, smask, per_receiver)


def sender_rows(delivery: Delivery, public_dim: int, name: str) -> tuple[Float32Array, np.ndarray]:
    """A :class:`~fedbandit_env.protocols.Delivery` as ``(rows (N, D) float32, mask)``:
    each sender's message as its receivers got it.

    Raises:
        ValueError: If two receivers got different contents of one sender (no
            sender-indexed form exists; the batched core refuses such a protocol).

    Examples:
        >>> from fedbandit_env.protocols import deliver_mask
        >>> d = deliver_mask(np.array([[1.0], [2.0]]), np.array([[0, 1], [0, 0]], bool))
        >>> rows, mask = sender_rows(d, 0, "demo")
        >>> rows.tolist(), mask.tolist()
        ([[0.0], [2.0]], [[0, 1], [0, 0]])
    """
    if delivery.rows is not None:  # sender-indexed already: one content per sender
        return _rows_heard(delivery, public_dim)
    got = delivery.inbox.astype(np.float32)
    mask = np.asarray(delivery.mask, dtype=bool)
    n = mask.shape[0]
    senders = np.arange(n)
    full: np.ndarray = np.asarray(mask.any(axis=0))
    # np.where, not a product: a forged NaN or inf times 0 is no zero (issue 63)
    rows = np.where(full[:, None], got[mask.argmax(axis=0), senders], np.float32(0.0))
    public = None
    if public_dim and delivery.public_mask is not None:
        public = np.asarray(delivery.public_mask, dtype=bool)
        reach = mask | public
        reached: np.ndarray = np.asarray(reach.any(axis=0))
        prefix = np.where(reached[:, None], got[reach.argmax(axis=0), senders, :public_dim], 0)
        rows[~full, :public_dim] = prefix[~full]
    again = inbox(rows[None], mask[None], None if public is None else public[None], public_dim)[0]
    if not np.array_equal(again, got, equal_nan=True):
        raise ValueError(
            f"the protocol {name} delivered different contents of one sender to different "
            "receivers; the batched core keeps one message per sender"
        )
    return rows.astype(np.float32), mask.astype(np.int8)


def _rows_heard(delivery: Delivery, public_dim: int) -> tuple[Float32Array, np.ndarray]:
    """:func:`sender_rows` of a delivery given per sender: each row where someone heard
    it whole, its public prefix where only that reached someone, zeros elsewhere (what
    the inbox's rows would give, without building the inbox)."""
    sent = np.asarray(delivery.rows).astype(np.float32)
    mask = np.asarray(delivery.mask, dtype=bool)
    full: np.ndarray = np.asarray(mask.any(axis=0))
    # np.where, not a product: a forged NaN or inf times 0 is no zero (issue 63)
    rows = np.where(full[:, None], sent, np.float32(0.0))
    k = min(public_dim, delivery.public_dim)  # the prefix the protocol sent alone
    if k and delivery.public_mask is not None:
        reached = np.asarray(delivery.public_mask, dtype=bool).any(axis=0) & ~full
        rows[reached, :k] = sent[reached, :k]
    return rows, mask.astype(np.int8)


def _numpy() -> Backend:
    return backend(None)


__all__ = [
    "Routed",
    "Router",
    "draw_below",
    "edge_delivery",
    "inbox",
    "sender_rows",
    "server_rounds",
]
