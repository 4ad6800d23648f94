"""Independent random streams: no consumer shares a generator with another (issue 13).

Each test compares the first draws of two streams: two PCG64 streams from different
seed material agree on 8 successive 64-bit outputs with probability ~2^-512, while two
copies of one stream always do, so these tests fail exactly when streams coincide.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import FixedArm, IndependentTeam
from fedbandit_env.seeding import (
    env_generators,
    model_generator,
    team_generators,
    wrapper_generator,
)
from fedbandit_env.wrappers import LocalStatistics, MessageLoss, PrivateRewards


def _head(rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int(x) for x in rng.bit_generator.random_raw(8))


def test_env_wrapper_and_team_streams_are_distinct_for_every_pair_of_seeds() -> None:
    heads: dict[tuple[int, ...], str] = {}
    for seed in range(6):
        reward, protocol = env_generators(seed)
        named = {
            f"reward({seed})": reward,
            f"protocol({seed})": protocol,
            **{f"wrapper({seed}, {d})": wrapper_generator(seed, d) for d in range(3)},
            **{f"agent({seed}, {i})": g for i, g in enumerate(team_generators(seed, 4))},
            f"model({seed})": model_generator(seed),
        }
        for name, rng in named.items():
            head = _head(rng)
            assert head not in heads, f"{name} repeats {heads.get(head)}"
            heads[head] = name


def test_the_documented_loop_gives_no_agent_an_env_stream() -> None:
    # env.reset(seed=0); team.reset(env, seed=0): the pattern in the docstrings
    env = federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=4, message_dim=1)
    team = IndependentTeam(FixedArm)
    env.reset(seed=0)
    team.reset(env, seed=0)
    reward, protocol = env_generators(0)
    env_heads = {_head(reward), _head(protocol), _head(wrapper_generator(0, 0))}
    for i in range(3):
        agent = np.random.default_rng(team_generators(0, 3)[i])
        assert _head(agent) not in env_heads


def test_private_rewards_noise_is_not_the_protocols_generator() -> None:
    base = federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=8, message_dim=2)
    env = PrivateRewards(base, epsilon=1.0)
    env.reset(seed=5)
    noise = _head(env._rng)
    assert noise != _head(env_generators(5)[1])
    assert noise == _head(wrapper_generator(5, 0))


def test_two_random_wrappers_in_one_stack_draw_from_different_streams() -> None:
    """PrivateRewards' noise and MessageLoss's losses, two layers apart: different
    streams (PrivateRewards twice in one stack is refused: it has no meaning)."""
    base = federated_mab_v0.parallel_env(n_agents=2, n_arms=2, horizon=8, message_dim=1)
    inner = PrivateRewards(base, epsilon=1.0)
    outer = MessageLoss(LocalStatistics(inner), 0.5)
    outer.reset(seed=1)
    assert (inner.depth, outer.depth) == (0, 2)
    assert _head(inner._rng) != _head(outer._rng)
    with pytest.raises(ValueError, match="already wrapped in PrivateRewards"):
        PrivateRewards(LocalStatistics(inner), epsilon=1.0, clip=(-5.0, 5.0))


def test_unseeded_resets_spawn_fresh_streams_that_never_meet_the_named_ones() -> None:
    env = federated_mab_v0.parallel_env(n_agents=2, n_arms=2, horizon=2)
    env.reset(seed=3)
    keys = set()
    for _ in range(4):
        env.reset()
        keys.add(env._reward_rng.bit_generator.seed_seq.spawn_key)
    named = {(0,), (1,), *((2, d) for d in range(4)), *((3, i) for i in range(4))}
    assert keys.isdisjoint(named) and len(keys) == 4
    assert all(len(k) == 1 for k in keys)
    assert not any(a == b for a, b in itertools.combinations(keys, 2))
