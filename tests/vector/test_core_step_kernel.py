"""``MABCore``'s compiled NumPy step (``core.kernels.step_envs``, noise from
``rng_kernels.fill_noise``) against its array statement (``compiled = False``: NumPy's
draws and ``rewards_of``), to the bit; and ``MABCore.rollout`` (a compiled policy step,
no Python between steps) against stepping the same policy through ``step``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit

import fedbandit_env.core.mab as mab
from fedbandit_env.core import MABCore
from fedbandit_env.network import Network
from fedbandit_env.problems import MABProblem
from fedbandit_env.protocols import Broadcast

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
    assert np.array_equal(rolled.last_rewards, stepped.last_rewards.astype(np.float32))
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])


def test_a_rollout_refuses_an_env_with_messages() -> None:
    core = MABCore(problems()["bernoulli"], Network.complete(N),
                   [Broadcast() for _ in range(B)], horizon=T, message_dim=1)  # fmt: skip
    core.reset(list(range(B)))
    with pytest.raises(ValueError, match="without messages"):
        core.rollout(_greedy, state(), np.array([T]), np.zeros((B, N, 1)))
