"""Every policy named private releases only through a mechanism, in every setting it runs
in (issue 63, item 4).

A policy whose id says ``private`` must ask for one: private rewards
(``requirements().epsilon``, the setting's or its own env's ``PrivateRewards``) or a noise
of its own (``noise_source()``). Black-box, from the seat of whoever receives its
messages (a neighbour, the server): two runs with everything seeded alike but the
mechanism's noise drawn fresh (``privacy_noise="secure"``) must send different messages,
while two seeded runs send the same ones. A policy that sent raw statistics sends the same
messages twice, since its rewards and its own draws are seeded; that is what
``private_server_ts`` did when its requirements dropped epsilon in its own env (the
``private_server_ts_raw`` mutation of ``mutations.py``). Each policy runs in each setting
it is registered for and in its own env (no setting: the env its requirements ask for),
on the PettingZoo path, and on the vector path too for a vector policy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from fedbandit_env import registry
from fedbandit_env.runner.evaluate import one_noise
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.runner.vector_trials import vector_unsupported
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.settings import get_setting
from fedbandit_env.vector import make_vec
from fedbandit_env.vector.policy import VectorSpec, VectorTeam
from fedbandit_env.wrappers.base import ParallelWrapper

PRIVATE = [p for p in registry.policy_ids() if "private" in p]
"""Every registered policy named private (plugins' included)."""

CASES = [
    pytest.param(p, setting, id=f"{p}-{setting or 'own_env'}")
    for p in PRIVATE
    for setting in (*(registry.spec(p).settings or ()), None)
]


def _scenario(policy: str, setting: str | None, noise: str) -> Scenario:
    spec = registry.spec(policy)
    kw: dict[str, Any] = {"privacy_noise": noise}
    if setting is not None:
        kw["setting"] = setting
        if get_setting(setting).private:
            kw["epsilon"] = 1.0
    elif spec.settings:  # its own env, on the protocol of the first setting it names
        protocol = get_setting(spec.settings[0]).protocol
        if protocol is not None:
            kw["protocol"] = protocol
    if spec.bandit == "linear":
        return Scenario(n_agents=3, n_arms=6, horizon=60, instance="dubey", dim=3, **kw)
    return Scenario(n_agents=4, n_arms=3, horizon=40, **kw)


class _Sent(ParallelWrapper):
    """Records every message the agents send (what their receivers are handed)."""

    def __init__(self, env: Any, log: list[np.ndarray]) -> None:
        super().__init__(env)
        self.log = log

    def step(self, actions: dict[str, Any]) -> Any:
        self.log.append(np.array([np.asarray(actions[a]["message"]) for a in sorted(actions)]))
        return super().step(actions)


def _team(policy: str, setting: str | None, noise: str) -> tuple[Any, dict[str, Any], Scenario]:
    spec = registry.spec(policy)
    return one_noise(spec, spec.make(), {}, _scenario(policy, setting, noise))


def _sent_pettingzoo(policy: str, setting: str | None, noise: str) -> np.ndarray:
    team, options, s = _team(policy, setting, noise)
    needs = team.requirements(s.n_agents, s.n_arms)
    log: list[np.ndarray] = []
    spec = registry.spec(policy)
    run_trials(lambda: _Sent(s.make_env(needs), log), lambda: spec.make(**options), 1,
               seed=3, progress=False)  # fmt: skip
    return np.stack(log)


def _sent_vector(policy: str, setting: str | None, noise: str) -> np.ndarray:
    team, _, s = _team(policy, setting, noise)
    needs = team.requirements(s.n_agents, s.n_arms)
    venv = make_vec(s, 2, needs)
    obs, _ = venv.reset(seed=[3, 4])
    inner = team.policy
    rngs = [np.random.default_rng(k) for k in (5, 6)]
    inner.reset(VectorSpec.from_env(s.make_env(needs), 2), rngs)
    log = []
    for _ in range(s.horizon):
        arms, messages = inner.act(obs)
        log.append(np.asarray(messages, dtype=np.float64))
        obs, *_ = venv.step(arms, messages)
    return np.stack(log)


def test_every_policy_named_private_is_covered() -> None:
    assert {"private_server_ts", "tuned_private_ts", "private_fedlin_ucb"} <= set(PRIVATE)


@pytest.mark.parametrize(("policy", "setting"), CASES)
def test_a_private_policy_asks_for_a_mechanism(policy: str, setting: str | None) -> None:
    team, _, s = _team(policy, setting, "seeded")
    needs = team.requirements(s.n_agents, s.n_arms)
    assert needs.epsilon is not None or team.noise_source() is not None, (
        f"{policy} asks for no private rewards and has no noise of its own"
    )


@pytest.mark.parametrize(("policy", "setting"), CASES)
def test_a_private_policys_messages_carry_fresh_noise(policy: str, setting: str | None) -> None:
    seeded = _sent_pettingzoo(policy, setting, "seeded")
    assert seeded.size and np.any(seeded != 0), "the policy released nothing to test"
    np.testing.assert_array_equal(_sent_pettingzoo(policy, setting, "seeded"), seeded)
    first, second = (_sent_pettingzoo(policy, setting, "secure") for _ in range(2))
    assert not np.array_equal(first, second), (
        f"{policy} sent the same messages under fresh mechanism noise: raw statistics"
    )


VECTOR_CASES = [c for c in CASES if isinstance(registry.spec(c.values[0]).make(), VectorTeam)]


@pytest.mark.parametrize(("policy", "setting"), VECTOR_CASES)
def test_a_private_vector_policys_messages_carry_fresh_noise(
    policy: str, setting: str | None
) -> None:
    team, _, s = _team(policy, setting, "secure")
    if (why := vector_unsupported(s, team.requirements(s.n_agents, s.n_arms))) is not None:
        pytest.skip(f"the vector path does not model it: {why}")
    seeded = _sent_vector(policy, setting, "seeded")
    assert np.any(seeded != 0)
    np.testing.assert_array_equal(_sent_vector(policy, setting, "seeded"), seeded)
    first, second = (_sent_vector(policy, setting, "secure") for _ in range(2))
    assert not np.array_equal(first, second)


def test_the_check_has_power_a_policy_on_raw_rewards_sends_the_same_messages_twice() -> None:
    """The power check: ``server_ts`` (raw rewards) in ``server`` sends the same messages
    under two "secure" runs, since nothing in its run is noise."""
    s = _scenario("private_server_ts", None, "secure")
    s = replace(s, protocol="server")
    spec = registry.spec("server_ts")
    needs = spec.make().requirements(s.n_agents, s.n_arms)
    logs = []
    for _ in range(2):
        log: list[np.ndarray] = []
        run_trials(lambda: _Sent(s.make_env(needs), log), spec.make, 1, seed=3, progress=False)  # noqa: B023
        logs.append(np.stack(log))
    np.testing.assert_array_equal(*logs)
