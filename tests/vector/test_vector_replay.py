"""The vector env is the PettingZoo env B times: the shipped replay check, every MAB setting
(``+private`` ones included: the vector ``PrivateRewards`` releases the same bits).

Env ``b`` of ``make_vec(scenario, B).reset(seed=s)`` must replay
``scenario.make_env().reset(seed=s + b)``; ``fedbandit_env.testing.check_vector_replay``
compares instance, rewards, delivered messages, regret and costs step by step over two
episodes (the second through the vector env's autoreset). Its power: a vector env seeded
``s + b + 1``, or one that delivers a message to a receiver the protocol did not pick,
is caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env.core import mab as core_module
from fedbandit_env.core import routing
from fedbandit_env.policies import Requirements
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.settings import SETTINGS
from fedbandit_env.testing import check_vector_replay

MAB_SETTINGS = sorted(name for name in SETTINGS if name != "sync")
GRAPHS = ("complete", "ring", "star")


def _scenario(setting: str, **kwargs: object) -> Scenario:
    epsilon = 1.0 if SETTINGS[setting].private else None
    return Scenario(setting=setting, epsilon=epsilon, **kwargs)  # type: ignore[arg-type]


def _needs(setting: str) -> Requirements | None:
    if SETTINGS[setting].protocol is None:
        return None
    if setting.startswith("gossip"):  # Zhu's public prefix: counts to every neighbour
        return Requirements(message_dim=5, public_dim=2)
    return Requirements(message_dim=5)


@pytest.mark.parametrize("setting", MAB_SETTINGS)
@pytest.mark.parametrize("graph", GRAPHS)
def test_every_setting_replays(setting: str, graph: str) -> None:
    for instances, noise in (("fixed", "bernoulli"), ("held_out", "clipped_gaussian")):
        scenario = _scenario(
            setting, n_agents=6, n_arms=4, horizon=25, graph=graph, instances=instances,
            noise=noise,
        )  # fmt: skip
        check_vector_replay(scenario, _needs(setting), num_envs=3, seed=11)


def test_gossip_without_public_prefix_and_server_participation_replay() -> None:
    gossip = Scenario(n_agents=5, n_arms=3, horizon=30, setting="gossip", graph="ring")
    check_vector_replay(gossip, Requirements(message_dim=3), num_envs=4, seed=2)
    server = Scenario(n_agents=5, n_arms=3, horizon=30, setting="server")
    check_vector_replay(server, Requirements(message_dim=4, participation=0.5), num_envs=4)


def test_neighbour_calls_replay_across_the_draw_blocks() -> None:
    """NeighbourGossip's array router (each agent's uniform drawn a block ahead) replays
    the protocol's own draws, over more steps than a block (256)."""
    for graph in ("ring", "star", "erdos_renyi"):
        scenario = Scenario(n_agents=6, n_arms=3, horizon=300, protocol="neighbour_gossip",
                            graph=graph)  # fmt: skip
        check_vector_replay(scenario, Requirements(message_dim=2), num_envs=3, episodes=1)


def test_long_episode_crosses_the_draw_blocks() -> None:
    """More steps than one block of drawn-ahead noise and edges (256)."""
    scenario = Scenario(n_agents=4, n_arms=3, horizon=600, setting="gossip", graph="ring")
    check_vector_replay(scenario, Requirements(message_dim=2), num_envs=2, episodes=1)


def test_power_a_shifted_seed_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = core_module.MABCore.reset

    def shifted(self, seeds, options=None):  # type: ignore[no-untyped-def]
        if self.n_envs > 1:  # the vector env only; the PettingZoo view (B = 1) untouched
            seeds = [None if s is None else s + 1 for s in seeds]
        return original(self, seeds, options)

    monkeypatch.setattr(core_module.MABCore, "reset", shifted)
    scenario = Scenario(n_agents=4, n_arms=3, horizon=5, setting="local")
    with pytest.raises(AssertionError, match="rewards|reward"):
        check_vector_replay(scenario, num_envs=2)


def test_power_a_leaked_message_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = routing.Router._random_edge

    def leaky(self, sent, ahead):  # type: ignore[no-untyped-def]
        routed = original(self, sent, ahead)
        if self.n_envs > 1:
            routed.mask[:, 0, 1] = routed.mask[:, 1, 0] = 1  # agents 0, 1 always talk
        return routed

    monkeypatch.setattr(routing.Router, "_random_edge", leaky)
    scenario = Scenario(n_agents=5, n_arms=3, horizon=20, setting="gossip")
    with pytest.raises(AssertionError, match="'mask'|'messages'"):
        check_vector_replay(scenario, Requirements(message_dim=2), num_envs=2)


@pytest.mark.parametrize("kind", ["broadcast", "random_edge_gossip", "neighbour_gossip", "server"])
def test_fast_routers_deliver_what_the_protocol_delivers(kind: str) -> None:
    """The array routers against ``Protocol.route`` (the generic router) on the same
    generators and messages, public prefix included; the server's rounds with partial
    participation (each env's uploaders drawn from its own generator) and flags that
    come and go."""
    from fedbandit_env.network import Network
    from fedbandit_env.protocols import make_protocol

    net = Network.ring(6)
    d, b = 3, 4
    for public in (0, 1) if kind != "neighbour_gossip" else (0,):  # a prefix: generic
        options = {"participation": 0.5} if kind == "server" else {}
        fast = routing.Router([make_protocol(kind, public, **options) for _ in range(b)], net, d)
        slow = routing.Router([make_protocol(kind, public, **options) for _ in range(b)], net, d)
        slow.kind = "generic"
        assert fast.kind != "generic"
        fast.reset([np.random.default_rng(k) for k in range(b)])
        slow.reset([np.random.default_rng(k) for k in range(b)])
        rng = np.random.default_rng(0)
        uploads = 0
        for t in range(1, 40):
            sent = rng.random((b, 6, d))
            ours, theirs = fast.route(sent, t, 40 - t), slow.route(sent, t, 40 - t)
            got = routing.inbox(ours.messages, ours.mask, ours.public_mask, public)
            want = routing.inbox(theirs.messages, theirs.mask, theirs.public_mask, public)
            assert np.array_equal(got, want)
            assert np.array_equal(ours.mask, theirs.mask)
            assert np.array_equal(ours.peer_links, theirs.peer_links)
            assert np.array_equal(ours.server_links, theirs.server_links)
            for field in ("server", "server_mask"):
                assert np.array_equal(getattr(ours, field), getattr(theirs, field))
            uploads += int(np.sum(ours.server_links))
        assert (uploads > 0) == (kind == "server")


@pytest.mark.parametrize("setting", ["neighbours", "gossip", "flooding", "gossip+private"])
@pytest.mark.parametrize(
    "fault", [{"loss": 0.3}, {"delay": 2}, {"delay": 1, "loss": 0.2}], ids=["loss", "delay", "both"]
)
def test_loss_and_delay_replay(setting: str, fault: dict[str, float]) -> None:
    """The loss fault: the same messages lost (each env's loss stream at the layer's
    depth, the PettingZoo wrapper's draw order), the same per-receiver counts; the delay
    fault: the same messages shown the same steps late, the same in-flight counts."""
    scenario = _scenario(setting, n_agents=5, n_arms=3, horizon=30, graph="ring", **fault)
    check_vector_replay(scenario, _needs(setting), num_envs=3, seed=2)


def _streams_one_layer_deeper(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every vector layer draws from the stream of the depth above its own."""
    from fedbandit_env.vector.wrappers import base

    original = base.VecWrapper.streams

    def deeper(self, seed, num_envs):  # type: ignore[no-untyped-def]
        self.depth += 1
        try:
            return original(self, seed, num_envs)
        finally:
            self.depth -= 1

    monkeypatch.setattr(base.VecWrapper, "streams", deeper)


def test_power_a_loss_stream_at_another_depth_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    _streams_one_layer_deeper(monkeypatch)
    scenario = _scenario("neighbours", n_agents=5, n_arms=3, horizon=20, loss=0.3)
    with pytest.raises(AssertionError, match="mask|messages"):
        check_vector_replay(scenario, _needs("neighbours"), num_envs=2)


@pytest.mark.parametrize("attack", ["boost", "random", "sign_flip", "constant"])
@pytest.mark.parametrize("setting", ["neighbours", "gossip", "server+private"])
def test_byzantine_replay(setting: str, attack: str) -> None:
    """The same lies (``random`` from each env's stream at the layer's depth, ``boost``
    at each instance's worst arm), routed alike; liars scored out of the regret as the
    PettingZoo wrapper scores them (``own_regret`` keeps theirs)."""
    scenario = _scenario(
        setting, n_agents=5, n_arms=3, horizon=20, graph="ring", byzantine=2, attack=attack,
        instances="held_out", loss=0.2,
    )  # fmt: skip
    check_vector_replay(scenario, _needs(setting), num_envs=3, seed=4)


@pytest.mark.parametrize("recover", [0.0, 0.4])
@pytest.mark.parametrize("setting", ["neighbours", "gossip+private"])
def test_agent_crash_replay(setting: str, recover: float) -> None:
    """The same chains (each env's stream, the wrapper's draw order), the same agents cut
    off, in crash-stop and crash-recover, under a delay too."""
    scenario = _scenario(
        setting, n_agents=6, n_arms=3, horizon=25, graph="ring", crash=0.15, recover=recover,
        delay=1,
    )  # fmt: skip
    check_vector_replay(scenario, _needs(setting), num_envs=3, seed=5)


def test_clipped_rewards_replay() -> None:
    """A policy that privatises its own rewards sees them through ``ClipRewards``: the
    vector form clips the same values (Gaussian rewards, so clipping bites)."""
    scenario = Scenario(
        n_agents=4,
        n_arms=3,
        horizon=20,
        setting="neighbours",
        noise="gaussian",
        sigma=1.0,
        clip=(0.0, 1.0),
    )
    needs = Requirements(message_dim=3, bounded_rewards=True)
    assert scenario.plan(needs).names == ("ClipRewards",)
    check_vector_replay(scenario, needs, num_envs=3, seed=6)


@pytest.mark.parametrize(
    "fault", [{"byzantine": 2, "attack": "random"}, {"crash": 0.3}], ids=["byzantine", "crash"]
)
def test_power_a_fault_stream_at_another_depth_is_caught(
    monkeypatch: pytest.MonkeyPatch, fault: dict[str, object]
) -> None:
    _streams_one_layer_deeper(monkeypatch)
    scenario = _scenario("neighbours", n_agents=5, n_arms=3, horizon=20, **fault)
    with pytest.raises(AssertionError, match="mask|messages|crashed"):
        check_vector_replay(scenario, _needs("neighbours"), num_envs=2)


def test_power_a_liar_scored_in_the_regret_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    from fedbandit_env.vector.wrappers import byzantine

    original = byzantine.VecByzantine._scored

    def counts_liars(self, infos, reset):  # type: ignore[no-untyped-def]
        out = original(self, infos, reset)
        out["regret"] = out["own_regret"]  # the liars' own regret left in the team's
        return out

    monkeypatch.setattr(byzantine.VecByzantine, "_scored", counts_liars)
    scenario = _scenario("neighbours", n_agents=5, n_arms=3, horizon=10, byzantine=1)
    with pytest.raises(AssertionError, match="regret"):
        check_vector_replay(scenario, _needs("neighbours"), num_envs=2)
