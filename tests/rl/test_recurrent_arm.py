"""The recurrent arms network (RL^2-style) and its batched training: equivariant in the
arms, its memory replayed exactly by the update's truncated backpropagation, saved as a
RecurrentPPO model that both evaluation paths run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib import RecurrentPPO

from fedbandit_env.rl import LearnerStack
from fedbandit_env.rl.arm_policy import arm_layout
from fedbandit_env.rl.batched_ppo import BatchedPPOConfig, Memory, train_batched
from fedbandit_env.rl.recurrent_arm import RecurrentArmPolicy
from fedbandit_env.rl.train import set_torch_threads, train_model
from fedbandit_env.rl.vector_sb3 import VectorAgentVecEnv
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers.flatten import flat_box

M = 4


def _policy(hidden: int = 8) -> tuple[RecurrentArmPolicy, dict[str, Any]]:
    sp = spaces.Dict(
        {
            "arm": spaces.Discrete(M),
            "counts": spaces.Box(0, 50, (M,)),
            "means": spaces.Box(0, 1, (M,)),
            "reward": spaces.Box(0, 1, (1,)),
            "step": spaces.Box(0, 50, (1,)),
        }
    )
    layout = arm_layout(sp, scale=False)
    th.manual_seed(0)
    policy = RecurrentArmPolicy(flat_box(sp), spaces.Discrete(M), lambda _: 1e-3,
                                layout=layout, hidden=hidden)  # fmt: skip
    with th.no_grad():  # sharp logits, so that a wrong memory shows
        for weight in policy.action_net.parameters():
            weight.mul_(100.0)
    return policy, layout


def _observations(steps: int, batch: int, rng: np.random.Generator) -> th.Tensor:
    """Random statistics of M arms: one-hot last arm, counts, means, reward, step."""
    rows = []
    for t in range(steps):
        arm = np.eye(M)[rng.integers(M, size=batch)]
        counts = rng.integers(0, 10, size=(batch, M)).astype(float)
        means = rng.random((batch, M))
        reward = rng.random((batch, 1))
        step = np.full((batch, 1), float(t))
        rows.append(np.concatenate([arm, counts, means, reward, step], axis=1))
    return th.as_tensor(np.stack(rows), dtype=th.float32)


def _permute(obs: th.Tensor, perm: np.ndarray) -> th.Tensor:
    out = obs.clone()
    for block in range(3):  # arm, counts, means: M columns each
        cols = slice(block * M, (block + 1) * M)
        out[..., cols] = obs[..., cols][..., perm]
    return out


def test_relabelling_the_arms_permutes_the_logits_at_every_step_of_a_sequence() -> None:
    policy, _ = _policy()
    obs = _observations(6, 3, np.random.default_rng(1))
    perm = np.array([2, 0, 3, 1])
    zeros = (th.zeros(1, 3, M * 8), th.zeros(1, 3, M * 8))
    state, state_p = zeros, zeros
    with th.no_grad():
        for t in range(obs.shape[0]):
            # (SB3 reuses one distribution object: read each call's probabilities at once)
            d, state = policy.get_distribution(obs[t], state, th.zeros(3))
            probs = d.distribution.probs
            dp, state_p = policy.get_distribution(_permute(obs[t], perm), state_p, th.zeros(3))
            probs_p = dp.distribution.probs
            th.testing.assert_close(probs_p, probs[:, perm], rtol=1e-5, atol=1e-6)
    # and the memory matters: the same observation after another history scores otherwise
    with th.no_grad():
        fresh, _ = policy.get_distribution(obs[-1], zeros, th.zeros(3))
    assert (fresh.distribution.probs - probs).abs().max() > 1e-3


def test_the_memory_replays_a_rollout_exactly_across_an_episode_start() -> None:
    """What the update recomputes from the rollout's first state (truncated BPTT, zeroed
    where an episode started) is what the rollout's steps computed one at a time."""
    policy, _ = _policy()
    width, length = 5, 6
    obs = _observations(length, width, np.random.default_rng(2))
    memory = Memory(policy, width, length)
    memory.act(obs[0], 0)  # a step before the rollout: its first state is not zeros
    first = memory.start_rollout()
    actions, logps = [], []
    with th.no_grad():
        for t in range(length):
            a, _, lp = memory.act(obs[t], t)
            actions.append(a)
            logps.append(lp)
            if t == 2:
                memory.episode_ended(t)  # the envs' episodes end after step 2
    assert memory.starts.tolist() == [0, 0, 0, 1, 0, 0]
    b_obs = obs.reshape(length * width, -1)
    b_act = th.stack(actions).reshape(-1)
    b_logp = th.stack(logps).reshape(-1)
    idx = memory.sequence_order(th.tensor([3, 0, 4]), length)
    with th.no_grad():
        _, logp, _ = memory.evaluate(first, b_obs[idx], b_act[idx], idx)
    th.testing.assert_close(logp, b_logp[idx], rtol=1e-5, atol=1e-5)
    memory.starts.zero_()  # power: the update forgetting the episode's start differs
    with th.no_grad():
        _, wrong, _ = memory.evaluate(first, b_obs[idx], b_act[idx], idx)
    assert (wrong - b_logp[idx]).abs().max() > 1e-3


def _venv(copies: int = 3) -> tuple[VectorAgentVecEnv, Scenario, LearnerStack]:
    scenario = Scenario(n_agents=3, n_arms=3, horizon=10, setting="neighbours",
                        instance="biased", instances="train")  # fmt: skip
    stack = LearnerStack.for_setting("neighbours")
    return VectorAgentVecEnv.for_stack(stack, scenario, copies=copies), scenario, stack


def test_the_first_update_sees_ratios_of_one_with_episodes_ending_inside_rollouts() -> None:
    """A learning rate too small to move the weights: every minibatch's log-probabilities
    must equal the rollout's, so PPO's KL estimate is zero (rollouts of 4 steps in
    episodes of 10, so episodes start inside rollouts)."""
    from fedbandit_env.rl.arm_policy import arm_policy_kwargs

    set_torch_threads(1)
    venv, _, _ = _venv()
    model = RecurrentPPO(RecurrentArmPolicy, venv, n_steps=2, batch_size=18, seed=0,
                         device="cpu", policy_kwargs=arm_policy_kwargs(venv, hidden=8))  # fmt: skip
    logs: list[dict[str, float]] = []
    config = BatchedPPOConfig(rollout=4, learning_rate=1e-30, minibatches=2)
    result = train_batched(model, venv, 120, config, seed=0, log=logs.append)
    assert result["updates"] == 120 // (4 * 9) + 1 and len(logs) == result["updates"]
    assert max(abs(entry["approx_kl"]) for entry in logs) < 1e-9
    assert max(entry["clip_fraction"] for entry in logs) == 0.0


@pytest.mark.slow
def test_train_recurrent_ppo_batched_saves_a_model_both_paths_evaluate(tmp_path: Path) -> None:
    _, scenario, stack = _venv()
    path = train_model("recurrent_ppo", scenario, stack, 600, tmp_path / "r", copies=4,
                       net="arms", batched=True)  # fmt: skip
    record = json.loads((tmp_path / "r" / "train.json").read_text())
    assert record["algo"] == "recurrent_ppo" and record["batched"] and record["net"] == "arms"
    held = Scenario(n_agents=3, n_arms=3, horizon=10, setting="neighbours",
                    instance="biased", instances="held_out")  # fmt: skip
    batched = evaluate(f"recurrent_ppo:{path}", held, trials=3, record_every=5)
    alone = evaluate(f"recurrent_ppo:{path}", held, trials=1, first_trial=2, record_every=5)
    np.testing.assert_array_equal(batched.regret[2], alone.regret[0])
    assert batched.regret.shape == (3, 3, 2)
    with pytest.raises(ValueError, match="batched=True"):
        train_model("recurrent_ppo", scenario, stack, 100, tmp_path / "x", net="arms")
