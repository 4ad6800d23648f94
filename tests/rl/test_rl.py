"""Learned policies: Gymnasium / stable-baselines3 adapters, reproducible training, and a
trained model evaluated by the same runner as the reference policies."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

from baselines import make_team
from fedbandit_env import federated_mab_v0
from fedbandit_env.rl import AgentVecEnv, ModelTeam, SingleAgentEnv
from fedbandit_env.runner import run_trials
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import LocalStatistics

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3.common.env_checker import check_env as sb3_check_env  # noqa: E402

GOSSIP_PRIVATE = Scenario(n_agents=4, n_arms=3, horizon=40)


def _private_gossip_env():  # type: ignore[no-untyped-def]
    """Zhu et al.'s stack: random-edge gossip with public counts, private rewards."""
    needs = make_team("fed_ucb", epsilon=1.0).requirements(4, 3)
    return GOSSIP_PRIVATE.make_env(needs)


@pytest.mark.parametrize("stack", ["plain", "statistics", "gossip_private"])
def test_single_agent_view_passes_gymnasium_and_sb3_checkers(stack: str) -> None:
    if stack == "gossip_private":
        env, others = _private_gossip_env(), make_team("fed_ucb", epsilon=1.0)
    else:
        env = GOSSIP_PRIVATE.make_env()
        env = LocalStatistics(env) if stack == "statistics" else env
        others = make_team("local_ucb")
    single = SingleAgentEnv(env, others, agent="agent_1")
    gym_check_env(single, skip_render_check=True)
    sb3_check_env(single, warn=True)
    obs, _ = single.reset(seed=0)
    assert single.observation_space.contains(obs)


def test_single_agent_view_replays_with_a_seed_and_refuses_bad_arms() -> None:
    def episode(seed: int) -> list[float]:
        single = SingleAgentEnv(_private_gossip_env(), make_team("fed_ucb", epsilon=1.0))
        single.reset(seed=seed)
        return [single.step(k % 3)[1] for k in range(30)]

    assert episode(4) == episode(4) != episode(5)
    single = SingleAgentEnv(GOSSIP_PRIVATE.make_env(), make_team("random"))
    single.reset(seed=0)
    with pytest.raises(ValueError, match="action must be an arm"):
        single.step(3)


def test_agent_vec_env_steps_resets_and_reports_terminal_observations() -> None:
    venv = AgentVecEnv(_private_gossip_env())
    venv.seed(1)
    first = venv.reset()
    assert first.shape == (4, venv.observation_space.shape[0])
    for _ in range(GOSSIP_PRIVATE.horizon - 1):
        obs, rewards, dones, infos = venv.step(np.array([0, 1, 2, 0]))
        assert not dones.any() and rewards.dtype == np.float32
    obs, rewards, dones, infos = venv.step(np.array([0, 1, 2, 0]))
    assert dones.all() and all(i["TimeLimit.truncated"] for i in infos)
    assert not np.array_equal(infos[0]["terminal_observation"], obs[0])  # obs is the reset one
    venv.seed(1)
    np.testing.assert_array_equal(venv.reset(), first)


def _trained_parameters(algo: str, seed: int) -> list[np.ndarray]:
    if algo == "ppo":
        venv = AgentVecEnv(LocalStatistics(GOSSIP_PRIVATE.make_env()))
        model = sb3.PPO("MlpPolicy", venv, n_steps=16, batch_size=32, n_epochs=2, seed=seed)
        model.learn(total_timesteps=128)
    else:
        single = SingleAgentEnv(_private_gossip_env(), make_team("fed_ucb", epsilon=1.0))
        model = sb3.DQN("MlpPolicy", single, learning_starts=16, train_freq=4, seed=seed)
        model.learn(total_timesteps=96)
    return [p.detach().numpy().copy() for p in model.policy.parameters()]


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_same_seed_training_gives_identical_parameters(algo: str) -> None:
    a, b, c = (_trained_parameters(algo, s) for s in (7, 7, 8))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, z) for x, z in zip(a, c, strict=True))


@pytest.mark.slow
def test_a_tiny_ppo_run_learns_below_random_and_is_evaluated_like_a_reference() -> None:
    easy = Scenario(n_agents=4, n_arms=4, instance="homogeneous", horizon=50, seed=2)
    assert easy.problem().min_gap > 0.1  # an easy instance: one arm clearly best
    venv = AgentVecEnv(LocalStatistics(easy.make_env()))
    model = sb3.PPO("MlpPolicy", venv, n_steps=64, batch_size=64, seed=0, learning_rate=3e-3)
    model.learn(total_timesteps=8000)
    curves = {
        name: run_trials(
            lambda: LocalStatistics(easy.make_env()),
            team,
            n_trials=5,
            seed=1,
            progress=False,
            label=name,
        )
        for name, team in (
            ("ppo", lambda: ModelTeam(model, name="ppo")),
            ("random", functools.partial(make_team, "random")),
        )
    }
    ppo, rand = (curves[n].final_per_agent.mean() for n in ("ppo", "random"))
    print(f"per-agent regret at T=50: ppo {ppo:.2f}, random {rand:.2f}")
    assert ppo < 0.5 * rand, (ppo, rand)


def test_bench_evaluates_a_saved_model_through_its_stack(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    from fedbandit_env.cli import main
    from fedbandit_env.rl import LearnerStack

    scenario = Scenario(n_agents=3, n_arms=2, horizon=30, protocol="broadcast")
    stack = LearnerStack(epsilon=1.0, share_means=True)
    venv = AgentVecEnv(stack.make_env(scenario), message_fn=stack.message_fn)
    model = sb3.PPO("MlpPolicy", venv, n_steps=8, batch_size=24, seed=0)
    model.learn(total_timesteps=24)
    path = tmp_path / "tiny.zip"  # type: ignore[operator]
    model.save(path)
    stack.save(path)
    argv = ["bench", "--agents", "3", "--arms", "2", "--horizon", "30", "--trials", "2"]
    argv += ["--protocol", "broadcast", "--no-plot", "--no-progress", "--out", str(tmp_path)]
    assert main([*argv, "--policies", f"ppo:{path},local_ucb"]) == 0
    assert "ppo:tiny" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # 4 arms: not the setting it was trained for
        main([*argv[:4], "4", *argv[5:], "--policies", f"ppo:{path}", "--overwrite"])
    assert "evaluate it on the setting it was trained for" in capsys.readouterr().err


def test_the_single_agent_view_is_registered_with_gymnasium() -> None:
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    env = gym.make("fedbandit/FederatedMABSingle-v0", n_agents=3, n_arms=4, horizon=20)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=1)
    first = env.unwrapped.env.unwrapped.problem.local_means.copy()
    env.reset(seed=2)  # train instances: a new one per episode seed
    assert (env.unwrapped.env.unwrapped.problem.local_means != first).any()
    assert env.observation_space.contains(obs)


def test_agent_vec_env_batches_several_env_copies() -> None:
    """Two copies of a distribution env: 2 N sub-envs; copy c's first reset is seeded
    with s + c N, so the copies play different instances; each copy truncates and
    resets on its own schedule; SB3's PPO trains on it and is reproducible."""
    from stable_baselines3 import PPO

    from fedbandit_env.problems.distribution import ProblemDistribution

    dist = ProblemDistribution.conflicting(3, 3, 0.34, 0.1)

    def make() -> Any:
        return federated_mab_v0.FederatedMABEnv(dist, horizon=4)

    venv = AgentVecEnv([make(), make()])
    assert venv.num_envs == 6
    venv.seed(5)
    obs = venv.reset()
    assert obs.shape[0] == 6
    instances = [info["instance"] for info in venv.reset_infos]
    assert instances[:3] == [instances[0]] * 3 and instances[3] != instances[0]
    for _ in range(3):
        _, _, dones, _ = venv.step(np.zeros(6, dtype=np.int64))
        assert not dones.any()
    _, _, dones, infos = venv.step(np.zeros(6, dtype=np.int64))
    assert dones.all() and all("terminal_observation" in i for i in infos)
    assert venv.get_attr("horizon") == [4] * 6

    def trained(seed: int) -> np.ndarray:
        v = AgentVecEnv([make(), make()])
        model = PPO("MlpPolicy", v, n_steps=8, batch_size=16, seed=seed, device="cpu")
        model.learn(48)
        return np.concatenate([p.detach().numpy().ravel() for p in model.policy.parameters()])

    np.testing.assert_array_equal(trained(1), trained(1))
    with pytest.raises(ValueError, match="distinct env objects"):
        env = make()
        AgentVecEnv([env, env])
    with pytest.raises(ValueError, match="copy 1 differs"):
        AgentVecEnv([make(), federated_mab_v0.parallel_env(n_agents=4, n_arms=3, horizon=4)])


def test_supersuit_trains_a_seeded_ppo_reproducibly() -> None:
    """SuperSuit's PettingZoo -> SB3 pipeline on ``FlattenObservations(ArmActions(env))``
    (messages filled by the learner stack) takes ``PPO(seed=...)`` through
    ``supersuit_vec_env`` (SuperSuit's own ``ConcatVecEnv`` has no ``seed()``: SB3 raises
    ``AttributeError``), and two trainings from one seed give the same parameters."""
    ss = pytest.importorskip("supersuit")
    import torch

    from fedbandit_env.rl import LearnerStack
    from fedbandit_env.rl.sb3 import supersuit_vec_env
    from fedbandit_env.wrappers import ArmActions, FlattenObservations

    torch.set_num_threads(1)
    stack = LearnerStack.for_setting("neighbours")
    scenario = Scenario(n_agents=3, n_arms=3, horizon=10, setting="neighbours", instances="train")

    def make() -> Any:
        return FlattenObservations(ArmActions(stack.make_env(scenario), stack.message_fn))

    raw = ss.concat_vec_envs_v1(
        ss.pettingzoo_env_to_vec_env_v1(make()), 2, num_cpus=0, base_class="stable_baselines3"
    )
    with pytest.raises(AttributeError, match="seed"):  # the route this helper mends
        sb3.PPO("MlpPolicy", raw, n_steps=10, batch_size=30, device="cpu", seed=0)

    def train(seed: int) -> list[Any]:
        venv = supersuit_vec_env(make(), copies=2)
        model = sb3.PPO("MlpPolicy", venv, n_steps=10, batch_size=30, device="cpu", seed=seed)
        model.learn(120)
        assert venv.num_envs == 6 and model.num_timesteps >= 120
        return [p.detach().clone() for p in model.policy.parameters()]

    first, again, other = train(0), train(0), train(1)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_the_learners_means_go_out_as_messages() -> None:
    from fedbandit_env.rl import LearnerStack
    from fedbandit_env.wrappers import ArmActions

    stack = LearnerStack.for_setting("neighbours")
    scenario = Scenario(n_agents=3, n_arms=3, horizon=10, setting="neighbours", instances="train")
    # the learners' means go out as messages: what agent_1 hears is agent_0's means
    arms = ArmActions(stack.make_env(scenario), stack.message_fn)
    obs, _ = arms.reset(seed=0)
    for _ in range(5):
        sent = stack.message_fn("agent_0", obs["agent_0"])
        obs, *_ = arms.step(dict.fromkeys(arms.agents, 0))
    assert sent.sum() > 0 and np.allclose(obs["agent_1"]["messages"][0], sent)


def _reset_as_single_agent_env(env: Any, team: Any, seed: int) -> Any:
    """Reset ``env`` and ``team`` from ``seed`` the way ``SingleAgentEnv.reset`` does."""
    from fedbandit_env.seeding import int_seed, spawn

    env_part, team_part = spawn(seed, 2)
    obs, _ = env.reset(seed=int_seed(env_part))
    team.reset(env, seed=int(np.random.default_rng(team_part).integers(2**32)))
    return obs


@pytest.mark.parametrize(
    ("others", "setting"), [("gossip_ucb", "neighbours"), ("fed_ucb", "gossip+private")]
)
def test_a_learner_speaking_the_teams_protocol_replays_the_team(others: str, setting: str) -> None:
    """A learner among Gossip_UCB (Fed_UCB) agents that pulls what its team member would
    have pulled is that member: its whole view replays a pure team run on the same seeds
    (the messages it sends are the member's, so everyone else's state matches too)."""
    from fedbandit_env.rl.single_agent import make_single_agent

    eps = 1.0 if "private" in setting else None
    single = make_single_agent(
        others=others, setting=setting, epsilon=eps, n_agents=4, n_arms=3, horizon=40
    )
    assert single.speak == "team" and single.observation_space.shape is not None
    env, team, seed = single.env, single.others, 11
    obs = _reset_as_single_agent_env(env, team, seed)
    arms, views = [], [single._view(obs["agent_0"])]
    for _ in range(40):
        actions = team.act(obs)
        arms.append(int(actions["agent_0"]["arm"]))
        obs, *_ = env.step(actions)
        views.append(single._view(obs["agent_0"]))
    assert len(set(arms[3:])) > 1  # the replayed pulls are not one arm

    view, _ = single.reset(seed=seed)
    np.testing.assert_array_equal(view, views[0])
    for t, arm in enumerate(arms, start=1):
        view, *_ = single.step(arm)
        np.testing.assert_array_equal(view, views[t], err_msg=f"step {t}")


def test_a_learner_among_gossip_ucb_may_pull_anything() -> None:
    """Gossip_UCB's member for the learner keeps a state of pulls it did not choose; an
    arm never pulled (possible only then) gets an infinite index instead of 0 / 0."""
    from fedbandit_env.rl.single_agent import make_single_agent

    single = make_single_agent(
        others="gossip_ucb", setting="gossip", n_agents=4, n_arms=3, horizon=30
    )
    single.reset(seed=0)
    for _ in range(30):
        _, _, _, truncated, info = single.step(0)
    assert truncated and info["cumulative_regret"] >= 0


def test_learner_among_a_team_sees_what_it_trained_on() -> None:
    """The same deterministic model, acting for agent_0 among Gossip_UCB agents, sees the
    same observations in training (SingleAgentEnv) and in evaluation (LearnerAmong)."""
    from fedbandit_env.rl import LearnerAmong
    from fedbandit_env.rl.single_agent import make_single_agent

    class Hash:  # a deterministic function of the observation, different arms over time
        def predict(self, obs: np.ndarray, deterministic: bool = True) -> tuple[Any, None]:
            return (np.floor(obs.sum(axis=1) * 7).astype(int) % 3), None

    single = make_single_agent("gossip_ucb", "neighbours", n_agents=4, n_arms=3, horizon=30)
    seed = 4
    view, _ = single.reset(seed=seed)
    trained = [view]
    for _ in range(30):
        view, *_ = single.step(int(Hash().predict(view[None])[0][0]))
        trained.append(view)

    env = single.env
    team = LearnerAmong(Hash(), make_team("gossip_ucb"))
    obs = _reset_as_single_agent_env(env, team, seed)
    evaluated, arms = [single._view(obs["agent_0"])], []
    for _ in range(30):
        actions = team.act(obs)
        arms.append(actions["agent_0"]["arm"])
        obs, *_ = env.step(actions)
        evaluated.append(single._view(obs["agent_0"]))
    assert len(set(arms)) > 1
    np.testing.assert_array_equal(np.array(evaluated), np.array(trained))


def test_sb3_used_directly_gets_one_torch_thread() -> None:
    import torch

    from fedbandit_env.rl.sb3 import supersuit_vec_env
    from fedbandit_env.wrappers import ArmActions, FlattenObservations

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        AgentVecEnv(federated_mab_v0.parallel_env(n_agents=2, n_arms=2, horizon=3))
        assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        AgentVecEnv(
            federated_mab_v0.parallel_env(n_agents=2, n_arms=2, horizon=3), torch_threads=None
        )
        assert torch.get_num_threads() == 2  # left alone when asked
        env = FlattenObservations(ArmActions(federated_mab_v0.parallel_env(n_agents=2, n_arms=2)))
        supersuit_vec_env(env, torch_threads=1)
        assert torch.get_num_threads() == 1
        with pytest.raises(ValueError, match="threads must be an int >= 1 or None, got 0"):
            AgentVecEnv(federated_mab_v0.parallel_env(n_agents=2, n_arms=2), torch_threads=0)
    finally:
        torch.set_num_threads(before)


def test_agent_vec_env_cuts_episodes_at_sampled_lengths() -> None:
    """episode_lengths: every copy's episode ends (truncated) at a length drawn from
    low..high, a new one each episode, the same ones for the same seed."""

    def lengths(seed: int) -> list[int]:
        make = functools.partial(federated_mab_v0.parallel_env, n_agents=2, n_arms=2, horizon=40)
        venv = AgentVecEnv([make(), make()], episode_lengths=(5, 40))
        venv.seed(seed)
        venv.reset()
        out, t = [], np.zeros(2, dtype=int)
        for _ in range(400):
            _, _, dones, infos = venv.step(np.zeros(4, dtype=int))
            t += 1
            for c in range(2):
                if dones[2 * c]:
                    assert dones[2 * c : 2 * c + 2].all()
                    assert infos[2 * c]["TimeLimit.truncated"] is True
                    out.append(int(t[c]))
                    t[c] = 0
        return out

    drawn = lengths(3)
    assert min(drawn) >= 5 and max(drawn) <= 40 and len(set(drawn)) > 5
    assert drawn == lengths(3) and drawn != lengths(4)
    with pytest.raises(ValueError, match="episode_lengths"):
        AgentVecEnv(federated_mab_v0.parallel_env(horizon=10), episode_lengths=(5, 20))
