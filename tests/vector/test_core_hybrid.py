"""``MABCore.rollout`` over Li & Song's hybrid structure (``core.rounds.rollout_hybrid``):
the episode ``step`` plays with each env's ``Hybrid`` object routing (SAC towards each
component's sink, the sinks' uploads, the server's weighted broadcast), with the round in
flight handed back to the protocols so that ``step`` plays on; and the protocol's refusal
of a round started while one is in flight."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
from numba import njit

import fedbandit_env.core.mab as mab
from fedbandit_env.core import MABCore
from fedbandit_env.core.mab import RolloutStopped
from fedbandit_env.network.graph import Network, make_components
from fedbandit_env.problems import MABProblem
from fedbandit_env.protocols import Hybrid

B, M, T = 3, 4, 40
GRAPHS = {
    "paths": make_components((4, 1, 5), "path"),
    "stars": make_components((3, 4), "star"),
    "one_path": make_components((6,), "path"),
    # a binary tree (its root the sink) beside a path: two payloads meet at an agent
    # that forwards them on one link
    "tree": Network(
        nx.disjoint_union(nx.balanced_tree(2, 2), nx.path_graph(3)), require_connected=False
    ),
}


@njit
def _rounds(last, seen, t, server, server_mask, sums, counts, waiting, arms, sent):  # type: ignore[no-untyped-def]
    """A toy learner over Hybrid: in each env, while no round is in flight, some agents
    (which, differs by step and env) upload their sums every few steps, and every agent
    pulls the arm the server's last broadcast rates best."""
    b_count, n = arms.shape
    m = sums.shape[2]
    for b in range(b_count):
        if server_mask[b, 0, 0]:
            waiting[b] = 0
        start = waiting[b] == 0 and (t + b) % 3 == 0
        for i in range(n):
            if t > 0:
                counts[b, i, last[b, i]] += 1.0
                sums[b, i, last[b, i]] += seen[b, i]
            best = (t + i) % m
            if server_mask[b, i, 0]:
                for a in range(m):
                    if server[b, i, 1 + a] > server[b, i, 1 + best]:
                        best = a
            arms[b, i] = best
            for k in range(sent.shape[2]):
                sent[b, i, k] = 0.0
            if start and ((t // 3 + i + b) % 3 != 0 or i == 0):
                sent[b, i, 0] = 1.0
                for a in range(m):
                    sent[b, i, 1 + a] = sums[b, i, a] / 3.0  # not a float32: the wire rounds it
        if start:
            waiting[b] = 1


def _state(n: int) -> tuple[np.ndarray, ...]:
    return np.zeros((B, n, M)), np.zeros((B, n, M)), np.zeros(B, np.int64)


def _core(graph: str, horizon: int = T) -> MABCore:
    net = GRAPHS[graph]
    means = np.random.default_rng(6).random((net.n_agents, M))
    core = MABCore(MABProblem(means, noise="gaussian", sigma=0.5), net,
                   [Hybrid() for _ in range(B)], horizon=horizon, message_dim=1 + M,
                   link_costs=(25.0, 0.3), block=4)  # fmt: skip
    core.reset(list(range(60, 60 + B)))
    return core


def _steps(core: MABCore, held: tuple[np.ndarray, ...], until: int, step: Any = _rounds) -> None:
    """Step ``core`` with ``step`` in Python up to step ``until``."""
    n, d = core.n_agents, core.message_dim
    routed = core.last_routed
    while core.t < until:
        server, smask = np.zeros((B, n, d), np.float32), np.zeros((B, n, 1), np.int8)
        if routed is not None and routed.server is not None:
            server, smask = np.array(routed.server), np.array(routed.server_mask)
        arms, sent = np.empty((B, n), np.int64), np.zeros((B, n, d))
        seen = np.asarray(core.last_rewards, np.float32)
        step(core.last_arms, seen, core.t, server, smask, *held, arms, sent)
        routed = core.step(arms, sent).routed


def _same(core: MABCore, other: MABCore, mine: tuple[Any, ...], theirs: tuple[Any, ...]) -> None:
    assert np.array_equal(core.cum_regret, other.cum_regret)
    assert np.array_equal(core.cum_cost, other.cum_cost)
    for a, b in zip(mine, theirs, strict=True):
        assert np.array_equal(a, b)
    last, want = core.last_routed, other.last_routed
    assert last is not None and want is not None
    for name in ("server", "server_mask", "peer_links", "server_links", "messages", "mask"):
        assert np.array_equal(getattr(last, name), getattr(want, name)), name


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("python_steps", [0, 1, 7])
def test_a_rollout_over_hybrid_is_the_episode_step_plays(graph: str, python_steps: int) -> None:
    """Python steps (none, into the first round, past several), then a rollout: the
    regret, the links' cost, the broadcasts the learner acted on and the last step's
    delivery are the stepped episode's."""
    stepped, rolled = _core(graph), _core(graph)
    theirs, mine = _state(stepped.n_agents), _state(rolled.n_agents)
    in_flight = 0  # steps that end with a round in flight, in the stepped episode
    for t in range(T):
        _steps(stepped, theirs, t + 1)
        in_flight += any(p.in_flight() is not None for p in stepped.router.protocols)
    assert in_flight > 0 or graph == "stars"  # stars: every round ends in its step
    _steps(rolled, mine, python_steps)
    assert rolled.rolls_out and rolled.router.kind == "hybrid"
    steps = np.array([3, 5, 11, 20, T])
    out, cost_out = np.zeros((B, rolled.n_agents, steps.size)), np.zeros((B, steps.size))
    rolled.rollout(_rounds, mine, steps, out, cost_out=cost_out)
    _same(rolled, stepped, mine, theirs)
    assert np.array_equal(cost_out[:, -1], stepped.cum_cost)
    assert stepped.cum_cost.min() > 0 and theirs[2].max() <= 1


def test_python_steps_go_on_after_a_stopped_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rollout stopped with rounds in flight hands them back to each env's ``Hybrid``
    (``resume``): Python steps, then a second rollout, give the stepped episode."""
    stepped = _core("paths")
    theirs = _state(stepped.n_agents)
    _steps(stepped, theirs, T)
    monkeypatch.setattr(mab, "ROLLOUT_NUMBERS", 1)  # blocks of `block` = 4 steps
    for stop_after, resume_at in ((1, 6), (2, 9)):
        core = _core("paths")
        mine = _state(core.n_agents)
        asked = iter(range(100))
        with pytest.raises(RolloutStopped, match="stopped after"):
            core.rollout(_rounds, mine, np.array([T]), np.zeros((B, core.n_agents, 1)),
                         stop=lambda asked=asked, k=stop_after: next(asked) >= k)  # fmt: skip
        assert core.t == 4 * stop_after
        assert any(p.in_flight() is not None for p in core.router.protocols)
        _steps(core, mine, resume_at)
        core.rollout(_rounds, mine, np.array([T]), np.zeros((B, core.n_agents, 1)))
        _same(core, stepped, mine, theirs)


def test_the_hybrid_comparison_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: a wrong sink, or a round in flight not handed back after a stopped rollout,
    gives another episode."""
    stepped = _core("paths")
    theirs = _state(stepped.n_agents)
    _steps(stepped, theirs, T)
    wire = MABCore._hybrid_wire

    def wrong_sink(self: MABCore) -> tuple[Any, ...]:
        parts = list(wire(self))
        parts[6] = parts[6].copy()
        parts[6][parts[8][2]] = parts[8][2] - 1  # the last sink forwards once more
        parts[6][parts[8][2] - 1] = -1
        parts[8] = parts[8].copy()
        parts[8][2] -= 1
        return tuple(parts)

    monkeypatch.setattr(MABCore, "_hybrid_wire", wrong_sink)
    core = _core("paths")
    mine = _state(core.n_agents)
    core.rollout(_rounds, mine, np.array([T]), np.zeros((B, core.n_agents, 1)))
    assert not np.array_equal(core.cum_cost, stepped.cum_cost)
    monkeypatch.undo()

    monkeypatch.setattr(mab, "ROLLOUT_NUMBERS", 1)
    monkeypatch.setattr(Hybrid, "resume", lambda self, state: None)
    core = _core("paths")
    mine = _state(core.n_agents)
    asked = iter(range(100))
    with pytest.raises(RolloutStopped):
        core.rollout(_rounds, mine, np.array([T]), np.zeros((B, core.n_agents, 1)),
                     stop=lambda: next(asked) >= 1)  # fmt: skip
    _steps(core, mine, T)
    assert not np.array_equal(core.cum_cost, stepped.cum_cost)


@njit
def _eager(last, seen, t, server, server_mask, arms, sent):  # type: ignore[no-untyped-def]
    arms[:] = 0
    sent[:] = 0.0
    if t in (2, 3):  # agent 3's payload needs two hops to its sink, 1: still in flight
        sent[:, 3, 0] = 1.0


def test_a_round_started_in_flight_is_refused_as_step_refuses_it() -> None:
    """A flag set while a round is in flight: ``step`` raises Hybrid's error (after the
    env's step), the rollout the same error before it."""
    stepped, rolled = _core("paths"), _core("paths")
    with pytest.raises(RuntimeError, match="step 4: a hybrid round is still in flight"):
        _steps(stepped, (), T, step=_eager)
    with pytest.raises(RuntimeError, match="step 4: a hybrid round is still in flight"):
        rolled.rollout(_eager, (), np.array([T]), np.zeros((B, rolled.n_agents, 1)))
    assert rolled.t == 3
