"""The linear core (issue 62 item 2): ``B`` linear bandit episodes as arrays, and the
PettingZoo linear env as its one-env view."""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env import federated_linear_v0
from fedbandit_env.core.linear import LinearCore
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
from fedbandit_env.protocols import Broadcast, RandomEdgeGossip, Synchronize


def _sampler(rng: np.random.Generator) -> LinearProblem:
    return dubey_synthetic(4, set_size=5, dim=3, seed=int(rng.integers(1000)))


@pytest.mark.parametrize("protocol", [RandomEdgeGossip, Broadcast, Synchronize])
@pytest.mark.parametrize("sampled", [False, True])
def test_env_b_of_the_core_is_the_pettingzoo_env_seeded_s_plus_b(
    protocol: type, sampled: bool
) -> None:
    """Env ``b`` of a core of three, reset with seeds ``s + b``, plays the episode the
    PettingZoo env plays after ``reset(seed=s + b)`` for the same choices and messages:
    instance, decision sets, rewards, regret, delivered messages and link costs, to the
    bit, over two episodes (the second unseeded: each env continues its master)."""
    n, horizon, d = 4, 7, 3
    problem = _sampler if sampled else dubey_synthetic(n, set_size=5, dim=3, seed=2)
    network = Network.ring(n)
    core = LinearCore(problem, network, [protocol() for _ in range(3)], horizon, d, (-1.0, 1.0))
    wiring = {"network": network, "horizon": horizon, "message_dim": d,
              "message_bounds": (-1.0, 1.0)}  # fmt: skip
    envs = [
        federated_linear_v0.parallel_env(problem=problem, protocol=protocol(), **wiring)
        for _ in range(3)
    ]
    rng = np.random.default_rng(0)
    for episode in range(2):
        seeds = [10 + b if episode == 0 else None for b in range(3)]
        core.reset(seeds)
        for b, env in enumerate(envs):
            env.reset(seed=seeds[b])
            assert env.unwrapped.problem is core.problems[b] or np.array_equal(
                env.unwrapped.problem.theta, core.problems[b].theta
            )
            assert np.array_equal(env.unwrapped.decision_sets, core.sets[b])
        for _ in range(horizon):
            arms = rng.integers(5, size=(3, n))
            sent = rng.uniform(-1, 1, (3, n, d))
            step = core.step(arms, sent)
            for b, env in enumerate(envs):
                acts = {a: {"arm": int(arms[b, i]), "message": sent[b, i]}
                        for i, a in enumerate(env.agents)}  # fmt: skip
                obs, rewards, _, _, infos = env.step(acts)
                assert list(rewards.values()) == step.rewards[b].tolist()
                assert [infos[a]["regret"] for a in infos] == step.regret[b].tolist()
                assert infos["agent_0"]["comm_cost"] == float(step.cost[b])
                if env.agents:
                    assert np.array_equal(env.unwrapped.decision_sets, core.sets[b])
                assert step.routed is not None
                heard = np.stack([obs[a]["mask"] for a in obs])
                assert np.array_equal(heard, step.routed.mask[b])
        assert step.done and core.t == horizon
    assert core.cum_regret.shape == (3, n) and not np.array_equal(
        core.cum_regret[0], core.cum_regret[1]
    )


def test_the_linear_core_refuses_what_it_cannot_play() -> None:
    """One seed per env; no step past the horizon; a sampler that returns something
    else than a linear problem."""
    problem = dubey_synthetic(3, set_size=4, dim=2, seed=0)
    core = LinearCore(problem, Network.complete(3), [Broadcast(), Broadcast()], horizon=1)
    with pytest.raises(ValueError, match="one seed per env"):
        core.reset([0])
    core.reset([0, 1])
    core.step(np.zeros((2, 3), int))
    with pytest.raises(RuntimeError, match="finished episode"):
        core.step(np.zeros((2, 3), int))
    with pytest.raises(TypeError, match="must return a LinearProblem"):
        LinearCore(lambda rng: 3, Network.complete(3), [Broadcast()], horizon=1)  # type: ignore[arg-type,return-value]


def test_the_linear_env_steps_only_through_its_core() -> None:
    """The view holds no episode state of its own: what the env shows is the core's
    (a core stepped behind the env's back shows in the env's state)."""
    env = federated_linear_v0.parallel_env(problem=dubey_synthetic(3, set_size=4, dim=2, seed=0),
                                           horizon=3)  # fmt: skip
    env.reset(seed=0)
    core = env.unwrapped.core
    core.step(np.array([[1, 2, 3]]))
    state = env.state()
    assert state[-1] == 1.0  # the step, read from the core
    assert np.array_equal(env.unwrapped.decision_sets, core.sets[0])
