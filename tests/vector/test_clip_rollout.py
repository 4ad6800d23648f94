"""``VecClipRewards`` inside a compiled rollout (``VecClipRewards.rollout``: the clip is
the rollout's observation hook, :func:`~fedbandit_env.vector.wrappers.clip.observe_clipped`)
against the same layer stepped from Python: what the policy read at every step (its
trace), its statistics, the regret and the network's cost, to the bit, for rollouts
from the start and mid-episode, over server rounds and GIS flooding; and a hook that
does not clip is caught. The stepped layer is the reference (``test_vector_replay.py``
holds it to the PettingZoo ``ClipRewards``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit

import fedbandit_env.vector.wrappers.clip as clip_module
from baselines.elimination.vector import EliminationVector, cdp_mab, ddp_mab
from fedbandit_env.core.kernels import UNCOUNTED
from fedbandit_env.runner.vector_trials import _start_split, agent_specs, compiled_act
from fedbandit_env.scenario import Scenario
from fedbandit_env.seeding import trial_seeds
from fedbandit_env.vector import make_vec
from fedbandit_env.vector.wrappers import VecClipRewards, VecPrivateRewards

B, T = 2, 300
LOW, HIGH = 0.2, 0.8  # inside the rewards' spread: most pulls are clipped
STATS = ("_counts", "_sums", "_epoch_sums", "_ybar", "_books")


def _scenario(graph: str) -> Scenario:
    return Scenario(n_agents=5, n_arms=3, horizon=T, graph=graph, noise="gaussian", sigma=0.5,
                    clip=(LOW, HIGH), link_costs=(2.0, 1.0), seed=4)  # fmt: skip


def _play(policy: EliminationVector, scenario: Scenario, python_steps: int) -> dict[str, Any]:
    """``python_steps`` steps through ``act`` and the layers' ``step``, then the rest
    rolled out (``python_steps = T``: all stepped); what the policy read at each step."""
    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, B, needs)
    obs = _start_split(venv, policy, trial_seeds(3, B), agent_specs(scenario, needs))
    assert isinstance(venv, VecClipRewards) and venv.rolls_out
    n = scenario.n_agents
    read = np.zeros((B, T, n), np.float32)
    for t in range(python_steps):
        arms, messages = policy.act(obs)
        obs, _, _, _, _ = venv.step(arms, messages)
        read[:, t] = obs["reward"][..., 0]
    if python_steps < T:
        compiled = compiled_act(venv, policy)
        assert compiled is not None  # the clipped stack rolls out
        trace = np.zeros((B, T, n), np.int64), read.copy()
        cost = np.zeros((B, 1))
        venv.rollout(*compiled, np.array([T]), np.zeros((B, n, 1)), trace, cost)
        read[:, python_steps:] = trace[1][:, python_steps:]
    core = venv.unwrapped.core
    return {"read": read, "regret": core.cum_regret.copy(), "cost": core.cum_cost.copy(),
            **{k: np.array(getattr(policy, k)) for k in STATS}}  # fmt: skip


def _same(got: dict[str, Any], want: dict[str, Any]) -> bool:
    return all(np.array_equal(got[k], want[k]) for k in want)


@pytest.mark.parametrize(("factory", "graph"),
                         [(cdp_mab, "complete"),
                          pytest.param(ddp_mab, "ring", marks=pytest.mark.slow)])  # fmt: skip
@pytest.mark.parametrize("python_steps", [0, 7])
def test_a_rollout_under_clipped_rewards_is_the_stepped_layers(
    factory: Any, graph: str, python_steps: int
) -> None:
    """Rolled out from the start or after Python steps, the policy reads the clipped
    rewards the stepped layer hands out, step for step, and ends with the same
    statistics, regret and cost."""
    scenario = _scenario(graph)
    want = _play(factory(), scenario, T)
    got = _play(factory(), scenario, python_steps)
    read = want["read"]
    assert read.min() == np.float32(LOW) and read.max() == np.float32(HIGH)  # it clipped
    assert want["cost"].min() > 0  # rounds were played
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


@njit(cache=False, nogil=True, **UNCOUNTED)
def _unclipped(arms, rewards, t, low, high, seen, traced):  # type: ignore[no-untyped-def]
    n_envs, n = rewards.shape
    for b in range(n_envs):
        for i in range(n):
            seen[b, i] = np.float32(rewards[b, i])
            traced[b, i] = seen[b, i]


@pytest.mark.slow  # compiles the rollout with a hook of its own (not cached)
def test_a_hook_that_does_not_clip_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: the rollout's hook reading the raw rewards gives another trace and other
    statistics than the stepped layer."""
    scenario = _scenario("complete")
    want = _play(cdp_mab(), scenario, T)
    monkeypatch.setattr(clip_module, "observe_clipped", _unclipped)
    got = _play(cdp_mab(), scenario, 0)
    assert not np.array_equal(got["read"], want["read"])
    assert not _same(got, want)


def test_a_clip_over_another_layer_is_stepped() -> None:
    """Only directly over the bare env does the clip roll out; a layer between them
    (here a second clip) is stepped, and its rollout says so; so is private rewards'
    layer over a clip (each takes the rollout's one observation hook)."""
    scenario = _scenario("complete")
    policy = cdp_mab()
    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, B, needs)
    assert isinstance(venv, VecClipRewards)
    stacked = VecClipRewards(venv, LOW, HIGH)
    assert not stacked.rolls_out
    with pytest.raises(ValueError, match="rolls out directly over"):
        stacked.rollout(None, (), np.array([T]), np.zeros((B, scenario.n_agents, 1)))
    assert venv.rolls_out and not VecPrivateRewards(venv, 1.0).rolls_out
