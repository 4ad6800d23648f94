"""Reward models and instance generators."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env.problems import MABProblem, conflicting, homogeneous, zhu_synthetic


def test_global_means_are_the_average_over_agents() -> None:
    p = MABProblem([[0.9, 0.1, 0.3], [0.1, 0.5, 0.3]])
    np.testing.assert_allclose(p.global_means, [0.5, 0.3, 0.3])
    assert p.best_arm == 0
    np.testing.assert_allclose(p.gaps, [0.0, 0.2, 0.2])
    assert p.local_best_arms.tolist() == [0, 1]
    assert p.conflicting_agents.tolist() == [1]


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["bernoulli", "gaussian", "clipped_gaussian"])
def test_sample_means_match_expected_rewards(noise: str) -> None:
    """Sample means of 40,000 draws lie within 5 standard errors of the exact means."""
    p = MABProblem([[0.2, 0.7], [0.95, 0.05]], noise=noise, sigma=0.5)  # type: ignore[arg-type]
    rng = np.random.default_rng(123)
    n = 40_000
    for arm in (0, 1):
        draws = np.stack([p.sample(np.array([arm, arm]), rng) for _ in range(n)])
        se = draws.std(axis=0) / np.sqrt(n)
        err = np.abs(draws.mean(axis=0) - p.mean_rewards[:, arm])
        assert np.all(err < 5 * se), (noise, arm, err, se)
        lo, hi = p.reward_bounds
        assert draws.min() >= lo and draws.max() <= hi


def test_clipped_gaussian_mean_is_exact_for_symmetric_case() -> None:
    p = MABProblem([[0.5]], noise="clipped_gaussian", sigma=2.0)
    assert p.mean_rewards[0, 0] == pytest.approx(0.5)
    assert MABProblem([[0.9]], noise="clipped_gaussian", sigma=0.3).mean_rewards[0, 0] < 0.9


def test_zhu_synthetic_agents_rank_arms_differently_and_is_seeded() -> None:
    p = zhu_synthetic(10, 10, seed=7)
    assert len({tuple(np.argsort(r)) for r in p.local_means}) == 10
    assert np.all((p.local_means >= 0) & (p.local_means <= 1))
    assert (p.noise, p.sigma) == ("gaussian", 1.0)
    np.testing.assert_array_equal(p.local_means, zhu_synthetic(10, 10, seed=7).local_means)
    assert not np.array_equal(p.local_means, zhu_synthetic(10, 10, seed=8).local_means)


def test_homogeneous_rows_are_equal() -> None:
    p = homogeneous(5, 4, seed=0)
    assert np.all(p.local_means == p.local_means[0])
    assert len(p.conflicting_agents) == 0


@pytest.mark.parametrize(
    ("n", "m", "frac", "gap"),
    [(10, 5, 0.5, 0.1), (8, 3, 1.0, 0.05), (20, 10, 0.3, 0.2), (4, 2, 0.25, 0.1)],
)
def test_conflicting_guarantees_share_and_gap(n: int, m: int, frac: float, gap: float) -> None:
    for seed in range(5):
        p = conflicting(n, m, conflict_fraction=frac, gap=gap, seed=seed)
        assert len(p.conflicting_agents) == round(frac * n)
        assert p.min_gap >= gap - 1e-12
        local = np.sort(p.local_means, axis=1)
        mis = p.conflicting_agents
        assert np.all(local[mis, -1] - p.local_means[mis, p.best_arm] >= gap - 1e-12)


def test_conflicting_refuses_an_infeasible_gap() -> None:
    with pytest.raises(ValueError, match="cannot guarantee the global gap"):
        conflicting(10, 2, conflict_fraction=1.0, gap=0.1, seed=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"local_means": np.zeros((3, 0))}, ValueError, "at least 1 arm.*got 0"),
        ({"local_means": np.zeros(3)}, ValueError, "2-D"),
        ({"local_means": [[0.5, np.nan]]}, ValueError, "finite"),
        ({"local_means": [[1.5]]}, ValueError, r"\[0, 1\] for Bernoulli"),
        (
            {"local_means": [[0.5]], "noise": "gaussian", "sigma": -1.0},
            ValueError,
            "sigma must be.*>= 0, got -1.0",
        ),
        ({"local_means": [[0.5]], "noise": "poisson"}, ValueError, "noise must be one of"),
        ({"local_means": [[0.5]], "sigma": "1"}, TypeError, "sigma must be a float"),
    ],
)
def test_problem_rejects_bad_input(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        MABProblem(**kwargs)


def test_generators_reject_bad_sizes() -> None:
    with pytest.raises(ValueError, match="n_arms must be >= 2, got 0"):
        conflicting(4, 0)
    with pytest.raises(ValueError, match="n_arms must be >= 1, got 0"):
        zhu_synthetic(4, 0)
    with pytest.raises(TypeError, match="n_agents must be an int"):
        homogeneous(2.5, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="conflict_fraction"):
        conflicting(4, 3, conflict_fraction=1.5)


def _local_rules(means: np.ndarray) -> dict[str, np.ndarray]:
    """Every single-agent rule told its own row of local means outright: pull the arm of
    local rank r, or the lowest arm above a threshold (the local best where none is)."""
    order = np.argsort(-means, axis=1)
    rules = {f"rank {r + 1}": order[:, r] for r in range(means.shape[1])}
    for th in np.round(np.arange(0.05, 1.0, 0.05), 2):
        above = np.where(means > th, means, np.inf)
        arms = np.argmin(above, axis=1)
        none = ~np.isfinite(above).any(axis=1)
        arms[none] = order[none, 0]
        rules[f"lowest above {th}"] = arms
    return rules


def _rule_regrets(generator: Any, instances: int = 4000) -> dict[str, np.ndarray]:
    """Each rule's per-step regret (mean over agents) on each of ``instances`` draws."""
    out: dict[str, list[float]] = {}
    for seed in range(instances):
        p = generator(seed)
        for name, arms in _local_rules(p.local_means).items():
            out.setdefault(name, []).append(float(p.gaps[arms].mean()))
    return {k: np.array(v) for k, v in out.items()}


def test_on_biased_instances_no_local_rule_beats_the_local_best_arm() -> None:
    from fedbandit_env.problems import biased, conflicting

    regrets = _rule_regrets(lambda s: biased(10, 5, seed=s))
    local_best = regrets["rank 1"]
    assert local_best.mean() > 0.02  # agents are misled: cooperation has work to do
    for name, r in regrets.items():
        diff = r - local_best  # paired over instances
        se = diff.std(ddof=1) / np.sqrt(diff.size)
        assert diff.mean() > -3 * se - 1e-12, (name, diff.mean(), se)
    # power: the same measurement finds conflicting's shortcut
    shortcut = _rule_regrets(lambda s: conflicting(10, 5, seed=s), 500)
    assert shortcut["lowest above 0.5"].max() == 0.0 < shortcut["rank 1"].mean() - 0.1


def test_biased_instances_mislead_a_random_share_and_keep_the_global_means() -> None:
    from fedbandit_env.problems import biased

    shares = []
    for seed in range(400):
        p = biased(10, 5, gap=0.1, seed=seed)
        assert np.allclose(p.local_means.mean(axis=0), p.global_means, atol=1e-12)
        assert p.min_gap >= 0.1 - 1e-12
        assert p.local_means.min() >= 0.0 and p.local_means.max() <= 1.0
        shares.append(float(np.mean(p.local_best_arms != p.best_arm)))
    assert min(shares) == 0.0 and max(shares) >= 0.5 and 0.1 < np.mean(shares) < 0.4
    with pytest.raises(ValueError, match="gap"):
        biased(10, 5, gap=0.3)
    with pytest.raises(ValueError, match="n_agents"):
        biased(1, 5)
