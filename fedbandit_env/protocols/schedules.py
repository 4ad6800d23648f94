"""Gossip schedules: which pairs of neighbours talk at step ``t``.

A schedule is the one source of truth of who gossips: the gossip protocols
(:class:`~fedbandit_env.protocols.RandomEdgeGossip`, ...) and the
:class:`~fedbandit_env.wrappers.Gossip` wrapper both call :meth:`Schedule.draw`, so
the same generator gives the same calls whichever of the two carries them
(tests/wrappers/test_gossip_wrapper.py replays one with the other). A draw returns a symmetric
``(N, N)`` partner mask (``mask[r, s]``: ``r`` hears ``s``'s whole message) inside the
graph's adjacency, and the number of calls, each call one peer link (Li & Song's
``c2``).

- :class:`RandomEdge`: one edge of ``E`` uniformly at random (Zhu et al., Sec. 2);
- :class:`NeighbourCalls`: every agent calls one uniformly random neighbour;
- :class:`RandomMatching`: a random maximal matching (edges in random order, each taken
  when both its ends are free), so every agent talks to at most one partner;
- :class:`Periodic`: every neighbour pair every ``period`` steps, nobody in between;
- any callable ``(network, rng, t) -> mask`` (:class:`UserSchedule` checks its masks).

Examples:
    >>> from fedbandit_env.network import Network
    >>> mask, calls = RandomMatching().draw(Network.ring(6), np.random.default_rng(0), t=1)
    >>> bool((mask.sum(axis=1) <= 1).all()), calls == int(mask.sum()) // 2
    (True, True)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from fedbandit_env.network.graph import Network
from fedbandit_env.type_aliases import BoolArray
from fedbandit_env.validation import check_int


class Schedule(ABC):
    """Who gossips at a step: :meth:`draw` gives the partner mask and the calls made.

    Examples:
        >>> from fedbandit_env.network import Network
        >>> mask, calls = RandomEdge().draw(Network.path(3), np.random.default_rng(0), t=1)
        >>> int(mask.sum()), calls
        (2, 1)
    """

    name: str = "schedule"
    """Short name (the ``schedule=`` string of :class:`~fedbandit_env.wrappers.Gossip`)."""

    @abstractmethod
    def draw(self, network: Network, rng: np.random.Generator, t: int) -> tuple[BoolArray, int]:
        """The symmetric partner mask of step ``t`` (1-based) and the number of calls."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RandomEdge(Schedule):
    """Zhu et al.'s gossip: one edge of ``E``, uniformly (one ``integers`` draw, as the
    compiled :func:`~fedbandit_env.protocols.kernels.random_edge`).

    Examples:
        >>> from fedbandit_env.network import Network
        >>> RandomEdge().draw(Network.path(2), np.random.default_rng(0), t=1)[1]
        1
    """

    name = "random_edge"

    def draw(self, network: Network, rng: np.random.Generator, t: int) -> tuple[BoolArray, int]:
        """One uniformly random edge; its two ends swap messages."""
        i, j = network.edges[rng.integers(network.n_edges)]
        mask = np.zeros((network.n_agents, network.n_agents), dtype=bool)
        mask[i, j] = mask[j, i] = True
        return mask, 1


class NeighbourCalls(Schedule):
    """Every agent calls one uniformly random neighbour and both ends of a call
    exchange (one uniform per agent, in agent order, as the compiled
    :func:`~fedbandit_env.protocols.kernels.neighbour_calls`); each distinct pair is one
    call.

    Examples:
        >>> from fedbandit_env.network import Network
        >>> mask, calls = NeighbourCalls().draw(Network.star(4), np.random.default_rng(0), 1)
        >>> mask.astype(int).tolist()[0], calls
        ([0, 1, 1, 1], 3)
    """

    name = "neighbour_calls"

    def draw(self, network: Network, rng: np.random.Generator, t: int) -> tuple[BoolArray, int]:
        """Each agent picks one neighbour uniformly; calls are symmetric."""
        n = network.n_agents
        picks = (rng.random(n) * network.degrees).astype(np.int64)
        mask = np.zeros((n, n), dtype=bool)
        mask[np.arange(n), network.neighbors[np.arange(n), picks]] = True
        mask |= mask.T
        return mask, int(np.triu(mask).sum())


class RandomMatching(Schedule):
    """A random maximal matching: the edges in a uniformly random order (one
    permutation draw), each kept when neither end is taken yet.

    Examples:
        >>> from fedbandit_env.network import Network
        >>> mask, calls = RandomMatching().draw(Network.complete(4), np.random.default_rng(1), 1)
        >>> calls, mask.sum(axis=1).tolist()
        (2, [1, 1, 1, 1])
    """

    name = "random_matching"

    def draw(self, network: Network, rng: np.random.Generator, t: int) -> tuple[BoolArray, int]:
        """Greedy matching over a random edge order."""
        n = network.n_agents
        mask = np.zeros((n, n), dtype=bool)
        free = np.ones(n, dtype=bool)
        calls = 0
        for e in rng.permutation(network.n_edges):
            i, j = network.edges[e]
            if free[i] and free[j]:
                free[i] = free[j] = False
                mask[i, j] = mask[j, i] = True
                calls += 1
        return mask, calls


class Periodic(Schedule):
    """Every pair of neighbours exchanges at the steps ``t`` with ``t % period ==
    offset % period``, nobody at the others (periodic averaging; no random draws).

    Args:
        period: Steps between two rounds of exchanges (``>= 1``; 1 is broadcast).
        offset: The first exchange's step modulo ``period``.

    Examples:
        >>> from fedbandit_env.network import Network
        >>> s, net = Periodic(3), Network.path(3)
        >>> [s.draw(net, np.random.default_rng(0), t)[1] for t in range(1, 7)]
        [0, 0, 2, 0, 0, 2]
    """

    name = "periodic"

    def __init__(self, period: int, offset: int = 0) -> None:
        self.period = check_int("period", period, 1)
        self.offset = check_int("offset", offset, 0)

    def draw(self, network: Network, rng: np.random.Generator, t: int) -> tuple[BoolArray, int]:
        """All edges at the scheduled steps, none otherwise."""
        if t % self.period == self.offset % self.period:
            return network.adjacency.copy(), network.n_edges
        return np.zeros((network.n_agents,) * 2, dtype=bool), 0

    def __repr__(self) -> str:
        return f"Periodic(period={self.period}, offset={self.offset})"


class UserSchedule(Schedule):
    """A user's function ``(network, rng, t) -> (N, N) bool mask`` as a schedule; the
    mask is made symmetric and checked to lie on the graph's edges.

    Examples:
        >>> from fedbandit_env.network import Network
        >>> first = UserSchedule(lambda net, rng, t: np.eye(3, k=1, dtype=bool))
        >>> first.draw(Network.path(3), np.random.default_rng(0), 1)[1]
        2
    """

    name = "user"

    def __init__(self, fn: Callable[[Network, np.random.Generator, int], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"a schedule must be callable, got {type(fn).__name__}")
        self.fn = fn

    def draw(self, network: Network, rng: np.random.Generator, t: int) -> tuple[BoolArray, int]:
        """Call the function; refuse a mask of the wrong shape or off the graph."""
        n = network.n_agents
        mask = np.asarray(self.fn(network, rng, t))
        if mask.shape != (n, n):
            raise ValueError(f"the schedule returned a mask of shape {mask.shape}, need {(n, n)}")
        mask = mask.astype(bool)
        mask = mask | mask.T
        if (mask & ~network.adjacency.astype(bool)).any():
            raise ValueError(
                f"the schedule's mask at step {t} pairs agents that are not neighbours"
            )
        return mask, int(np.triu(mask).sum())

    def __repr__(self) -> str:
        return f"UserSchedule({getattr(self.fn, '__name__', self.fn)!r})"


SCHEDULES: dict[str, type[Schedule]] = {
    s.name: s for s in (RandomEdge, NeighbourCalls, RandomMatching)
}
"""The schedules without arguments, by name (``Periodic(k)`` takes ``"periodic:k"``)."""


def make_schedule(schedule: str | Schedule | Callable[..., Any]) -> Schedule:
    """A :class:`Schedule` from a name (``"random_edge"``, ``"neighbour_calls"``,
    ``"random_matching"``, ``"periodic:k"``), a schedule, or a user function.

    Examples:
        >>> make_schedule("periodic:4"), make_schedule("random_edge")
        (Periodic(period=4, offset=0), RandomEdge())
    """
    if isinstance(schedule, Schedule):
        return schedule
    if isinstance(schedule, str):
        if schedule in SCHEDULES:
            return SCHEDULES[schedule]()
        head, _, arg = schedule.partition(":")
        if head == "periodic" and arg.isdigit():
            return Periodic(int(arg))
        names = [*sorted(SCHEDULES), "periodic:<k>"]
        raise ValueError(f"schedule must be one of {names} or a function, got {schedule!r}")
    if callable(schedule):
        return UserSchedule(schedule)
    raise TypeError(f"schedule must be a name, a Schedule or a function, got {schedule!r}")


__all__ = [
    "SCHEDULES",
    "NeighbourCalls",
    "Periodic",
    "RandomEdge",
    "RandomMatching",
    "Schedule",
    "UserSchedule",
    "make_schedule",
]
