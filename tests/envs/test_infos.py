"""Reset and step infos have one schema, in both envs and under every wrapper (issue 32,
item 8: TorchRL sizes its info buffers from the reset infos and writes every step key
into them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_linear_v0, federated_mab_v0
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import (
    AgentCrash,
    Byzantine,
    GilbertElliottLoss,
    Gossip,
    LinkFailures,
    MessageDelay,
    MessageLoss,
    PrivateRewards,
)

WRAPPERS: dict[str, Callable[[Any], Any]] = {
    "none": lambda env: env,
    "gossip": lambda env: Gossip(env, "random_matching"),
    "loss": lambda env: MessageLoss(env, 0.3),
    "bursty": lambda env: GilbertElliottLoss(env, 0.2, 0.3),
    "delay": lambda env: MessageDelay(env, 1, 3),
    "links": lambda env: LinkFailures(env, 0.2, 0.4),
    "crash": lambda env: AgentCrash(env, 0.1, 0.3),
    "byzantine": lambda env: Byzantine(env, 1, "random", low=-1.0, high=1.0),
    "private": lambda env: PrivateRewards(env, 1.0),
    "all": lambda env: PrivateRewards(
        Byzantine(
            AgentCrash(
                LinkFailures(MessageDelay(Gossip(env, "random_matching"), 1, 2), 0.2, 0.4),
                0.1,
                0.3,
            ),
            1,
            "random",
            low=-1.0,
            high=1.0,
        ),
        1.0,
    ),
}


def _schemas(env: Any, steps: int = 6) -> tuple[dict[str, set[str]], list[dict[str, set[str]]]]:
    _, infos = env.reset(seed=3)
    at_reset = {a: set(i) for a, i in infos.items()}
    after = []
    for _ in range(steps):
        actions = {a: env.action_space(a).sample() for a in env.agents}
        *_, infos = env.step(actions)
        after.append({a: set(i) for a, i in infos.items()})
    return at_reset, after


def _mab(drawn: bool) -> Any:
    problem = Scenario(n_agents=4, n_arms=3, instances="train").distribution() if drawn else None
    return federated_mab_v0.parallel_env(
        problem, n_agents=4, n_arms=3, horizon=10, network="ring", message_dim=2, seed=0
    )


@pytest.mark.parametrize("drawn", [False, True], ids=["fixed", "drawn"])
@pytest.mark.parametrize("name", list(WRAPPERS))
def test_every_step_key_is_in_the_reset_infos_and_no_other(name: str, drawn: bool) -> None:
    env = WRAPPERS[name](_mab(drawn))
    at_reset, after = _schemas(env)
    for step in after:
        for agent, keys in step.items():
            assert keys == at_reset[agent], (agent, keys ^ at_reset[agent])
    assert ("instance" in at_reset["agent_0"]) == drawn


def test_reset_gives_the_step_keys_their_values_before_any_step() -> None:
    env = WRAPPERS["all"](_mab(True))
    _, infos = env.reset(seed=1)
    byzantine = [a for a, i in infos.items() if i["byzantine"]]
    assert len(byzantine) == 1
    for info in infos.values():
        values = {k: v for k, v in info.items() if k not in ("instance", "byzantine")}
        assert all(v == 0 for v in values.values()), values
    assert isinstance(infos["agent_0"]["instance"], int)


@pytest.mark.parametrize("drawn", [False, True], ids=["fixed", "drawn"])
def test_the_linear_env_has_one_schema_too(drawn: bool) -> None:
    scenario = Scenario(n_agents=3, n_arms=4, instance="dubey", dim=3, horizon=10, seed=0,
                        setting="sync", instances="train" if drawn else "fixed")  # fmt: skip
    env = scenario.make_env()
    assert isinstance(env.unwrapped, federated_linear_v0.FederatedLinearEnv)
    at_reset, after = _schemas(env)
    assert all(step == at_reset for step in after)
    assert ("instance" in at_reset["agent_0"]) == drawn


@pytest.mark.parametrize("setting", ["neighbours", "gossip+private"])
@pytest.mark.parametrize("instances", ["fixed", "train"])
def test_torchrl_runs_every_setting_and_records_the_regret(setting: str, instances: str) -> None:
    pytest.importorskip("torchrl")
    import torch
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    from fedbandit_env.rl.common import set_torch_threads

    set_torch_threads(1)
    epsilon = 1.0 if "private" in setting else None
    scenario = Scenario(n_agents=3, n_arms=4, horizon=12, seed=0, setting=setting,
                        instances=instances, epsilon=epsilon)  # fmt: skip
    with pytest.warns(UserWarning, match="PettingZoo in TorchRL is tested"):
        env = PettingZooWrapper(
            scenario.make_env(), use_mask=True, categorical_actions=True, seed=0
        )
    td = env.rollout(20, break_when_any_done=True)
    assert td.batch_size == torch.Size([12])
    info = td["next", "agent", "info"]
    regret = info["regret"].numpy()
    # the per-step regrets TorchRL recorded add up to the env's cumulative regret
    assert np.allclose(regret.sum(axis=0), info["cumulative_regret"][-1].numpy(), atol=1e-4)
    assert (regret >= 0).all() and regret.sum() > 0
    if setting == "gossip+private":
        assert float(info["epsilon"][-1].max()) > 0
