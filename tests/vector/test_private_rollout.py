"""``VecPrivateRewards`` inside a compiled rollout (``VecPrivateRewards.rollout``: its
trees step in :func:`~fedbandit_env.privacy.batched_kernels.private_observe`, the
rollout's observation hook) against the same layer stepped from Python: every release
(the private increments the observations hold, the private means a policy reads), every
piece of the trees' state and the regret, to the bit; a rollout that starts mid-episode;
the arrays handed out before it untouched; and a weakened hook caught.

The stepped layer is the reference: ``test_vector_replay.py`` holds it to the PettingZoo
``PrivateRewards``, and ``tests/privacy/mutations.py``'s ``rollout_noise_halved`` must be
caught here first.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baselines.thompson.vector import ThompsonVector
from fedbandit_env.runner.vector_trials import _start_split, agent_specs, compiled_act
from fedbandit_env.scenario import Scenario
from fedbandit_env.seeding import trial_seeds
from fedbandit_env.vector import make_vec
from fedbandit_env.vector.wrappers import VecPrivateRewards

B, T = 3, 40
TREE = ("counts", "last", "acc", "node", "prefix", "means32")


def _setting(setting: str, n: int = 4, m: int = 3, horizon: int = T, **extra: Any) -> Scenario:
    return Scenario(n_agents=n, n_arms=m, horizon=horizon, setting=setting, epsilon=1.0,
                    graph="ring", **extra)  # fmt: skip


def _started(scenario: Scenario, share: str | None) -> tuple[Any, ThompsonVector, Any]:
    policy = ThompsonVector(share, epsilon=1.0)
    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, B, needs)
    obs = _start_split(venv, policy, trial_seeds(3, B), agent_specs(scenario, needs))
    return venv, policy, obs


def _play(scenario: Scenario, share: str | None, python_steps: int,
          weaken: float = 1.0) -> dict[str, Any]:  # fmt: skip
    """``python_steps`` steps through ``act`` and the layer's ``step``, then the rest
    rolled out (``python_steps = T``: all stepped); what each step released."""
    T = scenario.horizon
    venv, policy, obs = _started(scenario, share)
    assert isinstance(venv, VecPrivateRewards) and venv.rolls_out
    released = np.zeros((B, T, scenario.n_agents), np.float32)
    handed = None
    for t in range(python_steps):
        arms, messages = policy.act(obs)
        obs, _, _, _, _ = venv.step(arms, messages)
        released[:, t] = obs["reward"][..., 0]
        handed = (obs["private_means"], obs["private_means"].copy())
    if python_steps < T:
        compiled = compiled_act(venv, policy)
        assert compiled is not None
        venv.scale = venv.scale * weaken  # a power check's weakened layer
        trace = np.zeros((B, T, scenario.n_agents), np.int64), released.copy()
        venv.rollout(*compiled, np.array([T]), np.zeros((B, scenario.n_agents, 1)), trace)
        released[:, python_steps:] = trace[1][:, python_steps:]
    core = venv.unwrapped.core
    tree = venv._tree
    return {
        "released": released,
        "regret": core.cum_regret.copy(),
        "t": (core.t, tree.t, venv.needs_reset),
        "handed": handed,
        **{k: np.array(getattr(tree, k)) for k in TREE},
    }


@pytest.mark.parametrize(("setting", "share", "estimator"),
                         [("local+private", None, "dyadic"), ("gossip+private", "hold", "dyadic"),
                          ("neighbours+private", "relay", "dyadic"),
                          ("local+private", None, "honaker"),
                          ("gossip+private", "hold", "honaker")])  # fmt: skip
@pytest.mark.parametrize("python_steps", [0, 13])
def test_the_rolled_out_trees_release_what_the_stepped_layer_releases(
    setting: str, share: str | None, estimator: str, python_steps: int
) -> None:
    scenario = _setting(setting, estimator=estimator)
    stepped, rolled = _play(scenario, share, T), _play(scenario, share, python_steps)
    for key in ("released", "regret", *TREE):
        np.testing.assert_array_equal(rolled[key], stepped[key], err_msg=key)
    assert rolled["t"] == stepped["t"] == (T, T, True)
    assert np.abs(rolled["released"]).sum() > 0  # something was released
    if python_steps:  # the private means handed out before the rollout stay as they were
        view, copy = rolled["handed"]
        np.testing.assert_array_equal(view, copy)


@pytest.mark.parametrize("python_steps", [0, 13, 70])
def test_the_rolled_out_trees_visit_only_what_was_pulled(python_steps: int) -> None:
    """Many streams (N = 10, M = 40: 400 a tree): the dyadic trees' lists of pulled and
    nonzero streams (``private_observe``) release the stepped layer's bits. Their closing
    blocks list up to 40 streams (sorted in place) at level 2 and read the rest back in
    order at the levels above; the lists are read from the trees afresh when a rollout
    starts mid-episode (after 13 or 70 steps)."""
    scenario = _setting("gossip+private", n=10, m=40, horizon=160)
    stepped, rolled = _play(scenario, "hold", 160), _play(scenario, "hold", python_steps)
    for key in ("released", "regret", *TREE):
        np.testing.assert_array_equal(rolled[key], stepped[key], err_msg=key)
    assert rolled["t"] == stepped["t"] == (160, 160, True)


@pytest.mark.parametrize("estimator", ["dyadic", "honaker"])
def test_a_rollout_with_half_the_noise_is_caught(estimator: str) -> None:
    """Power: the same rollout with the trees' Laplace scale halved releases other numbers
    (``rollout_noise_halved`` in ``tests/privacy/mutations.py`` weakens the layer's
    rollout itself)."""
    scenario = _setting("local+private", estimator=estimator)
    stepped, weak = _play(scenario, None, T), _play(scenario, None, 0, weaken=0.5)
    assert not np.array_equal(weak["released"], stepped["released"])


def test_a_stack_that_does_not_roll_out_refuses() -> None:
    from fedbandit_env.vector.wrappers import VecClipRewards

    scenario = _setting("local+private")
    venv, policy, _ = _started(scenario, None)
    layered = VecPrivateRewards(VecClipRewards(venv.env, 0.0, 1.0), 1.0)
    assert not layered.rolls_out and compiled_act(layered, policy) is None
    with pytest.raises(ValueError, match="step this stack instead"):
        layered.rollout(*policy.kernel(), np.array([T]), np.zeros((B, 4, 1)))


def test_a_policy_reading_raw_rewards_is_not_rolled_out_over_private_ones() -> None:
    scenario = _setting("local+private")
    venv, _, _ = _started(scenario, None)
    raw = ThompsonVector(None)  # reads the rewards, not the private means
    raw.reset(_spec(scenario), [np.random.default_rng(b) for b in range(B)])
    assert compiled_act(venv, raw) is None


def _spec(scenario: Scenario) -> Any:
    from fedbandit_env.vector.policy import VectorSpec

    needs = ThompsonVector(None).requirements(scenario.n_agents, scenario.n_arms)
    return VectorSpec(B, agent_specs(scenario, needs))
