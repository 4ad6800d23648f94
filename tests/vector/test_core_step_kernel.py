"""``MABCore``'s compiled NumPy step (``core.kernels.step_envs``, noise from
``rng_kernels.fill_noise``) against its array statement (``compiled = False``: NumPy's
draws and ``rewards_of``), to the bit; and ``MABCore.rollout`` (a compiled policy step,
no Python between steps) against stepping the same policy through ``step``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit

import fedbandit_env.core.kernels as kernels
import fedbandit_env.core.mab as mab
from fedbandit_env.core import MABCore
from fedbandit_env.core.kernels import WireChanges
from fedbandit_env.network import Network
from fedbandit_env.problems import MABProblem
from fedbandit_env.protocols import (
    Broadcast,
    Hybrid,
    NeighbourGossip,
    RandomEdgeGossip,
    ServerRounds,
)

B, N, M, T = 4, 3, 5, 40


def problems() -> dict[str, MABProblem]:
    rng = np.random.default_rng(11)
    means = rng.random((N, M))
    return {
        "bernoulli": MABProblem(means, noise="bernoulli"),
        "gaussian": MABProblem(means, noise="gaussian", sigma=0.7),
        "clipped_gaussian": MABProblem(means, noise="clipped_gaussian", sigma=0.9),
    }


def make_core(problem: MABProblem, compiled: bool, block: int = 7) -> MABCore:
    core = MABCore(problem, Network.complete(N), [Broadcast() for _ in range(B)], horizon=T,
                   block=block)  # fmt: skip
    core.compiled = compiled
    core.reset(list(range(100, 100 + B)))
    return core


def play(core: MABCore, arms: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    out = []
    for t in range(T):
        step = core.step(arms[t])
        out.append((step.rewards, step.regret, core.cum_regret.copy()))
    return out


def mixed(core: MABCore, kinds: list[MABProblem]) -> None:
    """Give env ``b`` problem ``kinds[b % len]`` (a drawn instance can differ in noise)."""
    core.problems = [kinds[b % len(kinds)] for b in range(B)]
    core._set_arrays()


@pytest.mark.parametrize("noise", ["bernoulli", "gaussian", "clipped_gaussian", "mixed"])
def test_the_compiled_step_is_the_array_statement(noise: str) -> None:
    # rewards, regret and the running regret of every step, across blocks of 7 steps
    arms = np.random.default_rng(3).integers(M, size=(T, B, N))
    runs = []
    for compiled in (True, False):
        kinds = problems()
        core = make_core(kinds.get(noise, kinds["gaussian"]), compiled)
        if noise == "mixed":
            mixed(core, list(kinds.values()))
        runs.append(play(core, arms))
    for t, (fast, array) in enumerate(zip(*runs, strict=True)):
        for a, b in zip(fast, array, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b), (noise, t)


def test_the_step_comparison_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    # power: a kernel that reads its noise a step late is told apart from the array
    # statement
    kernel = mab.step_envs

    def late(*args: Any) -> None:
        args = list(args)
        args[6] = max(0, args[6] - 1)
        kernel(*args)

    arms = np.random.default_rng(3).integers(M, size=(T, B, N))
    reference = play(make_core(problems()["bernoulli"], compiled=False), arms)
    monkeypatch.setattr(mab, "step_envs", late)
    broken = play(make_core(problems()["bernoulli"], compiled=True), arms)
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(reference, broken, strict=True))


def test_the_compiled_noise_is_each_streams_numpy_draws() -> None:
    # the block the compiled path draws is what noise_draws gives each env's stream
    core, array = make_core(problems()["gaussian"], True), make_core(problems()["gaussian"], False)
    core._refill()
    array._refill()
    assert np.array_equal(core._draws, array._draws)


@njit
def _greedy(last: np.ndarray, seen: np.ndarray, t: int, sums: np.ndarray,
            counts: np.ndarray, arms: np.ndarray) -> None:  # fmt: skip
    # a deterministic learner that reads what it is given: each agent's best mean so far
    b_count, n = arms.shape
    m = sums.shape[2]
    for b in range(b_count):
        for i in range(n):
            if t > 0:
                counts[b, i, last[b, i]] += 1.0
                sums[b, i, last[b, i]] += seen[b, i]
            best, k = -1.0, 0
            for a in range(m):
                value = 2.0 if counts[b, i, a] == 0 else sums[b, i, a] / counts[b, i, a]
                if value > best:
                    best, k = value, a
            arms[b, i] = k


def state() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((B, N, M)), np.zeros((B, N, M))


@pytest.mark.parametrize("noise", ["bernoulli", "clipped_gaussian"])
@pytest.mark.parametrize("python_steps", [0, 9])
def test_a_rollout_is_the_episode_step_plays(noise: str, python_steps: int) -> None:
    # the same policy stepped through step() and observations, or rolled out from step
    # python_steps on; recorded regret, the trace and the final state agree
    steps = np.array([5, 9, 10, 33, T])
    stepped, rolled = make_core(problems()[noise], True), make_core(problems()[noise], True)
    mine, theirs = state(), state()
    trace = np.zeros((B, T, N), np.int64), np.zeros((B, T, N), np.float32)
    records = np.zeros((B, N, steps.size))
    for core, held, until in ((stepped, theirs, T), (rolled, mine, python_steps)):
        for t in range(until):
            arms = np.empty((B, N), np.int64)
            _greedy(core.last_arms, core.last_rewards.astype(np.float32), t, *held, arms)
            core.step(arms)
            if core is stepped:
                trace[0][:, t], trace[1][:, t] = arms, core.last_rewards.astype(np.float32)
                if t + 1 in steps:
                    records[:, :, list(steps).index(t + 1)] = core.cum_regret
    out = np.zeros((B, N, steps.size))
    kept = np.zeros((B, T, N), np.int64), np.zeros((B, T, N), np.float32)
    rolled.rollout(_greedy, mine, steps, out, kept)
    first = int(np.searchsorted(steps, python_steps, side="right"))
    assert np.array_equal(out[:, :, first:], records[:, :, first:])
    assert np.array_equal(kept[0][:, python_steps:], trace[0][:, python_steps:])
    assert np.array_equal(kept[1][:, python_steps:], trace[1][:, python_steps:])
    assert rolled.t == stepped.t == T
    assert np.array_equal(rolled.cum_regret, stepped.cum_regret)
    assert np.array_equal(rolled.last_arms, stepped.last_arms)
    assert np.array_equal(rolled.last_rewards, stepped.last_rewards)  # as step() leaves them
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])


@njit
def _pooled_choice(b: int, i: int, heard: np.ndarray, mask: np.ndarray, sums: np.ndarray,
                   counts: np.ndarray) -> int:  # fmt: skip
    # agent i's best pooled mean: its own counts and sums, the neighbours' heard added in
    n, m = counts.shape[1], counts.shape[2]
    best, k = -1.0, 0
    for a in range(m):
        c, x = counts[b, i, a], sums[b, i, a]
        for j in range(n):
            if mask[b, i, j]:
                c += heard[b, j, a]
                x += heard[b, j, m + a]
        value = 2.0 + a if c == 0 else x / c
        if value > best:
            best, k = value, a
    return k


@njit
def _pooled_arms(b: int, last: np.ndarray, seen: np.ndarray, t: int, heard: np.ndarray,
                 mask: np.ndarray, sums: np.ndarray, counts: np.ndarray,
                 arms: np.ndarray) -> None:  # fmt: skip
    # env b's agents absorb their last pulls and choose
    n = arms.shape[1]
    for i in range(n):
        if t > 0:
            counts[b, i, last[b, i]] += 1.0
            sums[b, i, last[b, i]] += seen[b, i]
    for i in range(n):
        arms[b, i] = _pooled_choice(b, i, heard, mask, sums, counts)


@njit
def _pooled(last: np.ndarray, seen: np.ndarray, t: int, heard: np.ndarray, mask: np.ndarray,
            sums: np.ndarray, counts: np.ndarray, arms: np.ndarray,
            sent: np.ndarray) -> None:  # fmt: skip
    # a learner that talks: its own counts and sums sent, the neighbours' heard added in
    b_count, n = arms.shape
    m = sums.shape[2]
    for b in range(b_count):
        _pooled_arms(b, last, seen, t, heard, mask, sums, counts, arms)
        for i in range(n):
            for a in range(m):
                sent[b, i, a] = counts[b, i, a]
                sent[b, i, m + a] = sums[b, i, a] / 3.0  # not a float32: the wire rounds it


def talking_core(network: Network, horizon: int = T, protocol: Any = Broadcast) -> MABCore:
    core = MABCore(problems()["clipped_gaussian"], network, [protocol() for _ in range(B)],
                   horizon=horizon, message_dim=2 * M, link_costs=(25.0, 0.3),
                   block=7)  # fmt: skip
    core.reset(list(range(200, 200 + B)))
    return core


def _step_pooled(core: MABCore, held: tuple[Any, ...], until: int,
                 steps: np.ndarray | None = None, records: np.ndarray | None = None,
                 costs: np.ndarray | None = None) -> None:  # fmt: skip
    # the first `until` steps of _pooled through core.step, the regret and the cost at
    # the recorded steps into records and costs
    width = core.message_dim
    heard, mask = np.zeros((B, N, width), np.float32), np.zeros((B, N, N), np.int8)
    for t in range(until):
        arms, sent = np.empty((B, N), np.int64), np.zeros((B, N, width))
        seen = core.last_rewards.astype(np.float32)
        _pooled(core.last_arms, seen, t, heard, mask, *held, arms, sent)
        routed = core.step(arms, sent).routed
        assert routed is not None
        heard, mask = np.array(routed.messages), np.array(routed.mask)
        if steps is not None and records is not None and costs is not None and t + 1 in steps:
            records[:, :, list(steps).index(t + 1)] = core.cum_regret
            costs[:, list(steps).index(t + 1)] = core.cum_cost


def _prefixed() -> RandomEdgeGossip:
    # Gossip_UCB's protocol: the first M entries (the counts) reach every neighbour
    return RandomEdgeGossip(public_dim=M)


TALKING = [Broadcast, RandomEdgeGossip, _prefixed, NeighbourGossip]


@pytest.mark.parametrize("graph", ["complete", "star", "path"])
@pytest.mark.parametrize("python_steps", [0, 6])
@pytest.mark.parametrize("protocol", TALKING)
def test_a_talking_rollout_is_the_episode_step_plays(
    graph: str, python_steps: int, protocol: Any
) -> None:
    # messages heard, masks, costs and choices: the router's broadcast or gossip edges,
    # step by step (after Python steps a gossip router holds draws a block ahead)
    network = getattr(Network, graph)(N)
    steps = np.array([4, 6, 7, 19, T])
    stepped = talking_core(network, protocol=protocol)
    rolled = talking_core(network, protocol=protocol)
    mine, theirs = state(), state()
    records, costs = np.zeros((B, N, steps.size)), np.zeros((B, steps.size))
    _step_pooled(stepped, theirs, T, steps, records, costs)
    _step_pooled(rolled, mine, python_steps)
    out, cost_out = np.zeros((B, N, steps.size)), np.zeros((B, steps.size))
    rolled.rollout(_pooled, mine, steps, out, cost_out=cost_out)
    first = int(np.searchsorted(steps, python_steps, side="right"))
    assert np.array_equal(out[:, :, first:], records[:, :, first:])
    assert np.array_equal(cost_out[:, first:], costs[:, first:])
    assert np.array_equal(rolled.cum_cost, stepped.cum_cost)
    assert rolled.last_routed is not None and stepped.last_routed is not None
    assert np.array_equal(rolled.last_routed.messages, stepped.last_routed.messages)
    assert np.array_equal(rolled.last_routed.mask, stepped.last_routed.mask)
    _same_public(rolled.last_routed.public_mask, stepped.last_routed.public_mask)
    assert np.array_equal(rolled.cum_regret, stepped.cum_regret)
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])


def _same_public(rolled: Any, stepped: Any) -> None:
    assert (rolled is None) == (stepped is None)
    if stepped is not None:
        assert np.array_equal(rolled, stepped)


@pytest.mark.parametrize("horizon", [1, 2, 3])
@pytest.mark.parametrize("protocol", TALKING)
def test_a_short_talking_rollout_leaves_what_the_last_step_delivered(
    horizon: int, protocol: Any
) -> None:
    # every step's delivery, seen at the end of episodes of 1, 2 and 3 steps: the rows
    # of senders nobody heard are zeros from the first step on
    network = Network.path(N)
    stepped = talking_core(network, horizon, protocol)
    rolled = talking_core(network, horizon, protocol)
    theirs, heard, mask = state(), np.zeros((B, N, 2 * M), np.float32), np.zeros((B, N, N), np.int8)
    for t in range(horizon):
        arms, sent = np.empty((B, N), np.int64), np.zeros((B, N, 2 * M))
        _pooled(stepped.last_arms, stepped.last_rewards.astype(np.float32), t, heard, mask,
                *theirs, arms, sent)  # fmt: skip
        routed = stepped.step(arms, sent).routed
        assert routed is not None
        heard, mask = np.array(routed.messages), np.array(routed.mask)
    rolled.rollout(_pooled, state(), np.array([horizon]), np.zeros((B, N, 1)))
    assert rolled.last_routed is not None
    assert np.array_equal(rolled.last_routed.messages, heard)
    assert np.array_equal(rolled.last_routed.mask, mask)
    assert stepped.last_routed is not None
    _same_public(rolled.last_routed.public_mask, stepped.last_routed.public_mask)
    assert np.array_equal(rolled.cum_cost, stepped.cum_cost)
    if protocol is _prefixed and horizon > 1:  # power: senders off the edge show prefixes
        prefixed = (heard[:, :, :M] != 0).any(axis=2).sum()
        assert prefixed > (rolled.last_routed.mask.sum(axis=1) > 0).sum()


@njit
def _shout(last: np.ndarray, seen: np.ndarray, t: int, heard: np.ndarray, mask: np.ndarray,
           arms: np.ndarray, sent: np.ndarray) -> None:  # fmt: skip
    arms[:] = 0
    sent[:] = 1e9 if t == 3 else 0.5


def test_a_rollout_refuses_what_the_env_refuses() -> None:
    # a message outside the bounds stops the rollout before its step, with the env's
    # message; protocols routed by their own objects are not rolled out
    core = MABCore(problems()["bernoulli"], Network.complete(N), [Broadcast() for _ in range(B)],
                   horizon=T, message_dim=1, message_bounds=(0.0, 1.0))  # fmt: skip
    core.reset(list(range(B)))
    with pytest.raises(ValueError, match="messages must be finite and within"):
        core.rollout(_shout, (), np.array([T]), np.zeros((B, N, 1)))
    assert core.t == 3  # the three steps before the refused one were played
    mixed = iter([Broadcast(), Hybrid()] * B)  # envs under two kinds of protocol
    other = talking_core(Network.complete(N), protocol=lambda: next(mixed))
    assert not other.rolls_out and other.router.kind == "generic"
    with pytest.raises(ValueError, match="Broadcast"):
        other.rollout(_pooled, state(), np.array([T]), np.zeros((B, N, 1)))


@pytest.mark.parametrize("protocol", [RandomEdgeGossip, NeighbourGossip])
def test_a_refused_gossip_rollout_leaves_the_draws_of_the_steps_it_did_not_play(
    protocol: Any,
) -> None:
    # refused at step 3: the protocol's draws for the block's later steps go back to the
    # router, so stepping on is the episode a core stepped from the start plays
    def gossip_core() -> MABCore:
        core = MABCore(problems()["bernoulli"], Network.path(N),
                       [protocol() for _ in range(B)], horizon=T, message_dim=1,
                       message_bounds=(0.0, 1.0), block=7)  # fmt: skip
        core.reset(list(range(B)))
        return core

    rolled, stepped = gossip_core(), gossip_core()
    with pytest.raises(ValueError, match="messages must be finite and within"):
        rolled.rollout(_shout, (), np.array([T]), np.zeros((B, N, 1)))
    assert rolled.t == 3
    arms, sent = np.zeros((B, N), np.int64), np.full((B, N, 1), 0.5)
    for _ in range(3):
        stepped.step(arms, sent)
    for _ in range(3, T):
        a, b = rolled.step(arms, sent).routed, stepped.step(arms, sent).routed
        assert a is not None and b is not None
        assert np.array_equal(a.mask, b.mask)
    assert np.array_equal(rolled.cum_regret, stepped.cum_regret)
    assert np.array_equal(rolled.cum_cost, stepped.cum_cost)


def test_a_rollout_stops_between_blocks_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # how Ctrl-C ends a batch of compiled trials in flight: the steps played stand, and
    # the rest of the episode plays on as it would have
    from fedbandit_env.core import RolloutStopped

    monkeypatch.setattr(mab, "ROLLOUT_NUMBERS", B * N * 7)  # blocks of seven steps
    asked: list[int] = []

    def after_two() -> bool:
        asked.append(1)
        return len(asked) > 2

    stopped, whole = talking_core(Network.complete(N)), talking_core(Network.complete(N))
    mine = state()
    with pytest.raises(RolloutStopped, match="stopped after 14 of 40 steps"):
        stopped.rollout(_pooled, mine, np.array([T]), np.zeros((B, N, 1)), stop=after_two)
    assert stopped.t == 14  # two blocks of seven steps
    stopped.rollout(_pooled, mine, np.array([T]), np.zeros((B, N, 1)))
    whole.rollout(_pooled, state(), np.array([T]), np.zeros((B, N, 1)))
    assert np.array_equal(stopped.cum_regret, whole.cum_regret)


WIDE = 8 * M
"""A message long enough that an agent's two changed entries a step are a sparse share
of it (``core.kernels.SPARSE_WIRE``), so the rollout takes the listed entries."""


@njit
def _pooled_listing(last: np.ndarray, seen: np.ndarray, t: int, heard: np.ndarray,
                    mask: np.ndarray, sums: np.ndarray, counts: np.ndarray, primed: np.ndarray,
                    bad_at: np.ndarray, changes: WireChanges, arms: np.ndarray,
                    sent: np.ndarray) -> None:  # fmt: skip
    # _pooled's learner keeping its messages entry by entry: whole rows the first time
    # (listed -1), then only the pulled arm's count and sum, listed; at step bad_at[0] a
    # listed entry out of bounds
    b_count, n = arms.shape
    m = sums.shape[2]
    for b in range(b_count):
        _pooled_arms(b, last, seen, t, heard, mask, sums, counts, arms)
        if primed[b] == 0:
            for i in range(n):
                for a in range(m):
                    sent[b, i, a] = counts[b, i, a]
                    sent[b, i, m + a] = sums[b, i, a] / 3.0
            changes.listed[b] = -1
            primed[b] = 1
            continue
        c = 0
        for i in range(n):
            a = last[b, i]
            sent[b, i, a] = counts[b, i, a]
            sent[b, i, m + a] = sums[b, i, a] / 3.0 if t != bad_at[0] else 1e9
            changes.changed[b, 0, c], changes.changed[b, 1, c] = i, a
            changes.changed[b, 0, c + 1], changes.changed[b, 1, c + 1] = i, m + a
            c += 2
        changes.listed[b] = c


def listing_state(bad_at: int = -1) -> tuple[Any, ...]:
    return (*state(), np.zeros(B, np.int64), np.array([bad_at]), WireChanges.of(B, N, WIDE))


def wide_core(
    network: Network, protocol: Any, bounds: tuple[float, float] | None = None
) -> MABCore:
    core = MABCore(problems()["clipped_gaussian"], network, [protocol() for _ in range(B)],
                   horizon=T, message_dim=WIDE, link_costs=(25.0, 0.3), block=7,
                   **({} if bounds is None else {"message_bounds": bounds}))  # fmt: skip
    core.reset(list(range(200, 200 + B)))
    return core


@pytest.mark.parametrize("python_steps", [0, 6])
@pytest.mark.parametrize("protocol", TALKING)
def test_a_rollout_of_listed_entries_is_the_episode_step_plays(
    python_steps: int, protocol: Any
) -> None:
    # a step that writes only what changed and lists it (WireChanges): the rollout checks
    # and copies only those entries and the rows a partner came to or left, and the
    # episode is the one stepping the whole-row learner plays: messages heard, masks,
    # costs, choices, step by step
    network = Network.path(N)
    steps = np.array([4, 6, 7, 19, T])
    stepped, rolled = wide_core(network, protocol), wide_core(network, protocol)
    theirs, mine = state(), listing_state()
    records, costs = np.zeros((B, N, steps.size)), np.zeros((B, steps.size))
    _step_pooled(stepped, theirs, T, steps, records, costs)
    _step_pooled(rolled, mine[:2], python_steps)
    out, cost_out = np.zeros((B, N, steps.size)), np.zeros((B, steps.size))
    rolled.rollout(_pooled_listing, mine, steps, out, cost_out=cost_out)
    listed = mine[-1].listed
    assert (listed >= 0).all() and (listed <= N * WIDE // kernels.SPARSE_WIRE).all()
    first = int(np.searchsorted(steps, python_steps, side="right"))
    assert np.array_equal(out[:, :, first:], records[:, :, first:])
    assert np.array_equal(cost_out[:, first:], costs[:, first:])
    assert rolled.last_routed is not None and stepped.last_routed is not None
    assert np.array_equal(rolled.last_routed.messages, stepped.last_routed.messages)
    assert np.array_equal(rolled.last_routed.mask, stepped.last_routed.mask)
    assert np.array_equal(rolled.cum_regret, stepped.cum_regret)
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])


@pytest.mark.parametrize("protocol", [Broadcast, _prefixed])
def test_a_listed_entry_out_of_bounds_is_refused_at_its_step(protocol: Any) -> None:
    # the listed entries are the ones checked: a bad one stops the rollout before its
    # step, with the env's message, as a whole row would
    core = wide_core(Network.path(N), protocol, bounds=(0.0, 10.0))
    with pytest.raises(ValueError, match="messages must be finite and within"):
        core.rollout(_pooled_listing, listing_state(bad_at=11), np.array([T]),
                     np.zeros((B, N, 1)))  # fmt: skip
    assert core.t == 11


def test_listed_messages_are_kept_from_one_rollout_to_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a step that writes only what changed relies on the messages of its last step: the
    # core keeps them across rollouts (a rollout stopped between blocks and resumed plays
    # the episode a whole rollout plays)
    from fedbandit_env.core import RolloutStopped

    monkeypatch.setattr(mab, "ROLLOUT_NUMBERS", B * N * 7)  # blocks of seven steps
    asked: list[int] = []

    def after_two() -> bool:
        asked.append(1)
        return len(asked) > 2

    network = Network.path(N)
    stopped, whole = wide_core(network, _prefixed), wide_core(network, _prefixed)
    mine = listing_state()
    with pytest.raises(RolloutStopped, match="stopped after 14 of 40 steps"):
        stopped.rollout(_pooled_listing, mine, np.array([T]), np.zeros((B, N, 1)),
                        stop=after_two)  # fmt: skip
    stopped.rollout(_pooled_listing, mine, np.array([T]), np.zeros((B, N, 1)))
    whole.rollout(_pooled_listing, listing_state(), np.array([T]), np.zeros((B, N, 1)))
    assert np.array_equal(stopped.cum_regret, whole.cum_regret)
    assert stopped.last_routed is not None and whole.last_routed is not None
    assert np.array_equal(stopped.last_routed.messages, whole.last_routed.messages)


@njit
def _lists_wrong(last: np.ndarray, seen: np.ndarray, t: int, heard: np.ndarray,
                 mask: np.ndarray, changes: WireChanges, arms: np.ndarray,
                 sent: np.ndarray) -> None:  # fmt: skip
    # whole rows of 0.5 at step 0, then one listed entry a step; at step 5 it lists an
    # entry past the message's end
    arms[:] = 0
    for b in range(arms.shape[0]):
        if t == 0:
            sent[b] = 0.5
            changes.listed[b] = -1
            continue
        changes.changed[b, 0, 0] = 0
        changes.changed[b, 1, 0] = sent.shape[2] if t == 5 else 0
        changes.listed[b] = 1


def test_a_wrong_listing_is_refused_with_its_entry() -> None:
    # a step's listing is checked: arrays that do not fit the envs before the rollout, an
    # entry outside the messages at its step (never read or written), each a ValueError
    core = wide_core(Network.path(N), Broadcast, bounds=(0.0, 10.0))
    short = WireChanges(np.zeros((B - 1, 2, 4), np.int64), np.full(B - 1, -1))
    with pytest.raises(ValueError, match=r"WireChanges needs int64 arrays changed \(4, 2, L\)"):
        core.rollout(_lists_wrong, (short,), np.array([T]), np.zeros((B, N, 1)))
    assert core.t == 0
    with pytest.raises(ValueError, match=rf"lists entry \(0, {WIDE}\) of env 0, outside"):
        core.rollout(_lists_wrong, (WireChanges.of(B, N, WIDE),), np.array([T]),
                     np.zeros((B, N, 1)))  # fmt: skip
    assert core.t == 5  # the steps before the wrong listing were played


@njit
def _uploader(last: np.ndarray, seen: np.ndarray, t: int, server: np.ndarray,
              server_mask: np.ndarray, sums: np.ndarray, counts: np.ndarray, arms: np.ndarray,
              sent: np.ndarray) -> None:  # fmt: skip
    # a learner over ServerRounds: some agents flag an upload of their sums each step,
    # and every agent pulls the arm the server's last broadcast rates best
    b_count, n = arms.shape
    m = sums.shape[2]
    for b in range(b_count):
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
            if (t + i + b) % 3 != 0:  # two of three agents: participation draws
                sent[b, i, 0] = 1.0
                for a in range(m):
                    sent[b, i, 1 + a] = sums[b, i, a] / 3.0  # not a float32


def rounds_core(participation: float, horizon: int = T) -> MABCore:
    core = MABCore(problems()["clipped_gaussian"], Network.complete(N),
                   [ServerRounds(participation) for _ in range(B)], horizon=horizon,
                   message_dim=1 + M, link_costs=(25.0, 0.3), block=7)  # fmt: skip
    core.reset(list(range(300, 300 + B)))
    return core


def _step_uploader(core: MABCore, held: tuple[Any, ...], until: int) -> list[np.ndarray]:
    # the first `until` steps of _uploader through core.step; every step's cost
    server = np.zeros((B, N, 1 + M), np.float32)
    server_mask = np.zeros((B, N, 1), np.int8)
    costs = []
    for t in range(until):
        arms, sent = np.empty((B, N), np.int64), np.zeros((B, N, 1 + M))
        seen = core.last_rewards.astype(np.float32)
        _uploader(core.last_arms, seen, t, server, server_mask, *held, arms, sent)
        routed = core.step(arms, sent).routed
        assert routed is not None and routed.server is not None
        server, server_mask = np.array(routed.server), np.array(routed.server_mask)
        costs.append(core.cum_cost.copy())
    return costs


@pytest.mark.parametrize("python_steps", [0, 6])
@pytest.mark.parametrize("participation", [1.0, 0.5])
def test_a_rollout_over_server_rounds_is_the_episode_step_plays(
    participation: float, python_steps: int
) -> None:
    # the uploaders drawn from each env's protocol generator, the server's float32
    # broadcast the policy acts on, the c1 links, and what the last step delivered
    steps = np.array([4, 6, 7, 19, T])
    stepped, rolled = rounds_core(participation), rounds_core(participation)
    mine, theirs = state(), state()
    costs = _step_uploader(stepped, theirs, T)
    _step_uploader(rolled, mine, python_steps)
    out, cost_out = np.zeros((B, N, steps.size)), np.zeros((B, steps.size))
    assert rolled.rolls_out
    rolled.rollout(_uploader, mine, steps, out, cost_out=cost_out)
    first = int(np.searchsorted(steps, python_steps, side="right"))
    for r in range(first, steps.size):
        assert np.array_equal(cost_out[:, r], costs[steps[r] - 1])
    assert np.array_equal(rolled.cum_cost, stepped.cum_cost)
    assert np.array_equal(rolled.cum_regret, stepped.cum_regret)
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])
    last, want = rolled.last_routed, stepped.last_routed
    assert last is not None and want is not None
    for name in ("server", "server_mask", "server_links", "peer_links", "messages", "mask"):
        assert np.array_equal(getattr(last, name), getattr(want, name)), name
    assert stepped.cum_cost.min() > 0


def test_the_server_rounds_comparison_can_fail() -> None:
    # power: a rollout that lets every flagged agent upload (the rate ignored) pays
    # other links and plays other arms than the stepped episode
    stepped, rolled = rounds_core(0.5), rounds_core(0.5)
    mine, theirs = state(), state()
    _step_uploader(stepped, theirs, T)
    rolled.router._rates = np.ones(B)
    rolled.rollout(_uploader, mine, np.array([T]), np.zeros((B, N, 1)))
    assert not np.array_equal(rolled.cum_cost, stepped.cum_cost)


@njit
def _bad_upload(last: np.ndarray, seen: np.ndarray, t: int, server: np.ndarray,
                server_mask: np.ndarray, arms: np.ndarray, sent: np.ndarray) -> None:  # fmt: skip
    arms[:] = 0
    sent[:] = 0.0
    sent[0, 1, 2] = np.nan if t == 3 else 0.5


def test_a_rollout_over_server_rounds_refuses_what_the_env_refuses() -> None:
    core = rounds_core(1.0)
    with pytest.raises(ValueError, match="messages must be finite"):
        core.rollout(_bad_upload, (), np.array([T]), np.zeros((B, N, 1)))
    assert core.t == 3  # the three steps before the refused one were played
