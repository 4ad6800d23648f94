"""ArmActions: Discrete actions over a message-carrying env, messages from message_fn."""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.rl import LearnerStack
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import ArmActions, LocalStatistics


def _env() -> ArmActions:
    base = LocalStatistics(federated_mab_v0.parallel_env(n_agents=3, n_arms=2, message_dim=2))
    return ArmActions(base, lambda agent, obs: np.asarray(obs["means"], np.float32))


@pytest.mark.slow
def test_passes_the_api_and_determinism_checks() -> None:
    check_parallel_env(_env)
    check_determinism(_env)


def test_messages_come_from_message_fn_on_the_latest_observation() -> None:
    env = _env()
    env.reset(seed=0)
    obs, *_ = env.step({"agent_0": 1, "agent_1": 1, "agent_2": 0})
    sent_next = {a: np.asarray(o["means"], np.float32) for a, o in obs.items()}
    obs, *_ = env.step({"agent_0": 0, "agent_1": 0, "agent_2": 0})
    # on a complete graph with broadcast, agent_2 hears agent_0's means of the last step
    np.testing.assert_array_equal(obs["agent_2"]["messages"][0], sent_next["agent_0"])


def test_a_learner_stack_env_gets_discrete_actions() -> None:
    stack = LearnerStack.for_setting("neighbours")
    scenario = Scenario(n_agents=3, n_arms=4, horizon=5, setting="neighbours")
    env = ArmActions(stack.make_env(scenario), stack.message_fn)
    assert env.action_space("agent_0").n == 4
    check_parallel_env(lambda: ArmActions(stack.make_env(scenario), stack.message_fn))


def test_bad_arguments_are_refused() -> None:
    base = federated_mab_v0.parallel_env(n_agents=2, n_arms=2, message_dim=1)
    with pytest.raises(TypeError, match="message_fn must be callable"):
        ArmActions(base, message_fn=3)  # type: ignore[arg-type]
    env = ArmActions(base)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown agent 'agent_9'"):
        env.step({"agent_9": 0})
    plain = ArmActions(federated_mab_v0.parallel_env(n_agents=2, n_arms=2))
    plain.reset(seed=0)
    assert plain.step({"agent_0": 1, "agent_1": 0})[0]["agent_0"]["arm"] == 1
