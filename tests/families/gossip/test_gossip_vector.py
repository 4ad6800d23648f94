"""Gossip_UCB and Fed_UCB as a vector policy (``baselines/gossip/vector.py``): every
trial is the per-agent team's on the PettingZoo path, to the bit, stepped through the
vector env's layers (``act``: any protocol, faults included) and rolled out by the core
(the compiled step: Broadcast, random-edge gossip with the public prefix, private
rewards); and a policy with other draws or another reading is caught.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import fedbandit_env.runner.vector_trials as vector_trials
from baselines.gossip import FedUCB, GossipUCB
from baselines.gossip.vector import GossipVector
from fedbandit_env.core.kernels import SPARSE_WIRE
from fedbandit_env.policies import IndependentTeam
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.runner.vector_trials import compiled_act, run_vector_trials
from fedbandit_env.scenario import Scenario
from fedbandit_env.testing import stepped_then_rolled
from fedbandit_env.vector import make_vec
from fedbandit_env.vector.policy import VectorSpec

TRIALS, SEED = 4, 5
KINDS: dict[str, dict[str, Any]] = {
    "gossip ring": {"setting": "gossip", "graph": "ring"},
    "gossip ER": {"setting": "gossip", "graph": "erdos_renyi", "graph_p": 0.5},
    "neighbours complete": {"setting": "neighbours", "graph": "complete"},
    "gossip+private": {"setting": "gossip+private", "graph": "ring", "epsilon": 1.0},
    "neighbours+private honaker": {"setting": "neighbours+private", "graph": "star",
                                   "epsilon": 1.0, "estimator": "honaker"},
    "calls": {"graph": "ring", "protocol": "neighbour_gossip"},
    "loss": {"setting": "gossip", "graph": "ring", "loss": 0.2},
    "delay": {"setting": "neighbours", "graph": "ring", "delay": 2},
}  # fmt: skip
ROLLED = {"gossip ring", "gossip ER", "neighbours complete", "gossip+private",
          "neighbours+private honaker"}  # fmt: skip


def _template(kind: str, **options: Any) -> GossipUCB:
    private = "epsilon" in KINDS[kind]
    return FedUCB(1.0, **options) if private else GossipUCB(**options)


def _scenario(kind: str) -> Scenario:
    return Scenario(n_agents=5, n_arms=3, horizon=120, instance="zhu", **KINDS[kind])


def _per_agent(kind: str, **options: Any) -> np.ndarray:
    scenario = _scenario(kind)
    needs = _template(kind, **options).requirements(scenario.n_agents, scenario.n_arms)
    curves = run_trials(functools.partial(scenario.make_env, needs),
                        lambda: IndependentTeam(lambda: _template(kind, **options)),
                        n_trials=TRIALS, seed=SEED, record_every=1, progress=False)  # fmt: skip
    return curves.regret


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_vector_policy_plays_the_per_agent_teams_trials(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = _scenario(kind)
    policy = GossipVector(_template(kind))
    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, 2, needs)
    venv.reset(seed=[0, 1])
    policy.reset(VectorSpec.from_env(scenario.make_env(needs), 2),
                 [np.random.default_rng(b) for b in range(2)])  # fmt: skip
    assert (compiled_act(venv, policy) is not None) == (kind in ROLLED)
    want = _per_agent(kind)
    rolled = run_vector_trials(policy, scenario, None, TRIALS, seed=SEED, batch=3)
    np.testing.assert_array_equal(rolled.regret, want)
    monkeypatch.setattr(vector_trials, "compiled_act", lambda venv, policy: None)
    stepped = run_vector_trials(policy, scenario, None, TRIALS, seed=SEED, batch=3)
    np.testing.assert_array_equal(stepped.regret, want)


def test_the_comparison_can_fail() -> None:
    # the same policy with other draws (each env's agents spawned from its generator, not
    # the trial's team seed), or another alpha_1, is caught
    want = _per_agent("gossip ring")

    class OtherDraws(GossipVector):
        def reset(self, spec: VectorSpec, rngs: Any) -> None:
            super().reset(VectorSpec(spec.num_envs, spec.agents), rngs)

    scenario = _scenario("gossip ring")
    other = run_vector_trials(OtherDraws(GossipUCB()), scenario, None, TRIALS, seed=SEED)
    assert not np.array_equal(other.regret, want)
    alpha = run_vector_trials(GossipVector(GossipUCB(alpha_1=1.0)), scenario, None, TRIALS,
                              seed=SEED)  # fmt: skip
    assert not np.array_equal(alpha.regret, want)


def test_fed_ucb_without_private_rewards_is_refused() -> None:
    policy = GossipVector(FedUCB(1.0))
    scenario = _scenario("gossip ring")  # no PrivateRewards in the stack
    with pytest.raises(ValueError, match="PrivateRewards"):
        run_vector_trials(policy, scenario, GossipUCB().requirements(5, 3), 1, seed=0)


def _played(kind: str, stepped_for: int, sparse: bool = False, cut: bool = False,
            size: dict[str, int] | None = None,
            policies: list[Any] | None = None) -> np.ndarray:  # fmt: skip
    """Each agent's cumulative regret in two envs after the horizon: ``stepped_for`` steps
    through ``act``, the rest rolled out (``cut``: its books' graph cut, so nothing heard
    is pushed; ``size``: the scenario's size; the policy and the messages the last step
    delivered are appended to ``policies``)."""
    extra = {"n_agents": 12, "n_arms": 6, "horizon": 400} if sparse else dict(size or {})
    scenario = Scenario(**{"n_agents": 5, "n_arms": 3, "horizon": 120, "instance": "zhu",
                           **KINDS[kind], **extra})  # fmt: skip
    policy = GossipVector(_template(kind))

    def cut_books(policy: GossipVector) -> None:
        policy._books.degrees[:] = 0

    core = stepped_then_rolled(policy, scenario, stepped_for,
                               before=cut_books if cut else None).unwrapped.core  # fmt: skip
    if policies is not None:
        policies.append((policy, np.array(core.last_routed.messages)))
    return np.array(core.cum_regret)


@pytest.mark.parametrize("kind", ["gossip ER", "neighbours complete", "gossip+private"])
def test_a_rollout_after_stepped_steps_is_the_stepped_episode(kind: str) -> None:
    # the compiled step keeps lines 5-6 entry by entry in its books; a rollout that starts
    # after steps through act (which keeps no books) recomputes them once, whole, and
    # then plays what act plays step after step (here: the rest of the episode)
    horizon = 120
    whole = _played(kind, horizon)  # every step through act
    for start in (0, 2, 3, 4, 40):  # before, at and after the M initial pulls
        np.testing.assert_array_equal(_played(kind, start), whole)


def test_the_books_keep_the_count_estimates_on_a_sparse_graph() -> None:
    # N = 12, M = 6, Erdos-Renyi: forced pulls (line 6) and estimates that travel hops
    whole = _played("gossip ER", 400, sparse=True)
    np.testing.assert_array_equal(_played("gossip ER", 0, sparse=True), whole)
    # power: with the books' graph cut nothing heard raises n~, and the episode differs
    assert not np.array_equal(_played("gossip ER", 0, sparse=True, cut=True), whole)


@pytest.mark.parametrize("stepped_for", [0, 60])
@pytest.mark.parametrize("kind", ["gossip ring", "gossip+private"])
def test_the_rolled_out_step_sends_only_what_moved(kind: str, stepped_for: int) -> None:
    # N = 24, M = 40 on a ring: the rolled-out step writes only the message entries that
    # moved and lists them (WireChanges), few enough that the rollout checks and copies
    # only those; the episode is the one act plays step after step (whole rows), from
    # step 0 or after steps through act (whose messages the rollout never held)
    size = {"n_agents": 24, "n_arms": 40, "horizon": 300}
    kept: list[Any] = []
    rolled = _played(kind, stepped_for, size=size, policies=kept)
    listed = kept[0][0]._changes.listed
    assert (listed >= 0).all() and (listed <= 24 * 80 // SPARSE_WIRE).all()
    np.testing.assert_array_equal(rolled, _played(kind, size["horizon"], size=size, policies=kept))
    np.testing.assert_array_equal(kept[0][1], kept[1][1])  # the last step's messages
