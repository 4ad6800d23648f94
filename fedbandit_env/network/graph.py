"""Communication graphs: networkx in, compact arrays out.

A :class:`Network` wraps an undirected networkx graph whose nodes are relabelled
``0 .. N-1`` (in sorted order of the original labels) and exposes what fast code and the
papers need: neighbour tables padded with ``-1``, degrees, the edge list, Zhu et al.'s
gossip matrix ``W = I - L / (2|E|)`` with its second largest eigenvalue ``lambda_2``, the
diameter and the eccentricities (Li & Song choose sinks of least eccentricity).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from fedbandit_env.type_aliases import BoolArray, FloatArray, IntArray, SeedLike
from fedbandit_env.validation import check_int


def _frozen(a: np.ndarray) -> Any:
    a.setflags(write=False)
    return a


class Network:
    """An undirected communication graph over agents ``0 .. N-1``.

    Args:
        graph: Any networkx graph with at least 2 nodes (directed graphs are made
            undirected, self-loops dropped). Nodes are relabelled in sorted order.
        require_connected: Raise ``ValueError`` if the graph is disconnected.

    Examples:
        >>> net = Network.complete(3)
        >>> net.n_agents, net.n_edges, round(net.lambda_2, 6)
        (3, 3, 0.5)
        >>> net.neighbors.tolist()
        [[1, 2], [0, 2], [0, 1]]
        >>> round(Network.path(10).lambda_2, 3)
        0.995
    """

    def __init__(self, graph: nx.Graph, require_connected: bool = True) -> None:
        if not isinstance(graph, nx.Graph):
            raise TypeError(f"graph must be a networkx.Graph, got {type(graph).__name__}")
        g = nx.Graph(graph)  # undirected simple copy
        g.remove_edges_from(nx.selfloop_edges(g))
        n = g.number_of_nodes()
        if n < 2:
            raise ValueError(f"graph must have at least 2 nodes (agents), got {n}")
        try:
            order = sorted(g.nodes)
        except TypeError:
            order = list(g.nodes)
        g = nx.relabel_nodes(g, {node: i for i, node in enumerate(order)})
        self.is_connected: bool = bool(nx.is_connected(g))
        if require_connected and not self.is_connected:
            parts = nx.number_connected_components(g)
            raise ValueError(
                f"graph must be connected, got {parts} components over {n} nodes "
                "(pass require_connected=False where isolated groups are intended)"
            )
        self.graph: nx.Graph = nx.freeze(g)
        self.n_agents: int = n
        adj = np.zeros((n, n), dtype=bool)
        edges = np.array(sorted((min(u, v), max(u, v)) for u, v in g.edges), dtype=np.int64)
        edges = edges.reshape(-1, 2)
        adj[edges[:, 0], edges[:, 1]] = True
        adj[edges[:, 1], edges[:, 0]] = True
        self.adjacency: BoolArray = _frozen(adj)
        self.edges: IntArray = _frozen(edges)
        self.degrees: IntArray = _frozen(adj.sum(axis=1).astype(np.int64))
        width = int(self.degrees.max()) if n else 0
        nbrs = np.full((n, width), -1, dtype=np.int64)
        for i in range(n):
            row = np.flatnonzero(adj[i])
            nbrs[i, : row.size] = row
        self.neighbors: IntArray = _frozen(nbrs)

    # ----------------------------------------------------------------- builders
    @classmethod
    def complete(cls, n: int) -> Network:
        """Every agent talks to every other agent.

        Examples:
            >>> Network.complete(4).n_edges
            6
        """
        return cls(nx.complete_graph(check_int("n", n, 2)))

    @classmethod
    def ring(cls, n: int) -> Network:
        """A cycle ``0 - 1 - ... - (n-1) - 0`` (needs ``n >= 3``).

        Examples:
            >>> Network.ring(5).degrees.tolist()
            [2, 2, 2, 2, 2]
        """
        return cls(nx.cycle_graph(check_int("n", n, 3)))

    @classmethod
    def path(cls, n: int) -> Network:
        """A line ``0 - 1 - ... - (n-1)``.

        Examples:
            >>> Network.path(4).diameter
            3
        """
        return cls(nx.path_graph(check_int("n", n, 2)))

    @classmethod
    def star(cls, n: int) -> Network:
        """Agent 0 is the hub, linked to each of the other ``n - 1`` agents.

        Examples:
            >>> Network.star(5).degrees.tolist()
            [4, 1, 1, 1, 1]
        """
        return cls(nx.star_graph(check_int("n", n, 2) - 1))

    @classmethod
    def grid(cls, rows: int, cols: int) -> Network:
        """A ``rows x cols`` lattice, agents numbered row by row.

        Examples:
            >>> Network.grid(2, 3).n_agents, Network.grid(2, 3).n_edges
            (6, 7)
        """
        rows = check_int("rows", rows, 1)
        cols = check_int("cols", cols, 1)
        if rows * cols < 2:
            raise ValueError(f"grid must have at least 2 nodes, got rows={rows}, cols={cols}")
        return cls(nx.grid_2d_graph(rows, cols))

    @classmethod
    def erdos_renyi(cls, n: int, p: float, seed: SeedLike = None, max_tries: int = 1000) -> Network:
        """A connected Erdős-Rényi graph ``G(n, p)``: redrawn until connected.

        Args:
            n: Number of agents (>= 2).
            p: Edge probability in (0, 1].
            seed: Seed of the draw.
            max_tries: Draws before giving up with a ``ValueError``.

        Examples:
            >>> net = Network.erdos_renyi(20, 0.3, seed=0)
            >>> net.n_agents, net.is_connected
            (20, True)
        """
        n = check_int("n", n, 2)
        if not 0.0 < p <= 1.0:
            raise ValueError(f"p must lie in (0, 1], got {p!r}")
        rng = np.random.default_rng(seed)
        for _ in range(max_tries):
            g = nx.gnp_random_graph(n, p, seed=int(rng.integers(2**31)))
            if nx.is_connected(g):
                return cls(g)
        raise ValueError(
            f"no connected G(n={n}, p={p}) graph in {max_tries} draws; raise p above "
            f"about log(n)/n = {np.log(n) / n:.3f}"
        )

    @classmethod
    def random_regular(
        cls, n: int, d: int, seed: SeedLike = None, max_tries: int = 1000
    ) -> Network:
        """A connected random ``d``-regular graph (``n * d`` must be even, ``d < n``).

        Examples:
            >>> Network.random_regular(10, 3, seed=0).degrees.tolist() == [3] * 10
            True
        """
        n = check_int("n", n, 2)
        d = check_int("d", d, 1)
        if d >= n or (n * d) % 2:
            raise ValueError(f"need 1 <= d < n and n * d even, got n={n}, d={d}")
        rng = np.random.default_rng(seed)
        for _ in range(max_tries):
            g = nx.random_regular_graph(d, n, seed=int(rng.integers(2**31)))
            if nx.is_connected(g):
                return cls(g)
        raise ValueError(f"no connected {d}-regular graph on {n} nodes in {max_tries} draws")

    @classmethod
    def from_networkx(cls, graph: nx.Graph, require_connected: bool = True) -> Network:
        """Wrap any networkx graph (nodes relabelled ``0 .. N-1`` in sorted order).

        Examples:
            >>> import networkx as nx
            >>> Network.from_networkx(nx.petersen_graph()).n_agents
            10
        """
        return cls(graph, require_connected=require_connected)

    # ----------------------------------------------------------------- properties
    @property
    def n_edges(self) -> int:
        """Number of undirected edges ``|E|``."""
        return int(self.edges.shape[0])

    @cached_property
    def laplacian(self) -> FloatArray:
        """Graph Laplacian ``L = D - A``."""
        return _frozen(np.diag(self.degrees.astype(np.float64)) - self.adjacency.astype(float))

    @cached_property
    def gossip_matrix(self) -> FloatArray:
        """Zhu et al.'s expected gossip matrix ``W = I - L / (2|E|)``.

        It is the mean over edges of the averaging matrices
        ``I - (e_i - e_j)(e_i - e_j)^T / 2`` when one uniformly random edge is
        activated per step.
        """
        if self.n_edges == 0:
            raise ValueError("the gossip matrix needs at least one edge")
        w = np.eye(self.n_agents) - self.laplacian / (2.0 * self.n_edges)
        return _frozen(w)

    @cached_property
    def lambda_2(self) -> float:
        """Second largest eigenvalue of :attr:`gossip_matrix` (mixing speed: smaller is faster)."""
        eig = np.sort(np.linalg.eigvalsh(self.gossip_matrix))[::-1]
        return float(eig[1])

    @cached_property
    def consensus_matrix(self) -> FloatArray:
        """The consensus matrix ``P = I - L / (d_max + 1)`` of running-consensus bandits
        (Landgren et al. 2016 with ``kappa = d_max / (d_max + 1)``; DDUCB's experiments,
        where it is their cycle's matrix): symmetric, doubly stochastic, and every agent
        builds its row from public facts (its neighbours and ``d_max``).

        Examples:
            >>> Network.ring(4).consensus_matrix[0].round(4).tolist()
            [0.3333, 0.3333, 0.0, 0.3333]
        """
        d_max = float(self.degrees.max()) if self.n_agents else 0.0
        return _frozen(np.eye(self.n_agents) - self.laplacian / (d_max + 1.0))

    @cached_property
    def _consensus_spectrum(self) -> tuple[FloatArray, FloatArray]:
        values, vectors = np.linalg.eigh(self.consensus_matrix)
        order = np.argsort(-values, kind="stable")
        return values[order], vectors[:, order]

    @cached_property
    def consensus_lambda(self) -> float:
        """``|lambda_2(P)|``: the largest modulus of :attr:`consensus_matrix`'s eigenvalues
        other than the leading 1 (its mixing speed; DDUCB's stage length reads it).

        Examples:
            >>> round(Network.ring(100).consensus_lambda, 6)  # 1/3 + 2/3 cos(2 pi / 100)
            0.998684
        """
        values, _ = self._consensus_spectrum
        if self.n_agents < 2:
            return 0.0
        return float(np.abs(values[1:]).max())

    @cached_property
    def consensus_epsilon(self) -> FloatArray:
        """Landgren et al.'s graph constant of each agent,
        ``eps_c^i = N sum_{p >= 2} lambda_p^2 / (1 - lambda_p^2) (u_p^i)^2`` over the
        eigenpairs of :attr:`consensus_matrix` (the extra pulls coop-UCB2's width
        charges an agent for the consensus error of its estimates). A disconnected graph
        has a second eigenvalue 1: the constant is ``inf``.

        Examples:
            >>> Network.complete(3).consensus_epsilon.round(6).tolist()  # P = J / 3
            [0.0, 0.0, 0.0]
        """
        if not self.is_connected:
            return _frozen(np.full(self.n_agents, np.inf))
        values, vectors = self._consensus_spectrum
        lam2 = values[1:] ** 2
        share = vectors[:, 1:] ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = np.where(lam2 < 1.0 - 1e-12, lam2 / (1.0 - lam2), np.inf)
            contrib = np.where(share > 0, weight[None, :] * share, 0.0)
        return _frozen(self.n_agents * contrib.sum(axis=1))

    @cached_property
    def eccentricities(self) -> IntArray:
        """Eccentricity of each agent (max hop distance to any other agent).

        Examples:
            >>> Network.star(4).eccentricities.tolist()
            [1, 2, 2, 2]
        """
        if not self.is_connected:
            raise ValueError("eccentricities are undefined on a disconnected graph")
        ecc = nx.eccentricity(self.graph)
        return _frozen(np.array([ecc[i] for i in range(self.n_agents)], dtype=np.int64))

    @property
    def diameter(self) -> int:
        """Largest eccentricity: the flooding delay bound in Li & Song."""
        return int(self.eccentricities.max())

    @cached_property
    def hop_distances(self) -> IntArray:
        """All-pairs hop distances, ``-1`` where unreachable."""
        dist = np.full((self.n_agents, self.n_agents), -1, dtype=np.int64)
        for src, lengths in nx.all_pairs_shortest_path_length(self.graph):
            for dst, d in lengths.items():
                dist[src, dst] = d
        return _frozen(dist)

    @cached_property
    def components(self) -> tuple[IntArray, ...]:
        """The connected components, each a sorted array of agents, ordered by first agent.

        Examples:
            >>> Network.disjoint_union([Network.path(2), Network.star(3)]).components[1].tolist()
            [2, 3, 4]
        """
        parts = sorted(sorted(c) for c in nx.connected_components(self.graph))
        return tuple(_frozen(np.array(c, dtype=np.int64)) for c in parts)

    @classmethod
    def disjoint_union(cls, parts: list[Network | int]) -> Network:
        """One network of separate components (Li & Song's hybrid topology): each part is
        a :class:`Network` or an int ``1`` for a lone agent; agents are numbered part by
        part.

        Examples:
            >>> net = Network.disjoint_union([Network.complete(3), 1, Network.path(2)])
            >>> net.n_agents, net.n_edges, net.is_connected
            (6, 4, False)
        """
        g = nx.Graph()
        offset = 0
        for part in parts:
            if isinstance(part, Network):
                g.add_nodes_from(range(offset, offset + part.n_agents))
                g.add_edges_from((offset + int(u), offset + int(v)) for u, v in part.edges)
                offset += part.n_agents
            elif part == 1 and not isinstance(part, bool):
                g.add_node(offset)
                offset += 1
            else:
                raise TypeError(f"parts must be Networks or 1 (a lone agent), got {part!r}")
        return cls(g, require_connected=False)

    def __repr__(self) -> str:
        return f"Network(n_agents={self.n_agents}, n_edges={self.n_edges})"


def _no_rule(n: int) -> str | None:
    return None


def _ring_rule(n: int) -> str | None:
    return None if n >= 3 else "a ring needs at least 3 agents"


def _grid_rule(n: int) -> str | None:
    if n >= 4 and _grid_rows(n) > 1:
        return None
    return "no rows x cols factorisation with both >= 2 (it would be a path: use 'path')"


def _regular_rule(n: int, d: int = 3) -> str | None:
    if d < n and (n * d) % 2 == 0:
        return None
    return f"a {d}-regular graph needs more than {d} agents and an even n * d"


@dataclass(frozen=True)
class GraphKind:
    """A named family of graphs: its builder (agent count, ``seed=`` where random, the
    family's own keywords) and its rule on the agent count, checked beside it
    (``rule(n)`` returns why ``n`` agents are refused, or ``None``).

    Examples:
        >>> GRAPH_KINDS["grid"].rule(7)
        "no rows x cols factorisation with both >= 2 (it would be a path: use 'path')"
    """

    build: Callable[..., Network]
    rule: Callable[[int], str | None] = _no_rule
    random: bool = False


GRAPH_KINDS: dict[str, GraphKind] = {
    "complete": GraphKind(lambda n, seed=None: Network.complete(n)),
    "ring": GraphKind(lambda n, seed=None: Network.ring(n), _ring_rule),
    "path": GraphKind(lambda n, seed=None: Network.path(n)),
    "star": GraphKind(lambda n, seed=None: Network.star(n)),
    "grid": GraphKind(lambda n, seed=None: _square_grid(n), _grid_rule),
    "erdos_renyi": GraphKind(
        lambda n, seed=None, p=None: Network.erdos_renyi(
            n, p if p is not None else min(1.0, 2.0 * np.log(n) / n), seed
        ),
        random=True,
    ),
    "random_regular": GraphKind(
        lambda n, seed=None, d=3: Network.random_regular(n, d, seed), _regular_rule, True
    ),
}
"""Graph kinds by name: the one table the scenario, the command line and
:func:`make_network` read. A new kind is one entry."""


def _grid_rows(n: int) -> int:
    return max(r for r in range(1, int(np.sqrt(n)) + 1) if n % r == 0)


def _square_grid(n: int) -> Network:
    rows = _grid_rows(n)
    return Network.grid(rows, n // rows)


def check_graph(kind: str, n_agents: int | None, name: str = "graph") -> None:
    """Refuse an unknown kind, or an agent count the kind cannot be built on (``None``:
    the kind only), in one line naming ``name``.

    Examples:
        >>> check_graph("ring", 2)
        Traceback (most recent call last):
        ...
        ValueError: graph 'ring' cannot hold 2 agents: a ring needs at least 3 agents
    """
    if kind not in GRAPH_KINDS:
        raise ValueError(f"{name} must be one of {sorted(GRAPH_KINDS)}, got {kind!r}")
    why = None if n_agents is None else GRAPH_KINDS[kind].rule(n_agents)
    if why is not None:
        raise ValueError(f"{name} {kind!r} cannot hold {n_agents} agents: {why}")


def make_components(
    sizes: tuple[int, ...] | list[int], kind: str, seed: SeedLike = None, **kwargs: Any
) -> Network:
    """Components of the given sizes, each a ``kind`` graph (:data:`GRAPH_KINDS`), as one
    disconnected network; size-1 components are lone agents and size-2 ones an edge.
    Random kinds draw each component from its own seed spawned from ``seed``.

    Examples:
        >>> net = make_components((3, 1, 4), "star")
        >>> [c.tolist() for c in net.components]
        [[0, 1, 2], [3], [4, 5, 6, 7]]
    """
    from fedbandit_env.seeding import spawn

    sizes = [check_int("component size", s, 1) for s in sizes]
    if not sizes:
        raise ValueError("sizes must name at least one component")
    if sum(sizes) < 2:
        raise ValueError(f"components must hold at least 2 agents in all, got {sizes}")
    seeds = spawn(seed, len(sizes))
    parts: list[Network | int] = []
    for size, s in zip(sizes, seeds, strict=True):
        if size == 1:
            parts.append(1)
        elif size == 2:
            parts.append(Network.path(2))
        else:
            parts.append(make_network(kind, size, seed=s, **kwargs))
    return Network.disjoint_union(parts)


def make_network(kind: str, n_agents: int, seed: SeedLike = None, **kwargs: Any) -> Network:
    """Build a network by name (see :data:`GRAPH_KINDS`): the command line's entry point.

    ``grid`` picks the most square ``rows x cols = n_agents`` factorisation;
    ``erdos_renyi`` defaults to ``p = 2 log(n) / n``; ``random_regular`` to ``d = 3``.

    Examples:
        >>> make_network("ring", 6).n_edges
        6
        >>> make_network("grid", 6).n_edges
        7
    """
    check_graph(kind, n_agents, name="graph kind")
    return GRAPH_KINDS[kind].build(n_agents, seed=seed, **kwargs)
