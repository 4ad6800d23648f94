"""Privacy mechanisms: calibration, exactness, variance, validation.

The black-box audits (through ``release``, ``TreeMechanism.step``, the wrappers and the
policies' messages, each with a power check) are in ``test_privacy_audits.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    TreeMechanism,
)


def test_tree_is_exact_where_nothing_was_observed_and_unbiased_elsewhere() -> None:
    s, horizon = 20_000, 16
    tree = TreeMechanism(s, horizon, 2.0, np.random.default_rng(0))
    present = np.zeros(s, bool)
    present[: s // 2] = True
    truth = np.zeros(s)
    for _ in range(horizon):
        out = tree.step(np.where(present, 1.0, 0.0), present)
        truth += present
    assert np.all(out[~present] == 0.0)
    err = out[present] - truth[present]
    # t = 16 = 10000b: one block, Laplace(b = 5 levels / 2.0) variance 2 b^2 = 12.5.
    assert tree.scale == 2.5
    se = np.sqrt(12.5 / err.size)
    assert abs(err.mean()) < 5 * se
    assert err.var() == pytest.approx(12.5, rel=0.05)


def test_dyadic_prefix_variance_counts_the_blocks_of_t() -> None:
    s, horizon = 40_000, 15
    tree = TreeMechanism(s, horizon, 1.0, np.random.default_rng(1))
    var_unit = 2 * tree.scale**2
    for t in range(1, horizon + 1):
        err = tree.step(np.ones(s)) - t
        assert err.var() == pytest.approx(bin(t).count("1") * var_unit, rel=0.05), t


def test_honaker_cuts_the_average_variance() -> None:
    s, horizon = 20_000, 64
    errs = {}
    for est in ("dyadic", "honaker"):
        tree = TreeMechanism(s, horizon, 1.0, np.random.default_rng(2), estimator=est)
        errs[est] = np.mean([np.var(tree.step(np.ones(s)) - t) for t in range(1, horizon + 1)])
    assert errs["honaker"] < 0.75 * errs["dyadic"], errs


def test_epsilon_spent_grows_with_the_levels_touched() -> None:
    tree = TreeMechanism(1, 8, 1.0, np.random.default_rng(0))
    spent = []
    for _ in range(8):
        tree.step(np.ones(1))
        spent.append(tree.epsilon_spent())
    assert spent == pytest.approx([0.25, 0.5, 0.5, 0.75, 0.75, 0.75, 0.75, 1.0])
    with pytest.raises(RuntimeError, match="past its horizon"):
        tree.step(np.ones(1))


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: LaplaceMechanism(0.0), ValueError, "epsilon must be a finite number > 0, got 0.0"),
        (lambda: LaplaceMechanism(1.0, sensitivity=-1.0), ValueError, "sensitivity"),
        (lambda: GaussianMechanism(0.5, 0.0), ValueError, r"delta must lie in \(0, 1\)"),
        (lambda: GaussianMechanism(2.0, 1e-5), ValueError, "epsilon < 1"),
        (lambda: TreeMechanism(0, 8, 1.0, np.random.default_rng()), ValueError, "n_streams"),
        (
            lambda: TreeMechanism(1, 8, 1.0, np.random.default_rng(), estimator="x"),
            ValueError,
            "estimator",
        ),
        (lambda: LaplaceMechanism("1"), TypeError, "epsilon must be a float"),
    ],
)
def test_mechanisms_reject_bad_input(build, error: type, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        build()


def test_accountant_composes_and_enforces_its_budget() -> None:
    from fedbandit_env.privacy import PrivacyAccountant

    acc = PrivacyAccountant(budget=1.0)
    for _ in range(4):
        acc.spend(0.25)
    assert acc.epsilon == pytest.approx(1.0) and acc.releases == 4
    with pytest.raises(ValueError, match="budget exceeded"):
        acc.spend(0.01)
    with pytest.raises(ValueError, match=">= 0"):
        acc.spend(-1.0)
    acc.reset()
    assert acc.epsilon == 0.0 and acc.history == []


@pytest.mark.parametrize("n_streams", [40, 2000])
def test_listed_tree_kernels_match_the_dense_ones_step_for_step(n_streams: int) -> None:
    # 40 streams: short lists (insertion sort) and lists read back from ``seen``;
    # 2000: also lists of 33+ streams that cover under 1/8 of them (in-place quicksort)
    from fedbandit_env.privacy.tree_kernels import (
        tree_add,
        tree_add_listed,
        tree_complete,
        tree_complete_listed,
    )

    horizon, levels = 300, 9
    pick = np.random.default_rng(5)
    dense = [np.zeros((n_streams, levels)), np.zeros((n_streams, levels), bool)]
    listed = [np.zeros((n_streams, levels)), np.zeros((n_streams, levels), bool)]
    node_d, node_l, var = (np.zeros((n_streams, levels)) for _ in range(3))
    touched, live = (np.zeros((levels, n_streams), np.int64) for _ in range(2))
    n_touched, n_live = np.zeros(levels, np.int64), np.zeros(levels, np.int64)
    rng_d, rng_l = np.random.default_rng(9), np.random.default_rng(9)
    for t in range(1, horizon + 1):
        # a few distinct streams per step, in agent order (not sorted), some steps none
        streams = pick.choice(n_streams, size=pick.integers(0, 5), replace=False)
        values = pick.random(streams.size)
        tree_add(dense[0], dense[1], streams, values)
        tree_add_listed(listed[0], listed[1], streams, values, touched, n_touched)
        tree_complete(dense[0], dense[1], node_d, var, t, 2.0, False, rng_d)
        tree_complete_listed(
            listed[0], listed[1], node_l, t, 2.0, rng_l, touched, n_touched, live, n_live
        )
        np.testing.assert_array_equal(node_l, node_d)
        np.testing.assert_array_equal(listed[0], dense[0])
    assert rng_l.random() == rng_d.random()  # the same number of draws


def test_tree_prefix_of_a_batch_of_streams_is_tree_prefix_bit_for_bit() -> None:
    from fedbandit_env.privacy.tree_kernels import tree_prefix, tree_prefix_streams

    rng = np.random.default_rng(3)
    node = rng.normal(size=(30, 12)) * 10.0 ** rng.integers(-8, 8, size=(30, 12))
    streams = rng.integers(0, 30, 25)  # repeats included
    for t in [0, 1, 2, 3, 4095, 4096, *rng.integers(1, 4096, 50)]:
        batch = tree_prefix_streams(node, int(t), streams, np.empty(streams.size))
        one_by_one = [tree_prefix(node, int(t), int(s)) for s in streams]
        assert batch.tolist() == one_by_one
