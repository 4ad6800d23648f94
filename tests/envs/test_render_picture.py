"""``render_mode="rgb_array"`` (issue 53, item 9): a picture of the step - the graph, each
agent coloured by its arm, an arrow for every message heard - with no reward in it, so a
private stack can show it too."""

from __future__ import annotations

import numpy as np

from fedbandit_env import federated_mab_v0
from fedbandit_env.network import Network
from fedbandit_env.protocols import Broadcast, RandomEdgeGossip
from fedbandit_env.wrappers import PrivateRewards


def _env(**kw: object) -> object:
    return federated_mab_v0.parallel_env(
        n_agents=6, n_arms=3, horizon=4, network=Network.ring(6), render_mode="rgb_array", **kw
    )


def _step(env: object, arms: list[int], seed: int = 0) -> np.ndarray:
    env.reset(seed=seed)  # type: ignore[attr-defined]
    dim = env.unwrapped.message_dim  # type: ignore[attr-defined]
    msg = np.zeros(dim, dtype=np.float32)
    actions = {f"agent_{i}": ({"arm": a, "message": msg} if dim else a) for i, a in enumerate(arms)}
    env.step(actions)  # type: ignore[attr-defined]
    return env.render()  # type: ignore[attr-defined,no-any-return]


def test_the_picture_shows_arms_and_who_heard_whom() -> None:
    env = _env(message_dim=2, protocol=Broadcast())
    a = _step(env, [0, 1, 2, 0, 1, 2])
    assert a.shape == (480, 480, 3) and a.dtype == np.uint8
    assert not np.array_equal(a, _step(env, [2, 2, 2, 2, 2, 2]))  # other arms, other colours
    gossip = _env(message_dim=2, protocol=RandomEdgeGossip())
    assert not np.array_equal(a, _step(gossip, [0, 1, 2, 0, 1, 2]))  # one edge, not all
    assert _step(_env(), [0, 1, 2, 0, 1, 2]).shape == (480, 480, 3)  # no messages at all


def test_the_picture_holds_no_reward_so_a_private_stack_shows_it() -> None:
    # the same arms under two seeds (other rewards): the same picture
    env = _env(message_dim=2, protocol=Broadcast())
    assert np.array_equal(
        _step(env, [0, 1, 2, 0, 1, 2], seed=1), _step(env, [0, 1, 2, 0, 1, 2], seed=2)
    )
    private = PrivateRewards(_env(message_dim=2, protocol=Broadcast()), epsilon=1.0)
    assert isinstance(_step(private, [0, 1, 2, 0, 1, 2]), np.ndarray)


def test_the_linear_env_draws_choices_and_rings_each_agents_best() -> None:
    """The linear env's picture: each agent's decision set has its own best vector, so the
    ring marks the agents whose choice had no regret this step."""
    from fedbandit_env import federated_linear_v0
    from fedbandit_env.envs.render import render_network
    from fedbandit_env.problems.linear import dubey_synthetic

    env = federated_linear_v0.parallel_env(
        problem=dubey_synthetic(4, dim=2, set_size=3, seed=0), horizon=3,
        network=Network.ring(4), protocol=Broadcast(), message_dim=1, render_mode="rgb_array",
    )  # fmt: skip
    env.reset(seed=0)
    msg = np.zeros(1, dtype=np.float32)
    _, _, _, _, infos = env.step({a: {"arm": 0, "message": msg} for a in env.agents})
    picture = env.render()
    assert picture.shape == (480, 480, 3) and picture.dtype == np.uint8
    best = np.array([infos[a]["regret"] <= 1e-12 for a in env.possible_agents])
    heard = np.asarray(Network.ring(4).adjacency, dtype=bool)
    expected = render_network(Network.ring(4), np.zeros(4, int), heard, 1, 3, best)
    assert np.array_equal(picture, expected)
    assert not np.array_equal(  # the rings are part of the picture
        picture, render_network(Network.ring(4), np.zeros(4, int), heard, 1, 3, ~best)
    )
