"""Checking and unpacking the joint action of a bandit env (shared by its envs).

An agent's action is its arm (an ``int`` in ``[0, M)``, or a one-element integer
array), or, in an env that carries messages, ``{"arm": int, "message": (D,) floats}``.
:class:`ActionParser` turns the dict of live agents' actions into an arm array and a
message matrix, raising an error that names the agent and what is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedbandit_env.type_aliases import Action, AgentID, FloatArray, IntArray

_ACTION_KEYS = frozenset({"arm", "message"})


class ActionParser:
    """Checks one step's actions and returns ``(arms (N,), messages (N, D))``.

    Args:
        possible_agents: Every agent, in index order.
        n_arms: Arms ``M`` (the choices of one step).
        message_dim: Message length ``D`` (0: actions are bare arms).
        message_bounds: ``(low, high)`` of every message entry.

    Examples:
        >>> parse = ActionParser(["a", "b"], n_arms=3, message_dim=0).parse
        >>> arms, messages = parse({"a": 2, "b": 0}, ["a", "b"], {"a", "b"})
        >>> arms.tolist(), messages.shape
        ([2, 0], (2, 0))
        >>> parse({"a": 3, "b": 0}, ["a", "b"], {"a", "b"})
        Traceback (most recent call last):
        ...
        ValueError: arm of a must lie in [0, 3), got 3
    """

    def __init__(
        self,
        possible_agents: Sequence[AgentID],
        n_arms: int,
        message_dim: int,
        message_bounds: tuple[float, float] = (-np.inf, np.inf),
    ) -> None:
        self.possible_agents = list(possible_agents)
        self.n_arms = n_arms
        self.message_dim = message_dim
        self.message_bounds = message_bounds
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._no_messages = np.zeros((len(self.possible_agents), 0))
        self.forgers: set[AgentID] = set()
        """Agents whose messages are an adversary's (:meth:`admit_forgers`)."""

    def admit_forgers(self, agents: Sequence[AgentID]) -> None:
        """Let ``agents``' messages through as the wire carries them: ``(D,)`` float32
        values, NaN, infinities and float32 overflow included, unchecked for finiteness
        and bounds. A Byzantine wrapper models an attacker, whom no check at the sender
        stops; every other agent's malformed message stays a bug and raises.

        Examples:
            >>> parse = ActionParser(["a", "b"], n_arms=2, message_dim=1)
            >>> parse.admit_forgers(["b"])
            >>> acts = {"a": {"arm": 0, "message": [1.0]}, "b": {"arm": 1, "message": [1e300]}}
            >>> parse.parse(acts, ["a", "b"], {"a", "b"})[1][:, 0].tolist()
            [1.0, inf]
        """
        unknown = [a for a in agents if a not in self._index]
        if unknown:
            raise ValueError(f"unknown agents {unknown}; the env has {self.possible_agents}")
        self.forgers.update(agents)

    def parse(
        self, actions: dict[AgentID, Action], agents: list[AgentID], live: set[AgentID]
    ) -> tuple[IntArray, FloatArray]:
        """The arms and messages of ``actions``, which must hold exactly the ``live``
        agents (``agents``: the same, in order)."""
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict agent -> action, got {type(actions).__name__}")
        if actions.keys() != live:
            missing = [a for a in agents if a not in actions]
            unknown = [a for a in actions if a not in live]
            raise ValueError(
                f"actions must have exactly one entry per live agent; missing {missing}, "
                f"unexpected {unknown}"
            )
        if not self.message_dim:
            values = list(actions.values())
            m = self.n_arms
            if (
                list(actions) == agents
                and set(map(type, values)) == {int}
                and min(values) >= 0
                and max(values) < m
            ):  # the common case: plain ints in agent order, checked by builtins
                return np.array(values, dtype=np.int64), self._no_messages
            arms = np.array([self.check_arm(a, actions[a]) for a in self.possible_agents])
            return arms, self._no_messages
        n, k = len(self.possible_agents), len(actions)
        arms = np.empty(n, dtype=np.int64)
        messages = np.zeros((n, self.message_dim), dtype=np.float64)
        for agent, action in actions.items():
            if not isinstance(action, dict) or action.keys() != _ACTION_KEYS:
                raise TypeError(
                    f"action of {agent} must be a dict with keys 'arm' and 'message' "
                    f"(message_dim={self.message_dim}), got {action!r}"
                )
        # the common case in one NumPy call each: integer arms in range, (D,) messages of
        # finite floats within the bounds; anything else is checked agent by agent below,
        # which raises the error that names the agent
        values = list(actions.values())
        picked = [action["arm"] for action in values]
        integers = all(t is int or issubclass(t, np.integer) for t in set(map(type, picked)))
        try:
            sent = np.asarray([action["message"] for action in values], np.float64)
        except (TypeError, ValueError):
            sent = np.zeros(0)
        lo, hi = self.message_bounds
        if (
            integers  # never a bool (its type is bool, not int)
            and (k == 0 or (min(picked) >= 0 and max(picked) < self.n_arms))
            and sent.shape == (k, self.message_dim)
            and (k == 0 or self._finite_within(sent, lo, hi))
        ):
            if self.forgers:  # a forger's message as the wire carries it (1e300: inf)
                with np.errstate(over="ignore"):
                    for r, agent in enumerate(actions):
                        if agent in self.forgers:
                            sent[r] = sent[r].astype(np.float32)
            if list(actions) == self.possible_agents:  # every agent, in order: no scatter
                return np.array(picked, dtype=np.int64), sent
            rows = np.fromiter(map(self._index.__getitem__, actions), np.int64, k)
            arms[rows], messages[rows] = picked, sent
            return arms, messages
        for agent, action in actions.items():
            i = self._index[agent]
            messages[i] = self.check_message(agent, action["message"])
            arms[i] = self.check_arm(agent, action["arm"])
        return arms, messages

    @staticmethod
    def _finite_within(sent: FloatArray, lo: float, hi: float) -> bool:
        """Every entry finite and in ``[lo, hi]``, in two reductions (a NaN propagates
        to both and fails every comparison)."""
        low, high = sent.min(), sent.max()
        return bool(lo <= low and high <= hi and -np.inf < low and high < np.inf)

    def check_arm(self, agent: AgentID, arm: Any) -> int:
        """``arm`` as an ``int`` in ``[0, M)``, or a ``TypeError``/``ValueError``."""
        value = arm
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.reshape(()).item() if value.dtype.kind in "iu" else value
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            raise TypeError(
                f"arm of {agent} must be an int in [0, {self.n_arms}), "
                f"got {type(arm).__name__} {arm!r}"
            )
        if not 0 <= value < self.n_arms:
            raise ValueError(f"arm of {agent} must lie in [0, {self.n_arms}), got {value}")
        return int(value)

    def check_message(self, agent: AgentID, message: Any) -> FloatArray:
        """``message`` as ``(D,)`` finite floats within the bounds, or an error (a
        forger's: as the wire carries it, float32, whatever its values)."""
        try:
            msg = np.asarray(message, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"message of {agent} must be an array of floats, got {message!r}"
            ) from err
        if msg.shape != (self.message_dim,):
            raise ValueError(
                f"message of {agent} must have shape ({self.message_dim},), got {msg.shape}"
            )
        if agent in self.forgers:
            with np.errstate(over="ignore"):
                return msg.astype(np.float32).astype(np.float64)
        lo, hi = self.message_bounds
        if not np.all(np.isfinite(msg)) or msg.min() < lo or msg.max() > hi:
            raise ValueError(
                f"message of {agent} must be finite and within [{lo}, {hi}], got {msg!r}"
            )
        return msg


__all__ = ["ActionParser"]
