"""Delivery rules: who hears whom, uniformity of gossip, link counts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from fedbandit_env import federated_mab_v0
from fedbandit_env.network import Network
from fedbandit_env.protocols import Broadcast, NeighbourGossip, RandomEdgeGossip


def test_broadcast_delivers_exactly_along_edges() -> None:
    net = Network.erdos_renyi(9, 0.4, seed=2)
    b = Broadcast()
    b.reset(net, np.random.default_rng(0))
    msgs = np.arange(18.0).reshape(9, 2)
    d = b.route(msgs, t=1)
    np.testing.assert_array_equal(d.mask, net.adjacency)
    r, s = np.nonzero(net.adjacency)
    np.testing.assert_array_equal(d.inbox[r, s], msgs[s])
    assert np.all(d.inbox[~net.adjacency] == 0) and d.peer_links == net.n_edges


def test_random_edge_gossip_is_uniform_over_edges() -> None:
    """Chi-square goodness of fit over 20,000 draws; p > 0.001 for a uniform sampler."""
    net = Network.erdos_renyi(8, 0.5, seed=0)
    g = RandomEdgeGossip()
    g.reset(net, np.random.default_rng(7))
    index = {tuple(e): k for k, e in enumerate(net.edges.tolist())}
    counts = np.zeros(net.n_edges)
    for t in range(20_000):
        d = g.route(np.zeros((8, 1)), t)
        r, s = np.nonzero(np.triu(d.mask))
        assert r.size == 1 and net.adjacency[r[0], s[0]] and d.mask[s[0], r[0]]
        counts[index[(int(r[0]), int(s[0]))]] += 1
    assert stats.chisquare(counts).pvalue > 1e-3


def test_uniformity_check_has_power_against_a_biased_sampler() -> None:
    """The same test, same sample size, catches a sampler giving one edge 1.5x weight."""
    weights = np.ones(14)
    weights[3] = 1.5
    counts = np.random.default_rng(0).multinomial(20_000, weights / weights.sum())
    assert stats.chisquare(counts).pvalue < 1e-3


def test_neighbour_gossip_calls_a_neighbour_and_is_symmetric() -> None:
    net = Network.star(6)
    g = NeighbourGossip()
    g.reset(net, np.random.default_rng(1))
    hub_calls = np.zeros(6)
    for t in range(6000):
        d = g.route(np.zeros((6, 1)), t)
        assert np.all(d.mask == d.mask.T) and np.all(d.mask <= net.adjacency)
        assert np.all(d.mask[1:, 0])  # every leaf's only neighbour is the hub
        assert d.peer_links == int(np.triu(d.mask).sum())
        hub_calls[np.flatnonzero(d.mask[0])] += 1
    # The hub's callee is uniform over its 5 leaves, but the leaves always call it back,
    # so every leaf appears every step.
    assert np.all(hub_calls[1:] == 6000)


@pytest.mark.parametrize("protocol", [RandomEdgeGossip, NeighbourGossip])
def test_gossip_in_the_env_is_seeded_and_reports_links(protocol: type) -> None:
    def partners(seed: int) -> list[list[int]]:
        env = federated_mab_v0.parallel_env(
            horizon=30, message_dim=1, network="ring", n_agents=6, protocol=protocol()
        )
        env.reset(seed=seed)
        out = []
        while env.agents:
            act = {a: {"arm": 0, "message": [1.0]} for a in env.agents}
            obs, _, _, _, infos = env.step(act)
            out.append([int(obs[a]["mask"].sum()) for a in env.possible_agents])
            assert infos["agent_0"]["peer_links"] >= 1
        return out

    assert partners(3) == partners(3)
    assert partners(3) != partners(4)


def test_public_prefix_reaches_all_neighbours_and_the_rest_only_the_partner() -> None:
    net = Network.ring(5)
    g = RandomEdgeGossip(public_dim=2)
    g.reset(net, np.random.default_rng(3))
    msgs = np.arange(5.0)[:, None] * np.array([1.0, 1.0, 100.0])  # (5, 3): 2 public + 1 private
    d = g.route(msgs, t=1)
    assert d.public_mask is not None
    np.testing.assert_array_equal(d.public_mask, net.adjacency)
    r, s = np.nonzero(net.adjacency)
    np.testing.assert_array_equal(d.inbox[r, s, :2], msgs[s, :2])
    private = d.inbox[:, :, 2]
    np.testing.assert_array_equal(private != 0, d.mask & (msgs[None, :, 2] != 0))
    assert int(np.triu(d.mask).sum()) == 1 and d.peer_links == 1 + net.n_edges
    assert np.all(d.inbox[~net.adjacency] == 0)


def test_env_exposes_public_mask_and_refuses_a_too_long_public_prefix() -> None:
    env = federated_mab_v0.parallel_env(
        horizon=5,
        message_dim=3,
        network="ring",
        n_agents=5,
        protocol=RandomEdgeGossip(public_dim=2),
    )
    env.reset(seed=0)
    obs, *_ = env.step({a: {"arm": 0, "message": [1.0, 2.0, 3.0]} for a in env.agents})
    for a in env.possible_agents:
        assert obs[a]["public_mask"].sum() == 2  # ring: two neighbours
        private = obs[a]["messages"][:, 2]
        np.testing.assert_array_equal(private != 0, obs[a]["mask"] == 1)
    with pytest.raises(ValueError, match="public_dim=4 exceeds message_dim=3"):
        federated_mab_v0.parallel_env(message_dim=3, protocol=RandomEdgeGossip(public_dim=4))


@pytest.mark.parametrize(
    ("protocol", "per_step"),
    [("broadcast", lambda e: e), ("random_edge_gossip", lambda e: 1 + e)],
)
def test_communication_cost_follows_the_link_counts(protocol: str, per_step: Any) -> None:
    """Cost = c2 per agent-agent link: |E| a step for broadcast; one gossip edge plus the
    public counts on every edge for Zhu et al.'s gossip."""
    from baselines import make_team
    from fedbandit_env.runner import rollout
    from fedbandit_env.scenario.scenario import Scenario

    scenario = Scenario(
        n_agents=5, n_arms=3, horizon=40, graph="ring", protocol=protocol, link_costs=(25.0, 2.0)
    )
    team = make_team("gossip_ucb")
    env = scenario.make_env(team.requirements(5, 3))
    t, _, cost = rollout(env, team, seed=0, record_every=10)
    edges = scenario.network().n_edges
    np.testing.assert_allclose(cost, 2.0 * per_step(edges) * t)
    silent = scenario.make_env()
    _, _, none = rollout(silent, make_team("local_ucb"), seed=0, record_every=10)
    assert np.all(none == 0.0)


def test_a_delivery_by_sender_is_its_inbox_to_the_core() -> None:
    """Issue 62: a protocol that hands over one row per sender (``Delivery.rows``) is
    read by the batched core exactly as the per-receiver inbox it stands for (whole rows
    where heard, the public prefix where only that arrived, zeros elsewhere - NaN and inf
    in unheard rows included), and the inbox is built only when read."""
    from fedbandit_env.core.routing import sender_rows
    from fedbandit_env.protocols import Delivery

    rng = np.random.default_rng(4)
    n, d = 7, 4
    for public_dim in (0, 2):
        for _ in range(50):
            rows = rng.normal(size=(n, d))
            rows[rng.random((n, d)) < 0.1] = np.nan
            rows[rng.random((n, d)) < 0.05] = np.inf
            mask = rng.random((n, n)) < 0.3
            public = (rng.random((n, n)) < 0.3) if public_dim else None
            by_sender = Delivery(None, mask, public_mask=public, rows=rows, public_dim=public_dim)
            assert by_sender.messages is None  # nothing built yet
            by_receiver = Delivery(by_sender.inbox, mask, public_mask=public)
            ours = sender_rows(by_sender, public_dim, "by sender")
            theirs = sender_rows(by_receiver, public_dim, "by receiver")
            np.testing.assert_array_equal(ours[0], theirs[0])
            np.testing.assert_array_equal(ours[1], theirs[1])
    with pytest.raises(ValueError, match="messages .* or rows"):
        Delivery(None, np.zeros((2, 2), bool))


@pytest.mark.parametrize("kind", ["broadcast", "random_edge_gossip", "neighbour_gossip",
                                  "server", "gis_flooding", "hybrid", "sync"])  # fmt: skip
def test_a_per_sender_protocol_never_builds_the_inbox(kind: str) -> None:
    """Issue 62: a protocol whose receivers of one sender get the same content hands over
    one row per sender; the ``N x N x D`` inbox is built only when someone reads it (the
    batched core never does). A relay whose copies differ by receiver keeps the inbox."""
    from fedbandit_env.protocols import PROTOCOLS, make_protocol

    assert kind in PROTOCOLS
    protocol = make_protocol(kind, public_dim=1)
    assert protocol.per_sender
    net = Network.ring(6)
    protocol.reset(net, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    delivered = 0
    for t in range(1, 20):
        msgs = rng.random((6, 3))
        msgs[:, 0] = 1.0 if t % 6 == 1 else 0.0  # the round protocols' send flag
        d = protocol.route(msgs, t)
        assert d.messages is None and d.rows is not None
        delivered += int(np.asarray(d.mask).sum())
        inbox = d.inbox  # built on demand, then kept
        assert inbox.shape == (6, 6, 3) and d.messages is inbox
    assert delivered > 0 or kind in ("server", "hybrid", "sync")  # those reach via the server
    relay = make_protocol("gamma_hops", gamma=2)
    relay.reset(net, np.random.default_rng(0))
    assert not relay.per_sender and relay.route(rng.random((6, 3)), 1).messages is not None
