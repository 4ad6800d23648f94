"""MessageDelay: every delivered peer message arrives a fixed number of steps late."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import FixedArm, IndependentTeam
from fedbandit_env.privacy.audit_env import play
from fedbandit_env.protocols import RandomEdgeGossip
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import MessageDelay, MessageLoss, PrivateRewards


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


@pytest.mark.parametrize("delay", [-1, 1.5, True, "2"])
def test_bad_delays_are_refused(delay: Any) -> None:
    with pytest.raises(ValueError, match="delay must be an int >= 0"):
        MessageDelay(_talking_env(), delay)


def test_an_env_without_messages_is_refused() -> None:
    with pytest.raises(TypeError, match="MessageDelay needs an env that carries messages"):
        MessageDelay(federated_mab_v0.parallel_env(horizon=3), 1)
