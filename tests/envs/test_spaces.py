"""Every observation of every step lies in its space (issue 53, item 1), for both envs,
every information setting and instances drawn at reset: PettingZoo's ``parallel_api_test``
checks no step's observation, and ``check_parallel_env`` used to check one episode, the
construction-time instance's. On ``d3a7325`` the linear env bounded ``contexts`` by the
construction-time problem's largest coordinate, and 74 of 750 context observations of
train instances (0.947 against 0.875) left the space."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env.envs.federated_linear import FederatedLinearEnv
from fedbandit_env.policies import Requirements
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.settings import SETTINGS
from fedbandit_env.testing import check_spaces


@pytest.mark.parametrize("instances", ["fixed", "train", "held_out"])
@pytest.mark.parametrize("instance", ["dubey", "diabetes_linear"])
def test_linear_contexts_stay_in_their_space_on_drawn_instances(
    instance: str, instances: str
) -> None:
    shape = {"n_arms": 6, "dim": 3} if instance == "dubey" else {"n_arms": 5, "dim": 0}
    s = Scenario(n_agents=3, horizon=50, instance=instance, instances=instances, **shape)
    check_spaces(lambda: s.make_env(Requirements()), episodes=6)


MAB_SETTINGS = sorted(name for name in SETTINGS if name != "sync")


@pytest.mark.parametrize("setting", MAB_SETTINGS)
def test_every_settings_observations_stay_in_their_spaces(setting: str) -> None:
    s = Scenario(
        n_agents=4, n_arms=3, horizon=40, instance="biased", instances="train",
        setting=setting, epsilon=1.0 if setting.endswith("+private") else None,
    )  # fmt: skip
    needs = Requirements(message_dim=0 if setting.startswith("local") else 6)
    check_spaces(lambda: s.make_env(needs), episodes=3)


def test_a_problem_beyond_the_declared_bound_is_refused_at_reset() -> None:
    env = FederatedLinearEnv(dubey_synthetic(2, dim=2, seed=0), horizon=5)
    assert env.observation_space("agent_0")["contexts"].high.max() == 1.0
    wide = LinearProblem(3.0 * np.eye(2), [0.5, 0.5], set_size=env.n_arms, n_agents=2)
    with pytest.raises(ValueError, match="beyond the contexts space's bound 1"):
        env.reset(seed=0, options={"problem": wide})


WIDE = LinearProblem(3.0 * np.eye(2), [0.5, 0.5], set_size=2, n_agents=2)


class _Leaky(FederatedLinearEnv):
    """The d3a7325 behaviour: any problem accepted, here one beyond the bound, each reset."""

    def _check_bound(self, problem: LinearProblem, what: str) -> None:
        pass

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        return super().reset(seed=seed, options={"problem": WIDE})


def test_the_space_checker_names_the_step_and_agent_that_left_it() -> None:
    make = lambda: _Leaky(dubey_synthetic(2, dim=2, seed=0, set_size=2), horizon=5)  # noqa: E731
    with pytest.raises(AssertionError, match="step 0: observation of agent_0 not in"):
        check_spaces(make, episodes=1)
