"""The compiled per-sender step of ``PosteriorState``
(:mod:`fedbandit_env.wrappers.posterior_kernels`) against its array statement
(``compiled=False``, what a torch device runs), to the bit: random pulls and broadcasts
with forged rows (NaN, infinities, fractional, negative or too many counts, sums out of
range), complete and sparse graphs, raw and private priors."""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env.backend import backend
from fedbandit_env.network import Network
from fedbandit_env.wrappers.team_posterior import PosteriorState, Prior

PRIORS = {
    "raw": Prior.for_rewards((0.0, 1.0)),
    "private": Prior.for_private((0.0, 1.0), 64, 1.0),
    "unbounded": Prior.for_rewards((-np.inf, np.inf)),
}


def forge(rows: np.ndarray, rng: np.random.Generator, m: int) -> None:
    """Spoil a few senders' rows in place, each in one of the ways a screen must catch."""
    b, n, _ = rows.shape
    for _ in range(max(1, b * n // 6)):
        e, s, a = rng.integers(b), rng.integers(n), rng.integers(m)
        kind = rng.integers(6)
        if kind == 0:
            rows[e, s, a] = np.nan
        elif kind == 1:
            rows[e, s, m + a] = np.inf
        elif kind == 2:
            rows[e, s, a] += 0.5  # not a whole count
        elif kind == 3:
            rows[e, s, a] = -1.0
        elif kind == 4:
            rows[e, s, a] = 1e6  # more pulls than steps
        else:
            rows[e, s, m + a] = 50.0 * (rows[e, s, a] + 1)  # a sum out of range


def play(graph: np.ndarray, prior: Prior, seed: int, compiled_twin: bool = True) -> list[str]:
    """Step a compiled state and an array-statement twin on one stream; what differed."""
    b, n, m, steps = 16, graph.shape[0], 4, 40
    states = [PosteriorState(backend(None), (b, n, m), prior, graph) for _ in range(2)]
    states[1].compiled = False
    if not compiled_twin:
        states[0].compiled = False
    rng = np.random.default_rng(seed)
    mask = np.broadcast_to(graph.astype(np.int8), (b, n, n))
    differed: list[str] = []
    for t in range(1, steps + 1):
        arms = rng.integers(m, size=(b, n))
        rewards = rng.random((b, n))
        rows = states[0].message()
        forge(rows, rng, m)
        features = []
        for state in states:
            state.fold(arms, rewards)
            state.receive(rows[:, None], mask, t)
            features.append(state.features(t))
        if features[0].tobytes() != features[1].tobytes():
            differed.append(f"features at t={t}")
        for key in ("last", "ever", "rejected", "counts", "sums"):
            if getattr(states[0], key).tobytes() != getattr(states[1], key).tobytes():
                differed.append(f"{key} at t={t}")
        if differed:
            break
    assert states[0].per_sender and states[1].per_sender
    return differed


GRAPHS = {
    "complete": Network.complete(6).adjacency,
    "ring": Network.ring(7).adjacency,
    "star": Network.star(5).adjacency,
}


@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("prior", list(PRIORS))
def test_compiled_posterior_is_the_array_statement(graph: str, prior: str) -> None:
    assert play(np.asarray(GRAPHS[graph], dtype=bool), PRIORS[prior], seed=3) == []


def test_a_weaker_screen_is_caught() -> None:
    """Power: with the privacy slack left out of the compiled screen the twins differ
    (the forged sums lie within it)."""
    graph = np.asarray(GRAPHS["ring"], dtype=bool)
    prior = PRIORS["private"]
    b, n, m = 2, graph.shape[0], 3
    states = [PosteriorState(backend(None), (b, n, m), prior, graph) for _ in range(2)]
    states[1].compiled = False
    states[0]._screen = (*states[0]._screen[:4], 0.0)
    rows = np.zeros((b, n, 2 * m), np.float32)
    rows[..., :m] = 1.0
    rows[..., m:] = 3.0  # three times the largest honest raw sum: within the privacy slack
    mask = np.broadcast_to(graph.astype(np.int8), (b, n, n))
    for state in states:
        state.receive(rows[:, None], mask, 4)
    assert states[0].rejected.sum() > 0 and states[1].rejected.sum() == 0


@pytest.mark.parametrize("broadcast", [True, False])
def test_a_mask_off_the_graph_turns_the_state_per_receiver(broadcast: bool) -> None:
    """The per-sender state holds only while every receiver hears exactly its graph
    neighbours: a step whose mask drops one link (in every env of a mask broadcast over
    the envs, as the env hands out its one graph, or in one env of a full mask) turns it
    into the per-receiver table, whose features then are those of a state that kept the
    table from the start; a mask on the graph (broadcast or full) keeps it per sender."""
    graph = np.asarray(GRAPHS["ring"], dtype=bool)
    b, n, m = 3, graph.shape[0], 4
    prior = PRIORS["raw"]
    kept, table = (PosteriorState(backend(None), (b, n, m), prior, g) for g in (graph, None))
    rng = np.random.default_rng(0)
    on_graph = graph.astype(np.int8)
    off_graph = on_graph.copy()
    off_graph[0, 1] = 0  # receiver 0 misses sender 1
    for t in range(1, 6):
        arms, rewards = rng.integers(m, size=(b, n)), rng.random((b, n))
        rows = kept.message()
        mask = off_graph if t == 4 else on_graph
        if broadcast:
            mask = np.broadcast_to(mask, (b, n, n))
        else:
            mask = np.stack([mask if e == 1 else on_graph for e in range(b)])
        for state in (kept, table):
            state.fold(arms, rewards)
            state.receive(rows[:, None], mask, t)
        assert kept.per_sender == (t < 4), t
        assert kept.features(t).tobytes() == table.features(t).tobytes(), t
