"""Every public constructor and ``step`` reject bad input with a precise error."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from fedbandit_env import FederatedMABEnv, MABProblem, Network, federated_mab_v0
from fedbandit_env.problems import conflicting

PROBLEM = conflicting(4, 3, seed=0)


def test_disconnected_graph_where_protocol_needs_connection() -> None:
    g = nx.union(nx.path_graph(2), nx.path_graph([2, 3]))
    with pytest.raises(ValueError, match="'broadcast' needs a connected network"):
        FederatedMABEnv(PROBLEM, g, message_dim=1)
    assert FederatedMABEnv(PROBLEM, g).network.is_connected is False  # no messages: fine
    with pytest.raises(ValueError, match="must be connected"):
        FederatedMABEnv(PROBLEM, Network(g))


def test_graph_size_disagrees_with_agent_count() -> None:
    with pytest.raises(ValueError, match="network has 5 nodes but problem has 4 agents"):
        FederatedMABEnv(PROBLEM, Network.ring(5))


def test_zero_arms() -> None:
    with pytest.raises(ValueError, match="local_means must have at least 1 arm.*got 0"):
        FederatedMABEnv(MABProblem(np.zeros((4, 0))))


def test_one_agent_where_two_are_needed() -> None:
    with pytest.raises(ValueError, match="at least 2 agents for a federated env, got 1"):
        FederatedMABEnv(MABProblem([[0.5, 0.1]]))
    with pytest.raises(ValueError, match="n must be >= 2, got 1"):
        Network.complete(1)


def test_negative_noise() -> None:
    with pytest.raises(ValueError, match="sigma must be a finite number >= 0, got -0.5"):
        federated_mab_v0.parallel_env(problem=MABProblem([[0.1], [0.2]], "gaussian", -0.5))


@pytest.mark.parametrize(
    ("horizon", "error"), [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_horizon_below_one_or_not_an_int(horizon: object, error: type) -> None:
    with pytest.raises(error, match="horizon must be"):
        FederatedMABEnv(PROBLEM, horizon=horizon)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arm", "error", "match"),
    [
        (3, ValueError, r"arm of agent_0 must lie in \[0, 3\), got 3"),
        (-1, ValueError, r"must lie in \[0, 3\), got -1"),
        (1.0, TypeError, "arm of agent_0 must be an int.*got float"),
        ("1", TypeError, "got str"),
        (True, TypeError, "got bool"),
        (np.array([0.5]), TypeError, "got ndarray"),
    ],
)
def test_bad_arm_in_step(arm: object, error: type, match: str) -> None:
    env = FederatedMABEnv(PROBLEM, horizon=5)
    env.reset(seed=0)
    actions = {a: 0 for a in env.agents}
    actions["agent_0"] = arm
    with pytest.raises(error, match=match):
        env.step(actions)


def test_numpy_integer_arms_are_accepted() -> None:
    env = FederatedMABEnv(PROBLEM, horizon=5)
    env.reset(seed=0)
    obs, *_ = env.step(
        {"agent_0": np.int32(2), "agent_1": np.array(1), "agent_2": np.array([0]), "agent_3": 0}
    )
    assert [int(obs[a]["arm"]) for a in env.possible_agents] == [2, 1, 0, 0]


def test_missing_or_unknown_agents_in_step() -> None:
    env = FederatedMABEnv(PROBLEM, horizon=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"missing \['agent_3'\]"):
        env.step({"agent_0": 0, "agent_1": 0, "agent_2": 0})
    with pytest.raises(ValueError, match=r"unexpected \['agent_9'\]"):
        env.step({**{a: 0 for a in env.agents}, "agent_9": 0})


def test_bad_messages() -> None:
    env = FederatedMABEnv(PROBLEM, horizon=5, message_dim=2, message_bounds=(0.0, 1.0))
    env.reset(seed=0)
    good = {"arm": 0, "message": np.zeros(2)}
    for bad, error, match in [
        (0, TypeError, "must be a dict with keys 'arm' and 'message'"),
        ({"arm": 0, "message": np.zeros(3)}, ValueError, r"shape \(2,\), got \(3,\)"),
        ({"arm": 0, "message": [0.5, 2.0]}, ValueError, r"within \[0.0, 1.0\]"),
        ({"arm": 0, "message": [np.nan, 0.0]}, ValueError, "finite"),
        ({"arm": 0, "message": 0.5}, ValueError, r"shape \(2,\), got \(\)"),
        ({"arm": True, "message": np.zeros(2)}, TypeError, "arm of agent_2 must be an int"),
        ({"arm": 0.0, "message": np.zeros(2)}, TypeError, "arm of agent_2 must be an int"),
        ({"arm": 9, "message": np.zeros(2)}, ValueError, r"arm of agent_2 must lie in \[0"),
    ]:
        actions = {a: good for a in env.agents}
        actions["agent_2"] = bad
        with pytest.raises(error, match=match):
            env.step(actions)
    # an arm given as a one-element integer array (SB3's) is an arm
    env.step({a: {"arm": np.array([1]), "message": np.zeros(2)} for a in env.agents})


def test_messages_checked_for_all_agents_at_once_refuse_what_one_agent_check_refuses() -> None:
    from fedbandit_env.envs.actions import ActionParser

    agents = ["a", "b", "c"]
    half_open = ActionParser(agents, n_arms=3, message_dim=2, message_bounds=(-np.inf, 1.0))
    unbounded = ActionParser(agents, n_arms=3, message_dim=2)
    live = set(agents)
    for parser, bad in [
        (half_open, [-np.inf, 0.0]),  # within (-inf, 1] by comparison, but not finite
        (half_open, [0.0, 1.5]),
        (unbounded, [np.inf, 0.0]),
        (unbounded, [np.nan, 0.0]),
    ]:
        actions = {a: {"arm": 0, "message": np.zeros(2)} for a in agents}
        actions["b"] = {"arm": 0, "message": np.array(bad)}
        with pytest.raises(ValueError, match="message of b must be finite and within"):
            parser.parse(actions, agents, live)
    # large finite messages are messages
    big = {a: {"arm": 1, "message": np.array([1e308, 1e308])} for a in agents}
    arms, messages = unbounded.parse(big, agents, live)
    assert arms.tolist() == [1, 1, 1] and np.all(messages == 1e308)
    # agents out of order land in their own rows
    shuffled = {
        a: {"arm": i, "message": np.full(2, float(i))} for i, a in [(2, "c"), (0, "a"), (1, "b")]
    }
    arms, messages = unbounded.parse(shuffled, agents, live)
    assert arms.tolist() == [0, 1, 2] and messages[:, 0].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"problem": "x"}, TypeError, "problem must be a MABProblem"),
        ({"network": "ring"}, TypeError, "network must be a Network"),
        ({"protocol": object()}, TypeError, "protocol must be a Protocol"),
        ({"message_dim": -1}, ValueError, "message_dim must be >= 0, got -1"),
        ({"message_bounds": (1.0, 1.0)}, ValueError, "low < high"),
        ({"render_mode": "rgb"}, ValueError, "render_mode must be None or one of"),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs: dict, error: type, match: str) -> None:
    args = {"problem": PROBLEM, **kwargs}
    with pytest.raises(error, match=match):
        FederatedMABEnv(**args)


@pytest.mark.parametrize("make", ["mab", "linear"])
def test_reset_names_unknown_options_and_refuses_non_dicts(make: str) -> None:
    from fedbandit_env import federated_linear_v0

    env = (
        federated_mab_v0.parallel_env(problem=PROBLEM)
        if make == "mab"
        else federated_linear_v0.parallel_env(n_agents=2, dim=2, horizon=5)
    )
    with pytest.warns(UserWarning, match=r"ignores unknown key\(s\) \['probelm'\]; the env reads"):
        env.reset(seed=0, options={"probelm": PROBLEM})  # a typo is named, not silent
    with pytest.raises(TypeError, match="must be a dict such as"):
        env.reset(seed=0, options=["problem"])  # type: ignore[arg-type]
    env.reset(seed=0, options={})  # empty and None are fine
    env.reset(seed=0, options=None)
