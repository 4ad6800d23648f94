"""The posterior net: its NumPy forward pass is the torch module's, relabelling arms
permutes its scores, untrained it is Thompson sampling on the team posterior, and the
batched trainer runs it on any device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch as th

from fedbandit_env.rl import LearnerStack
from fedbandit_env.rl.posterior_net import posterior_scores
from fedbandit_env.rl.posterior_policy import PosteriorArmPolicy, export_weights, posterior_layout
from fedbandit_env.rl.train import train_model
from fedbandit_env.rl.view import LearnerView
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers.flatten import flat_box


def _policy(n_arms: int = 4, seed: int = 0) -> PosteriorArmPolicy:
    stack = LearnerStack.for_setting("neighbours", posterior=True)
    env = stack.make_env(Scenario(n_agents=3, n_arms=n_arms, horizon=5, setting="neighbours"))
    space = env.observation_space(env.possible_agents[0])
    th.manual_seed(seed)
    policy = PosteriorArmPolicy(flat_box(space), env.action_space(env.possible_agents[0]),
                                lambda _: 1e-3, layout=posterior_layout(space))  # fmt: skip
    with th.no_grad():  # trained-looking read-outs, not the near-zero initial ones
        policy.action_net.shift.weight.normal_(0.0, 1.0)
        policy.action_net.spread.weight.normal_(0.0, 0.3)
        policy.action_net.b0.fill_(0.3)
        policy.action_net.c0.fill_(-0.5)
    return policy


def _obs(rows: int, seed: int = 0) -> th.Tensor:
    """Flat observations with plausible features (a positive posterior spread)."""
    g = th.Generator().manual_seed(seed)
    obs = th.randn(rows, 4 + 40 + 1, generator=g)
    post = obs[:, 4:44].reshape(rows, 4, 10)
    post[..., 2] = post[..., 2].abs() * 0.1 + 0.01  # std
    obs[:, 44] = th.rand(rows, generator=g) * 5  # the step
    return obs


def test_the_numpy_forward_pass_is_the_torch_modules() -> None:
    policy = _policy()
    obs = _obs(64)
    with th.no_grad():
        mean, sd, _ = policy.scores_and_values(obs)
    features = obs[:, 4:44].reshape(64, 4, 10).numpy()
    ours = posterior_scores(export_weights(policy), features)
    np.testing.assert_allclose(ours[0], mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[1], sd.numpy(), rtol=1e-5, atol=1e-6)


def test_relabelling_the_arms_permutes_the_scores_and_keeps_the_value() -> None:
    policy = _policy()
    obs = _obs(8)
    perm = th.tensor([2, 0, 3, 1])
    arms, post = obs[:, :4], obs[:, 4:44].reshape(8, 4, 10)
    relabelled = th.cat([arms[:, perm], post[:, perm].reshape(8, 40), obs[:, 44:]], dim=1)
    with th.no_grad():
        ma, sa, va = policy.scores_and_values(obs)
        mb, sb, vb = policy.scores_and_values(relabelled)
    th.testing.assert_close(mb, ma[:, perm], rtol=1e-5, atol=1e-6)
    th.testing.assert_close(sb, sa[:, perm], rtol=1e-5, atol=1e-6)
    th.testing.assert_close(vb, va, rtol=1e-5, atol=1e-6)


def test_untrained_it_is_thompson_sampling_on_the_team_posterior() -> None:
    """At initialisation every correction is 0 (bar the read-outs' small random weights):
    the score of an arm is a draw from N(mean, std) of the team posterior."""
    policy = _policy()
    with th.no_grad():
        for layer in (policy.action_net.shift, policy.action_net.spread):
            layer.weight.zero_()
            layer.bias.zero_()
        policy.action_net.b0.zero_()
        policy.action_net.c0.zero_()
        obs = _obs(5)
        mean, sd, _ = policy.scores_and_values(obs)
    post = obs[:, 4:44].reshape(5, 4, 10)
    th.testing.assert_close(mean, post[..., 1])
    th.testing.assert_close(sd, post[..., 2])


@pytest.mark.parametrize("device", [None, "cpu"])
def test_trained_batched_on_either_backend_saves_a_model_that_benches(
    tmp_path: Path, device: str | None
) -> None:
    s = Scenario(n_agents=3, n_arms=3, horizon=8, setting="neighbours", instance="biased")
    stack = LearnerStack.for_setting("neighbours", posterior=True, reward="team")
    path = train_model("ppo", s, stack, 2000, tmp_path, copies=4, net="posterior",
                       batched=True, device=device)  # fmt: skip
    from fedbandit_env.runner.evaluate import evaluate

    held = Scenario(n_agents=3, n_arms=3, horizon=8, setting="neighbours", instance="biased",
                    instances="held_out")  # fmt: skip
    curves = evaluate(f"ppo:{path}", held, trials=3)
    assert curves.meta["path"] == "batched" and curves.regret.shape == (3, 3, 8)
    assert curves.meta["privileged"] == 1  # trained on the team's regret: marked
    assert LearnerStack.load(path).posterior


def test_the_view_keeps_a_device_rollout_on_the_device() -> None:
    stack = LearnerStack.for_setting("gossip+private", 1.0, posterior=True, reward="team")
    s = Scenario(n_agents=4, n_arms=3, horizon=6, setting="gossip+private", epsilon=1.0,
                 instances="train")  # fmt: skip
    view = LearnerView.for_stack(stack, s, copies=5, device="cpu")
    obs = view.reset(seed=0)
    assert isinstance(obs, th.Tensor) and obs.shape == (20, 3 + 30 + 1)
    for _ in range(6):
        obs, rewards, done, ended = view.step(th.zeros(20, dtype=th.int64))
        assert isinstance(rewards, th.Tensor)
    assert done and ended is not None and isinstance(ended["regret"], th.Tensor)


def test_the_posterior_net_asks_for_its_stack() -> None:
    s = Scenario(n_agents=3, n_arms=3, horizon=8, setting="neighbours")
    with pytest.raises(ValueError, match="posterior=True"):
        train_model("ppo", s, LearnerStack.for_setting("neighbours"), 100, "/tmp/x",
                    net="posterior", batched=True)  # fmt: skip
    with pytest.raises(ValueError, match="batched trainer"):
        train_model("ppo", s, LearnerStack.for_setting("neighbours"), 100, "/tmp/x",
                    device="cpu")  # fmt: skip


@pytest.mark.parametrize("setting", ["neighbours", "gossip+private"])
def test_both_evaluation_paths_draw_the_same_scores(tmp_path: Path, setting: str) -> None:
    """A saved posterior net, sampled: the PettingZoo path (ModelTeam, a step's normals
    per agent) and the batched path (every trial's normals drawn in blocks from the same
    model stream) play the same trials. Power: a greedy twin (no draws) differs."""
    from fedbandit_env.runner.evaluate import evaluate

    eps = 1.0 if setting.endswith("private") else None
    s = Scenario(n_agents=3, n_arms=3, horizon=12, setting=setting, epsilon=eps,
                 instance="biased")  # fmt: skip
    stack = LearnerStack.for_setting(setting, eps, posterior=True, reward="team")
    path = train_model("ppo", s, stack, 1000, tmp_path, copies=2, net="posterior", batched=True)
    held = Scenario(n_agents=3, n_arms=3, horizon=12, setting=setting, epsilon=eps,
                    instance="biased", instances="held_out")  # fmt: skip
    batched = evaluate(f"ppo:{path}", held, trials=4, seed=3)
    interactive = evaluate(f"ppo:{path}", held, trials=4, seed=3, interactive=True)
    assert batched.meta["path"] == "batched" and interactive.meta["path"] == "interactive"
    np.testing.assert_array_equal(batched.regret, interactive.regret)
    greedy = evaluate(f"ppo:{path}", held, {"deterministic": True}, trials=4, seed=3)
    assert not np.array_equal(greedy.regret, batched.regret)
