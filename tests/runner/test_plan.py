"""One stack plan for both speeds: ``Scenario.make_env`` builds exactly the plan's
layers, each drawing layer on the plan's stream, and the fast runners read the plan."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env.policies import Requirements
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.seeding import wrapper_generator
from fedbandit_env.wrappers.base import inner_env

CASES: list[tuple[dict[str, Any], Requirements]] = [
    ({}, Requirements()),
    ({}, Requirements(message_dim=4, public_dim=2, epsilon=1.0)),
    ({"clip": (0.0, 1.0)}, Requirements(message_dim=4, bounded_rewards=True, protocol="server")),
    ({"loss": 0.2, "delay": 2}, Requirements(message_dim=3)),
    ({"loss": 0.2, "byzantine": 1, "crash": 0.1}, Requirements(message_dim=3, epsilon=2.0)),
    ({"loss": 0.5}, Requirements()),  # no messages: nothing to lose, no layer
    ({"setting": "neighbours+private", "epsilon": 1.0, "delay": 1}, Requirements()),
    ({"instance": "dubey", "dim": 2, "n_arms": 4, "loss": 0.1}, Requirements(message_dim=1)),
]


def _layers(env: Any) -> list[Any]:
    out = []
    while inner_env(env) is not None:
        out.append(env)
        env = inner_env(env)
    return out[::-1]  # innermost first


@pytest.mark.parametrize(("fields", "needs"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_make_env_builds_the_plan_and_each_layer_draws_from_the_plans_stream(
    fields: dict[str, Any], needs: Requirements
) -> None:
    scenario = Scenario(**{"n_agents": 4, "n_arms": 3, "horizon": 20, **fields})
    plan = scenario.plan(needs)
    env = scenario.make_env(needs)
    built = _layers(env)
    assert tuple(type(layer).__name__ for layer in built) == plan.names
    env.reset(seed=7)
    for layer, declared in zip(built, plan.layers, strict=True):
        if declared.draws:
            assert layer.depth == plan.depth(declared.name)
            assert plan.stream_key(declared.name) == (2, layer.depth)
            ours = plan.generator(declared.name, 7).random()
            assert ours == wrapper_generator(7, layer.depth).random()


def test_secure_noise_in_the_plan_is_never_the_seeded_stream() -> None:
    s = Scenario(n_agents=3, n_arms=2, horizon=10, privacy_noise="secure")
    plan = s.plan(Requirements(message_dim=2, epsilon=1.0))
    assert plan.layers[0].secure
    a, b = (
        plan.generator("PrivateRewards", 3).random(),
        plan.generator("PrivateRewards", 3).random(),
    )
    assert a != b != wrapper_generator(3, 0).random()
    with pytest.raises(ValueError, match="no MessageLoss layer"):
        plan.generator("MessageLoss", 3)


def test_a_plan_moved_by_one_layer_is_caught() -> None:
    """Power check: a runner that used the wrong depth would draw another stream."""
    s = Scenario(n_agents=3, n_arms=2, horizon=10, loss=0.1, delay=1)
    plan = s.plan(Requirements(message_dim=2))
    assert plan.depth("MessageLoss") == 1
    assert not np.isclose(
        plan.generator("MessageLoss", 5).random(), wrapper_generator(5, 0).random()
    )
