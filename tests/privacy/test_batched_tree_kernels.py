"""The compiled step of ``B`` binary trees (:mod:`fedbandit_env.privacy.batched_kernels`)
against the array statement of :class:`~fedbandit_env.privacy.batched_tree.BatchedTree`.

On NumPy ``BatchedTree.step`` runs the kernels; ``BatchedTree._array_step`` is the same
step as whole-array operations (what a torch device runs). Here the array step draws its
noise through the NumPy formula ``TreeNoise.draws`` had before it was compiled (a running
position per row, a gather), so the kernels are held to both statements: every release,
every piece of state, to the bit, over random streams with rewards outside the clip
range, both estimators, and an episode that continues its generators.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env.backend import backend
from fedbandit_env.privacy.batched_tree import BatchedTree, TreeNoise
from fedbandit_env.privacy.mechanisms import tree_levels

STATE = ("acc", "node", "var", "last", "counts", "prefix", "means32")


def gathered_draws(noise: TreeNoise, marked: np.ndarray, order: str = "C") -> np.ndarray:
    """``TreeNoise.draws`` as NumPy arrays: each row's next ``laplace(0, 1)`` draws from
    its generator (one bulk call), times the scale, at its marked cells handed out in
    ``order`` ("C": row-major, as the tree's; "F": a weakened order)."""
    if order == "F":  # cells of a row visited last to first
        return gathered_draws(noise, marked[:, ::-1])[:, ::-1]
    out = np.zeros(marked.shape)
    for b in range(marked.shape[0]):
        out[b, marked[b]] = noise.scale * noise.rngs[b].laplace(0.0, 1.0, int(marked[b].sum()))
    return out


def twins(shape: tuple[int, int, int], horizon: int, honaker: bool) -> list[BatchedTree]:
    trees = [
        BatchedTree(backend(None), shape, tree_levels(horizon), (0.0, 1.0), 0.7, honaker)
        for _ in range(2)
    ]
    for tree in trees:
        tree.restart([np.random.default_rng([9, b]) for b in range(shape[0])])
    return trees


def play(trees: list[BatchedTree], horizon: int, seed: int, order: str = "C") -> list[str]:
    """Step both trees on one random stream; the names of what differed (empty: none)."""
    compiled, arrays = trees
    reference: Any = lambda marked: gathered_draws(arrays.noise, marked, order)  # noqa: E731
    arrays.noise.draws = reference
    b, n, m = compiled.shape
    rng = np.random.default_rng(seed)
    differed: list[str] = []
    for t in range(1, horizon + 1):
        arms = rng.integers(m, size=(b, n))
        rewards = rng.normal(0.5, 0.6, (b, n))  # a third of them outside [0, 1]
        released = compiled.step(arms, rewards, t)
        expected = arrays._array_step(arms, np.clip(rewards, 0.0, 1.0), t)
        if not np.array_equal(released, expected):
            differed.append(f"increments at t={t}")
        differed += [
            f"{k} at t={t}"
            for k in STATE
            if not np.array_equal(getattr(compiled, k), getattr(arrays, k))
        ]
        if differed:
            break
    return differed


@pytest.mark.parametrize("honaker", [False, True])
@pytest.mark.parametrize(
    ("shape", "horizon"), [((3, 4, 3), 37), ((16, 10, 5), 130), ((2, 10, 40), 100)]
)
def test_compiled_tree_step_is_the_array_step(
    honaker: bool, shape: tuple[int, int, int], horizon: int
) -> None:
    trees = twins(shape, horizon, honaker)
    assert play(trees, horizon, seed=1) == []
    for tree in trees:  # a second episode continues each tree's generator
        tree.restart(None)
    assert play(trees, horizon, seed=2) == []


def test_draws_handed_out_in_another_order_are_caught() -> None:
    """Power: a reference that hands each row's draws out last cell first disagrees."""
    assert play(twins((4, 6, 3), 20, False), 20, seed=1, order="F") != []


def test_the_noise_is_each_generator_in_order() -> None:
    """The compiled draws hand out the numbers of consecutive ``laplace(0, scale)`` calls
    on each row's generator, marked cell by marked cell, and leave the generator where
    those calls leave it (the next numbers NumPy draws from it follow on)."""
    noise = TreeNoise(backend(None), 2.0)
    noise.restart([np.random.default_rng(3), np.random.default_rng(4)])
    rng = np.random.default_rng(0)
    got: list[list[float]] = [[], []]
    for _ in range(30):
        marked = rng.random((2, 5)) < 0.5
        out = noise.draws(marked)
        for b in range(2):
            got[b] += out[b, marked[b]].tolist()
            assert (out[b, ~marked[b]] == 0.0).all()
    for b, seed in enumerate((3, 4)):
        reference = np.random.default_rng(seed)
        assert got[b] == [reference.laplace(0.0, 2.0) for _ in got[b]]
        assert noise.rngs[b].random() == reference.random()


def test_the_noise_draws_refuse_a_mask_of_other_trees() -> None:
    noise = TreeNoise(backend(None), 1.0)
    noise.restart([np.random.default_rng(0)])
    with pytest.raises(ValueError, match="2 trees' cells marked, 1 generators"):
        noise.draws(np.ones((2, 3), bool))


@pytest.mark.parametrize("honaker", [False, True])
def test_a_tree_without_its_generators_refuses_to_step(honaker: bool) -> None:
    """The kernels draw from a table row per tree: a step before ``restart`` (no row)
    is refused, never read past the table."""
    tree = BatchedTree(backend(None), (2, 1, 2), 3, (0.0, 1.0), 1.0, honaker)
    with pytest.raises(ValueError, match="2 trees, 0 generators"):
        tree.step(np.zeros((2, 1), np.int64), np.zeros((2, 1)), 1)
