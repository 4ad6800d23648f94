"""PettingZoo API and full-episode determinism on every registered env and protocol family."""

from __future__ import annotations

import itertools

import numpy as np
import pettingzoo
import pytest

import fedbandit_env
from fedbandit_env import FederatedMABEnv, Network, federated_mab_v0
from fedbandit_env.envs.infos import STEP_INFO
from fedbandit_env.problems import MABProblem, conflicting, zhu_synthetic
from fedbandit_env.protocols import PROTOCOLS
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import LocalStatistics

CONFIGS = {
    "plain": lambda: federated_mab_v0.parallel_env(horizon=60),
    "messages": lambda: federated_mab_v0.parallel_env(horizon=60, message_dim=3),
    "gaussian_ring": lambda: federated_mab_v0.parallel_env(
        problem=zhu_synthetic(5, 4, seed=1),
        network="ring",
        horizon=60,
        message_dim=4,
        message_bounds=(-5.0, 5.0),
    ),
    "clipped_star": lambda: federated_mab_v0.parallel_env(
        problem=conflicting(6, 3, seed=2, noise="clipped_gaussian", sigma=0.3),
        network=Network.star(6),
        horizon=60,
        message_dim=1,
    ),
    "local_statistics": lambda: LocalStatistics(
        federated_mab_v0.parallel_env(horizon=60, message_dim=2)
    ),
}
CONFIGS.update(
    {
        f"protocol_{name}": (
            lambda cls=cls: federated_mab_v0.parallel_env(
                horizon=40, message_dim=2, network="erdos_renyi", protocol=cls()
            )
        )
        for name, cls in PROTOCOLS.items()
    }
)


@pytest.mark.parametrize("env_id", fedbandit_env.ENV_IDS)
def test_registered_envs_pass_api_tests(env_id: str) -> None:
    check_parallel_env(lambda: pettingzoo.make("parallel", env_id, horizon=50), num_cycles=60)
    aec = pettingzoo.make("aec", env_id, horizon=5)
    aec.reset(seed=0)
    assert aec.agents == aec.possible_agents


@pytest.mark.parametrize("env_id", fedbandit_env.ENV_IDS)
def test_registered_envs_are_deterministic(env_id: str) -> None:
    check_determinism(lambda: pettingzoo.make("parallel", env_id, horizon=50), seed=11)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_configurations_pass_api_tests(name: str) -> None:
    check_parallel_env(CONFIGS[name], num_cycles=80)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_configurations_are_deterministic_over_a_full_episode(name: str) -> None:
    check_determinism(CONFIGS[name], seed=5)


def test_determinism_checker_catches_an_unseeded_env() -> None:
    resets = itertools.count(1)

    class Leaky(FederatedMABEnv):  # every reset seeds from a new number: never the same
        def reset(self, seed=None, options=None):  # type: ignore[no-untyped-def]
            return super().reset(seed=None if seed is None else seed + next(resets))

    with pytest.raises(AssertionError, match="diverged"):
        check_determinism(lambda: Leaky(conflicting(3, 3, seed=0), horizon=20), seed=1)


def test_regret_info_is_the_global_gap_of_the_chosen_arm() -> None:
    p = MABProblem([[0.9, 0.1], [0.1, 0.5]])
    env = FederatedMABEnv(p, horizon=3)
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 1})
    assert infos["agent_0"]["regret"] == 0.0
    assert infos["agent_1"]["regret"] == pytest.approx(0.2)
    _, _, _, truncs, infos = env.step({"agent_0": 1, "agent_1": 1})
    assert infos["agent_1"]["cumulative_regret"] == pytest.approx(0.4)
    assert not any(truncs.values())
    _, _, _, truncs, _ = env.step({"agent_0": 1, "agent_1": 1})
    assert all(truncs.values()) and env.agents == []


def test_observation_arrays_are_fresh_per_agent_and_step_is_shared_read_only() -> None:
    env = FederatedMABEnv(MABProblem([[0.9, 0.1], [0.1, 0.5], [0.5, 0.5]]), horizon=3)
    env.reset(seed=0)
    obs, rewards, *_ = env.step({"agent_0": 0, "agent_1": 1, "agent_2": 0})
    kept = obs["agent_1"]["reward"].copy()
    obs["agent_0"]["reward"][0] = 99.0  # an agent's own array: the others are untouched
    assert obs["agent_1"]["reward"] == kept
    assert [float(obs[a]["reward"][0]) for a in ("agent_1", "agent_2")] == pytest.approx(
        [rewards["agent_1"], rewards["agent_2"]]
    )
    assert obs["agent_0"]["step"] is obs["agent_2"]["step"]  # one array for everyone ...
    with pytest.raises(ValueError, match="read-only"):
        obs["agent_0"]["step"][0] = 5.0  # ... that nobody can change
    later, *_ = env.step({"agent_0": 0, "agent_1": 1, "agent_2": 0})
    assert float(obs["agent_0"]["step"][0]) == 1.0 and float(later["agent_0"]["step"][0]) == 2.0


def test_messages_reach_only_neighbours_with_their_sender_slot() -> None:
    env = federated_mab_v0.parallel_env(
        problem=conflicting(4, 3, seed=0), network=Network.path(4), horizon=5, message_dim=2
    )
    env.reset(seed=0)
    actions = {f"agent_{i}": {"arm": 0, "message": np.full(2, i + 1.0)} for i in range(4)}
    obs, *_ = env.step(actions)
    assert obs["agent_1"]["mask"].tolist() == [1, 0, 1, 0]
    assert obs["agent_1"]["messages"][:, 0].tolist() == [1.0, 0.0, 3.0, 0.0]
    assert obs["agent_3"]["mask"].tolist() == [0, 0, 1, 0]
    assert obs["agent_3"]["messages"][0].tolist() == [0.0, 0.0]


def test_reset_observation_is_empty_and_render_works() -> None:
    env = federated_mab_v0.parallel_env(horizon=4, render_mode="ansi", message_dim=1)
    obs, infos = env.reset(seed=0)
    assert float(obs["agent_0"]["step"][0]) == 0.0 and obs["agent_0"]["mask"].sum() == 0
    assert infos == {a: STEP_INFO for a in env.possible_agents}  # every step key, at zero
    env.step({a: {"arm": 1, "message": [0.5]} for a in env.agents})
    text = env.render()
    assert text is not None and "step 1/4" in text and "agent_3: arm 1" in text


def test_step_after_the_end_is_refused() -> None:
    env = federated_mab_v0.parallel_env(horizon=1)
    env.reset(seed=0)
    env.step(dict.fromkeys(env.agents, 0))
    with pytest.raises(RuntimeError, match="finished episode"):
        env.step({"agent_0": 0})


def test_state_is_the_agents_joint_view_inside_its_space() -> None:
    env = federated_mab_v0.parallel_env(problem=conflicting(4, 3, seed=0), horizon=5)
    env.reset(seed=0)
    assert not env.state().any()  # nothing observed yet
    for _ in range(5):
        env.step({a: 2 for a in env.agents})
        state = env.state()
        assert env.state_space.contains(state)
    per_agent = state[:-1].reshape(4, 4)
    assert per_agent[:, 2].tolist() == [1.0] * 4 and state[-1] == 5.0


def test_parallel_env_takes_a_protocol_by_name_as_it_takes_a_graph() -> None:
    """``protocol="broadcast"`` raised TypeError while ``network="ring"`` worked."""
    from fedbandit_env import federated_linear_v0, federated_mab_v0
    from fedbandit_env.protocols import RandomEdgeGossip

    env = federated_mab_v0.parallel_env(n_agents=3, protocol="random_edge_gossip", message_dim=2)
    assert isinstance(env.protocol, RandomEdgeGossip)
    linear = federated_linear_v0.parallel_env(n_agents=2, dim=2, protocol="broadcast")
    assert type(linear.protocol).__name__ == "Broadcast"
    with pytest.raises(ValueError, match="protocol must be one of"):
        federated_mab_v0.parallel_env(n_agents=3, protocol="shout")
