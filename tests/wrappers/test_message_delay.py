"""MessageDelay: every delivered peer message arrives a fixed number of steps late."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import FixedArm, IndependentTeam
from fedbandit_env.protocols import RandomEdgeGossip
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import Gossip, MessageDelay, MessageLoss, PrivateRewards
from fedbandit_env.wrappers.audit import play


def _talking_env(**kw: Any) -> Any:
    return federated_mab_v0.parallel_env(horizon=30, message_dim=2, network="ring", **kw)


class _Chatty(FixedArm):
    """Pulls arm 0 and sends the step it acts at: a message tells when it was sent."""

    def act(self, observation: Any) -> Any:
        return {"arm": 0, "message": np.full(2, float(observation["step"][0]) + 1.0, np.float32)}


def _episode(env: Any) -> Any:
    return play(env, IndependentTeam(lambda: _Chatty()), 5)


STACKS = {
    "delay": lambda: MessageDelay(_talking_env(), 3),
    "delay_over_loss": lambda: MessageDelay(MessageLoss(_talking_env(), 0.3), 2),
    "loss_over_delay": lambda: MessageLoss(MessageDelay(_talking_env(), 2), 0.3),
    "private_over_delay": lambda: PrivateRewards(MessageDelay(_talking_env(), 1), 1.0),
    "random_in_order": lambda: MessageDelay(_talking_env(), 1, 4),
    "random_out_of_order": lambda: MessageDelay(_talking_env(), 0, 3, in_order=False),
    "delay_over_gossip": lambda: MessageDelay(
        _talking_env(protocol=RandomEdgeGossip(public_dim=1)), 2
    ),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stacks_pass_api_and_full_episode_determinism(name: str) -> None:
    check_parallel_env(STACKS[name], num_cycles=30)
    check_determinism(STACKS[name], seed=4)


@pytest.mark.parametrize("delay", [0, 1, 4])
def test_what_arrives_at_t_is_what_the_protocol_delivered_at_t_minus_delay(delay: int) -> None:
    plain, late = _episode(_talking_env()), _episode(MessageDelay(_talking_env(), delay))
    for t in range(1, 31):
        for agent in plain.observations[t]:
            seen = late.observations[t][agent]
            if t > delay:
                sent = plain.observations[t - delay][agent]
                np.testing.assert_array_equal(seen["messages"], sent["messages"])
                np.testing.assert_array_equal(seen["mask"], sent["mask"])
            else:
                assert not seen["mask"].any() and not seen["messages"].any()
            # everything else is the env's own, on time
            np.testing.assert_array_equal(seen["reward"], plain.observations[t][agent]["reward"])
    if delay:
        assert late.infos[-1]["agent_0"]["messages_in_flight"] == 2 * delay  # 2 neighbours


def _arrivals(env: Any, seeds: range = range(4)) -> list[tuple[int, int, int, int]]:
    """(receiver, sender, sent, seen) of every message seen: _Chatty's message is the
    step it was sent at."""
    out = []
    for seed in seeds:
        episode = play(env, IndependentTeam(lambda: _Chatty()), seed)
        for t, obs in enumerate(episode.observations[1:], start=1):
            for r, o in enumerate(obs.values()):
                for s in np.flatnonzero(o["mask"]):
                    out.append((r, int(s), int(o["messages"][s, 0]), t))
    return out


@pytest.mark.parametrize("in_order", [True, False])
def test_random_delays_lie_within_bounds(in_order: bool) -> None:
    """Delays 1..4 (out of order: 2..5) steps: every message is seen within them (in
    order, a message may also wait for the one before it on its link)."""
    lo, hi = (1, 4) if in_order else (2, 5)
    seen = _arrivals(MessageDelay(_talking_env(), lo, hi, in_order=in_order))
    delays = np.array([t - sent for _, _, sent, t in seen])
    assert delays.min() >= lo and delays.max() <= (30 if in_order else hi)


def test_random_delays_are_uniform() -> None:
    """Links used every 6th step (periodic gossip), delays U{2..5}: no two messages of a
    link meet, so every delay is seen; their mean is 3.5 within 4 sd (sd 1.118 / sqrt n),
    and each value's share is 1/4 within 4 sd."""
    env = MessageDelay(Gossip(_talking_env(), "periodic:6"), 2, 5, in_order=False)
    delays = np.array([t - sent for _, _, sent, t in _arrivals(env, range(20))])
    n = delays.size
    assert n > 500
    assert abs(delays.mean() - 3.5) < 4 * 1.118 / np.sqrt(n), delays.mean()
    shares = np.bincount(delays, minlength=6)[2:] / n
    assert np.abs(shares - 0.25).max() < 4 * np.sqrt(0.25 * 0.75 / n), shares


def _reordered(env: Any) -> int:
    """How often a link shows a message sent before one it already showed."""
    last: dict[tuple[int, int], int] = {}
    back = 0
    for r, s, sent, _ in sorted(_arrivals(env, range(1)), key=lambda x: x[3]):
        back += int(sent < last.get((r, s), 0))
        last[r, s] = max(sent, last.get((r, s), 0))
    return back


def test_in_order_links_never_reorder_and_free_ones_do() -> None:
    assert _reordered(MessageDelay(_talking_env(), 0, 5)) == 0
    assert _reordered(MessageDelay(_talking_env(), 0, 5, in_order=False)) > 0


def test_a_random_delay_reports_superseded_messages() -> None:
    episode = play(MessageDelay(_talking_env(), 0, 5), IndependentTeam(lambda: _Chatty()), 0)
    assert sum(i["agent_0"]["messages_superseded"] for i in episode.infos[1:]) > 0


@pytest.mark.parametrize("delay", [-1, 1.5, True, "2"])
def test_bad_delays_are_refused(delay: Any) -> None:
    with pytest.raises(ValueError, match="delay must be an int >= 0"):
        MessageDelay(_talking_env(), delay)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"delay": 3, "max_delay": 2}, ValueError, "max_delay must be >= delay"),
        ({"delay": 1, "max_delay": -2}, ValueError, "max_delay must be an int"),
        ({"delay": 1, "in_order": "yes"}, TypeError, "in_order must be a bool"),
    ],
)
def test_bad_random_delays_are_refused(kwargs: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        MessageDelay(_talking_env(), **kwargs)


def test_an_env_without_messages_is_refused() -> None:
    with pytest.raises(TypeError, match="MessageDelay needs an env that carries messages"):
        MessageDelay(federated_mab_v0.parallel_env(horizon=3), 1)


@pytest.mark.parametrize(("lo", "hi", "in_order"), [(2, 2, True), (0, 4, True), (0, 4, False)])
def test_in_flight_counts_what_was_sent_and_not_yet_seen(lo: int, hi: int, in_order: bool) -> None:
    """messages_in_flight = delivered by the protocol so far - seen - superseded."""
    env = MessageDelay(_talking_env(), lo, hi, in_order=in_order)
    episode = play(env, IndependentTeam(lambda: _Chatty()), 1)
    sent = seen = gone = 0
    for obs, info in zip(episode.observations[1:], episode.infos[1:], strict=True):
        sent += 2  # a ring: two neighbours deliver to agent_0 every step
        seen += int(obs["agent_0"]["mask"].sum())
        gone += info["agent_0"]["messages_superseded"]
        assert info["agent_0"]["messages_in_flight"] == sent - seen - gone
