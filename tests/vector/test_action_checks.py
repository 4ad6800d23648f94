"""The vector env's one-pass check of NumPy actions (``MABCore._check_numpy``, compiled
range checks) against the general ``check_actions``: the same arrays where actions
pass, and the general path (with its message) for every action it must refuse."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env.core import MABCore
from fedbandit_env.network import Network
from fedbandit_env.problems import MABProblem
from fedbandit_env.protocols import Broadcast

B, N, M, D = 3, 4, 5, 2


def core(bounds: tuple[float, float] = (0.0, 1.0)) -> MABCore:
    c = MABCore(MABProblem(np.full((N, M), 0.5)), Network.complete(N),
                [Broadcast() for _ in range(B)], horizon=5, message_dim=D,
                message_bounds=bounds)  # fmt: skip
    c.reset(list(range(B)))
    return c


def general(c: MABCore, arms: Any, messages: Any) -> Any:
    """The general path: the same arguments as lists, which the fast path leaves alone."""
    return c.check_actions(np.asarray(arms).tolist(), np.asarray(messages).tolist())


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_passing_actions_are_the_general_paths(dtype: type) -> None:
    rng = np.random.default_rng(0)
    c = core()
    arms = rng.integers(M, size=(B, N)).astype(dtype)
    messages = rng.random((B, N, D)).astype(np.float32)
    assert c._check_numpy(arms, messages, True) is not None  # the one-pass path takes them
    fast = c.check_actions(arms, messages)
    slow = general(c, arms, messages)
    assert fast[0].dtype == np.int64 and fast[1] is not None and fast[1].dtype == np.float64
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])


@pytest.mark.parametrize(
    ("where", "value", "match"),
    [
        ("arm", -1, "arms must lie"),
        ("arm", M, "arms must lie"),
        ("message", np.nan, "messages must be finite"),
        ("message", np.inf, "messages must be finite"),
        ("message", 1.5, "messages must be finite and within"),
    ],
)
def test_refused_actions_say_what_the_general_path_says(
    where: str, value: float, match: str
) -> None:
    c = core()
    arms, messages = np.zeros((B, N), np.int64), np.zeros((B, N, D))
    if where == "arm":
        arms[1, 2] = int(value)
    else:
        messages[2, 1, 0] = value
    assert c._check_numpy(arms, messages, True) is None  # handed to the general path
    with pytest.raises(ValueError, match=match):
        c.check_actions(arms, messages)
    with pytest.raises(ValueError, match=match):
        general(c, arms, messages)


def test_a_forgers_message_passes_and_no_one_elses() -> None:
    c = core()
    c.admit_forgers([3])
    messages = np.zeros((B, N, D))
    messages[:, 3] = np.nan  # the forger's: carried as the wire would
    assert np.isnan(c.check_actions(np.zeros((B, N), int), messages)[1][:, 3]).all()
    messages[0, 2, 1] = np.inf
    with pytest.raises(ValueError, match=r"messages\[\(0, 2, 1\)\]"):
        c.check_actions(np.zeros((B, N), int), messages)
