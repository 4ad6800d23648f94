"""The vector env's API: spaces, errors on bad input, autoreset, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from fedbandit_env.policies import Requirements
from fedbandit_env.problems import conflicting
from fedbandit_env.protocols import Broadcast, GammaHops, RandomEdgeGossip, ServerRounds
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.vector import FederatedMABVecEnv, make_vec


def _venv(**kwargs):  # type: ignore[no-untyped-def]
    args = {"protocol": Broadcast(), "horizon": 4, "message_dim": 3, "num_envs": 5}
    return FederatedMABVecEnv(conflicting(4, 3, seed=0), **{**args, **kwargs})


@pytest.mark.parametrize("protocol", [Broadcast(), RandomEdgeGossip(public_dim=1), ServerRounds()])
def test_observations_lie_in_their_spaces(protocol) -> None:  # type: ignore[no-untyped-def]
    venv = _venv(protocol=protocol, message_bounds=(0.0, 1.0))
    obs, _ = venv.reset(seed=0)
    assert obs in venv.observation_space
    for _ in range(4):
        sample = venv.action_space.sample()
        assert sample in venv.action_space
        obs, rewards, terms, truncs, infos = venv.step(sample)
        assert obs in venv.observation_space, sorted(obs)
        assert rewards.shape == terms.shape == truncs.shape == (5, 4)
        assert infos["comm_cost"].shape == (5,)
    assert truncs.all()


def test_bad_actions_are_refused_with_the_entry_named() -> None:
    venv = _venv()
    venv.reset(seed=0)
    ok = np.zeros((5, 4, 3))
    with pytest.raises(ValueError, match=r"shape \(5, 4\)"):
        venv.step(np.zeros((4, 5), int), ok)
    with pytest.raises(ValueError, match=r"arms\[\(2, 1\)\] = 3"):
        arms = np.zeros((5, 4), int)
        arms[2, 1] = 3
        venv.step(arms, ok)
    with pytest.raises(TypeError, match="integers"):
        venv.step(np.zeros((5, 4)), ok)
    with pytest.raises(ValueError, match="required"):
        venv.step(np.zeros((5, 4), int))
    bad = ok.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match=r"messages\[\(1, 2, 0\)\]"):
        venv.step(np.zeros((5, 4), int), bad)
    assert venv.core.t == 0  # nothing stepped


def test_autoreset_next_step_and_disabled() -> None:
    venv = _venv(horizon=2)
    venv.reset(seed=3)
    arms, msgs = np.zeros((5, 4), int), np.zeros((5, 4, 3))
    venv.step(arms, msgs)
    _, _, _, truncs, _ = venv.step(arms, msgs)
    assert truncs.all()
    obs, rewards, _, truncs, infos = venv.step(arms, msgs)  # the reset
    assert not truncs.any() and not rewards.any() and (obs["step"] == 0).all()
    assert (infos["cumulative_regret"] == 0).all()
    off = _venv(horizon=1, autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(RuntimeError, match="before reset"):
        off.step(arms, msgs)
    off.reset(seed=0)
    off.step(arms, msgs)
    with pytest.raises(RuntimeError, match="after the last step"):
        off.step(arms, msgs)
    with pytest.raises(ValueError, match="SAME_STEP"):
        _venv(autoreset_mode=AutoresetMode.SAME_STEP)


def test_seed_list_and_seed_offsets_agree() -> None:
    a, b = _venv(), _venv()
    a.reset(seed=10)
    b.reset(seed=[10, 11, 12, 13, 14])
    arms, msgs = np.ones((5, 4), int), np.zeros((5, 4, 3))
    ra, rb = a.step(arms, msgs)[1], b.step(arms, msgs)[1]
    assert np.array_equal(ra, rb)
    c = _venv()
    c.reset(seed=11)
    assert not np.array_equal(c.step(arms, msgs)[1], ra)


def test_refusals_say_why() -> None:
    with pytest.raises(ValueError, match="different copies"):
        _venv(protocol=GammaHops(2))
    crashing = Scenario(n_agents=3, n_arms=2, horizon=5, setting="flooding", crash=0.1)
    with pytest.raises(ValueError, match="VecAgentCrash needs one-hop"):
        make_vec(crashing, 2, Requirements(message_dim=2))
    linear = Scenario(n_agents=3, n_arms=4, horizon=5, instance="dubey", dim=2)
    with pytest.raises(ValueError, match="linear vector env runs on NumPy only"):
        make_vec(linear, 2, device="cpu")
    with pytest.raises(ValueError, match="num_envs"):
        _venv(num_envs=0)
    with pytest.raises(ValueError, match="no messages"):
        venv = _venv(message_dim=0)
        venv.reset(seed=0)
        venv.step(np.zeros((5, 4), int), np.zeros((5, 4, 3)))


def test_sender_indexed_messages_only_hold_what_someone_heard() -> None:
    scenario = Scenario(n_agents=6, n_arms=3, horizon=5, setting="gossip", graph="ring")
    venv = make_vec(scenario, 8, Requirements(message_dim=2))
    venv.reset(seed=0)
    obs = venv.step(np.zeros((8, 6), int), np.full((8, 6, 2), 0.5))[0]
    heard = obs["mask"].any(axis=1)  # (B, senders)
    assert (heard.sum(axis=1) == 2).all()  # one edge a step
    assert (obs["messages"][~heard] == 0).all() and (obs["messages"][heard] == 0.5).all()


@pytest.mark.parametrize(
    ("seed", "error", "match"),
    [
        (True, TypeError, "takes an int, one int"),
        ("ab", TypeError, "takes an int, one int"),
        ([1], ValueError, r"one seed per env \(2\), got 1"),
        ([1.5, 2], TypeError, "entries are ints or None, got 1.5"),
        ([True, 2], TypeError, "entries are ints or None, got True"),
    ],
)
def test_seeds_that_name_no_env_are_refused(seed: object, error: type, match: str) -> None:
    """``reset(seed=True)`` once ran as seed 1 (issue 64)."""
    s = Scenario(n_agents=3, n_arms=2, horizon=5, setting="neighbours")
    venv = make_vec(s, num_envs=2, needs=Requirements(message_dim=2))
    with pytest.raises(error, match=match):
        venv.reset(seed=seed)  # type: ignore[arg-type]
    venv.reset(seed=[4, None])  # one per env, None drawn fresh: fine


def test_an_action_dict_with_an_unknown_key_is_refused() -> None:
    s = Scenario(n_agents=3, n_arms=2, horizon=5, setting="neighbours")
    venv = make_vec(s, num_envs=2, needs=Requirements(message_dim=2))
    venv.reset(seed=0)
    action = {"arm": np.zeros((2, 3), int), "message": np.zeros((2, 3, 2)), "msg": 1}
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['msg'\]"):
        venv.step(action)
