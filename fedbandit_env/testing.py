"""Checkers users can run on their own envs and wrappers (PettingZoo ships its own too).

PettingZoo's ``parallel_api_test`` does not check that observations lie in their
spaces, and ``parallel_seed_test`` compares a single step; these checkers close both
gaps.

Example:
    >>> from fedbandit_env import federated_mab_v0
    >>> make = lambda: federated_mab_v0.parallel_env(horizon=30, message_dim=2)
    >>> check_parallel_env(make)
    >>> check_determinism(make, seed=3)
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec

EnvFactory = Callable[[], ParallelEnv[Any, Any, Any]]


def _episode(env: ParallelEnv[Any, Any, Any], seed: int, check_spaces: bool) -> list[Any]:
    """Play one full episode with seeded random actions; return everything seen."""
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + i)
    obs, infos = env.reset(seed=seed)
    trace: list[Any] = [obs, infos]
    steps = 0
    while env.agents:
        if check_spaces:
            for agent, o in obs.items():
                space = env.observation_space(agent)
                if not space.contains(o):
                    raise AssertionError(
                        f"step {steps}: observation of {agent} not in {space}: {o}"
                    )
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rew, term, trunc, infos = env.step(actions)
        trace.extend([actions, obs, rew, term, trunc, infos])
        steps += 1
        if steps > 10_000_000:  # pragma: no cover - guards a broken truncation
            raise AssertionError("episode did not end")
    return trace


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray | np.generic) or isinstance(b, np.ndarray | np.generic):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


def check_parallel_env(make_env: EnvFactory, num_cycles: int = 1000, seed: int = 0) -> None:
    """Run PettingZoo's parallel and AEC API tests and check observations lie in their spaces.

    Raises:
        AssertionError: On the first violation.


    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> check_parallel_env(lambda: federated_mab_v0.parallel_env(horizon=5), num_cycles=10)
    """
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore", UserWarning)
        parallel_api_test(make_env(), num_cycles=num_cycles)
        api_test(parallel_to_aec(make_env()), num_cycles=num_cycles)
    _episode(make_env(), seed, check_spaces=True)


def check_determinism(make_env: EnvFactory, seed: int = 0, other_seed: int | None = None) -> None:
    """Two envs reset with one seed agree on every observation, reward and info of a whole
    episode (random actions seeded alike); a different seed gives a different episode.

    Raises:
        AssertionError: If the same seed diverges, or another seed replays the same episode.


    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> check_determinism(lambda: federated_mab_v0.parallel_env(horizon=5), seed=1)
    """
    first = _episode(make_env(), seed, check_spaces=False)
    second = _episode(make_env(), seed, check_spaces=False)
    if len(first) != len(second):
        raise AssertionError("episodes with the same seed have different lengths")
    for k, (a, b) in enumerate(zip(first, second, strict=True)):
        if not _equal(a, b):
            raise AssertionError(f"same seed {seed} diverged at record {k}: {a!r} != {b!r}")
    other = _episode(make_env(), seed + 1 if other_seed is None else other_seed, False)
    if len(other) == len(first) and all(_equal(a, b) for a, b in zip(first, other, strict=True)):
        raise AssertionError("a different seed replayed exactly the same episode")
