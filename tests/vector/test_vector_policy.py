"""A policy written against arrays (``VectorPolicy``) runs on both views of the env and
gives the same trials: on the vector env (``evaluate``'s ``"vector"`` path, in batches)
and through ``VectorTeam`` on the PettingZoo env."""

from __future__ import annotations

import runpy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedbandit_env import registry
from fedbandit_env.policies import AgentSpec, Requirements
from fedbandit_env.runner import vector_trials
from fedbandit_env.runner.compare import compare
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.vector.policy import VectorPolicy, VectorSpec, VectorTeam, sender_rows

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_vector_policy.py"
PooledUCB: Any = runpy.run_path(str(EXAMPLE))["PooledUCB"]


class NoisyTalker(VectorPolicy):
    """Random arms from each env's generator; sends them with the public prefix
    (``[arm, noise]``); exercises the generators, messages and the public prefix."""

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        return Requirements(message_dim=2, public_dim=1)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        self.rngs, self.m = list(rngs), spec.n_arms
        self.n = spec.n_agents

    def act(self, observations: dict[str, np.ndarray]) -> tuple[Any, Any]:
        sent = observations["messages"][:, None, :, 0]  # (B, 1, senders)
        heard = (observations["mask"] * sent).sum(axis=2).astype(np.int64)  # (B, receivers)
        draws = np.stack([g.integers(0, self.m, self.n) for g in self.rngs])
        arms = (draws + heard) % self.m
        noise = np.stack([g.random(self.n) for g in self.rngs])
        return arms, np.stack([arms.astype(np.float64), noise], axis=2)


SPEC = registry.PolicySpec("noisy_talker", NoisyTalker)
POOLED = registry.PolicySpec("pooled_ucb_test", PooledUCB)


@pytest.mark.parametrize(
    ("policy", "setting", "faults"),
    [
        (POOLED, "neighbours", {}),
        (POOLED, "gossip+private", {}),
        (POOLED, "neighbours", {"byzantine": 1, "loss": 0.2, "delay": 1}),
        (SPEC, "gossip", {"crash": 0.1, "recover": 0.5}),
        (SPEC, "server", {}),
        (SPEC, "flooding", {}),
    ],
)
def test_both_paths_give_the_same_trials(
    policy: registry.PolicySpec, setting: str, faults: dict[str, Any]
) -> None:
    eps = 1.0 if setting.endswith("+private") else None
    scenario = Scenario(n_agents=5, n_arms=3, horizon=40, setting=setting, epsilon=eps,
                        graph="ring", instances="held_out", **faults)  # fmt: skip
    vector = evaluate(policy, scenario, trials=5, seed=7, first_trial=2, record_every=9)
    pettingzoo = evaluate(policy, scenario, trials=5, seed=7, first_trial=2, record_every=9,
                          interactive=True)  # fmt: skip
    assert (vector.meta["path"], pettingzoo.meta["path"]) == ("vector", "interactive")
    np.testing.assert_array_equal(vector.regret, pettingzoo.regret)
    np.testing.assert_array_equal(vector.comm_cost, pettingzoo.comm_cost)
    np.testing.assert_array_equal(vector.seeds, pettingzoo.seeds)
    if eps is not None:
        np.testing.assert_array_equal(vector.privacy_spent, pettingzoo.privacy_spent)


def test_power_another_generator_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = Scenario(n_agents=4, n_arms=3, horizon=30, setting="neighbours")
    pettingzoo = evaluate(SPEC, scenario, trials=3, seed=1, interactive=True)
    monkeypatch.setattr(
        vector_trials, "vector_policy_generator", lambda seed: np.random.default_rng(99)
    )
    vector = evaluate(SPEC, scenario, trials=3, seed=1)
    assert not np.array_equal(vector.regret, pettingzoo.regret)


def test_batches_do_not_change_the_trials() -> None:
    scenario = Scenario(n_agents=4, n_arms=3, horizon=20, setting="gossip")
    one = vector_trials.run_vector_trials(NoisyTalker(), scenario, None, 5, seed=3, batch=5)
    many = vector_trials.run_vector_trials(NoisyTalker(), scenario, None, 5, seed=3, batch=2)
    np.testing.assert_array_equal(one.regret, many.regret)


def test_compare_and_the_registry_take_a_vector_policy() -> None:
    scenario = Scenario(n_agents=4, n_arms=3, horizon=30, setting="neighbours")
    curves = compare({"pooled": POOLED, "ucb": "local_ucb"}, scenario, trials=2)
    assert [c.policy for c in curves][:2] == ["pooled", "ucb"]
    assert curves[0].meta["path"] == "vector"
    assert isinstance(POOLED.make(), VectorTeam)


def test_a_stack_without_a_vector_form_plays_on_pettingzoo() -> None:
    """A relaying protocol hands receivers different copies: no vector env, and the
    PettingZoo view refuses to flatten them into one row per sender."""
    scenario = Scenario(n_agents=4, n_arms=3, horizon=10, protocol="gamma_hops")
    assert "differ by receiver" in str(
        vector_trials.vector_unsupported(scenario, Requirements(message_dim=6))
    )
    with pytest.raises(ValueError, match="one message per sender"):
        evaluate(POOLED, scenario, trials=1)


def test_sender_rows_inverts_the_inbox_and_refuses_per_receiver_copies() -> None:
    from fedbandit_env.core.routing import inbox

    rng = np.random.default_rng(0)
    sent = rng.random((1, 5, 3)).astype(np.float32)
    mask = (rng.random((1, 5, 5)) < 0.5).astype(np.int8)
    public = np.maximum(mask, (rng.random((1, 5, 5)) < 0.5).astype(np.int8))
    boxes = inbox(sent, mask, public, public_dim=1)[0]
    rows = sender_rows(boxes, mask[0], public[0], 1)
    np.testing.assert_array_equal(inbox(rows[None], mask, public, 1)[0], boxes)
    boxes[np.argwhere(mask[0])[0][0], np.argwhere(mask[0])[0][1], 2] += 1.0
    with pytest.raises(ValueError, match="different copies"):
        sender_rows(boxes, mask[0], public[0], 1)


def test_vector_spec_reads_the_graph() -> None:
    agents = tuple(AgentSpec(i, 3, 2, 5, neighbors=((i + 1) % 3,)) for i in range(3))
    spec = VectorSpec(4, agents)
    assert spec.adjacency.sum() == 3 and spec.num_envs == 4 and spec.n_arms == 2


def test_a_factory_of_something_else_is_refused() -> None:
    with pytest.raises(TypeError, match="not a Team, Policy or VectorPolicy"):
        registry.PolicySpec("thing", lambda: object()).make()
    with pytest.raises(TypeError, match="VectorPolicy"):
        VectorTeam(object())  # type: ignore[arg-type]
