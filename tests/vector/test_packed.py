"""A step's state handed to its rollout packed (``core.packed``): the buffer reads back
every value of the state as it was, a packed rollout plays the trials the plain one
plays, and only the steps marked as measured are packed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numba
import numpy as np
import pytest
from numba import njit

import fedbandit_env.core.mab as mab
import fedbandit_env.core.packed as packed
from baselines.elimination.kernels import elimination_step, flooding_step
from baselines.gossip.kernels import gossip_step
from baselines.linear.vector import LinearSwitches
from fedbandit_env import registry
from fedbandit_env.core.kernels import UNCOUNTED, WireChanges
from fedbandit_env.core.packed import (
    PACKED_STEPS,
    load_state,
    pack_state,
    packed_buffer,
    packed_call,
    twin_source,
)
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.vector_trials import CompiledTrials
from fedbandit_env.scenario import Scenario


@njit(**UNCOUNTED)
def _read(buf: Any, kind: Any) -> Any:  # pragma: no cover
    s = load_state(buf, kind)
    a, b, c, options, changes, x, k = s
    return (a[1, 2, 0], a.shape[2], b[2, 1], c[3], options.private, options.batch,
            options.levels, options.adaptive, changes.listed[1], changes.changed.shape[2], x,
            k, a.ctypes.data, b.ctypes.data)  # fmt: skip


def test_a_packed_state_reads_back_every_value_and_points_at_the_same_arrays() -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(12, dtype=np.int8).reshape(3, 4)[:, ::2]  # not contiguous: its strides
    c = np.array([False, False, False, True])
    changes = WireChanges.of(2, 3, 5)
    changes.listed[1] = 4
    # bools beside numbers: a struct with narrow fields, of a module every process can
    # import (the packing functions' disk cache records the types they were called with;
    # a type of this test module would break that cache for any process that cannot
    # import it)
    state = (a, b, c, LinearSwitches(True, False, -3, 2, 9), changes, 1.5, 7)
    buf = packed_buffer(state)
    pack_state(buf, state)
    got = _read(buf, numba.typeof(state))
    assert got[:12] == (a[1, 2, 0], 4, b[2, 1], True, True, -3, 9, False, 4,
                        changes.changed.shape[2], 1.5, 7)  # fmt: skip
    assert got[12:] == (a.ctypes.data, b.ctypes.data)  # the arrays, not copies
    a[1, 2, 0] = -1.0  # written after packing: read through the buffer
    assert _read(buf, numba.typeof(state))[0] == -1.0


def _ddp_curves() -> Any:
    scenario = Scenario(instance="zhu", noise="clipped_gaussian", n_agents=6, n_arms=4,
                        graph="path", horizon=3000)  # fmt: skip
    form = CompiledTrials("baselines.elimination.vector:ddp_mab")
    vector = replace(registry.spec("ddp_mab"), fast_entry_point=form)
    return run_fast(vector, scenario, 2, record_every=300, progress=False)


def test_a_packed_rollout_plays_the_trials_the_plain_one_plays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DDP-MAB over GIS flooding on a path (rounds in flight for several steps), its state
    # packed (flooding_step is marked) and not: the same regret and costs, step for step
    calls: list[bool] = []

    def spy(act: Any, state: Any, head: int, tail: int) -> Any:
        out = packed_call(act, state, head, tail)
        calls.append(out[0] is not act)
        return out

    monkeypatch.setattr(mab, "packed_call", spy)
    packed_curves = _ddp_curves()
    assert calls and all(calls)  # the twin ran
    monkeypatch.setattr(packed, "PACKED_STEPS", set())
    calls.clear()
    plain = _ddp_curves()
    assert calls and not any(calls)
    np.testing.assert_array_equal(packed_curves.regret, plain.regret)
    np.testing.assert_array_equal(packed_curves.comm_cost, plain.comm_cost)
    assert plain.comm_cost.max() > 0  # rounds were played


def test_only_the_steps_measured_faster_are_packed() -> None:
    # rollout_flooding carried DDP-MAB's state beside flooding's wire: packed, 0.23-0.26x
    # -> 0.41x the loop; CDP- and HDP-MAB's elimination_step lost with the twin's second
    # call, Gossip_UCB's step moved within the noise (core.packed's measurements)
    assert flooding_step in PACKED_STEPS
    assert elimination_step not in PACKED_STEPS and gossip_step not in PACKED_STEPS
    state = (np.zeros(2), 1.0)
    assert packed_call(elimination_step, state, 5, 2) == (elimination_step, state)


def test_a_step_that_cannot_be_imported_by_name_has_no_twin() -> None:
    def make() -> Any:
        @njit(**UNCOUNTED)
        def inner(last: Any, seen: Any, t: int, arms: Any) -> None:  # pragma: no cover
            arms[:] = 0

        return inner

    closure = make()
    counted = njit(lambda last, seen, t, arms: None)
    for step in (closure, counted):
        assert twin_source(step, 3, 1, 1) is None
    assert twin_source(flooding_step, 5, 17, 2) is not None
