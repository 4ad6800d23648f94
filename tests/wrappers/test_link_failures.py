"""LinkFailures: every edge goes down and up as a two-state Markov chain."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import FixedArm, IndependentTeam
from fedbandit_env.protocols import Flooding, GammaHops, RandomEdgeGossip
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import LinkFailures, MessageDelay, MessageLoss, PrivateRewards
from fedbandit_env.wrappers.audit import play


def _talking_env(**kw: Any) -> Any:
    return federated_mab_v0.parallel_env(horizon=30, message_dim=2, network="ring", **kw)


class _Chatty(FixedArm):
    def act(self, observation: Any) -> Any:
        return {"arm": 0, "message": np.ones(2, np.float32)}


STACKS = {
    "links": lambda: LinkFailures(_talking_env(), 0.2, 0.5),
    "links_then_loss": lambda: MessageLoss(LinkFailures(_talking_env(), 0.2, 0.5), 0.3),
    "delay_over_links": lambda: MessageDelay(LinkFailures(_talking_env(), 0.2, 0.5), 2),
    "links_over_private": lambda: LinkFailures(PrivateRewards(_talking_env(), 1.0), 0.2, 0.5),
    "links_over_gossip": lambda: LinkFailures(
        _talking_env(protocol=RandomEdgeGossip(public_dim=1)), 0.3, 0.3
    ),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stacks_pass_api_and_full_episode_determinism(name: str) -> None:
    check_parallel_env(STACKS[name], num_cycles=30)
    check_determinism(STACKS[name], seed=4)


def test_a_message_is_lost_exactly_when_its_edge_is_down() -> None:
    env = LinkFailures(_talking_env(), 0.3, 0.4)
    plain = play(_talking_env(), IndependentTeam(lambda: _Chatty()), 2)
    episode = play(env, IndependentTeam(lambda: _Chatty()), 2)
    # every lost delivery has a partner in the other direction (edges fail as a whole),
    # and a down edge loses both of its messages of the step
    for t in range(1, 31):
        lost = np.array(
            [
                plain.observations[t][a]["mask"].astype(bool)
                & ~episode.observations[t][a]["mask"].astype(bool)
                for a in env.possible_agents
            ]
        )
        np.testing.assert_array_equal(lost, lost.T)
        down = episode.infos[t]["agent_0"]["links_down"]
        assert lost.sum() == 2 * down  # every edge of a ring carries two messages a step


def test_the_long_run_share_of_down_edges_is_fail_over_fail_plus_repair() -> None:
    """Stationary share 0.2 / (0.2 + 0.3) = 0.4. Each of the 240 edge chains (60 episodes x
    4 edges) is averaged over steps 6-30 (the start's bias is 0.5^6 < 0.02): the variance
    of such a mean is about 0.24 / 25 x (1 + 0.5) / (1 - 0.5) (lag correlation 0.5), so
    the mean of the 240 has a standard deviation of 0.011; the tolerance is 4 of them."""
    env = LinkFailures(_talking_env(), 0.2, 0.3)
    shares = []
    for s in range(60):
        ep = play(env, IndependentTeam(lambda: _Chatty()), s)
        shares += [info["agent_0"]["links_down"] / 4 for info in ep.infos[6:]]  # past warm-up
    assert abs(np.mean(shares) - 0.4) < 0.045, np.mean(shares)


@pytest.mark.parametrize(
    ("protocol", "match"),
    [(GammaHops(2), "one-hop delivery"), (Flooding(), "one-hop delivery")],
)
def test_multi_hop_protocols_are_refused(protocol: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LinkFailures(_talking_env(protocol=protocol), 0.1, 0.5)


@pytest.mark.parametrize(
    ("fail", "repair", "error", "match"),
    [
        (-0.1, 0.5, ValueError, r"fail must lie in \[0, 1\]"),
        (0.1, 2.0, ValueError, r"repair must lie in \[0, 1\]"),
        ("0.1", 0.5, TypeError, "fail must be a number"),
    ],
)
def test_bad_arguments_are_refused(fail: Any, repair: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        LinkFailures(_talking_env(), fail, repair)
