"""The batched NumPy yardstick (:mod:`baselines.linear.batched`): the fast path's
choices on the same seeds, and the fast path's float32 scores leave the regret as the
float64 yardstick's."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.linear.batched import batched_trial
from baselines.linear.vector import fedlin_ucb, lin_ucb, vector_trial
from fedbandit_env.problems.linear import dubey_synthetic


@pytest.mark.parametrize("batch", [None, 7])
@pytest.mark.parametrize(("agents", "dim", "seed"), [(4, 3, 0), (6, 10, 1)])
def test_batched_numpy_makes_the_fast_paths_choices(
    batch: int | None, agents: int, dim: int, seed: int
) -> None:
    problem = dubey_synthetic(agents, dim=dim, seed=seed)
    horizon = 150
    policy = lin_ucb() if batch is None else fedlin_ucb(sync="fixed", batch=batch)
    reg, arms, *_ = vector_trial(policy, problem, horizon, seed + 5, np.array([horizon]), True)
    got_arms, got_regret = batched_trial(problem, horizon, seed + 5, batch=batch)
    np.testing.assert_array_equal(got_arms, arms)
    np.testing.assert_allclose(got_regret, reg[:, -1], rtol=1e-12)


@pytest.mark.parametrize(
    ("agents", "dim", "horizon"),
    [(4, 6, 1000), pytest.param(20, 10, 3000, marks=pytest.mark.slow)],
)
def test_float32_scores_leave_the_regret_unchanged(agents: int, dim: int, horizon: int) -> None:
    # 10 trials of LinUCB: the fast path scores in float32, the yardstick in float64.
    # Paired per trial, the mean difference of the total regret must lie within 3
    # standard errors of the differences (0 when every choice agrees; measured: all 10
    # trials agree at M = 4, d = 6, T = 1e3, 9 of 10 at M = 20, d = 10, T = 3e3).
    problem = dubey_synthetic(agents, dim=dim, seed=2)
    diffs, same = [], 0
    for seed in range(10):
        reg, arms, *_ = vector_trial(lin_ucb(), problem, horizon, seed, np.array([horizon]), True)
        got_arms, got_regret = batched_trial(problem, horizon, seed)
        diffs.append(float(reg[:, -1].sum() - got_regret.sum()))
        same += int((got_arms == arms).all())
    d = np.array(diffs)
    assert abs(d.mean()) <= 3 * d.std(ddof=1) / np.sqrt(d.size) + 1e-9
    assert same >= 5  # near-ties of 1e-7 are rare: most trials agree choice for choice


def test_batched_trial_refuses_bad_input() -> None:
    problem = dubey_synthetic(2, dim=2, seed=0)
    with pytest.raises(ValueError, match="horizon"):
        batched_trial(problem, 0, 0)
    with pytest.raises(ValueError, match="batch"):
        batched_trial(problem, 5, 0, batch=0)
