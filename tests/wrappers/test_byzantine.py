"""Byzantine: chosen agents send adversarial messages; honest agents are scored."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import FixedArm, IndependentTeam
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import Byzantine, Gossip, LocalStatistics, PrivateRewards
from fedbandit_env.wrappers.audit import play


def _env(**kw: Any) -> Any:
    kw = {"message_dim": 4, "horizon": 30, "n_arms": 2, **kw}
    return federated_mab_v0.parallel_env(n_agents=5, network="ring", seed=0, **kw)


STACKS = {
    "random": lambda: Byzantine(_env(), 2, "random", low=-1.0, high=1.0),
    "boost": lambda: Byzantine(_env(), [0], "boost"),
    "over_gossip": lambda: Byzantine(Gossip(_env(), public_dim=2), 1, "sign_flip"),
    "gossip_over": lambda: Gossip(Byzantine(_env(), 1, "random"), public_dim=2),
    "private_over": lambda: PrivateRewards(Byzantine(_env(), 1, "constant", value=5.0), 1.0),
    "statistics_over": lambda: LocalStatistics(Byzantine(_env(), 1, "random")),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stacks_pass_api_and_full_episode_determinism(name: str) -> None:
    check_parallel_env(STACKS[name], num_cycles=30)
    check_determinism(STACKS[name], seed=1)


class _Says(FixedArm):
    """Pulls its agent index mod 2 and sends [1, 2, 3, 4]."""

    def reset(self, spec: Any, seed: Any = None) -> None:
        super().reset(spec, seed)
        self.arm = spec.index % 2

    def act(self, observation: Any) -> Any:
        return {"arm": self.arm, "message": np.array([1, 2, 3, 4], np.float32)}


def _heard(env: Any, seed: int = 0) -> Any:
    episode = play(env, IndependentTeam(lambda: _Says()), seed)
    return episode, episode.observations[1]["agent_0"]["messages"]  # ring: hears 1 and 4


@pytest.mark.parametrize(
    ("behaviour", "kwargs", "expected"),
    [
        ("constant", {"value": 1e6}, [1e6] * 4),
        ("constant", {}, [1.0] * 4),
        ("sign_flip", {}, [-1.0, -2.0, -3.0, -4.0]),
        ("boost", {"arm": 1, "low": 0.0, "high": 1.0}, [0.0, 1.0, 0.0, 1.0]),
        (lambda m, t, rng: m[::-1].copy(), {}, [4.0, 3.0, 2.0, 1.0]),
    ],
)
def test_each_behaviour_rewrites_only_the_liars(behaviour: Any, kwargs: Any, expected: Any) -> None:
    _, heard = _heard(Byzantine(_env(), ["agent_4"], behaviour, **kwargs))
    np.testing.assert_allclose(heard[4], expected)
    np.testing.assert_array_equal(heard[1], [1, 2, 3, 4])  # an honest neighbour


def test_random_stays_within_bounds_and_is_uniform() -> None:
    """30 steps x 4 entries x 2 liars: mean within 4 sd of 0 for U(-1, 1) (sd 1/sqrt(3n))."""
    env = Byzantine(_env(), 2, "random", low=-1.0, high=1.0)
    episode = play(env, IndependentTeam(lambda: _Says()), 0)
    sent = np.array(
        [
            [o["agent_2"]["messages"][3], o["agent_0"]["messages"][4]]
            for o in episode.observations[1:]
        ]
    )
    assert sent.min() >= -1.0 and sent.max() <= 1.0
    assert abs(sent.mean()) < 4 / np.sqrt(3 * sent.size)


def test_boost_targets_the_worst_arm_by_default() -> None:
    env = Byzantine(_env(n_arms=4, message_dim=8), [3], "boost")
    env.reset(seed=0)
    worst = int(np.argmax(env.unwrapped.problem.gaps))
    obs = env.step({a: {"arm": 0, "message": np.zeros(8, np.float32)} for a in env.agents})[0]
    sent = obs["agent_2"]["messages"][3]
    assert sent.tolist() == [float(k % 4 == worst) for k in range(8)]


def test_messages_are_clipped_to_the_env_bounds() -> None:
    _, heard = _heard(Byzantine(_env(message_bounds=(-5.0, 5.0)), [4], "constant", value=1e6))
    assert heard[4].tolist() == [5.0] * 4


def test_liars_are_scored_as_the_honest_mean_and_keep_their_own_regret() -> None:
    episode, _ = _heard(Byzantine(_env(), [0, 4], "sign_flip"))
    last = episode.infos[-1]
    honest = np.mean([last[a]["cumulative_regret"] for a in ("agent_1", "agent_2", "agent_3")])
    for liar in ("agent_0", "agent_4"):
        assert last[liar]["byzantine"] and last[liar]["cumulative_regret"] == pytest.approx(honest)
        assert last[liar]["own_cumulative_regret"] != last[liar]["cumulative_regret"]
    assert not last["agent_1"]["byzantine"] and last["agent_1"]["corrupted"] == 2


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((5, "random"), {}, ValueError, r"count of Byzantine agents must lie in \[1, 4\]"),
        ((0, "random"), {}, ValueError, "count of Byzantine agents"),
        ((["agent_9"], "random"), {}, ValueError, "unknown agent"),
        ((["agent_1", 1], "random"), {}, ValueError, "listed twice"),
        (([0, 1, 2, 3, 4], "random"), {}, ValueError, "between 1 and 4"),
        ((True, "random"), {}, TypeError, "names, indices or a count"),
        ((1, "shout"), {}, ValueError, "behaviour must be one of"),
        ((1, "random"), {"low": 1.0, "high": 0.0}, ValueError, "low <= high"),
        ((1, "random"), {"high": np.inf}, ValueError, "finite"),
        ((1, "boost"), {"arm": 2}, ValueError, r"arm must lie in \[0, 2\)"),
    ],
)
def test_bad_arguments_are_refused(args: Any, kwargs: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        Byzantine(_env(), *args, **kwargs)


def test_boost_keeps_the_header_and_needs_one_block() -> None:
    env = Byzantine(_env(n_arms=2, message_dim=3), [4], "boost", arm=0)
    env.reset(seed=0)
    talk = {a: {"arm": 0, "message": np.array([7, 8, 9], np.float32)} for a in env.agents}
    obs = env.step(talk)[0]
    assert obs["agent_0"]["messages"][4].tolist() == [7.0, 1.0, 0.0]  # flag kept, arm 0 up
    with pytest.raises(ValueError, match="needs a block of M = 2"):
        Byzantine(_env(message_dim=1), 1, "boost")
