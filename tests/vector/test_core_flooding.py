"""``MABCore.rollout`` over Li & Song's GIS flooding (``core.rounds.rollout_flooding``):
the episode ``step`` plays with each env's ``Flooding`` object routing, round for round
(overlapping rounds of different uploaders, on graphs whose rounds take several steps),
with the rounds in flight handed back to the protocols so that ``step`` plays on; and
the round rollouts' check of a step that lists what it writes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit

import fedbandit_env.core.mab as mab
from fedbandit_env.core import MABCore
from fedbandit_env.core.kernels import WireChanges
from fedbandit_env.core.mab import RolloutStopped
from fedbandit_env.network import Network
from fedbandit_env.problems import MABProblem
from fedbandit_env.protocols import Flooding, Hybrid, ServerRounds

B, M, T = 3, 4, 30
GRAPHS = {"path": Network.path(5), "star": Network.star(4), "ring": Network.ring(6)}


@njit
def _flooder(last, seen, t, heard, mask, sums, counts, arms, sent):  # type: ignore[no-untyped-def]
    """A toy learner over Flooding: agents upload their sums at steps that differ by
    agent and env (rounds overlap, with different uploaders), and pull the arm the
    payloads they heard last rate best."""
    b_count, n = arms.shape
    m = sums.shape[2]
    for b in range(b_count):
        for i in range(n):
            if t > 0:
                counts[b, i, last[b, i]] += 1.0
                sums[b, i, last[b, i]] += seen[b, i]
            best, top, heard_any = (t + i) % m, -1e300, 0
            for j in range(n):
                if mask[b, i, j]:
                    heard_any += 1
                    for a in range(m):
                        if heard[b, j, 1 + a] > top:
                            top, best = heard[b, j, 1 + a], a
            arms[b, i] = (best + heard_any) % m
            for k in range(sent.shape[2]):
                sent[b, i, k] = 0.0
            if (t * (b + 1) + i) % 5 < 2:
                sent[b, i, 0] = 1.0
                for a in range(m):
                    sent[b, i, 1 + a] = sums[b, i, a] / 3.0  # not a float32: the wire rounds it


def _state(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((B, n, M)), np.zeros((B, n, M))


def _core(graph: str, horizon: int = T) -> MABCore:
    net = GRAPHS[graph]
    means = np.random.default_rng(5).random((net.n_agents, M))
    core = MABCore(MABProblem(means, noise="gaussian", sigma=0.5), net,
                   [Flooding() for _ in range(B)], horizon=horizon, message_dim=1 + M,
                   link_costs=(25.0, 0.3), block=4)  # fmt: skip
    core.reset(list(range(40, 40 + B)))
    return core


def _steps(core: MABCore, held: tuple[np.ndarray, ...], until: int) -> list[np.ndarray]:
    """Step ``core`` with ``_flooder`` in Python up to step ``until``; every step's cost."""
    n = core.n_agents
    routed = core.last_routed
    costs = []
    while core.t < until:
        if routed is None:
            heard, mask = np.zeros((B, n, 1 + M), np.float32), np.zeros((B, n, n), np.int8)
        else:
            heard, mask = np.array(routed.messages), np.array(routed.mask)
        arms, sent = np.empty((B, n), np.int64), np.zeros((B, n, 1 + M))
        seen = np.asarray(core.last_rewards, np.float32)
        _flooder(core.last_arms, seen, core.t, heard, mask, *held, arms, sent)
        routed = core.step(arms, sent).routed
        costs.append(core.cum_cost.copy())
    return costs


def _same(core: MABCore, other: MABCore, mine: tuple[Any, ...], theirs: tuple[Any, ...]) -> None:
    assert np.array_equal(core.cum_regret, other.cum_regret)
    assert np.array_equal(core.cum_cost, other.cum_cost)
    for a, b in zip(mine, theirs, strict=True):
        assert np.array_equal(a, b)
    last, want = core.last_routed, other.last_routed
    assert last is not None and want is not None
    for name in ("messages", "mask", "peer_links", "server_links"):
        assert np.array_equal(getattr(last, name), getattr(want, name)), name


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("python_steps", [0, 1, 7])
def test_a_rollout_over_flooding_is_the_episode_step_plays(graph: str, python_steps: int) -> None:
    """Python steps (none, into the first round, past several), then a rollout: the
    regret, the links' cost at every recorded step, the payloads the learner acted on
    (its sums) and the last step's delivery are the stepped episode's."""
    steps = np.array([3, 5, 11, 20, T])
    stepped, rolled = _core(graph), _core(graph)
    theirs, mine = _state(stepped.n_agents), _state(rolled.n_agents)
    costs = _steps(stepped, theirs, T)
    _steps(rolled, mine, python_steps)
    assert rolled.rolls_out and rolled.router.kind == "flooding"
    out, cost_out = np.zeros((B, rolled.n_agents, steps.size)), np.zeros((B, steps.size))
    rolled.rollout(_flooder, mine, steps, out, cost_out=cost_out)
    _same(rolled, stepped, mine, theirs)
    first = int(np.searchsorted(steps, python_steps, side="right"))
    for r in range(first, steps.size):
        assert np.array_equal(cost_out[:, r], costs[steps[r] - 1])
    assert stepped.cum_cost.min() > 0


@pytest.mark.parametrize("graph", ["path", "ring"])
def test_python_steps_go_on_after_a_stopped_rollout(
    graph: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollout stopped mid-episode (rounds in flight) hands them back to each env's
    ``Flooding`` (``resume``), so Python steps to the end give the stepped episode; and a
    second rollout after those steps picks them up again (``in_flight``)."""
    stepped = _core(graph)
    theirs = _state(stepped.n_agents)
    most = 0  # rounds in flight at once, in the stepped episode (they overlap)
    for t in range(T):
        _steps(stepped, theirs, t + 1)
        most = max(most, *(len(p.in_flight()) for p in stepped.router.protocols))
    assert most == {"path": 3, "ring": 2}[graph]
    monkeypatch.setattr(mab, "ROLLOUT_NUMBERS", 1)  # blocks of `block` = 4 steps
    for resume_at in (8, 12):
        core = _core(graph)
        mine = _state(core.n_agents)
        asked = iter(range(100))
        with pytest.raises(RolloutStopped, match="stopped after"):
            core.rollout(_flooder, mine, np.array([T]), np.zeros((B, core.n_agents, 1)),
                         stop=lambda asked=asked: next(asked) >= 2)  # fmt: skip
        assert core.t == 8
        assert any(p.in_flight() for p in core.router.protocols)  # rounds in flight
        _steps(core, mine, resume_at)
        core.rollout(_flooder, mine, np.array([T]), np.zeros((B, core.n_agents, 1)))
        _same(core, stepped, mine, theirs)


def test_the_flooding_comparison_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: rounds delivered a step late (every eccentricity one more), or rounds in
    flight not handed back after a stopped rollout, give another episode."""
    stepped = _core("path")
    theirs = _state(stepped.n_agents)
    _steps(stepped, theirs, T)
    wire = MABCore._flooding_wire

    def late(self: MABCore) -> tuple[Any, ...]:
        parts = list(wire(self))
        parts[7] = parts[7] + 1
        parts[13] = np.full((B, parts[13].shape[1] + 1), -1, np.int64)
        parts[14] = np.zeros((B, parts[14].shape[1] + 1, self.n_agents), np.bool_)
        parts[15] = np.zeros((B, parts[15].shape[1] + 1, self.n_agents, 1 + M))
        return tuple(parts)

    monkeypatch.setattr(MABCore, "_flooding_wire", late)
    core = _core("path")
    mine = _state(core.n_agents)
    core.rollout(_flooder, mine, np.array([T]), np.zeros((B, core.n_agents, 1)))
    assert not np.array_equal(core.cum_regret, stepped.cum_regret)
    monkeypatch.undo()

    monkeypatch.setattr(mab, "ROLLOUT_NUMBERS", 1)
    monkeypatch.setattr(Flooding, "resume", lambda self, rounds: None)
    core = _core("path")
    mine = _state(core.n_agents)
    asked = iter(range(100))
    with pytest.raises(RolloutStopped):
        core.rollout(_flooder, mine, np.array([T]), np.zeros((B, core.n_agents, 1)),
                     stop=lambda asked=asked: next(asked) >= 2)  # fmt: skip
    _steps(core, mine, T)
    assert not np.array_equal(core.cum_cost, stepped.cum_cost)


class _Typed:
    """A compiled rollout whose calls through numba's dispatcher (each typing every
    argument) are counted; its overloads are the dispatcher's."""

    def __init__(self, dispatcher: Any) -> None:
        self.dispatcher, self.calls = dispatcher, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.dispatcher(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dispatcher, name)


@pytest.mark.slow  # compiles the counted rollout over flooding (about 6 s)
def test_a_rollout_types_its_arguments_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rollout of many blocks goes through numba's dispatcher (which types every
    argument: about 150 us a block for DDP-MAB's packed state) on its first block only,
    and through the compiled entry it found after (``core.dispatch.SameTypes``): the
    same episode."""
    stepped = _core("path")
    theirs = _state(stepped.n_agents)
    _steps(stepped, theirs, T)
    monkeypatch.setattr(mab, "ROLLOUT_NUMBERS", 1)  # blocks of `block` = 4 steps: 8 blocks
    spies = [_Typed(mab.rollout_flooding), _Typed(mab.rollout_flooding_counted)]
    monkeypatch.setattr(mab, "rollout_flooding", spies[0])
    monkeypatch.setattr(mab, "rollout_flooding_counted", spies[1])
    core = _core("path")
    mine = _state(core.n_agents)
    core.rollout(_flooder, mine, np.array([T]), np.zeros((B, core.n_agents, 1)))
    _same(core, stepped, mine, theirs)
    assert sum(spy.calls for spy in spies) == 1


@njit
def _bad_flood(last, seen, t, heard, mask, arms, sent):  # type: ignore[no-untyped-def]
    arms[:] = 0
    sent[:] = 0.0
    sent[1, 2, 1] = np.inf if t == 5 else 0.5


def test_a_rollout_over_flooding_refuses_what_the_env_refuses() -> None:
    """A message the env refuses stops the rollout before its step with the env's own
    error; the steps before it were played, and the protocols hold their rounds."""
    core = _core("path")
    with pytest.raises(ValueError, match="messages must be finite"):
        core.rollout(_bad_flood, (), np.array([T]), np.zeros((B, core.n_agents, 1)))
    assert core.t == 5


@njit
def _lists(last, seen, t, heard, mask, primed, changes, arms, sent):  # type: ignore[no-untyped-def]
    """A step that lists what it writes: agent 1's entry 2 each step (its flag never
    set), a NaN there at step 5, and at step 3 of env 0 an entry outside the messages
    where ``primed[1]`` says so."""
    arms[:] = 0
    for b in range(arms.shape[0]):
        if primed[0] == 0:  # a fresh `sent`: whole rows
            sent[b] = 0.0
            changes.listed[b] = -1
            continue
        sent[b, 1, 2] = np.nan if t == 5 else 0.25 * t
        changes.changed[b, 0, 0], changes.changed[b, 1, 0] = 1, 2
        changes.listed[b] = 1
        if t == 3 and b == 0 and primed[1]:
            changes.changed[b, 0, 0] = arms.shape[1]  # no such sender
    primed[0] = 1


@pytest.mark.parametrize("protocol", [Flooding, ServerRounds, Hybrid])
@pytest.mark.parametrize("wrong", [0, 1])
def test_a_listed_entry_is_checked_and_a_wrong_listing_refused(protocol: Any, wrong: int) -> None:
    """The round rollouts check only what a listing step lists (``core.rounds.refused``):
    a NaN it wrote and listed stops the rollout before that step with the env's message;
    a listing outside the messages stops it with ``WireChanges``' own message."""
    core = MABCore(MABProblem(np.full((5, M), 0.5)), Network.path(5),
                   [protocol() for _ in range(B)], horizon=T, message_dim=1 + M,
                   message_bounds=(-5.0, 5.0))  # fmt: skip
    core.reset(list(range(B)))
    state = (np.array([0, wrong]), WireChanges.of(B, 5, 1 + M))
    if wrong:
        with pytest.raises(ValueError, match=r"WireChanges lists entry \(5, 2\) of env 0"):
            core.rollout(_lists, state, np.array([T]), np.zeros((B, 5, 1)))
        assert core.t == 3
    else:
        with pytest.raises(ValueError, match="messages must be finite"):
            core.rollout(_lists, state, np.array([T]), np.zeros((B, 5, 1)))
        assert core.t == 5
