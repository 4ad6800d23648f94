"""Communication rounds of Li & Song: server rounds, GIS flooding, hybrid (SAC + server).

These protocols carry *rounds*, not a message every step. Entry 0 of a message is the
**send flag**: an agent whose message has ``message[0] > 0.5`` takes part in a round
started this step; entries ``1:`` are its payload (for CDP/DDP/HDP-MAB, the private
running means ``ybar`` of every arm). Steps without a flag carry nothing and cost
nothing.

================  ============================================================================
``ServerRounds``  Master-worker (Algorithm 1): ``ceil(p * uploaders)`` of the flagged agents,
                  drawn uniformly, upload (``c1`` each); the server averages their payloads
                  and broadcasts ``[n_aggregated, mean payload]`` to every agent in the same
                  step (``server`` observation). No delay.
``Flooding``      GIS (Algorithm 2): every slot, an agent that received new payloads
                  advertises them (ADV) to its neighbours, which request (REQ) and receive
                  (DATA) those they miss. One slot per step, the first in the step of the
                  upload. When every agent holds every payload of the round (the paper's
                  synchronisation clock) each agent receives them all, indexed by origin, in
                  ``messages``/``mask``. Delay: ``diameter - 1`` steps after the upload
                  step. Cost: ``c2`` per edge carrying an ADV in a slot.
``Hybrid``        Algorithms 4-5: the network's connected components; each has a sink, the
                  member of least eccentricity (Algorithm 4); members' payloads move one hop
                  per slot along shortest paths to the sink (SAC, ``c2`` per forwarding
                  agent per slot); a sink whose component is complete averages it and
                  uploads (``c1``); when every sink has uploaded the server averages and
                  broadcasts ``[n_aggregated, mean payload]`` to every agent. Delay:
                  ``max_q ecc(sink_q) - 1`` steps after the upload step.
================  ============================================================================

Readings chosen:

- Costs count uplinks only, as the paper's formulas do (CDP: ``c1 ceil(pM)`` per round);
  the server's broadcast is free.
- GIS delay: a payload sent with the step-``t`` action is held by the neighbours after
  step ``t`` and by agents ``d`` hops away after step ``t + d - 1``; so a round ends
  ``diameter - 1`` steps after the upload step, the ``t_delay`` of Algorithm 2's counter
  (0 on a complete graph, 1 on a star, as the paper's Table I implies).
- Algorithm 4 gives ``delay_i = max_j sd(i, j) - 1`` (line 4) but
  ``t_delay^q = max_j sd(j, SA_q)`` (line 5); we use line 4 (with the GIS convention
  above), so a complete component, a star and a lone agent all have no delay and
  one-agent components reproduce CDP-MAB exactly.
- Algorithm 5 line 14 averages the sinks' means with equal weights ``1/Q``; we weight each
  component by its number of uploaders, i.e. the server's aggregate is the average over
  agents, which is the global mean the heterogeneous setting needs (the two agree when
  components have equal sizes, as in the paper's balanced cases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from fedbandit_env.network.graph import Network
from fedbandit_env.protocols.base import Delivery, Protocol
from fedbandit_env.protocols.kernels import choose_subset, mean_rows, weighted_mean_rows
from fedbandit_env.type_aliases import BoolArray, FloatArray, IntArray

SEND_FLAG = 0
"""Index of the send flag in a round protocol's message."""


def participants(participation: float, n_agents: int) -> int:
    """``ceil(p * M)`` uploaders of a round, robust to float error (``0.6 * 5`` is 3).

    Examples:
        >>> participants(0.6, 5), participants(0.2, 50), participants(1.0, 7)
        (3, 10, 7)
    """
    return max(1, math.ceil(participation * n_agents - 1e-9))


def _quiet(n: int, d: int, server: bool, peer_links: int = 0, server_links: int = 0) -> Delivery:
    """Nothing delivered to agents this step (links may still have been used)."""
    rows = np.zeros((n, d))
    mask = np.zeros((n, n), dtype=bool)
    if not server:
        return Delivery(None, mask, peer_links, server_links, rows=rows)
    return Delivery(
        None,
        mask,
        peer_links,
        server_links,
        server=np.zeros((n, d)),
        server_mask=np.zeros(n, dtype=bool),
        rows=rows,
    )


def _from_server(
    n: int, d: int, n_aggregated: int, aggregate: FloatArray, peer_links: int, server_links: int
) -> Delivery:
    """The server broadcasts ``[n_aggregated, aggregate]`` to every agent."""
    server = np.zeros((n, d))
    server[:, 0] = n_aggregated
    server[:, 1:] = aggregate
    return Delivery(
        None,
        np.zeros((n, n), dtype=bool),
        peer_links,
        server_links,
        server=server,
        server_mask=np.ones(n, dtype=bool),
        rows=np.zeros((n, d)),
    )


class ServerRounds(Protocol):
    """Master-worker rounds with partial participation (Li & Song, Algorithm 1, Sec. IV-B).

    Args:
        participation: Rate ``p`` in ``(0, 1]``; ``ceil(p * flagged)`` flagged agents,
            drawn uniformly without replacement from the protocol's generator, upload.

    Examples:
        >>> proto = ServerRounds(participation=0.5)
        >>> proto.reset(Network.complete(4), np.random.default_rng(0))
        >>> msgs = np.array([[1, 0.2], [1, 0.4], [1, 0.6], [1, 0.8]])
        >>> d = proto.route(msgs, t=1)
        >>> d.server_links, float(d.server[0, 0]), bool(d.server_mask.all())
        (2, 2.0, True)
        >>> proto.route(np.zeros((4, 2)), t=2).server_links
        0
    """

    requires_connected = False
    name = "server"
    has_server = True

    def __init__(self, participation: float = 1.0) -> None:
        super().__init__()
        p = float(participation)
        if not 0.0 < p <= 1.0:
            raise ValueError(f"participation must lie in (0, 1], got {participation!r}")
        self.participation = p
        self._chosen = np.zeros(0, dtype=bool)

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Bind to the network (any graph: agents talk only to the server)."""
        super().reset(network, rng)
        self._chosen = np.zeros(network.n_agents, dtype=bool)

    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Aggregate this step's uploads (if any) and broadcast the mean."""
        n, d = messages.shape
        flagged = np.flatnonzero(messages[:, SEND_FLAG] > 0.5)
        if flagged.size == 0 or d < 2:
            return _quiet(n, d, server=True)
        k = participants(self.participation, flagged.size)
        chosen = choose_subset(flagged, k, self._rng, self._chosen)
        aggregate = mean_rows(messages[:, 1:], chosen, np.zeros(d - 1))
        return _from_server(n, d, k, aggregate, peer_links=0, server_links=k)

    def __repr__(self) -> str:
        return f"ServerRounds(participation={self.participation})"


def gis_slot(
    adjacency: IntArray | FloatArray, edges: IntArray, held: BoolArray, new: BoolArray
) -> BoolArray:
    """One GIS slot (Algorithm 2, lines 4-10), in place.

    ``held[i, j]``: agent ``i`` holds origin ``j``'s payload; ``new[i, j]``: it got it in
    the last slot (so advertises it now). Agents with news send ADV to every neighbour;
    a neighbour missing an advertised payload sends REQ and gets DATA. Returns the edges
    (rows of ``edges``) that carried an ADV this slot.

    Examples:
        >>> net = Network.path(3)
        >>> held = np.eye(3, dtype=bool); new = held.copy()
        >>> gis_slot(net.adjacency.astype(int), net.edges, held, new).tolist()
        [True, True]
        >>> held.sum(axis=1).tolist()
        [2, 3, 2]
    """
    advertising: BoolArray = np.asarray(new.any(axis=1))
    used: BoolArray = advertising[edges[:, 0]] | advertising[edges[:, 1]]
    # a neighbour with news: a product of 0/1 matrices, exact in floating point too (a
    # float adjacency makes it a BLAS product, far faster than an integer one)
    incoming = (adjacency @ new.astype(adjacency.dtype)) > 0
    fresh = incoming & ~held
    held |= fresh
    new[:] = fresh
    return used


@dataclass
class _Sac:
    """One hybrid round: ``at[j]`` holds origin ``j``'s payload (-1: not sent)."""

    payload: FloatArray
    members: BoolArray  # (Q, N): the uploaders of each component
    at: IntArray
    uploaded: BoolArray
    sink_means: FloatArray
    sink_counts: FloatArray


@dataclass
class _Flood:
    origins: BoolArray
    messages: FloatArray
    held: BoolArray
    new: BoolArray
    slots: int = 0  # GIS slots played since the upload


class Flooding(Protocol):
    """Global Information Synchronization (Li & Song, Algorithm 2) on a connected graph.

    Examples:
        >>> proto = Flooding()
        >>> proto.reset(Network.path(3), np.random.default_rng(0))
        >>> first = proto.route(np.array([[1, 0.1], [1, 0.2], [1, 0.3]]), t=1)
        >>> int(first.mask.sum()), first.peer_links       # ends agents still miss one
        (0, 2)
        >>> second = proto.route(np.zeros((3, 2)), t=2)
        >>> second.mask.astype(int).tolist(), second.peer_links
        ([[0, 1, 1], [1, 0, 1], [1, 1, 0]], 2)
        >>> float(second.inbox[0, 2, 1])
        0.3
    """

    name = "gis_flooding"

    def __init__(self) -> None:
        super().__init__()
        self._rounds: list[_Flood] = []
        self._adjacency = np.zeros((0, 0))

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Bind to a connected network; forget rounds in flight."""
        super().reset(network, rng)
        self._rounds = []
        self._adjacency = network.adjacency.astype(np.float64)

    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Start a round for this step's flagged agents, advance every round one slot,
        deliver the rounds that completed."""
        n, d = messages.shape
        flagged = messages[:, SEND_FLAG] > 0.5
        if flagged.any():
            start = np.diag(flagged)
            self._rounds.append(_Flood(flagged, messages.copy(), start, start.copy()))
        if not self._rounds:
            return _quiet(n, d, server=False)
        edges = self.network.edges
        used = np.zeros(edges.shape[0], dtype=bool)
        rows = np.zeros((n, d))  # one content per origin: every receiver gets the same
        mask = np.zeros((n, n), dtype=bool)
        remaining = []
        for rnd in self._rounds:  # oldest first; a later round overwrites a shared origin
            used |= gis_slot(self._adjacency, edges, rnd.held, rnd.new)
            rnd.slots += 1
            if rnd.held[:, rnd.origins].all():
                mask[:, rnd.origins] = True
                rows[rnd.origins] = rnd.messages[rnd.origins]
            else:
                remaining.append(rnd)
        self._rounds = remaining
        np.fill_diagonal(mask, False)
        return Delivery(None, mask, peer_links=int(used.sum()), rows=rows)

    def in_flight(self) -> list[tuple[BoolArray, FloatArray, int]]:
        """The rounds not yet delivered, oldest first: each round's uploaders ``(N,)``,
        the messages of its upload step ``(N, D)`` (copies) and the GIS slots played
        since. A compiled rollout (``core.rounds.rollout_flooding``) starts from them.

        Examples:
            >>> proto = Flooding()
            >>> proto.reset(Network.path(3), np.random.default_rng(0))
            >>> _ = proto.route(np.array([[1, 0.1], [0, 0.0], [0, 0.0]]), t=1)
            >>> [(o.tolist(), slots) for o, _, slots in proto.in_flight()]
            [([True, False, False], 1)]
        """
        return [(r.origins.copy(), r.messages.copy(), r.slots) for r in self._rounds]

    def resume(self, rounds: list[tuple[BoolArray, FloatArray, int]]) -> None:
        """Hold ``rounds`` in flight, as :meth:`in_flight` lists them: each round's
        holdings are replayed from its upload (``slots`` GIS slots), so :meth:`route`
        goes on as if it had routed them itself. What a compiled rollout hands back.

        Examples:
            >>> proto = Flooding()
            >>> proto.reset(Network.path(3), np.random.default_rng(0))
            >>> proto.resume([(np.array([True, False, False]), np.array([[1, 0.1]] * 3), 1)])
            >>> d = proto.route(np.zeros((3, 2)), t=2)
            >>> d.mask[:, 0].tolist(), d.peer_links
            ([False, True, True], 2)
        """
        self._rounds = []
        for origins, messages, slots in rounds:
            start = np.diag(np.asarray(origins, dtype=bool))
            rnd = _Flood(start.diagonal().copy(), np.array(messages, dtype=np.float64),
                         start, start.copy())  # fmt: skip
            for _ in range(slots):
                gis_slot(self._adjacency, self.network.edges, rnd.held, rnd.new)
            rnd.slots = int(slots)
            self._rounds.append(rnd)


def find_sinks(network: Network) -> tuple[IntArray, IntArray]:
    """Algorithm 4: in each connected component, the agent of least eccentricity (the
    lowest index on ties), and the component's delay ``max(ecc(sink) - 1, 0)`` in steps
    after the upload step.

    Returns:
        ``(sinks, delays)``, one entry per component of ``network.components``.

    Examples:
        >>> from fedbandit_env.network.graph import make_components
        >>> sinks, delays = find_sinks(make_components((4, 1, 5), "path"))
        >>> sinks.tolist(), delays.tolist()
        ([1, 4, 7], [1, 0, 1])
    """
    sinks, delays = [], []
    for comp in network.components:
        if comp.size == 1:
            sinks.append(int(comp[0]))
            delays.append(0)
            continue
        sub = network.graph.subgraph(comp.tolist())
        ecc = nx.eccentricity(sub)
        best = min(comp.tolist(), key=lambda i: (ecc[i], i))
        sinks.append(best)
        delays.append(max(ecc[best] - 1, 0))
    return np.array(sinks, dtype=np.int64), np.array(delays, dtype=np.int64)


class Hybrid(Protocol):
    """Li & Song's hybrid structure (Algorithms 4-5): SAC inside components, then a server.

    The components are the network's connected components (build one with
    :func:`~fedbandit_env.network.graph.make_components`).

    Examples:
        >>> from fedbandit_env.network.graph import make_components
        >>> proto = Hybrid()
        >>> proto.reset(make_components((3, 1), "path"), np.random.default_rng(0))
        >>> proto.sinks.tolist()
        [1, 3]
        >>> d = proto.route(np.array([[1, 0.0], [1, 0.2], [1, 0.4], [1, 1.0]]), t=1)
        >>> d.peer_links, d.server_links, d.server[0].tolist()
        (2, 2, [4.0, 0.4])
    """

    requires_connected = False
    name = "hybrid"
    has_server = True

    def __init__(self) -> None:
        super().__init__()
        self.sinks = np.zeros(0, dtype=np.int64)
        self.delays = np.zeros(0, dtype=np.int64)
        self._parent = np.zeros(0, dtype=np.int64)
        self._component = np.zeros(0, dtype=np.int64)
        self._round: _Sac | None = None

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Find the sinks and each agent's next hop towards its sink."""
        super().reset(network, rng)
        self.sinks, self.delays = find_sinks(network)
        n = network.n_agents
        self._parent = np.full(n, -1, dtype=np.int64)
        self._component = np.zeros(n, dtype=np.int64)
        for q, (comp, sink) in enumerate(zip(network.components, self.sinks, strict=True)):
            self._component[comp] = q
            paths = nx.single_source_shortest_path(network.graph, int(sink))
            for node in comp.tolist():
                if node != sink:
                    self._parent[node] = paths[node][-2]
        self._round = None

    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Start a round for this step's flagged agents (one round at a time), move every
        payload one hop, upload complete components, broadcast when all have uploaded."""
        n, d = messages.shape
        flagged = messages[:, SEND_FLAG] > 0.5
        if flagged.any():
            if self._round is not None:
                raise RuntimeError(
                    f"step {t}: a hybrid round is still in flight; agents must wait for the "
                    "server's broadcast before starting another"
                )
            n_comp = self.sinks.size
            members = flagged[None, :] & (self._component[None, :] == np.arange(n_comp)[:, None])
            self._round = _Sac(
                messages[:, 1:].copy(),
                members,
                np.where(flagged, np.arange(n), -1),
                ~members.any(axis=1),  # components without uploaders have nothing to send
                np.zeros((n_comp, d - 1)),
                np.zeros(n_comp),
            )
        rnd = self._round
        if rnd is None:
            return _quiet(n, d, server=True)
        at = rnd.at
        moving = (at >= 0) & (self._parent[np.maximum(at, 0)] >= 0)
        peer_links = int(np.unique(at[moving]).size)  # one DATA link per forwarding agent
        at[moving] = self._parent[at[moving]]
        server_links = 0
        for q in np.flatnonzero(~rnd.uploaded):
            members = rnd.members[q]
            if (at[members] == self.sinks[q]).all():  # SAC done: the sink averages, uploads
                mean_rows(rnd.payload, members, rnd.sink_means[q])
                rnd.sink_counts[q] = members.sum()
                rnd.uploaded[q] = True
                server_links += 1
        if not rnd.uploaded.all():
            return _quiet(n, d, True, peer_links, server_links)
        aggregate = weighted_mean_rows(rnd.sink_means, rnd.sink_counts, np.zeros(d - 1))
        self._round = None
        n_aggregated = int(rnd.members.sum())
        return _from_server(n, d, n_aggregated, aggregate, peer_links, server_links)

    def in_flight(self) -> tuple[np.ndarray, ...] | None:
        """The round in flight (``None``: none), as copies: the payloads ``(N, D - 1)``,
        each component's uploaders ``(Q, N)``, where each payload is ``(N,)`` (-1: not
        sent), the components that uploaded ``(Q,)``, their sinks' means ``(Q, D - 1)``
        and counts ``(Q,)``. A compiled rollout (``core.rounds.rollout_hybrid``) starts
        from it.

        Examples:
            >>> from fedbandit_env.network.graph import make_components
            >>> proto = Hybrid()
            >>> proto.reset(make_components((5,), "path"), np.random.default_rng(0))
            >>> msgs = np.array([[1, 0.0], [0, 0.0], [0, 0.0], [0, 0.0], [1, 0.5]])
            >>> _ = proto.route(msgs, t=1)
            >>> proto.in_flight()[2].tolist()  # one hop towards the sink, agent 2
            [1, -1, -1, -1, 3]
        """
        rnd = self._round
        if rnd is None:
            return None
        return (rnd.payload.copy(), rnd.members.copy(), rnd.at.copy(), rnd.uploaded.copy(),
                rnd.sink_means.copy(), rnd.sink_counts.copy())  # fmt: skip

    def resume(self, state: tuple[np.ndarray, ...] | None) -> None:
        """Hold ``state`` in flight, as :meth:`in_flight` gives it (``None``: no round), so
        :meth:`route` goes on as if it had routed it itself. What a compiled rollout hands
        back.

        Examples:
            >>> from fedbandit_env.network.graph import make_components
            >>> proto = Hybrid()
            >>> proto.reset(make_components((2,), "path"), np.random.default_rng(0))
            >>> proto.resume((np.array([[0.2], [0.4]]), np.array([[True, True]]),
            ...               np.array([0, 0]), np.array([False]), np.zeros((1, 1)),
            ...               np.zeros(1)))
            >>> proto.route(np.zeros((2, 2)), t=5).server[0].tolist()
            [2.0, 0.30000000000000004]
        """
        if state is None:
            self._round = None
            return
        payload, members, at, uploaded, sink_means, sink_counts = (np.array(a) for a in state)
        self._round = _Sac(
            payload.astype(np.float64),
            members.astype(bool),
            at.astype(np.int64),
            uploaded.astype(bool),
            sink_means.astype(np.float64),
            sink_counts.astype(np.float64),
        )

    def __repr__(self) -> str:
        return "Hybrid()"


def round_schedule(protocol: Protocol, network: Network) -> tuple[IntArray, IntArray]:
    """Links per step of one round in which every agent uploads, found by running a fresh
    ``protocol`` until it delivers: ``(peer_links, server_links)``, entry ``j`` being step
    ``j`` after the upload step (its length - 1 is the delay). The batched kernels replay
    these counts, so they cannot drift from the protocol. Not for participation draws.

    Examples:
        >>> round_schedule(Flooding(), Network.star(4))
        (array([3, 3]), array([0, 0]))
    """
    protocol.reset(network, np.random.default_rng(0))
    n = network.n_agents
    msgs = np.zeros((n, 2))
    msgs[:, SEND_FLAG] = 1.0
    peer, server = [], []
    for step in range(1, 4 * n + 3):
        d = protocol.route(msgs, step)
        msgs = np.zeros((n, 2))
        peer.append(d.peer_links)
        server.append(d.server_links)
        arrived = d.mask.any() or (d.server_mask is not None and d.server_mask.any())
        if arrived:
            return np.array(peer, dtype=np.int64), np.array(server, dtype=np.int64)
    raise RuntimeError(f"{protocol!r} did not complete a round on {network!r}")
