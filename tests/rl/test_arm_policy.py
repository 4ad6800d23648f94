"""The permutation-equivariant arms policy and the team reward."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO

from fedbandit_env.cli import main
from fedbandit_env.rl import AgentVecEnv, LearnerStack
from fedbandit_env.rl.arm_policy import ArmScoringPolicy, arm_layout
from fedbandit_env.rl.common import scale_box
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers.flatten import flat_box, flatten_observation

M = 4


def _env(setting: str) -> Any:
    eps = 1.0 if "private" in setting else None
    stack = LearnerStack.for_setting(setting, eps)
    scenario = Scenario(
        n_agents=3, n_arms=M, horizon=20, setting=setting, epsilon=eps, instances="train"
    )
    return stack, stack.make_env(scenario)


def _model(policy: Any, setting: str) -> tuple[Any, Any]:
    stack, env = _env(setting)
    space = env.observation_space("agent_0")
    kw = (
        {"policy_kwargs": {"layout": arm_layout(space, True)}} if policy is ArmScoringPolicy else {}
    )
    venv = AgentVecEnv(env, scale=True, message_fn=stack.message_fn)
    model = PPO(policy, venv, n_steps=20, batch_size=30, seed=0, device="cpu", **kw)
    with th.no_grad():  # weights far from SB3's near-uniform start: differences show
        for p in model.policy.parameters():
            p.normal_(0.0, 0.5)
    return model, space


def _observation(setting: str, steps: int = 6) -> dict[str, Any]:
    """A mid-episode observation of agent_0 with unequal statistics on every arm."""
    stack, env = _env(setting)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    messages = setting != "local"
    for _ in range(steps):
        arms = {a: int(rng.integers(M)) for a in env.agents}
        obs, *_ = env.step(
            {a: {"arm": arm, "message": stack.message_fn(a, obs[a])} for a, arm in arms.items()}
            if messages
            else arms
        )
    return dict(obs["agent_0"])


def _permuted(obs: dict[str, Any], perm: np.ndarray) -> dict[str, Any]:
    out = dict(obs)
    for key in ("counts", "means", "private_means"):
        if key in obs:
            out[key] = np.asarray(obs[key])[perm]
    for key in ("messages", "held"):  # a neighbour's means, arm by arm
        if key in obs:
            out[key] = np.asarray(obs[key])[:, perm]
    out["arm"] = int(np.flatnonzero(perm == int(obs["arm"]))[0])
    return out


def _logits_and_value(model: Any, space: Any, obs: dict[str, Any]) -> tuple[np.ndarray, float]:
    offset, factor = scale_box(flat_box(space))
    x = th.as_tensor(flatten_observation(space, obs) * factor + offset)[None]
    with th.no_grad():
        logits = model.policy.get_distribution(x).distribution.logits[0].numpy()
        value = float(model.policy.predict_values(x)[0, 0])
    return logits, value


@pytest.mark.parametrize("setting", ["local", "neighbours", "gossip+private"])
def test_relabelling_the_arms_permutes_the_logits_and_keeps_the_value(setting: str) -> None:
    model, space = _model(ArmScoringPolicy, setting)
    obs = _observation(setting)
    assert len(set(np.asarray(obs["counts"]).tolist())) > 1  # the arms differ
    logits, value = _logits_and_value(model, space, obs)
    assert np.ptp(logits) > 0.1  # not a uniform policy: a permutation would show
    for perm in (np.array([1, 2, 3, 0]), np.array([3, 1, 0, 2])):
        p_logits, p_value = _logits_and_value(model, space, _permuted(obs, perm))
        np.testing.assert_allclose(p_logits, logits[perm], rtol=1e-5, atol=1e-5)
        assert p_value == pytest.approx(value, rel=1e-5, abs=1e-5)


def test_the_same_check_catches_sb3s_mlp_policy() -> None:
    """Power of the test above: an MLP on the flat observation is not equivariant."""
    model, space = _model("MlpPolicy", "neighbours")
    obs = _observation("neighbours")
    logits, _ = _logits_and_value(model, space, obs)
    perm = np.array([1, 2, 3, 0])
    p_logits, _ = _logits_and_value(model, space, _permuted(obs, perm))
    assert np.abs(p_logits - logits[perm]).max() > 1e-2


def test_features_are_the_raw_statistics_whatever_the_scaling() -> None:
    model, space = _model(ArmScoringPolicy, "neighbours")
    obs = _observation("neighbours")
    offset, factor = scale_box(flat_box(space))
    x = th.as_tensor(flatten_observation(space, obs) * factor + offset)[None]
    feats = model.policy.features_extractor.arm_inputs(x)[0].numpy()
    counts, t = np.asarray(obs["counts"], dtype=np.float64), float(obs["step"][0])
    np.testing.assert_allclose(feats[:, 0], obs["means"], atol=1e-5)
    np.testing.assert_allclose(feats[:, 2], 1 / np.sqrt(1 + counts), atol=1e-5)
    np.testing.assert_allclose(feats[:, 3], np.sqrt(np.log1p(t) / (1 + counts)), atol=1e-5)
    senders = np.asarray(obs["mask"]) > 0
    assert senders.any()
    nb = np.asarray(obs["messages"])[senders]
    np.testing.assert_allclose(feats[:, 7], nb.mean(axis=0), atol=1e-5)
    np.testing.assert_allclose(feats[:, 8], nb.max(axis=0), atol=1e-5)
    np.testing.assert_allclose(feats[:, 9], nb.min(axis=0), atol=1e-5)


def test_layout_refuses_an_observation_without_statistics() -> None:
    _, env = _env("local")
    raw = env.env.observation_space("agent_0")  # below LocalStatistics: no counts, no means
    with pytest.raises(ValueError, match="needs 'means'"):
        arm_layout(raw, scale=True)


SMALL = ["--agents", "3", "--arms", "3", "--horizon", "20"]


def _train(out: Path, algo: str, timesteps: int, *flags: str) -> Path:
    argv = ["train", algo, *SMALL, "--timesteps", str(timesteps), "--no-progress"]
    assert main([*argv, "--out", str(out), *flags]) == 0
    return out / "model.zip"


def test_train_with_the_arms_net_saves_loads_and_benches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = SMALL
    out = tmp_path / "m"
    _train(out, "ppo", 120, "--net", "arms", "--setting", "neighbours")
    model = PPO.load(out / "model.zip", device="cpu")
    assert isinstance(model.policy, ArmScoringPolicy)
    bench = ["bench", "--policies", f"ppo:{out / 'model.zip'},random", *small, "--trials", "2"]
    flags = ["--setting", "neighbours", "--held-out", "--no-plot", "--out", str(tmp_path / "b")]
    assert main([*bench, *flags]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["train", "dqn", *small, "--timesteps", "10", "--net", "arms", "--out", str(out)])
    assert "ppo, a2c or recurrent_ppo" in capsys.readouterr().err


def test_the_team_reward_is_minus_the_agents_mean_regret() -> None:
    local = AgentVecEnv(_env("local")[1], reward="own")
    team = AgentVecEnv(_env("local")[1], reward="team")
    mine = AgentVecEnv(_env("local")[1], reward="neg_regret")
    for venv in (local, team, mine):
        venv.seed(5)
        venv.reset()
    arms = np.array([0, 1, 3])
    _, r_local, _, infos = local.step(arms)
    _, r_team, _, _ = team.step(arms)
    _, r_mine, _, _ = mine.step(arms)
    regrets = np.array([info["regret"] for info in infos])
    assert np.ptp(regrets) > 0  # agents on different arms: per-agent and team signals differ
    np.testing.assert_allclose(r_mine, -regrets, rtol=1e-6)
    np.testing.assert_allclose(r_team, np.full(3, -regrets.mean()), rtol=1e-6)
    assert not np.allclose(r_team, r_local)


def test_gossip_ucb_messages_are_read_as_two_per_arm_blocks() -> None:
    """Among Gossip_UCB agents (the learner speaking their protocol) a message is 2M
    numbers: counts, then estimates; each block is summarised per arm, and relabelling the
    arms permutes the features."""
    from gymnasium import spaces as gym_spaces

    from fedbandit_env.rl.single_agent import make_single_agent

    single = make_single_agent(
        others="gossip_ucb", setting="neighbours", n_agents=4, n_arms=M, horizon=30
    )
    layout = arm_layout(single._inner, scale=False)
    assert layout["channels"] == 2 and layout["n_slots"] == 4
    policy = ArmScoringPolicy(
        single.observation_space, gym_spaces.Discrete(M), lambda _: 3e-4, layout=layout
    )
    single.reset(seed=2)
    for arm in [0, 1, 2, 3, 0, 0, 1, 2, 0, 3, 1]:
        _, _, _, _, _ = single.step(arm)
    inner = single._obs["agent_0"]
    senders = np.asarray(inner["mask"]) > 0
    assert senders.any()
    x = th.as_tensor(flatten_observation(single._inner, inner))[None]
    feats = policy.features_extractor.arm_inputs(x)[0].numpy()
    sent = np.asarray(inner["messages"])[senders]
    np.testing.assert_allclose(feats[:, 7], sent[:, :M].mean(axis=0), rtol=1e-5)  # counts
    np.testing.assert_allclose(feats[:, 11], sent[:, M:].mean(axis=0), rtol=1e-5)  # estimates
    perm = np.array([2, 3, 1, 0])
    permuted = _permuted(inner, perm)
    permuted["messages"] = np.concatenate(
        [inner["messages"][:, :M][:, perm], inner["messages"][:, M:][:, perm]], axis=1
    )
    y = th.as_tensor(flatten_observation(single._inner, permuted))[None]
    np.testing.assert_allclose(
        policy.features_extractor.arm_inputs(y)[0].numpy(), feats[perm], rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError, match="k \\* 4 numbers"):
        bad = dict(single._inner.spaces)
        bad["messages"] = gym_spaces.Box(-np.inf, np.inf, (4, 6))
        arm_layout(gym_spaces.Dict(bad), scale=False)


def test_sampled_actions_follow_the_policy_and_replay_from_the_seed() -> None:
    from fedbandit_env.rl.team import model_arms

    model, space = _model(ArmScoringPolicy, "neighbours")
    obs = _observation("neighbours")
    logits, _ = _logits_and_value(model, space, obs)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    assert probs.max() < 0.9  # several arms are likely: sampling shows
    offset, factor = scale_box(flat_box(space))
    n = 4000
    batch = np.tile(flatten_observation(space, obs) * factor + offset, (n, 1))
    arms = model_arms(model, batch, False, np.random.default_rng(0))
    counts = np.bincount(arms, minlength=M)
    sd = np.sqrt(n * probs * (1 - probs))
    assert np.all(np.abs(counts - n * probs) < 5 * sd + 1), (counts, n * probs)
    again = model_arms(model, batch, False, np.random.default_rng(0))
    np.testing.assert_array_equal(arms, again)
    greedy = model_arms(model, batch, True, np.random.default_rng(0))
    assert set(greedy.tolist()) == {int(np.argmax(logits))}


def test_bench_greedy_evaluates_the_most_likely_arm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    small = SMALL
    model = f"a2c:{_train(tmp_path / 'm', 'a2c', 60, '--setting', 'local')}"
    for flags, label, actions in (
        ([], "a2c:m", "sampled"),
        (["--greedy"], "a2c:m:greedy", "greedy"),
    ):
        bench = ["bench", "--policies", model, *small, "--trials", "2", "--setting", "local"]
        folder = tmp_path / actions
        assert main([*bench, *flags, "--no-plot", "--out", str(folder)]) == 0
        row = json.loads((folder / "config.json").read_text())["summary"][0]
        assert (row["policy"], row["actions"]) == (label, actions)
