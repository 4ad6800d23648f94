"""The vector forms of the fault wrappers (liars, crashes, clipping): a function attack
against its PettingZoo twin, what an observation shows, and the refusals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env.policies import Requirements
from fedbandit_env.problems import MABProblem, conflicting
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_vector_replay
from fedbandit_env.vector import FederatedMABVecEnv
from fedbandit_env.vector.wrappers import VecAgentCrash, VecByzantine, VecClipRewards
from fedbandit_env.wrappers import Byzantine


def _noisy(message: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
    return message * t + rng.normal(size=message.shape)


def test_a_function_attack_replays_with_its_stream() -> None:
    """A user's attack ``(message, t, rng)``: called per env and liar with that env's
    stream at the layer's depth, so the lies are the PettingZoo wrapper's."""
    scenario = Scenario(n_agents=4, n_arms=3, horizon=15, setting="neighbours", graph="ring")
    check_vector_replay(
        scenario, Requirements(message_dim=3), num_envs=3, seed=1,
        wrap_env=lambda env: Byzantine(env, [1, 3], _noisy, low=-2.0, high=2.0),
        wrap_vec=lambda venv: VecByzantine(venv, [1, 3], _noisy, low=-2.0, high=2.0),
    )  # fmt: skip


def _venv(**kwargs: Any) -> FederatedMABVecEnv:
    kw: dict[str, Any] = {"horizon": 6, "message_dim": 4, "num_envs": 3, **kwargs}
    return FederatedMABVecEnv(conflicting(5, 3, seed=0), message_bounds=(-1.0, 1.0), **kw)


def test_boost_promotes_each_instance_worst_arm_and_keeps_the_header() -> None:
    venv = VecByzantine(_venv(), [4], "boost", low=-1.0, high=1.0)
    venv.reset(seed=0)
    sent = np.full((3, 5, 4), 0.25)
    obs = venv.step(np.zeros((3, 5), int), sent)[0]
    worst = int(np.argmax(venv.unwrapped.core.gaps[0]))
    lie = obs["messages"][0, 4]
    assert lie[0] == np.float32(0.25)  # D mod M = 1 header entry kept
    assert lie[1 + worst] == 1.0 and np.sum(lie[1:] == -1.0) == 2
    assert np.all(obs["messages"][0, :4] == np.float32(0.25))  # honest agents untouched


def test_lies_are_clipped_to_the_message_bounds() -> None:
    venv = VecByzantine(_venv(), 2, "constant", value=50.0)
    venv.reset(seed=0)
    obs, _, _, _, infos = venv.step(np.zeros((3, 5), int), np.zeros((3, 5, 4)))
    assert np.all(obs["messages"][:, 3:] == 1.0) and infos["corrupted"].tolist() == [2, 2, 2]


def test_liars_are_scored_out_of_the_team_regret() -> None:
    venv = VecByzantine(_venv(), [0], "sign_flip")
    venv.reset(seed=0)
    arms = np.tile(np.array([0, 1, 2, 0, 1]), (3, 1))
    _, _, _, _, infos = venv.step(arms, np.zeros((3, 5, 4)))
    honest = infos["own_regret"][:, 1:].mean(axis=1)
    np.testing.assert_array_equal(infos["regret"][:, 0], honest)
    np.testing.assert_array_equal(infos["regret"][:, 1:], infos["own_regret"][:, 1:])


def test_a_crashed_agent_neither_sends_nor_hears() -> None:
    venv = VecAgentCrash(_venv(), crash=1.0, agents=[2])
    venv.reset(seed=0)
    obs, _, _, _, infos = venv.step(np.zeros((3, 5), int), np.ones((3, 5, 4)))
    assert not obs["mask"][:, :, 2].any() and not obs["mask"][:, 2, :].any()
    assert not obs["messages"][:, 2].any() and obs["messages"][:, 0].all()
    assert infos["agents_down"].tolist() == [1, 1, 1] and infos["crashed"][:, 2].all()


def test_crash_recover_flags_the_step_an_agent_returns() -> None:
    venv = VecAgentCrash(_venv(horizon=200, num_envs=2), crash=0.3, recover=0.5)
    venv.reset(seed=3)
    came_back = 0
    for _ in range(200):
        before = venv.down.copy()
        infos = venv.step(np.zeros((2, 5), int), np.ones((2, 5, 4)))[4]
        assert np.array_equal(infos["recovered"], before & ~infos["crashed"])
        came_back += int(infos["recovered"].sum())
    assert came_back > 0


def test_clipped_observations_stay_inside_the_narrowed_space() -> None:
    problem = MABProblem([[0.5, 0.2], [0.4, 0.9]], "gaussian", 5.0)
    venv = VecClipRewards(FederatedMABVecEnv(problem, horizon=30, num_envs=4), 0.0, 1.0)
    obs, _ = venv.reset(seed=0)
    space = venv.observation_space
    assert space.contains(obs)
    clipped = 0
    for t in range(30):
        obs, rewards, *_ = venv.step(np.full((4, 2), t % 2))
        assert space.contains(obs)
        clipped += int(np.sum((rewards == 0.0) | (rewards == 1.0)))
    assert clipped > 0  # sigma 5: the range bites


def test_refusals_name_the_fault() -> None:
    with pytest.raises(ValueError, match="behaviour must be one of"):
        VecByzantine(_venv(), 1, "shout")
    with pytest.raises(ValueError, match="block of M = 3"):
        VecByzantine(_venv(message_dim=2), 1, "boost")
    with pytest.raises(ValueError, match="between 1 and 4"):
        VecByzantine(_venv(), [0, 1, 2, 3, 4], "constant")
    with pytest.raises(ValueError, match="crash must"):
        VecAgentCrash(_venv(), crash=1.5)
    with pytest.raises(ValueError, match="finite low < high"):
        VecClipRewards(_venv(), 1.0, 0.0)
    with pytest.raises(ValueError, match="carries messages"):
        VecAgentCrash(_venv(message_dim=0), crash=0.1)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_a_sender_nobody_hears_shows_no_row(p: float) -> None:
    """``VecMessageLoss``' sender-indexed ``messages``: the row of a sender whose every
    message was lost is zeros (no layer above, and no policy reading the array, sees
    what nobody got); every other row is what the sender sent, as float32. Steps where
    every sender is still heard (the rows handed on as they came) and steps where one is
    not both occur at ``p = 0.5``."""
    from fedbandit_env.problems import conflicting
    from fedbandit_env.vector import FederatedMABVecEnv
    from fedbandit_env.vector.wrappers import VecMessageLoss

    b, n, d = 2, 4, 3
    venv = VecMessageLoss(FederatedMABVecEnv(conflicting(n, 3, seed=0), horizon=40,
                                             message_dim=d, num_envs=b), p=p)  # fmt: skip
    venv.reset(seed=1)
    rng = np.random.default_rng(2)
    kinds = set()
    for _ in range(30):
        sent = rng.random((b, n, d))
        obs = venv.step(rng.integers(3, size=(b, n)), sent)[0]
        heard = obs["mask"].astype(bool).any(axis=1)  # (B, N): someone got the sender's
        assert not obs["messages"][~heard].any()
        assert np.array_equal(obs["messages"][heard], sent.astype(np.float32)[heard])
        kinds.add(bool(heard.all()))
    assert kinds == ({True} if p == 0.0 else {False} if p == 1.0 else {True, False})
