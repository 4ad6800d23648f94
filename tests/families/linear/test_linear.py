"""The linear contextual family: problems, the env, the sync protocol, the kernels and
the policies (the replay of both paths is in ``tests/runner/test_replay.py``, the privacy
audits in ``tests/families/linear/test_linear_privacy.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numba import njit

from baselines.linear import FedLinUCB, LinUCB, linear_env
from baselines.linear.kernels import (
    UNROLLED_STATISTICS_MAX_DIM,
    SetScratch,
    add_outer_fixed,
    dimension_marker,
    generic_scorer,
    mat_vec,
    mat_vec_fixed,
    rank_one_fixed,
    rank_one_update,
    set_scorer,
    spd_inverse,
    tree_commit,
    tree_release,
    ucb_choice,
)
from baselines.linear.naive import naive_trial
from baselines.linear.vector import lin_ucb, vector_trial
from baselines.papers.dubey import guessing
from fedbandit_env import federated_linear_v0
from fedbandit_env.cli import main
from fedbandit_env.cli.options import default_policies, parse_policies
from fedbandit_env.envs.federated_linear import FederatedLinearEnv
from fedbandit_env.network.graph import make_network
from fedbandit_env.policies import AgentSpec, IndependentTeam
from fedbandit_env.problems.kernels import draw_sets
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic, from_features
from fedbandit_env.protocols import Broadcast, Synchronize
from fedbandit_env.registry import make as make_team
from fedbandit_env.rng_kernels import generator_at, generator_table
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_determinism, check_parallel_env

PROBLEM = dubey_synthetic(3, dim=3, seed=0, heterogeneity=0.1)


# --------------------------------------------------------------------- problems
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dubey_sets_have_one_best_vector_and_the_papers_ranges(seed: int) -> None:
    p = dubey_synthetic(4, dim=5, seed=seed)
    assert p.set_size == 25 and np.linalg.norm(p.features, axis=1).max() <= 1 + 1e-12
    rng = np.random.default_rng(seed)
    for _ in range(20):
        means = p.global_means[p.draw_sets(rng)]
        top = np.sort(means, axis=1)
        assert ((top[:, -1] >= 0.7) & (top[:, -1] <= 0.8)).all()
        assert ((top[:, :-1] >= 0.5) & (top[:, :-1] <= 0.6)).all()
    assert np.linalg.norm(p.theta.mean(axis=0)) == pytest.approx(1.0)


def test_heterogeneous_agents_keep_the_global_theta() -> None:
    p = dubey_synthetic(5, dim=4, seed=3, heterogeneity=0.2)
    assert not np.allclose(p.theta[0], p.theta[1])
    np.testing.assert_allclose(p.local_means.mean(axis=0), p.global_means, atol=1e-12)
    assert np.abs(p.local_means - p.global_means).max() <= 0.2 + 1e-12


@pytest.mark.parametrize(("n_best", "seed"), [(0, 1), (3, 2), (1, 7)])
def test_compiled_set_draws_match_numpy(n_best: int, seed: int) -> None:
    p = LinearProblem(np.eye(6)[:, :3], [0.1, 0.2, 0.3], set_size=4, n_agents=3, n_best=n_best)
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    out = np.empty((3, 4), dtype=np.int64)
    for _ in range(5):
        np.testing.assert_array_equal(draw_sets(n_best, 6, a, out), p.draw_sets(b))
    assert a.random() == b.random()  # the same amount of the stream consumed
    # from a row of a generator table: a PCG64 row through a stream, another in place
    for bits in (np.random.PCG64, np.random.MT19937):
        a, b = np.random.Generator(bits(seed)), np.random.Generator(bits(seed))
        table = generator_table([a])
        for _ in range(5):
            mine = draw_sets(n_best, 6, generator_at(table, 0), out)
            np.testing.assert_array_equal(mine, p.draw_sets(b))
        assert a.random() == b.random()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: LinearProblem([[1.0, 0.0]], [1.0], 1), "dimension"),
        (lambda: LinearProblem([[1.0, np.nan]], [1.0, 0.0], 1), "finite"),
        (lambda: LinearProblem([[1.0, 0.0]], [1.0, 0.0], 0), "set_size must be >= 1"),
        (lambda: LinearProblem([[1.0, 0.0]], [2.0, 0.0], 1, noise="bernoulli"), r"\[0, 1\]"),
        (lambda: LinearProblem([[1.0, 0.0]], [0.5, 0.0], 2, n_best=1), "best pool"),
        (lambda: LinearProblem([[1.0, 0.0]], [0.5, 0.0], 1, noise="poisson"), "noise must be"),
        (lambda: LinearProblem([[1.0, 0.0]], [0.5, 0.0], 1, sigma=-1.0), "sigma must be"),
        (lambda: LinearProblem([[1.0, 0.0]], [[0.5, 0.0]], 1, n_agents=3), "disagrees"),
        (lambda: dubey_synthetic(2, dim=1), "dim must be >= 2"),
        (lambda: dubey_synthetic(2, dim=3, heterogeneity=0.5), "heterogeneity"),
        (lambda: dubey_synthetic(2, dim=3, best=(0.9, 0.8)), "best must be a range"),
    ],
)
def test_problems_reject_bad_input(call: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# --------------------------------------------------------------------- the env
CONFIGS = {
    "silent": lambda: federated_linear_v0.parallel_env(n_agents=3, dim=2, horizon=30),
    "sync": lambda: linear_env(PROBLEM, horizon=30),
    "broadcast": lambda: FederatedLinearEnv(
        PROBLEM, make_network("ring", 3), Broadcast(), horizon=30, message_dim=3
    ),
    "drawn": lambda: FederatedLinearEnv(
        lambda rng: dubey_synthetic(3, dim=2, seed=rng), horizon=30, split="held_out"
    ),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_linear_env_passes_api_and_full_episode_determinism(name: str) -> None:
    check_parallel_env(CONFIGS[name], num_cycles=40)
    check_determinism(CONFIGS[name], seed=3)


def test_regret_is_against_the_global_best_of_the_agents_own_set() -> None:
    env = FederatedLinearEnv(PROBLEM, horizon=5)
    obs, _ = env.reset(seed=1)
    for _ in range(5):
        sets = env.decision_sets
        g = PROBLEM.global_means[sets]
        np.testing.assert_allclose(obs["agent_0"]["contexts"], PROBLEM.features[sets[0]], 1e-6)
        obs, _, _, _, infos = env.step({a: 2 for a in env.agents})
        for i, a in enumerate(env.possible_agents):
            assert infos[a]["regret"] == pytest.approx(g[i].max() - g[i, 2])


def test_drawn_instances_differ_by_seed_and_can_be_pinned() -> None:
    env = CONFIGS["drawn"]()
    _, info_a = env.reset(seed=1)
    theta_a = env.problem.theta.copy()
    _, info_b = env.reset(seed=2)
    assert [info_a["agent_0"]["instance"], info_b["agent_2"]["instance"]] == [1, 2]
    assert not np.allclose(theta_a, env.problem.theta)
    pinned = dubey_synthetic(3, dim=2, seed=9)
    env.reset(seed=3, options={"problem": pinned})
    assert env.problem is pinned
    with pytest.raises(ValueError, match="options\\['problem'\\]"):
        env.reset(options={"problem": dubey_synthetic(2, dim=2, seed=0)})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"problem": "x"}, "LinearProblem"),
        ({"problem": dubey_synthetic(1, dim=2, seed=0)}, "at least 2 agents"),
        ({"horizon": 0}, "horizon must be >= 1"),
        ({"split": "test"}, "split must be one of"),
        ({"link_costs": (-1.0, 1.0)}, "link_costs"),
        ({"message_bounds": (1.0, 0.0)}, "message_bounds"),
    ],
)
def test_linear_env_rejects_bad_input(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        FederatedLinearEnv(**{"problem": PROBLEM, **kwargs})


def test_sync_rounds_cost_one_uplink_per_agent_and_sum_in_order() -> None:
    proto = Synchronize()
    proto.reset(
        federated_linear_v0.parallel_env(n_agents=3, dim=2).network, np.random.default_rng(0)
    )
    messages = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 6.0]])
    assert proto.route(messages, 1).server_links == 0
    messages[1, 0] = 1.0
    d = proto.route(messages, 2)
    assert d.server_links == 3 and d.server is not None
    np.testing.assert_array_equal(d.server, np.tile([3.0, 9.0, 12.0], (3, 1)))


# --------------------------------------------------------------------- kernels
def test_rank_one_updates_track_the_inverse_and_log_det() -> None:
    rng = np.random.default_rng(0)
    v, inv, log_det = 2.0 * np.eye(4), np.eye(4) / 2.0, 4 * np.log(2.0)
    for _ in range(500):
        x = rng.uniform(-1, 1, 4)
        v += np.outer(x, x)
        log_det += rank_one_update(inv, x, np.empty(4))
    np.testing.assert_allclose(inv, np.linalg.inv(v), rtol=1e-9, atol=1e-12)
    assert log_det == pytest.approx(np.linalg.slogdet(v)[1], rel=1e-10)
    out = np.empty((4, 4))
    assert spd_inverse(v, out) == pytest.approx(np.linalg.slogdet(v)[1], rel=1e-12)
    np.testing.assert_allclose(out, np.linalg.inv(v), rtol=1e-9, atol=1e-12)
    assert spd_inverse(-np.eye(2), np.empty((2, 2))) == -np.inf


@njit
def _written_out(inv: Any, x: Any, v: Any, work: Any, out: Any, leaf: Any, z: Any,
                 marker: Any) -> float:  # fmt: skip
    inc = rank_one_fixed(inv, x, work, marker)
    mat_vec_fixed(inv, v, out, marker)
    add_outer_fixed(leaf, z, marker)
    return inc


@njit
def _loops(inv: Any, x: Any, v: Any, work: Any, out: Any, leaf: Any, z: Any) -> float:
    inc = rank_one_update(inv, x, work)
    mat_vec(inv, v, out)
    for a in range(z.shape[0]):
        for c in range(z.shape[0]):
            leaf[a, c] += z[a] * z[c]
    return inc


@pytest.mark.parametrize(
    "dim",  # each d compiles its own straight-line code: the quick subset keeps two
    [
        3,
        10,
        pytest.param(1, marks=pytest.mark.slow),
        pytest.param(2, marks=pytest.mark.slow),
        pytest.param(UNROLLED_STATISTICS_MAX_DIM, marks=pytest.mark.slow),
        pytest.param(17, marks=pytest.mark.slow),
    ],
)
def test_the_written_out_statistics_are_the_loops_to_the_bit(dim: int) -> None:
    # the vector steps' statistics (unrolled up to d = 16, the loops above) against the
    # loops the per-agent policies run: 40 rank-one updates of an inverse that is not
    # exactly symmetric, each followed by a product and a leaf update, every bit equal
    rng = np.random.default_rng(dim)
    a = rng.normal(size=(dim, dim))
    inv = np.linalg.inv(a @ a.T + np.eye(dim))
    assert len(dimension_marker(dim)) == (dim if dim <= UNROLLED_STATISTICS_MAX_DIM else 0)
    mine = [inv.copy(), np.zeros(dim), np.zeros(dim), rng.normal(size=(dim + 1, dim + 1))]
    loops = [m.copy() for m in mine]
    for _ in range(40):
        x, v, z = rng.normal(size=dim), rng.normal(size=dim), rng.normal(size=dim + 1)
        inv_m, work_m, out_m, leaf_m = mine
        inv_l, work_l, out_l, leaf_l = loops
        got = _written_out(inv_m, x, v, work_m, out_m, leaf_m, z, dimension_marker(dim))
        assert got == _loops(inv_l, x, v, work_l, out_l, leaf_l, z)
        for m, loop in zip(mine, loops, strict=True):
            np.testing.assert_array_equal(m, loop)
    if dim > 1:  # not symmetric to the bit: which product is which shows
        assert not np.array_equal(mine[0], mine[0].T)


@pytest.mark.parametrize("dim", [1, 3, 10, 33])
def test_ucb_choice_is_the_oful_argmax(dim: int) -> None:
    # the generated chooser (d <= 32) and the loops (any d) against float64 NumPy, on
    # sets of 5, 16 and 37 vectors (padded buffers), drawn from a larger pool
    rng = np.random.default_rng(dim)
    a = rng.normal(size=(dim, dim))
    inv = a @ a.T / dim + np.eye(dim)
    pool = rng.normal(size=(60, dim)).astype(np.float32)
    theta = rng.normal(size=dim)
    scorers = {set_scorer(dim), generic_scorer()}
    assert (set_scorer(dim) is generic_scorer()) == (dim > 32)
    for k in (5, 16, 37):
        rows = rng.choice(60, size=k, replace=False)
        x = pool[rows].astype(np.float64)
        for beta in (0.0, 0.3, 5.0):
            scores = x @ theta + beta * np.sqrt(np.einsum("kd,de,ke->k", x, inv, x))
            for scorer in scorers:
                scratch = SetScratch.of(dim, k)
                got = ucb_choice(scorer, pool, rows, inv, theta, beta, scratch)
                assert got == int(np.argmax(scores))
                # float32 rounding of sums of at most (d + 1)^2 terms of size ~1
                tol = (dim + 1) ** 2 * float(np.finfo(np.float32).eps)
                np.testing.assert_allclose(scratch.scores[:k], scores, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "dim",  # d = 17 and 32 compile for 5 s and 30 s: slow
    [
        7,
        8,
        9,
        16,
        pytest.param(17, marks=pytest.mark.slow),
        pytest.param(32, marks=pytest.mark.slow),
    ],
)
def test_the_generated_chooser_gathers_each_set_exactly(dim: int) -> None:
    # d >= 8 gathers eight vectors at a time by an 8 x 8 transpose (transpose8; blocks
    # of 8 components, the last overlapping), the set's last n % 8 one by one: the
    # buffer holds the set's vectors transposed, bit for bit, and the scores are the
    # loops' to float32 rounding
    rng = np.random.default_rng(dim)
    pool = rng.normal(size=(500, dim)).astype(np.float32)
    a = rng.normal(size=(dim, dim))
    inv, theta = a @ a.T / dim + np.eye(dim), rng.normal(size=dim)
    for k in (7, 8, 9, 23, 100):
        rows = rng.integers(0, 500, size=k)
        mine, loops = SetScratch.of(dim, k), SetScratch.of(dim, k)
        got = ucb_choice(set_scorer(dim), pool, rows, inv, theta, 0.4, mine)
        ucb_choice(generic_scorer(), pool, rows, inv, theta, 0.4, loops)
        np.testing.assert_array_equal(mine.xt[:, :k], pool[rows].T)
        tol = (dim + 1) ** 2 * float(np.finfo(np.float32).eps)
        np.testing.assert_allclose(mine.scores[:k], loops.scores[:k], rtol=tol, atol=tol)
        assert got == int(np.argmax(mine.scores[:k]))


def test_ucb_choice_takes_the_first_of_tied_vectors() -> None:
    pool = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    theta = np.array([1.0, 0.0])
    for scorer in (set_scorer(2), generic_scorer()):
        rows = np.array([0, 2, 1])
        assert ucb_choice(scorer, pool, rows, np.eye(2), theta, 0.0, SetScratch.of(2, 3)) == 1


def test_tree_releases_are_the_prefix_sums_plus_the_cover_noise() -> None:
    levels, rng = 4, np.random.default_rng(2)
    acc, node = np.zeros((levels, 2, 2)), np.zeros((levels, 2, 2))
    leaves = rng.normal(size=(15, 2, 2))
    noises: dict[tuple[int, int], np.ndarray] = {}
    for r in range(1, 16):
        pending = rng.normal(size=(2, 2))
        level = (r & -r).bit_length() - 1
        noises[(level, r)] = pending
        release = tree_release(acc, node, leaves[r - 1], pending, r, np.empty((2, 2)))
        tree_commit(acc, node, leaves[r - 1], pending, r)
        # the dyadic cover of r: one node per set bit, each with the noise it was closed with
        cover = [(lvl, (r >> lvl) << lvl) for lvl in range(levels) if (r >> lvl) & 1]
        expected = leaves[:r].sum(axis=0) + sum(noises[c] for c in cover)
        np.testing.assert_allclose(release, expected, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------- policies
def test_a_round_every_step_gives_every_agent_the_pooled_gram_matrix() -> None:
    """Non-private, a round after every observation: at step 6 every agent's ``V`` is
    ``M lambda I`` plus every agent's data of steps 1-4 (the round of step 5) plus its own
    observation of step 5."""
    env = linear_env(PROBLEM, horizon=6)
    team = IndependentTeam(lambda: FedLinUCB(sync="fixed", batch=1))
    obs, _ = env.reset(seed=0)
    team.reset(env, seed=0)
    chosen = []  # chosen[step][agent]
    for _ in range(5):
        actions = team.act(obs)
        chosen.append([obs[a]["contexts"][actions[a]["arm"]] for a in env.possible_agents])
        obs, *_ = env.step(actions)
    team.act(obs)
    pooled = 3 * np.eye(3) + sum(np.outer(x, x) for step in chosen[:4] for x in step)
    for i, pol in enumerate(team.policies):
        mine = np.outer(chosen[4][i], chosen[4][i])
        np.testing.assert_allclose(np.linalg.inv(pol.inv), pooled + mine, rtol=1e-5)


def test_pooling_beats_federation_beats_local_linucb_and_all_beat_random() -> None:
    scenario = Scenario(n_agents=4, n_arms=16, horizon=1500, instance="dubey", dim=4, seed=1)
    final = {
        p: run_fast(p, scenario, 3, seed=0, record_every=1500, progress=False).final_per_agent
        for p in ("pooled_lin_ucb", "fedlin_ucb", "lin_ucb")
    }
    random_regret = 0.2 * 1500  # gap 0.7-0.8 vs 0.5-0.6: about 0.2 a step
    assert final["pooled_lin_ucb"].max() < final["fedlin_ucb"].min(), final
    assert final["fedlin_ucb"].max() < final["lin_ucb"].min() < 0.5 * random_regret, final


def _corrected_finals(
    noise_bound: str, epsilon: float, pid: str = "private_fedlin_ucb"
) -> np.ndarray:
    """A corrected private FedUCB's final per-agent regret, Fig. 1(A)'s set-up at
    M = 10, d = 10, T = 2e3 (4 trials; about 0.2 s)."""
    scenario = Scenario(n_agents=10, n_arms=100, horizon=2000, instance="dubey", dim=10, seed=0)
    kw = {"epsilon": epsilon, "noise_bound": noise_bound}
    c = run_fast(pid, scenario, 4, seed=0, record_every=2000, progress=False, **kw)
    return c.final_per_agent


def _falls_with_epsilon(noise_bound: str, pid: str = "private_fedlin_ucb") -> tuple[bool, str]:
    """Whether regret at epsilon = 10 lies below that at epsilon = 0.1 by more than four
    standard errors of the difference (from the trials' own spread)."""
    low = _corrected_finals(noise_bound, 0.1, pid)
    high = _corrected_finals(noise_bound, 10.0, pid)
    se = float(np.sqrt(low.var(ddof=1) / low.size + high.var(ddof=1) / high.size))
    return bool(low.mean() - high.mean() > 4 * se), f"{low} vs {high}, se {se:.2f}"


def test_the_corrected_private_fedlin_ucb_learns_more_as_epsilon_grows() -> None:
    # Less noise must not make a learner worse. With every agent's noise bounded on its own
    # ("each": a prior of M Lambda and M kappa in the width) the corrected variant's
    # width outweighs the gaps for the whole run and regret *rose* with epsilon (391 ->
    # 396 per agent here; guessing 410); bounding the sum of the agents' independent
    # noises ("joint", the default) it falls (383 -> 349).
    falls, why = _falls_with_epsilon("joint")
    assert falls, why
    scenario = Scenario(n_agents=10, n_arms=100, horizon=2000, instance="dubey", dim=10, seed=0)
    assert _corrected_finals("joint", 10.0).max() < 0.9 * guessing(scenario) * 2000
    rises_before, why = _falls_with_epsilon("each")
    assert not rises_before, why  # the check catches the behaviour it replaced


def test_the_decentralized_private_variant_learns_more_as_epsilon_grows() -> None:
    # one tree per estimator, on a complete graph (every agent one hop from every other)
    falls, why = _falls_with_epsilon("joint", "private_dec_fedlin_ucb")
    assert falls, why


def test_noise_bound_changes_public_constants_only() -> None:
    spec = AgentSpec(0, 16, 100, horizon=2000, message_dim=122, context_dim=10)
    each, joint = (
        FedLinUCB(sync="fixed", epsilon=1.0, calibration="gdp", noise_bound=nb)
        for nb in ("each", "joint")
    )
    each.reset(spec, seed=3)
    joint.reset(spec, seed=3)
    assert joint.noise_std == each.noise_std  # the same noise: the same privacy
    np.testing.assert_array_equal(joint.pending, each.pending)
    assert joint.rho_min * 16 == pytest.approx(each.rho_min * 4)  # sqrt(M) Lambda in S
    assert joint.kappa * 16 == pytest.approx(each.kappa * 2)  # M^(1/4) kappa in the width
    assert FedLinUCB().noise_bound == "each"  # as published


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sync": "sometimes"}, "sync must be"),
        ({"calibration": "exact"}, "calibration must be"),
        ({"epsilon": 1.0, "calibration": "gdp"}, "fixed schedule"),
        ({"batch": 0}, "batch must be"),
        ({"epsilon": 0.0}, "epsilon must be"),
        ({"delta": 1.0}, "delta must lie"),
        ({"threshold": -1.0}, "threshold must be"),
        ({"alpha": 1.5}, "alpha must lie"),
        ({"noise_scale": 0.0}, "noise_scale must be"),
        ({"noise_bound": "both"}, "noise_bound must be"),
    ],
)
def test_fedlinucb_rejects_bad_options(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        FedLinUCB(**kwargs)


def test_linear_policies_refuse_envs_they_cannot_read() -> None:
    with pytest.raises(ValueError, match="needs a linear env"):
        LinUCB().reset(AgentSpec(0, 2, 3, 10))
    with pytest.raises(ValueError, match="build it with baselines.linear.linear_env"):
        FedLinUCB().reset(AgentSpec(0, 2, 3, 10, message_dim=4, context_dim=2))
    with pytest.raises(ValueError, match="dim and heterogeneity apply to linear"):
        Scenario(dim=3)
    with pytest.raises(ValueError, match="dim must be >= 2"):
        Scenario(instance="dubey")
    with pytest.raises(ValueError, match="noise 'bernoulli' or 'gaussian'"):
        Scenario(instance="dubey", dim=2, noise="clipped_gaussian")


def test_policies_of_the_other_bandit_are_refused_on_both_paths() -> None:
    linear = Scenario(n_agents=2, n_arms=4, horizon=5, instance="dubey", dim=2)
    for interactive in (False, True):
        with pytest.raises(ValueError, match="multi-armed policy"):
            evaluate("random", linear, trials=1, progress=False, interactive=interactive)
        with pytest.raises(ValueError, match="plays linear contextual bandits"):
            evaluate("lin_ucb", Scenario(horizon=5), trials=1, interactive=interactive)


def test_user_feature_tables_plug_in() -> None:
    table = np.random.default_rng(0).uniform(-1, 1, (40, 3))
    p = from_features(table, [0.3, -0.2, 0.1], set_size=5, n_agents=2)
    env = FederatedLinearEnv(p, horizon=20)
    c = run_trials(lambda: env, lambda: IndependentTeam(LinUCB), 1, progress=False)
    assert c.regret.shape == (1, 2, 20) and (c.regret >= 0).all()


def test_the_numpy_yardstick_of_the_speed_benchmark_is_the_same_policy() -> None:
    """``examples/linear_speed.py`` compares the fast path with ``naive_trial``: they
    must play the same LinUCB (here: the same choices, so the same regret)."""
    problem = dubey_synthetic(5, dim=4, seed=2)
    naive = naive_trial(problem, 300, env_seed=3)
    fast, *_ = vector_trial(lin_ucb(), problem, 300, 3, np.array([300]))
    np.testing.assert_allclose(naive, fast[:, 0], rtol=0, atol=1e-9)


def test_bench_runs_the_linear_family_and_records_the_instance(tmp_path: Path) -> None:
    argv = ["bench", "--instance", "dubey", "--dim", "2", "--agents", "2", "--horizon", "30"]
    argv += ["--trials", "1", "--out", str(tmp_path), "--no-plot", "--no-progress"]
    assert main(argv) == 0
    rows = (tmp_path / "regret.csv").read_text().splitlines()
    policies = {line.split(",")[2] for line in rows[1:]}
    assert policies == set(default_policies(linear=True))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["scenario"]["dim"] == 2 and config["scenario"]["n_arms"] == 4
    assert len(config["theta"]) == 2 and "local_means" not in config


@pytest.mark.slow
def test_a_learned_policy_trains_on_contexts_and_is_compared_on_held_out_instances(
    tmp_path: Path,
) -> None:
    pytest.importorskip("stable_baselines3")
    argv = ["train", "a2c", "--instance", "dubey", "--dim", "2", "--agents", "2"]
    argv += ["--horizon", "10", "--timesteps", "200", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    train = json.loads((tmp_path / "train.json").read_text())
    assert train["scenario"]["instances"] == "train" and train["stack"]["statistics"] is False
    held_out = Scenario(
        n_agents=2, n_arms=4, horizon=10, instance="dubey", dim=2, instances="held_out"
    )
    c = evaluate(f"a2c:{tmp_path / 'model.zip'}", held_out, trials=2, progress=False)
    assert c.regret.shape == (2, 2, 10) and (c.regret >= 0).all()


@pytest.mark.parametrize(("gamma", "reaches_two_hops"), [(1, False), (2, True)])
def test_decentralized_statistics_travel_gamma_hops(gamma: int, reaches_two_hops: bool) -> None:
    """On a path 0 - 1 - 2, agent 0 hears agent 2's statistics only with gamma >= 2."""
    scenario = Scenario(n_agents=3, n_arms=4, horizon=80, instance="dubey", dim=2, graph="path")
    team = make_team("dec_fedlin_ucb", gamma=gamma, threshold=5.0)
    env = scenario.make_env(team.requirements(3, 4))
    assert env.unwrapped.protocol.gamma == gamma
    obs, _ = env.reset(seed=0)
    team.reset(env, seed=0)
    responses = 0
    while env.agents:
        actions = team.act(obs)
        responses += sum(int(a["message"][1]) for a in actions.values())
        obs, *_ = env.step(actions)
    first = team.policies[0]
    assert responses > 3
    assert bool(np.abs(first.others[:, 1]).sum() > 0)  # the neighbour, always
    assert bool(np.abs(first.others[:, 2]).sum() > 0) is reaches_two_hops


def test_decentralized_federation_beats_local_linucb_on_a_complete_graph() -> None:
    scenario = Scenario(n_agents=4, n_arms=16, horizon=1500, instance="dubey", dim=4, seed=1)
    final = {
        p: run_fast(p, scenario, 3, seed=0, record_every=1500, progress=False).final_per_agent
        for p in ("dec_fedlin_ucb", "lin_ucb")
    }
    assert final["dec_fedlin_ucb"].max() < final["lin_ucb"].min(), final


def test_linear_scenarios_run_in_the_local_and_sync_settings_only() -> None:
    base = {"n_agents": 3, "n_arms": 4, "horizon": 20, "instance": "dubey", "dim": 2}
    with pytest.raises(ValueError, match="a linear scenario runs in the settings"):
        Scenario(**base, setting="gossip")  # type: ignore[arg-type]
    local = Scenario(**base, setting="local")  # type: ignore[arg-type]
    assert parse_policies(None, "local", linear=True) == ["lin_ucb", "pooled_lin_ucb"]
    with pytest.raises(ValueError, match="not meant for the 'local' setting"):
        evaluate("fedlin_ucb", local, trials=1, progress=False)
    sync = Scenario(**base, setting="sync")  # type: ignore[arg-type]
    fed = evaluate("fedlin_ucb", sync, {"threshold": 5.0}, trials=1, progress=False)
    alone = evaluate("lin_ucb", sync, trials=1, progress=False)
    assert fed.setting == alone.setting == "sync"
    assert fed.comm_cost[0, -1] > 0 and alone.comm_cost[0, -1] == 0


LOAD_CHOOSER = """
import sys
from numba.core import event
import baselines.linear.kernels as kernels
if sys.argv[1] == "unfiled":  # the chooser exec'd from a string, as it was: no disk cache
    kernels.generated_module = lambda *args: None
compiled = []

class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev)

    def on_end(self, ev):
        pass

event.register("numba:compile", Count())
if sys.argv[2] == "chooser":
    kernels.set_scorer(9)
else:
    from fedbandit_env.runner.fast import run_fast
    from fedbandit_env.scenario import Scenario
    run_fast(sys.argv[2], Scenario(instance="dubey", dim=3, n_agents=2, n_arms=4, horizon=30),
             1, progress=False)
print("compiled", len(compiled))
"""


def _compiles(cache: Path, mode: str, what: str) -> int:
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", LOAD_CHOOSER, mode, what], env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


@pytest.mark.parametrize(
    "what", ["chooser", pytest.param("lin_ucb", marks=pytest.mark.slow)]
)  # lin_ucb: the whole fast path compiles in the first process (about 20 s)
def test_the_generated_chooser_is_cached_for_the_next_process(tmp_path: Path, what: str) -> None:
    # the chooser for d is written to a file under numba's cache folder, so numba caches
    # its compiled code: a second process compiles nothing, neither the chooser nor
    # (lin_ucb) anything of the fast path
    assert _compiles(tmp_path, "filed", what) >= 1
    assert _compiles(tmp_path, "filed", what) == 0
    assert list((tmp_path / "fedbandit_env" / "scorers").glob("set_scorer_d*.py"))
    # power check: exec'd from a string, the chooser compiles in every process
    assert _compiles(tmp_path, "unfiled", what) >= 1
