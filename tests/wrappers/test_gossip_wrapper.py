"""Gossip as a wrapper over broadcast: one mechanism with the gossip protocols."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.network import Network
from fedbandit_env.protocols import NeighbourGossip, RandomEdgeGossip
from fedbandit_env.protocols.schedules import Periodic, RandomMatching, make_schedule
from fedbandit_env.registry import make as make_team
from fedbandit_env.seeding import env_generators
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import Gossip, LocalStatistics, MessageLoss, PrivateRewards
from fedbandit_env.wrappers.audit import play


def _env(**kw: Any) -> Any:
    kw = {"message_dim": 2, "horizon": 40, **kw}
    return federated_mab_v0.parallel_env(n_agents=6, n_arms=3, network="ring", seed=1, **kw)


STACKS = {
    "random_edge": lambda: Gossip(_env(), "random_edge"),
    "public_prefix": lambda: Gossip(_env(), "random_edge", public_dim=1),
    "neighbour_calls": lambda: Gossip(_env(), "neighbour_calls"),
    "matching": lambda: Gossip(_env(), "random_matching"),
    "periodic": lambda: Gossip(_env(), "periodic:3"),
    "private_over_gossip": lambda: PrivateRewards(Gossip(_env(), public_dim=1), 1.0),
    "gossip_over_private": lambda: Gossip(PrivateRewards(_env(), 1.0), public_dim=1),
    "statistics_over_gossip": lambda: LocalStatistics(Gossip(_env())),
    "loss_over_gossip": lambda: MessageLoss(Gossip(_env(), public_dim=1), 0.3),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stacks_pass_api_and_full_episode_determinism(name: str) -> None:
    check_parallel_env(STACKS[name], num_cycles=40)
    check_determinism(STACKS[name], seed=2)


def _with_protocol_stream(env: Gossip) -> Gossip:
    """The wrapper drawing from the env's *protocol* generator, as a protocol would."""
    env.stream = lambda seed: env_generators(seed)[1]  # type: ignore[method-assign]
    return env


@pytest.mark.parametrize(
    ("protocol", "schedule"),
    [(RandomEdgeGossip, "random_edge"), (NeighbourGossip, "neighbour_calls")],
)
def test_the_wrapper_replays_the_protocol_bit_for_bit(protocol: Any, schedule: str) -> None:
    """Gossip_UCB over the gossip protocol and over Gossip(broadcast) with the same
    generator: every observation, reward and info equal (one source of truth)."""
    kw = {"message_dim": 6, "horizon": 300}
    team = make_team("gossip_ucb")
    a = play(_env(protocol=protocol(public_dim=3), **kw), team, 5)
    b = play(_with_protocol_stream(Gossip(_env(**kw), schedule, public_dim=3)), team, 5)
    assert len(a.observations) == len(b.observations) == 301
    for oa, ob in zip(a.observations, b.observations, strict=True):
        for agent in oa:
            assert sorted(oa[agent]) == sorted(ob[agent])
            for key in oa[agent]:
                np.testing.assert_array_equal(oa[agent][key], ob[agent][key], err_msg=key)
    for ia, ib in zip(a.infos[1:], b.infos[1:], strict=True):
        for agent in ia:
            for key in ("cumulative_regret", "peer_links", "cumulative_comm_cost"):
                assert ia[agent][key] == ib[agent][key], key


def test_a_different_stream_gives_different_partners() -> None:
    """The replay above is not vacuous: the wrapper's own stream picks other edges."""
    team = make_team("gossip_ucb")
    kw = {"message_dim": 6, "horizon": 60}
    a = play(_env(protocol=RandomEdgeGossip(public_dim=3), **kw), team, 5)
    b = play(Gossip(_env(**kw), public_dim=3), team, 5)
    diff = [
        not np.array_equal(oa["agent_0"]["mask"], ob["agent_0"]["mask"])
        for oa, ob in zip(a.observations, b.observations, strict=True)
    ]
    assert any(diff)


def test_random_edge_counts_one_call_and_the_public_prefix_every_edge() -> None:
    env = Gossip(_env(), public_dim=1)
    env.reset(seed=0)
    talk = {a: {"arm": 0, "message": [1.0, 2.0]} for a in env.agents}
    obs, _, _, _, infos = env.step(talk)
    assert infos["agent_0"]["peer_links"] == 1 + 6  # the call and the ring's 6 edges
    assert infos["agent_0"]["comm_cost"] == 7.0
    for o in obs.values():
        assert o["public_mask"].sum() == 2  # both ring neighbours
        heard = np.flatnonzero(o["mask"])
        silent = np.flatnonzero(o["public_mask"] & ~o["mask"].astype(bool))
        assert (o["messages"][heard] == [1.0, 2.0]).all()
        assert (o["messages"][silent] == [1.0, 0.0]).all()
    env.step(talk)
    assert env.step(talk)[4]["agent_3"]["cumulative_comm_cost"] == 21.0


def test_every_schedule_stays_on_the_graph_and_is_symmetric() -> None:
    net, rng = Network.ring(7), np.random.default_rng(3)
    for name in ("random_edge", "neighbour_calls", "random_matching", "periodic:2"):
        schedule = make_schedule(name)
        for t in range(1, 30):
            mask, calls = schedule.draw(net, rng, t)
            assert not (mask & ~net.adjacency.astype(bool)).any(), name
            assert (mask == mask.T).all() and not mask.diagonal().any(), name
            assert calls == int(np.triu(mask).sum()), name


def test_a_matching_is_maximal_and_pairs_everyone_at_most_once() -> None:
    net, rng = Network.erdos_renyi(12, 0.4, seed=0), np.random.default_rng(0)
    for t in range(1, 50):
        mask, _ = RandomMatching().draw(net, rng, t)
        assert (mask.sum(axis=1) <= 1).all()
        free = mask.sum(axis=1) == 0
        assert not (net.adjacency.astype(bool) & np.outer(free, free)).any()  # maximal


def test_random_edge_is_uniform_over_edges() -> None:
    """4000 draws over the 6 edges of a ring: each count within 4 sd of 4000/6."""
    net, rng = Network.ring(6), np.random.default_rng(0)
    counts = np.zeros(6)
    edges = {tuple(sorted(e)): k for k, e in enumerate(net.edges.tolist())}
    schedule = make_schedule("random_edge")
    for t in range(4000):
        mask, _ = schedule.draw(net, rng, t)
        ((i, j),) = np.argwhere(np.triu(mask)).tolist()
        counts[edges[(i, j)]] += 1
    sd = np.sqrt(4000 * (1 / 6) * (5 / 6))
    assert np.abs(counts - 4000 / 6).max() < 4 * sd, counts


def test_periodic_talks_exactly_every_period_steps() -> None:
    env = Gossip(_env(), Periodic(4))
    env.reset(seed=0)
    talk = {a: {"arm": 0, "message": [1.0, 1.0]} for a in env.agents}
    heard = [int(env.step(talk)[0]["agent_0"]["mask"].sum()) for _ in range(12)]
    assert heard == [0, 0, 0, 2] * 3


def test_a_user_schedule_is_used_and_checked() -> None:
    def first_pair(net: Network, rng: np.random.Generator, t: int) -> np.ndarray:
        mask = np.zeros((net.n_agents,) * 2, dtype=bool)
        mask[0, 1] = True
        return mask

    env = Gossip(_env(), first_pair)
    env.reset(seed=0)
    obs = env.step({a: {"arm": 0, "message": [1.0, 1.0]} for a in env.agents})[0]
    assert obs["agent_0"]["mask"].tolist() == [0, 1, 0, 0, 0, 0]
    assert obs["agent_1"]["mask"].tolist() == [1, 0, 0, 0, 0, 0]
    off_graph = Gossip(_env(), lambda net, rng, t: np.eye(6, k=3, dtype=bool))
    off_graph.reset(seed=0)
    with pytest.raises(ValueError, match="not neighbours"):
        off_graph.step({a: {"arm": 0, "message": [1.0, 1.0]} for a in off_graph.agents})


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: Gossip(_env(), "smoke"), ValueError, "schedule must be one of"),
        (lambda: Gossip(_env(), 3), TypeError, "schedule must be a name"),
        (lambda: Gossip(_env(), public_dim=3), ValueError, "public_dim must be <= message_dim"),
        (lambda: Gossip(_env(), public_dim=-1), ValueError, "public_dim"),
        (lambda: Gossip(_env(protocol=RandomEdgeGossip()), "random_edge"), ValueError, "broadcast"),
        (lambda: Gossip(_env(message_dim=0)), TypeError, "carries messages"),
        (lambda: Periodic(0), ValueError, "period"),
    ],
)
def test_bad_arguments_are_refused(make: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        make()
