"""Communication graphs: builders, gossip matrix, lambda_2, validation."""

from __future__ import annotations

import re

import networkx as nx
import numpy as np
import pytest

from fedbandit_env.network import GRAPH_KINDS, Network, make_network


def test_lambda_2_of_the_papers_graphs() -> None:
    assert Network.complete(3).lambda_2 == pytest.approx(0.5, abs=1e-12)
    # Path on 10 nodes: 1 - 2 (1 - cos(pi/10)) / (2 * 9), about 0.995.
    expected = 1 - 2 * (1 - np.cos(np.pi / 10)) / 18
    assert Network.path(10).lambda_2 == pytest.approx(expected, abs=1e-12)
    assert Network.path(10).lambda_2 == pytest.approx(0.995, abs=5e-4)


def test_gossip_matrix_is_mean_of_edge_averaging_matrices() -> None:
    net = Network.erdos_renyi(8, 0.5, seed=1)
    mats = []
    for i, j in net.edges:
        e = np.zeros(8)
        e[i], e[j] = 1.0, -1.0
        mats.append(np.eye(8) - np.outer(e, e) / 2)
    np.testing.assert_allclose(net.gossip_matrix, np.mean(mats, axis=0), atol=1e-12)
    np.testing.assert_allclose(net.gossip_matrix.sum(axis=1), 1.0)


def test_neighbour_tables_and_distances() -> None:
    net = Network.star(5)
    assert net.neighbors.shape == (5, 4)
    assert net.neighbors[1].tolist() == [0, -1, -1, -1]
    assert net.degrees.tolist() == [4, 1, 1, 1, 1]
    assert net.eccentricities.tolist() == [1, 2, 2, 2, 2]
    assert net.diameter == 2
    assert net.hop_distances[1, 2] == 2
    assert not net.adjacency.flags.writeable


@pytest.mark.parametrize("kind", sorted(GRAPH_KINDS))
def test_every_builder_gives_a_connected_graph_of_the_right_size(kind: str) -> None:
    net = make_network(kind, 12, seed=3)
    assert net.n_agents == 12 and net.is_connected
    assert np.all(net.adjacency == net.adjacency.T)
    assert not np.any(np.diag(net.adjacency))


def test_random_graphs_are_seeded() -> None:
    a = Network.erdos_renyi(15, 0.3, seed=4).edges
    assert np.array_equal(a, Network.erdos_renyi(15, 0.3, seed=4).edges)
    assert Network.random_regular(10, 4, seed=0).degrees.tolist() == [4] * 10


def test_relabels_arbitrary_nodes() -> None:
    g = nx.Graph([("b", "c"), ("a", "b")])
    assert Network.from_networkx(g).edges.tolist() == [[0, 1], [1, 2]]


def test_disconnected_graph_is_refused() -> None:
    g = nx.union(nx.path_graph(3), nx.path_graph([3, 4]))
    with pytest.raises(ValueError, match="must be connected, got 2 components over 5 nodes"):
        Network(g)
    assert not Network(g, require_connected=False).is_connected


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: Network.complete(1), ValueError, "n must be >= 2, got 1"),
        (lambda: Network.ring(2), ValueError, "n must be >= 3, got 2"),
        (lambda: Network(nx.empty_graph(1)), ValueError, "at least 2 nodes"),
        (lambda: Network([(0, 1)]), TypeError, "networkx.Graph"),  # type: ignore[arg-type]
        (lambda: Network.erdos_renyi(5, 0.0), ValueError, r"p must lie in \(0, 1\]"),
        (lambda: Network.random_regular(5, 3), ValueError, "n \\* d even"),
        (lambda: make_network("torus", 5), ValueError, "graph kind must be one of"),
        (lambda: Network.star(2.0), TypeError, "n must be an int"),  # type: ignore[arg-type]
    ],
)
def test_builders_reject_bad_input(build, error: type, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        build()


def test_an_agent_spec_carries_its_network_facts_through_wrappers() -> None:
    """What a policy may know of the graph (DDUCB needs its row of the communication
    matrix and lambda_2): read from the env, through any wrapper stack."""
    from fedbandit_env import federated_mab_v0
    from fedbandit_env.policies import AgentSpec
    from fedbandit_env.wrappers import LocalStatistics, PrivateRewards

    net = Network.ring(6)
    env = federated_mab_v0.parallel_env(n_agents=6, network=net, horizon=5)
    spec = AgentSpec.from_env(LocalStatistics(PrivateRewards(env, 1.0)), "agent_0")
    assert spec.neighbors == (1, 5) and spec.degree == 2 and spec.max_degree == 2
    assert np.allclose(spec.comm_row, net.gossip_matrix[0]) and sum(spec.comm_row) == 1.0
    assert spec.lambda_2 == net.lambda_2
    bare = AgentSpec(0, 2, 3, 10)  # built by hand: no graph facts
    assert bare.neighbors == () and np.isnan(bare.lambda_2)


@pytest.mark.parametrize(
    ("kind", "n", "why"),
    [
        ("ring", 2, "a ring needs at least 3 agents"),
        ("grid", 7, "it would be a path"),
        ("grid", 3, "it would be a path"),
        ("random_regular", 5, "even n * d"),
        ("random_regular", 3, "more than 3 agents"),
    ],
)
def test_a_kind_refuses_an_agent_count_it_cannot_hold_everywhere(
    kind: str, n: int, why: str
) -> None:
    """The kind's rule sits beside its builder; the scenario (before anything runs),
    the env's ``make_network`` and the components' kinds all read it."""
    from fedbandit_env.scenario.scenario import Scenario

    with pytest.raises(ValueError, match=re.escape(why)):
        make_network(kind, n)
    with pytest.raises(ValueError, match=f"graph {kind!r} cannot hold {n} agents"):
        Scenario(graph=kind, n_agents=n, horizon=5)
    if n > 2:
        with pytest.raises(ValueError, match=f"cannot hold {n} agents"):
            Scenario(graph=kind, n_agents=n + 1, components=(n, 1), horizon=5)


@pytest.mark.parametrize("kind", sorted(GRAPH_KINDS))
def test_every_rule_admits_what_its_builder_builds(kind: str) -> None:
    for n in range(2, 30):
        if GRAPH_KINDS[kind].rule(n) is None:
            assert make_network(kind, n, seed=0).n_agents == n
        else:
            with pytest.raises(ValueError):
                make_network(kind, n, seed=0)
