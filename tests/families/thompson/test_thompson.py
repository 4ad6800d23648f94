"""Thompson sampling (local, cooperative hold/relay, private) and local KL-UCB: their
fast paths replay their PettingZoo paths, and their mathematics does what it says."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baselines.thompson.kernels import (
    BETA,
    GAUSSIAN,
    Posterior,
    held_rows,
    merge_relayed,
    team_sample,
)
from baselines.thompson.policies import CooperativeTS, private_extra_variance
from baselines.ucb.kernels import kl_bernoulli, kl_ucb_choice, kl_ucb_index, kl_upper
from fedbandit_env.policies import AgentSpec
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_replay

REPLAYS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("local_ts", {"graph": "ring"}, {}),
    ("local_ts", {"instance": "zhu", "noise": "gaussian", "sigma": 0.5}, {}),
    ("kl_ucb", {"graph": "complete"}, {}),
    ("kl_ucb", {"instance": "zhu", "noise": "gaussian"}, {"c": 3.0}),
    ("coop_ts", {"graph": "ring", "protocol": "broadcast"}, {}),
    ("coop_ts", {"graph": "complete"}, {}),
    ("coop_ts", {"graph": "star", "protocol": "neighbour_gossip"}, {"posterior": "gaussian"}),
    ("coop_ts", {"graph": "ring", "protocol": "broadcast"}, {"posterior": "beta"}),
    ("coop_ts_relay", {"graph": "path", "protocol": "broadcast"}, {"posterior": "beta"}),
    ("coop_ts_relay", {"graph": "path", "protocol": "broadcast"}, {}),
    ("coop_ts_relay", {"graph": "ring", "noise": "gaussian", "sigma": 0.7}, {}),
    ("coop_ts_relay", {"graph": "star", "protocol": "neighbour_gossip"}, {"scale": 0.5}),
    ("private_coop_ts", {"graph": "ring", "protocol": "broadcast"}, {"epsilon": 1.0}),
    ("private_coop_ts", {"graph": "complete", "estimator": "honaker"}, {"epsilon": 3.0}),
    (
        "private_coop_ts",
        {"noise": "gaussian", "sigma": 0.7, "clip": (-0.5, 1.5)},
        {"epsilon": 1.0, "share": "relay", "sensitivity": 2.0},
    ),
]


@pytest.mark.parametrize(
    ("policy", "setting", "params"),
    REPLAYS,
    ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(REPLAYS)],
)
def test_fast_path_replays_the_pettingzoo_path(
    policy: str, setting: dict[str, Any], params: dict[str, Any]
) -> None:
    scenario = Scenario(n_agents=5, n_arms=3, horizon=90, seed=3, **setting)
    check_replay(policy, scenario, params, seed=7, trials=2)


def test_the_gaussian_average_has_the_average_posterior() -> None:
    """One standard normal per arm has the law of the average of one draw per held row
    that pulled the arm: mean ``avg S / n``, variance ``sum var_j / H^2`` (checked
    against 4000 draws, 4.5 standard errors); the row without pulls is left out."""
    counts = np.array([[4.0], [9.0], [0.0]])
    sums = np.array([[2.0], [7.0], [0.0]])
    post = Posterior(GAUSSIAN, 0.0, 1.0, 0.8, 3.0)
    rng = np.random.default_rng(1)
    draws = np.array(
        [
            team_sample(counts, sums, np.arange(3), 3, post, rng, np.empty(1), np.empty(3))[0]
            for _ in range(4000)
        ]
    )
    n = counts[:2, 0]
    mean = (sums[:2, 0] / n).mean()
    var = (0.8**2 / n + 3.0 / n**2).sum() / 4
    assert abs(draws.mean() - mean) < 4.5 * np.sqrt(var / 4000)
    assert abs(draws.var() - var) < 4.5 * var * np.sqrt(2 / 4000)


def test_the_beta_average_is_rescaled_and_uses_every_held_row() -> None:
    """Rewards in [2, 4]: draws stay in the range, and their mean is the average of the
    rows' posterior means (a row left out moves it by far more than the tolerance)."""
    counts = np.array([[50.0], [50.0]])
    sums = np.array([[50 * 2.2], [50 * 3.8]])  # local means 2.2 and 3.8
    post = Posterior(BETA, 2.0, 2.0, 1.0, 0.0)
    rng = np.random.default_rng(2)
    rows = np.array([0, 1])
    both = [
        team_sample(counts, sums, rows, 2, post, rng, np.empty(1), np.empty(3))[0]
        for _ in range(2000)
    ]
    one = [
        team_sample(counts, sums, rows, 1, post, rng, np.empty(1), np.empty(3))[0]
        for _ in range(2000)
    ]
    assert min(both) >= 2.0 and max(both) <= 4.0
    expected = 2 + 2 * np.mean([(1 + 50 * 0.1) / 52, (1 + 50 * 0.9) / 52])
    assert abs(np.mean(both) - expected) < 0.01
    assert abs(np.mean(one) - expected) > 0.5


def test_relay_takes_only_newer_rows_and_never_its_own() -> None:
    counts, sums, stamps = np.ones((3, 2)), np.ones((3, 2)), np.array([5.0, 4.0, 0.0])
    table = np.array([[9, 9, 9, 9, 9.0], [7, 7, 7, 7, 3.0], [2, 1, 0.5, 0.25, 6.0]])
    post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
    assert merge_relayed(counts, sums, stamps, table, 0, 6, post) == 0  # all honest at step 6
    assert counts[0].tolist() == [1, 1] and stamps[0] == 5  # its own row, untouched
    assert counts[1].tolist() == [1, 1] and stamps[1] == 4  # older: kept
    assert counts[2].tolist() == [2, 1] and sums[2].tolist() == [0.5, 0.25] and stamps[2] == 6
    rows = np.zeros(3, np.int64)
    assert held_rows(np.array([0.0, 0.0, 1.0]), 1, rows) == 2 and rows[:2].tolist() == [1, 2]


def test_kl_ucb_bound_is_the_largest_q_within_the_divergence() -> None:
    rng = np.random.default_rng(0)
    cases = [(0.1, 0.05), (0.5, 1.0), (0.9, 0.01), (0.0, 0.3), (1.0, 0.2), (0.999, 5.0)]
    cases += [(float(rng.random()), float(rng.exponential())) for _ in range(200)]
    for p, d in cases:
        q = kl_upper(p, d)
        assert p <= q <= 1.0
        # within 1e-9 of the root: just below it is inside the divergence, above outside
        assert kl_bernoulli(p, max(p, q - 1e-9)) <= d
        assert q > 1.0 - 1e-9 or kl_bernoulli(p, q + 1e-9) > d
    # Gaussian kl (unbounded rewards): UCB with scale sqrt(2 log t / n)
    out = kl_ucb_index(np.array([3.0]), np.array([4.0]), 2.0, 0.0, 0.0, 0.0, 0.5, np.empty(1))
    assert out[0] == pytest.approx(0.75 + 0.5 * np.sqrt(2 * 2.0 / 4))


def test_kl_ucb_choice_keeps_the_argmax_and_its_ties() -> None:
    """The pruned index has the exact index's largest value and the same tying arms, on
    states a run visits (many pulls, few pulls, duplicated arms: exact ties), and it solves
    fewer roots: some arm keeps its rescaled mean, below its index."""
    rng = np.random.default_rng(1)
    pruned = 0
    for case in range(2000):
        m = int(rng.integers(2, 9))
        counts = rng.integers(1, 10 ** int(rng.integers(1, 5)), m).astype(float)
        sums = np.floor(counts * rng.random(m))
        if case % 4 == 0:  # a duplicated arm: an exact tie
            counts[-1], sums[-1] = counts[0], sums[0]
        lo, width = (0.0, 1.0) if case % 2 else (-1.0, 2.0)
        sums = sums * width + lo * counts
        log_t = float(np.log(counts.sum()))
        c = 0.0 if case % 3 else 3.0
        exact = kl_ucb_index(sums, counts, log_t, c, lo, width, 1.0, np.empty(m))
        fast = kl_ucb_choice(sums, counts, log_t, c, lo, width, 1.0, np.empty(m))
        top = exact.max()
        assert fast.max() == top
        assert np.flatnonzero(fast == top).tolist() == np.flatnonzero(exact == top).tolist()
        assert np.all(fast <= exact)
        pruned += int(np.any(fast < exact))
    assert pruned > 500  # it prunes (else it is kl_ucb_index again)
    # Gaussian kl (unbounded rewards): the index itself
    args = (np.array([3.0, 1.0]), np.array([4.0, 2.0]), 2.0, 0.0, 0.0, 0.0, 0.5)
    assert kl_ucb_choice(*args, np.empty(2)).tolist() == kl_ucb_index(*args, np.empty(2)).tolist()


def test_message_lengths_and_bad_options_are_refused() -> None:
    assert CooperativeTS("hold").message_dim(4, 3) == 6
    assert CooperativeTS("relay").message_dim(4, 3) == 28
    for bad in (
        {"share": "gossip"},
        {"posterior": "poisson"},
        {"scale": 0.0},
        {"epsilon": 0.0},
        {"epsilon": 1.0, "posterior": "beta"},
    ):
        with pytest.raises(ValueError):
            CooperativeTS(**bad)
    # the tree's variance bound: levels = 11 at T = 1024, b = 11 / 2
    assert private_extra_variance(1024, 2.0, 1.0) == pytest.approx(11 * 2 * 5.5**2)


def test_private_form_runs_in_a_private_setting_and_spends_its_epsilon() -> None:
    scenario = Scenario(n_agents=4, n_arms=3, horizon=64, setting="neighbours+private", epsilon=2.0)
    curves = evaluate(
        "private_coop_ts", scenario, trials=2, progress=False, options={"epsilon": 2.0}
    )
    assert curves.meta["path"] == "fast"
    assert curves.privacy_spent[-1] == pytest.approx(2.0)
    assert np.isfinite(curves.regret).all()


def test_the_dducb_instance_is_the_papers_and_needs_gaussian_noise() -> None:
    problem = Scenario(n_agents=4, n_arms=17, instance="dducb", noise="gaussian").problem()
    assert problem.global_means[0] == 1.0 and set(problem.global_means[1:]) == {0.8}
    assert (problem.local_means == problem.global_means).all()  # homogeneous agents
    with pytest.raises(ValueError, match="gaussian"):
        Scenario(n_agents=4, n_arms=17, instance="dducb").problem()


def test_the_private_id_never_runs_without_noise() -> None:
    # issue 53: private_coop_ts(epsilon=None) ran coop_ts under the private id
    from fedbandit_env.registry import make

    with pytest.raises(ValueError, match="needs an epsilon"):
        make("private_coop_ts", epsilon=None)
    assert make("private_coop_ts").requirements(3, 2).epsilon == 1.0


def test_a_holding_agent_keeps_rows_of_its_neighbours_only() -> None:
    """degree + 1 rows, not N (issue 52): on a ring of 6 each agent holds 3 rows, on
    both paths; a sender heard from outside the graph (another protocol) gets a row in
    sender order, so the draws add up as over a full table."""
    from baselines.thompson.vector import table_members

    ring = [AgentSpec(i, 6, 3, 50, neighbors=((i - 1) % 6, (i + 1) % 6)) for i in range(6)]
    members, own = table_members(ring, "hold")
    assert members.shape == (6, 3) and members[0].tolist() == [0, 1, 5] and own[0] == 0
    assert table_members(ring, "relay")[0].shape == (6, 6)  # relaying: every row
    policy = CooperativeTS("hold")
    policy.reset(AgentSpec(2, 6, 3, 50, neighbors=(1, 3), message_dim=6,
                           reward_bounds=(0.0, 1.0)), seed=0)  # fmt: skip
    assert policy.counts.shape == (3, 3) and policy.members.tolist() == [1, 2, 3]
    heard = np.zeros((6, 6), np.float32)
    heard[5, :3] = [1, 0, 0]  # agent 5, not a neighbour, sent one pull of arm 0
    mask = np.zeros(6, np.int8)
    mask[5] = 1
    policy.act({"arm": 0, "reward": np.zeros(1), "step": np.ones(1), "messages": heard,
                "mask": mask})  # fmt: skip
    assert policy.members.tolist() == [1, 2, 3, 5] and policy.counts[3].tolist() == [1, 0, 0]
    assert policy.counts[1].tolist() == [1, 0, 0]  # its own pull, in its own row
