"""The LOCAL protocol: a message travels gamma hops, one hop a step (Dubey & Pentland,
Sec. 4.2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.network import Network
from fedbandit_env.protocols import Broadcast, GammaHops
from fedbandit_env.testing import check_determinism, check_parallel_env


@pytest.mark.parametrize("gamma", [1, 2, 3, 5])
def test_a_message_reaches_hop_h_after_h_minus_1_steps_and_no_further_than_gamma(
    gamma: int,
) -> None:
    net = Network.path(6)
    proto = GammaHops(gamma)
    proto.reset(net, np.random.default_rng(0))
    first = np.arange(1.0, 7.0).reshape(6, 1)  # agent v sends v + 1 at step 1, then 0s
    seen = np.zeros((8, 6, 6))  # [step, receiver, origin]: what arrived from the origin
    for t in range(8):
        d = proto.route(first if t == 0 else np.zeros((6, 1)), t + 1)
        seen[t] = np.where(d.mask & (d.inbox[:, :, 0] > 0), d.inbox[:, :, 0], 0.0)
    dist = net.hop_distances
    for u in range(6):
        for v in range(6):
            steps = np.flatnonzero(seen[:, u, v])
            if 1 <= dist[u, v] <= gamma:
                assert steps.tolist() == [dist[u, v] - 1] and seen[steps[0], u, v] == v + 1
            else:
                assert steps.size == 0


def test_gamma_one_is_broadcast() -> None:
    net, rng = Network.ring(5), np.random.default_rng(1)
    local, plain = GammaHops(1), Broadcast()
    local.reset(net, rng)
    plain.reset(net, rng)
    for t in range(1, 6):
        msgs = rng.random((5, 3))
        a, b = local.route(msgs, t), plain.route(msgs, t)
        np.testing.assert_array_equal(a.mask, b.mask)
        np.testing.assert_array_equal(a.inbox, b.inbox)
        assert a.peer_links == b.peer_links == net.n_edges


def test_message_volume_grows_with_gamma() -> None:
    volumes = []
    for gamma in (1, 2, 3):
        proto = GammaHops(gamma)
        proto.reset(Network.path(4), np.random.default_rng(0))
        volumes.append(proto.message_hops)
    # path 0-1-2-3, degrees 1 2 2 1: sum over origins of the degrees of the agents that
    # forward (closer than gamma): gamma 1: 6; gamma 2: 3 + 5 + 5 + 3; gamma 3: 5 + 6 + 6 + 5
    assert volumes == [6, 16, 22]


def test_local_env_passes_api_and_determinism() -> None:
    def make() -> object:
        return federated_mab_v0.parallel_env(
            horizon=20, message_dim=2, network="ring", protocol=GammaHops(2)
        )

    check_parallel_env(make, num_cycles=30)  # type: ignore[arg-type]
    check_determinism(make, seed=2)  # type: ignore[arg-type]


@pytest.mark.parametrize("gamma", [0, -1, 1.5, True])
def test_gamma_must_be_a_positive_int(gamma: object) -> None:
    with pytest.raises(ValueError, match="gamma must be an int >= 1"):
        GammaHops(gamma)  # type: ignore[arg-type]


def test_one_hop_gamma_hops_is_accepted_by_the_one_hop_wrappers_and_two_hops_refused() -> None:
    """The "local" -> "gamma_hops" rename once made these wrappers refuse ``gamma = 1``."""
    from fedbandit_env.wrappers import AgentCrash, Gossip, LinkFailures

    def make(gamma: int) -> object:
        return federated_mab_v0.parallel_env(
            horizon=5, message_dim=2, network="ring", protocol=GammaHops(gamma)
        )

    wrappers: list[Callable[[Any], Any]] = [
        lambda env: AgentCrash(env, crash=0.1),
        lambda env: LinkFailures(env, fail=0.1, repair=0.5),
        Gossip,
    ]
    for wrapper in wrappers:
        env = wrapper(make(1))
        env.reset(seed=0)
        env.step({agent: env.action_space(agent).sample() for agent in env.agents})
        with pytest.raises(ValueError, match="got the 'gamma_hops' protocol"):
            wrapper(make(2))
