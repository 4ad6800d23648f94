"""Batched evaluation of a saved model: all trials advanced together, one forward pass a
step, and exactly the trials of the PettingZoo path (same instances, rewards, gossip
edges, private noise and action draws)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import stable_baselines3 as sb3

from fedbandit_env.rl import AgentVecEnv, LearnerStack, ModelTeam
from fedbandit_env.rl.arm_policy import ArmScoringPolicy, arm_policy_kwargs
from fedbandit_env.rl.batched import BatchedModelRollout, batched_trials, unsupported
from fedbandit_env.rl.team import action_probabilities
from fedbandit_env.rl.train import set_torch_threads, train_model
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.seeding import spawn
from fedbandit_env.wrappers import AgentCrash, Byzantine, LinkFailures, MessageDelay, MessageLoss

SETTINGS = ("local", "neighbours", "gossip", "gossip+private")


def _scenario(setting: str, **kw: Any) -> Scenario:
    epsilon = 1.0 if setting.endswith("+private") else None
    kw = {"n_agents": 4, "n_arms": 3, "horizon": 60, "instances": "train", **kw}
    return Scenario(setting=setting, epsilon=epsilon, **kw)


def _model(stack: LearnerStack, scenario: Scenario, algo: str = "ppo") -> Any:
    """An untrained model: near-uniform action probabilities, so every draw matters."""
    set_torch_threads(1)
    message_fn = stack.message_fn if stack.share_means else None
    venv = AgentVecEnv(stack.make_env(scenario), message_fn=message_fn, scale=stack.scale)
    if algo == "arms":
        kwargs = arm_policy_kwargs(venv)
        return sb3.PPO(ArmScoringPolicy, venv, seed=0, device="cpu", policy_kwargs=kwargs)
    if algo == "dqn":
        return sb3.DQN("MlpPolicy", venv, seed=0, device="cpu", learning_starts=0)
    if algo in ("recurrent_arms", "lstm"):
        from sb3_contrib import RecurrentPPO

        from fedbandit_env.rl.recurrent_arm import RecurrentArmPolicy

        if algo == "lstm":
            return RecurrentPPO("MlpLstmPolicy", venv, seed=0, device="cpu", n_steps=4)
        kwargs = arm_policy_kwargs(venv, hidden=8)
        return RecurrentPPO(RecurrentArmPolicy, venv, seed=0, device="cpu", n_steps=4,
                            policy_kwargs=kwargs)  # fmt: skip
    return sb3.PPO("MlpPolicy", venv, seed=0, device="cpu")


def _both(
    model: Any, stack: LearnerStack, scenario: Scenario, trials: int, deterministic: bool
) -> tuple[Any, tuple[Any, ...]]:
    message_fn = stack.message_fn if stack.share_means else None
    interactive = run_trials(
        functools.partial(stack.make_env, scenario),
        lambda: ModelTeam(
            model, deterministic=deterministic, message_fn=message_fn, scale=stack.scale
        ),
        n_trials=trials,
        seed=11,
        record_every=7,
        progress=False,
    )
    batched = batched_trials(
        model, stack, scenario, spawn(11, trials), record_every=7, deterministic=deterministic,
        batch=3,
    )  # fmt: skip
    return interactive, batched


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("deterministic", [False, True])
def test_batched_trials_are_the_pettingzoo_trials(setting: str, deterministic: bool) -> None:
    scenario = _scenario(setting)
    stack = LearnerStack.for_setting(setting, scenario.epsilon)
    model = _model(stack, scenario)
    interactive, (t, regret, cost, seconds) = _both(model, stack, scenario, 5, deterministic)
    np.testing.assert_array_equal(t, interactive.t)
    np.testing.assert_array_equal(regret, interactive.regret)
    np.testing.assert_array_equal(cost, interactive.comm_cost)
    assert seconds.shape == (5,) and (seconds > 0).all()
    if not deterministic:  # an untrained policy pulls every arm: the draws were exercised
        assert len(np.unique(np.diff(regret, axis=2))) > 2


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["arms", "dqn", "recurrent_arms", "lstm"])
def test_other_policies_batch_too(algo: str) -> None:
    """A custom policy (its own get_distribution), DQN (its greedy predict) and recurrent
    policies (a memory per agent of every trial: the recurrent arms net, sb3-contrib's
    LSTM)."""
    scenario = _scenario("neighbours", noise="gaussian", sigma=0.3, graph="ring")
    stack = LearnerStack.for_setting("neighbours")
    model = _model(stack, scenario, algo)
    if algo in ("recurrent_arms", "lstm"):  # sharp arm choices that follow the memory
        import torch as th

        with th.no_grad():
            for weight in model.policy.action_net.parameters():
                weight.mul_(300.0)
    interactive, (_, regret, cost, _) = _both(model, stack, scenario, 3, False)
    np.testing.assert_array_equal(regret, interactive.regret)
    np.testing.assert_array_equal(cost, interactive.comm_cost)


class Recorder:
    """A greedy policy that reads every input column (a fixed random projection) and keeps
    each observation batch it is given: the two paths must show it the same numbers."""

    def __init__(self, width: int, n_arms: int) -> None:
        self.weights = np.random.default_rng(3).normal(size=(width, n_arms))
        self.seen: list[np.ndarray] = []

    def predict(self, obs: Any, deterministic: bool = True) -> tuple[np.ndarray, None]:
        batch = np.asarray(obs, dtype=np.float32)
        self.seen.append(batch.copy())
        return (batch.astype(np.float64) @ self.weights).argmax(axis=1), None


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS)
def test_horizon_free_stacks_sharing_pull_shares_batch_observation_for_observation(
    setting: str,
) -> None:
    """The batched loop writes HorizonFree's entries and the means + pull-shares message
    as the wrappers do: every observation the model is shown is equal, bit for bit."""
    scenario = _scenario(setting, horizon=25)
    stack = LearnerStack.for_setting(
        setting, scenario.epsilon, horizon_free=True, share_counts=True
    )
    width = int(AgentVecEnv(stack.make_env(scenario), scale=True).observation_space.shape[0])
    slow, fast = Recorder(width, 3), Recorder(width, 3)
    message_fn = stack.message_fn if stack.share_means else None
    trials = 3
    interactive = run_trials(
        functools.partial(stack.make_env, scenario),
        lambda: ModelTeam(slow, message_fn=message_fn, scale=stack.scale),
        n_trials=trials, seed=5, record_every=5, progress=False,
    )  # fmt: skip
    _, regret, cost, _ = batched_trials(
        fast, stack, scenario, spawn(5, trials), record_every=5, batch=trials
    )
    # the PettingZoo path: trial by trial, (N, D) a step; batched: (K N, D) a step
    steps = scenario.horizon
    shown = np.stack(slow.seen).reshape(trials, steps, 4, width)
    np.testing.assert_array_equal(
        np.stack(fast.seen).reshape(steps, trials, 4, width).swapaxes(0, 1), shown
    )
    np.testing.assert_array_equal(regret, interactive.regret)
    np.testing.assert_array_equal(cost, interactive.comm_cost)
    assert len(np.unique(shown)) > 20  # the projection made the agents move around


def test_the_fast_actor_matches_sb3s_distribution() -> None:
    import torch as th

    scenario = _scenario("neighbours", horizon=10)
    stack = LearnerStack.for_setting("neighbours")
    model = _model(stack, scenario)
    rng = np.random.default_rng(0)
    batch = rng.uniform(-1, 1, (200, model.observation_space.shape[0])).astype(np.float32)
    ours = action_probabilities(model, batch)
    obs, _ = model.policy.obs_to_tensor(batch)
    with th.no_grad():
        sb3s = model.policy.get_distribution(obs).distribution.probs.numpy()
    assert ours is not None
    # float32 logits: the two agree to float32 rounding, not bit for bit
    np.testing.assert_allclose(ours, sb3s, rtol=0, atol=1e-6)
    assert not np.allclose(ours, ours[:, ::-1], atol=1e-3)  # arms not interchangeable


@pytest.mark.slow
def test_evaluate_batches_a_saved_model_and_matches_the_pettingzoo_path(tmp_path: Path) -> None:
    scenario = _scenario("gossip", horizon=30)
    stack = LearnerStack.for_setting("gossip", horizon=30)
    path = train_model("ppo", scenario, stack, 64, tmp_path / "m", seed=1)
    spec = f"ppo:{path}"
    fast = evaluate(spec, scenario, trials=4, first_trial=2, record_every=5)
    slow = evaluate(spec, scenario, trials=4, first_trial=2, record_every=5, interactive=True)
    assert (fast.meta["path"], slow.meta["path"]) == ("batched", "interactive")
    np.testing.assert_array_equal(fast.regret, slow.regret)
    np.testing.assert_array_equal(fast.comm_cost, slow.comm_cost)
    np.testing.assert_array_equal(fast.seeds, [2, 3, 4, 5])
    np.testing.assert_array_equal(fast.privacy_spent, slow.privacy_spent)
    assert fast.policy == slow.policy == "ppo:m"


def test_stacks_it_does_not_model_are_named() -> None:
    scenario = _scenario("neighbours", horizon=10)
    stack = LearnerStack.for_setting("neighbours")
    env = stack.make_env(scenario)
    assert unsupported(env) is None
    assert unsupported(MessageLoss(env, 0.5)) is None  # loss has a vector form
    assert unsupported(AgentCrash(env, 0.5)) is None  # so do crashes and liars
    assert unsupported(Byzantine(env, 1, "boost")) is None
    assert unsupported(LinkFailures(env, 0.5, 0.5)) == "the wrapper LinkFailures"
    assert unsupported(MessageDelay(env, 1, max_delay=3)) == "random message delays"
    calls = Scenario(n_agents=3, n_arms=2, horizon=5, protocol="neighbour_gossip")
    assert unsupported(LearnerStack(share_means=True).make_env(calls)) is None  # vector routes it
    relay = Scenario(n_agents=3, n_arms=2, horizon=5, protocol="gamma_hops")
    assert "GammaHops" in str(unsupported(LearnerStack(share_means=True).make_env(relay)))

    class Fixed:
        def predict(self, obs: Any, deterministic: bool = True) -> Any:
            return np.zeros(len(obs), dtype=int), None

    with pytest.raises(ValueError, match="does not model the protocol"):
        BatchedModelRollout(Fixed(), LearnerStack(share_means=True), relay)


@pytest.mark.parametrize(
    ("setting", "faults"),
    [
        ("neighbours", {"loss": 0.3, "delay": 2}),
        ("gossip+private", {"loss": 0.3, "delay": 2}),
        ("neighbours", {"byzantine": 1, "crash": 0.1, "recover": 0.3}),
        ("gossip", {"byzantine": 2, "attack": "random"}),
    ],
)
def test_a_faulty_network_batches_and_matches_the_pettingzoo_path(
    setting: str, faults: dict[str, Any]
) -> None:
    """Every fault the scenario offers has a vector form (message loss, a fixed delay,
    liars, crashes): the batched trials are the PettingZoo trials, regret (the honest
    agents' where some lie) and cost."""
    scenario = _scenario(setting, horizon=40, **faults)
    stack = LearnerStack.for_setting(setting, scenario.epsilon)
    model = _model(stack, scenario)
    interactive, (_, regret, cost, _) = _both(model, stack, scenario, 3, False)
    np.testing.assert_array_equal(regret, interactive.regret)
    np.testing.assert_array_equal(cost, interactive.comm_cost)
