"""One flat batch for all agents equals gymnasium's flatten, agent by agent."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from fedbandit_env.rl import LearnerStack
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import FlattenObservations
from fedbandit_env.wrappers.flatten import FlatLayout, flatten_batch, flatten_observation


@pytest.mark.parametrize("setting", ["local", "neighbours", "gossip", "gossip+private"])
def test_the_flat_batch_is_gymnasiums_flatten(setting: str) -> None:
    epsilon = 1.0 if setting.endswith("+private") else None
    scenario = Scenario(n_agents=4, n_arms=3, horizon=9, setting=setting, epsilon=epsilon)
    env = LearnerStack.for_setting(setting, epsilon).make_env(scenario)
    space = env.observation_space(env.possible_agents[0])
    assert FlatLayout.of(space) is not None
    space.seed(0)
    samples = [space.sample() for _ in range(6)]  # every entry at random values
    expected = np.stack([flatten_observation(space, o) for o in samples])
    np.testing.assert_array_equal(flatten_batch(space, samples), expected)
    flat = FlattenObservations(env)
    obs, _ = flat.reset(seed=1)
    talk = "messages" in space.spaces
    actions = {a: {"arm": 1, "message": np.zeros(3)} if talk else 1 for a in flat.agents}
    obs, *_ = flat.step(actions)
    assert all(flat.observation_space(a).contains(o) for a, o in obs.items())


def test_a_space_without_a_layout_falls_back_to_gymnasium() -> None:
    space = spaces.Dict({"a": spaces.MultiDiscrete([2, 3]), "b": spaces.Discrete(2, start=1)})
    assert FlatLayout.of(space) is None
    samples = [{"a": np.array([1, 2]), "b": 2}, {"a": np.array([0, 0]), "b": 1}]
    expected = np.stack([flatten_observation(space, o) for o in samples])
    np.testing.assert_array_equal(flatten_batch(space, samples), expected)
    shifted = spaces.Dict({"b": spaces.Discrete(3, start=-1)})  # a start is honoured
    np.testing.assert_array_equal(
        flatten_batch(shifted, [{"b": -1}, {"b": 1}]),
        np.stack([flatten_observation(shifted, {"b": v}) for v in (-1, 1)]),
    )
