"""HeldMessages: each neighbour's latest message, kept for memoryless learners."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from fedbandit_env import federated_mab_v0
from fedbandit_env.protocols import RandomEdgeGossip
from fedbandit_env.rl import LearnerStack
from fedbandit_env.rl.arm_policy import ArmFeatures, arm_layout
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import HeldMessages
from fedbandit_env.wrappers.flatten import flat_box, flatten_observation


def _gossip_env(horizon: int = 40) -> HeldMessages:
    base = federated_mab_v0.parallel_env(
        n_agents=4, n_arms=3, horizon=horizon, message_dim=2, protocol=RandomEdgeGossip()
    )
    return HeldMessages(base)


def test_held_is_each_slots_latest_message_and_the_rest_passes_unchanged() -> None:
    env, twin = _gossip_env(), _gossip_env().env  # the same env, unwrapped
    obs, _ = env.reset(seed=3)
    twin.reset(seed=3)
    rng = np.random.default_rng(0)
    n = len(env.possible_agents)
    latest, last = np.zeros((n, n, 2)), np.full((n, n), -1.0)
    for t in range(1, 41):
        actions = {
            a: {"arm": int(rng.integers(3)), "message": rng.random(2).astype(np.float32)}
            for a in env.agents
        }
        obs, *_ = env.step(actions)
        raw, *_ = twin.step(actions)
        for i, a in enumerate(env.possible_agents):
            arrived = raw[a]["mask"].astype(bool)
            latest[i, arrived] = raw[a]["messages"][arrived]
            last[i, arrived] = t
            o = obs[a]
            for key in raw[a]:  # nothing of the env's own observation changes
                np.testing.assert_array_equal(o[key], raw[a][key])
            np.testing.assert_allclose(o["held"], latest[i], rtol=1e-6)
            np.testing.assert_array_equal(o["heard"], last[i] >= 0)
            np.testing.assert_array_equal(o["age"], np.where(last[i] >= 0, t - last[i], t))
            assert env.observation_space(a).contains(o)
    assert (last >= 0).sum() > n  # several neighbours were heard by the end
    obs, _ = env.reset(seed=4)
    assert not obs["agent_0"]["heard"].any() and not obs["agent_0"]["held"].any()


def test_refuses_an_env_without_messages_and_a_second_copy() -> None:
    with pytest.raises(ValueError, match="carries messages"):
        HeldMessages(federated_mab_v0.parallel_env(n_agents=2, n_arms=2, horizon=3))
    with pytest.raises(ValueError):
        HeldMessages(_gossip_env())


def test_a_gossip_learner_keeps_its_neighbours_and_the_arms_net_reads_them() -> None:
    assert LearnerStack.for_setting("gossip").memory
    assert not LearnerStack.for_setting("neighbours").memory
    assert not LearnerStack.for_setting("local").memory
    stack = LearnerStack.for_setting("gossip")
    env = stack.make_env(Scenario(n_agents=4, n_arms=3, horizon=30, setting="gossip"))
    space = env.observation_space("agent_0")
    layout = arm_layout(space, scale=False)
    assert (layout["message_key"], layout["mask_key"]) == ("held", "heard")
    features = ArmFeatures(flat_box(space), layout, hidden=4)
    obs, _ = env.reset(seed=1)
    for _ in range(20):
        obs, *_ = env.step(
            {a: {"arm": 1, "message": stack.message_fn(a, obs[a])} for a in env.agents}
        )
    o = obs["agent_0"]
    heard = o["heard"].astype(bool)
    assert heard.sum() >= 2 > int(o["mask"].sum())  # more neighbours kept than heard now
    x = th.as_tensor(flatten_observation(space, o))[None]
    inputs = features.arm_inputs(x)[0].numpy()
    np.testing.assert_allclose(inputs[:, 7], o["held"][heard].mean(axis=0), rtol=1e-5)
