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


def _problem(kind: str, seed: int) -> LinearProblem:
    """Instances of each way of drawing sets and of noise (pools of 12 rows of d = 3)."""
    rng = np.random.default_rng(seed)
    features, theta = rng.normal(size=(12, 3)) / 3.0, rng.normal(size=(4, 3)) / 3.0
    if kind == "best":
        return LinearProblem(features, theta, set_size=4, n_best=2, noise="gaussian")
    if kind == "apart":  # the best rows' global means above every other's: top_rows > 0
        return dubey_synthetic(4, set_size=4, dim=3, seed=seed, pool_size=12,
                               noise="gaussian", sigma=0.5)  # fmt: skip
    if kind == "grouped":
        return LinearProblem(features, theta, set_size=4, grouped=True, noise="gaussian",
                             sigma=0.5)  # fmt: skip
    bounded = np.abs(features) / 3.0  # local means within [0, 1] for Bernoulli noise
    return LinearProblem(bounded, np.abs(theta), set_size=4, noise="bernoulli")


@pytest.mark.parametrize("kind", ["best", "apart", "grouped", "bernoulli"])
def test_the_compiled_step_of_all_envs_is_the_step_env_by_env(kind: str) -> None:
    """``step_linear_envs`` (every env in one compiled call, the next sets drawn in it)
    against the step env by env (``pull_sets`` and ``LinearProblem.draw_sets``, the path
    of instances with different pool sizes): rewards, regret and every decision set to
    the bit, for sets with a best pool, grouped sets and uniform ones, Gaussian and
    Bernoulli noise, over two episodes."""
    problem = _problem(kind, 0)
    cores = [LinearCore(problem, Network.ring(4), [Broadcast() for _ in range(3)], 9)
             for _ in range(2)]  # fmt: skip
    rng = np.random.default_rng(4)
    for episode in range(2):
        for core in cores:
            core.reset([3, 4, 5] if episode == 0 else [None] * 3)
        cores[1]._stacked = False  # the env-by-env path
        assert cores[0]._stacked
        for _ in range(9):
            arms = rng.integers(4, size=(3, 4))
            a, b = (core.step(arms) for core in cores)
            assert a.rewards.tobytes() == b.rewards.tobytes()
            assert a.regret.tobytes() == b.regret.tobytes()
            assert np.array_equal(cores[0].sets, cores[1].sets)
            assert np.array_equal(cores[0].all_contexts(), np.stack(
                [cores[1].problems[k].features[cores[1].sets[k]].astype(np.float32)
                 for k in range(3)]))  # fmt: skip


def test_top_rows_says_when_the_best_rows_stand_apart() -> None:
    """``top_rows`` is ``n_best`` exactly where every best row's global mean exceeds every
    other row's (strictly: a tie or a NaN could make another row a set's best), else 0."""
    assert _problem("apart", 0).top_rows == 1
    assert _problem("best", 0).top_rows == 0  # random rows: the two "best" are not
    assert _problem("grouped", 0).top_rows == 0 and _problem("bernoulli", 0).top_rows == 0
    features = np.array([[1.0], [0.5], [0.5], [0.0]])
    assert LinearProblem(features, [1.0], set_size=2, n_best=1).top_rows == 1
    assert LinearProblem(features, [1.0], set_size=2, n_best=2).top_rows == 0  # a tie
    assert LinearProblem(features, [1.0], set_size=2, n_best=3).top_rows == 3


@pytest.mark.parametrize("rows", [[2, 3, 4, 5], [0, 3, 4, 5], [5, 4, 1, 3], [0, 1, 4, 5],
                                  [1, 0, 0, 2]])  # fmt: skip
def test_a_set_without_exactly_one_top_row_is_maxed_over(rows: list[int]) -> None:
    """The compiled step reads a set's best off its one row below ``top_rows``; a set
    holding none of them, or several (written into the core's sets by hand: drawn sets
    hold one), is maxed over (row 1 is better than row 0: the least row is not the
    best): the regret of the env-by-env step and of the means, to the bit."""
    features = np.array([[0.8], [0.9], [0.5], [0.4], [0.3], [0.2]])
    problem = LinearProblem(features, [1.0], set_size=4, n_agents=4, n_best=2)
    cores = [LinearCore(problem, Network.ring(4), [Broadcast()], 3) for _ in range(2)]
    for core in cores:
        core.reset([7])
    cores[1]._stacked = False
    assert cores[0]._stacked and cores[0]._tops.tolist() == [2]
    for core in cores:
        core.sets[0, :] = rows
    a, b = (core.step(np.array([[0, 1, 2, 3]])) for core in cores)
    assert a.regret.tobytes() == b.regret.tobytes()
    g = problem.global_means[rows]
    assert np.array_equal(a.regret[0], g.max() - g)


def test_instances_of_different_pools_step_env_by_env() -> None:
    """A sampler whose instances differ in pool size cannot be stacked: those envs step
    one by one, and env ``b`` is still the PettingZoo env seeded ``s + b``."""

    def sampler(rng: np.random.Generator) -> LinearProblem:
        pool = 8 + 4 * int(rng.integers(3))
        x = rng.normal(size=(pool, 3)) / 3.0
        return LinearProblem(x, rng.normal(size=(4, 3)) / 3.0, set_size=4)

    core = LinearCore(sampler, Network.ring(4), [Broadcast() for _ in range(4)], 5)
    core.reset([0, 1, 2, 3])
    assert len({p.n_features for p in core.problems}) > 1 and not core._stacked
    env = federated_linear_v0.parallel_env(problem=sampler, network=Network.ring(4), horizon=5)
    env.reset(seed=2)
    arms = np.zeros((4, 4), int)
    for _ in range(5):
        step = core.step(arms)
        _, rewards, *_ = env.step(dict.fromkeys(env.possible_agents, 0))
        assert list(rewards.values()) == step.rewards[2].tolist()


def test_a_sampler_of_other_shapes_is_refused() -> None:
    """An instance of another dimension than the first would be read past its rows by
    the compiled step and the contexts' gather: refused at the reset that draws it."""

    def sampler(rng: np.random.Generator) -> LinearProblem:
        dim = 2 + int(rng.integers(2))
        return dubey_synthetic(3, set_size=4, dim=dim, seed=int(rng.integers(100)))

    core = LinearCore(sampler, Network.complete(3), [Broadcast()], horizon=2)
    with pytest.raises(ValueError, match="the sampler drew a problem of 3 agents"):
        for seed in range(20):
            core.reset([seed])
