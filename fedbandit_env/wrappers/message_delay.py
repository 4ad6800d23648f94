"""Message delay: every delivered peer message arrives late, by a fixed or a random
number of steps, in order or not (issue 17).

The wrapper holds what the protocol delivered (``messages``, ``mask`` and, where the
protocol has one, ``public_mask``) and hands each message to its receiver when it is
due. ``delay = d`` alone: every message is exactly ``d`` steps late (no random draws).
``max_delay = d2 > d``: each delivered message draws its own delay uniformly from
``d .. d2`` (one ``integers`` draw per message, receivers then senders in order, from
the wrapper's own stream); ``in_order=True`` (the default, a FIFO link) holds a
message back until the previous one on its link has arrived, ``in_order=False`` lets it
overtake. A receiver's inbox has one slot per sender, so when two messages of one link
arrive at the same step the later-sent one is seen and the other counted in
``infos[agent]["messages_superseded"]``. The first ``d`` observations of an episode
show no messages; what is still in flight at the end is never seen. Server messages
are not delayed (a round protocol's bookkeeping). ``infos[agent]["messages_in_flight"]``
counts the agent's held messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import NetworkWrapper, require_messages

_KEYS = ("messages", "mask", "public_mask")


def _steps(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


class MessageDelay(NetworkWrapper):
    """Deliver every peer message ``delay`` (to ``max_delay``) steps after the protocol did.

    Args:
        env: A parallel env whose observations hold ``messages`` and ``mask``.
        delay: Steps of delay (``>= 0``; 0 alone is the unwrapped env), or the shortest
            delay when ``max_delay`` is given.
        max_delay: The longest delay (default ``delay``: fixed).
        in_order: Whether a link delivers in the order messages were sent.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = MessageDelay(federated_mab_v0.parallel_env(horizon=4, message_dim=1), 2)
        >>> _ = env.reset(seed=0)
        >>> talk = {a: {"arm": 0, "message": [1.0]} for a in env.agents}
        >>> [int(env.step(talk)[0]["agent_0"]["mask"].sum()) for _ in range(3)]
        [0, 0, 3]
    """

    vector_form = "fedbandit_env.vector.wrappers.message_delay:VecMessageDelay"

    STEP_INFO: ClassVar[Mapping[str, Any]] = {"messages_in_flight": 0, "messages_superseded": 0}

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        delay: int,
        max_delay: int | None = None,
        in_order: bool = True,
    ) -> None:
        super().__init__(env)
        self.delay = _steps("delay", delay)
        self.max_delay = self.delay if max_delay is None else _steps("max_delay", max_delay)
        if self.max_delay < self.delay:
            raise ValueError(f"max_delay must be >= delay = {delay}, got {max_delay!r}")
        if not isinstance(in_order, bool):
            raise TypeError(f"in_order must be a bool, got {in_order!r}")
        self.in_order = in_order
        require_messages(env, "MessageDelay")
        self._index = {a: i for i, a in enumerate(env.possible_agents)}
        n = len(env.possible_agents)
        self._slots: list[dict[AgentID, dict[str, np.ndarray]]] = []
        self._due = np.zeros((n, n), dtype=np.int64)  # last arrival step on each link
        self._held: dict[AgentID, int] = {}
        self._t = 0

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Nothing in flight."""
        empty = {a: {k: np.zeros_like(o[k]) for k in _KEYS if k in o} for a, o in obs.items()}
        self._slots = [
            {a: {k: v.copy() for k, v in e.items()} for a, e in empty.items()}
            for _ in range(self.max_delay + 1)
        ]
        self._due[:] = 0
        self._held = dict.fromkeys(obs, 0)
        self._t = 0
        return obs

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step; file what the protocol delivered under its arrival step; show what is due."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        if not self.max_delay:
            return obs, rewards, terms, truncs, infos
        self._t += 1
        t, size = self._t, self.max_delay + 1
        superseded = dict.fromkeys(obs, 0)
        if self.max_delay == self.delay:  # fixed: the slot of t + delay is free, file all
            self._slots[(t + self.delay) % size] = {
                a: {k: np.array(o[k]) for k in _KEYS if k in o} for a, o in obs.items()
            }
            for agent, o in obs.items():
                self._held[agent] += int(np.count_nonzero(o["mask"]))
            return self._deliver(obs, rewards, terms, truncs, infos, superseded)
        for agent in self.possible_agents:  # receivers in order, whatever the dict order
            if agent not in obs:
                continue
            o, r = obs[agent], self._index[agent]
            reached = np.asarray(o["mask"]).astype(bool)
            if "public_mask" in o:
                reached = reached | np.asarray(o["public_mask"]).astype(bool)
            senders = np.flatnonzero(reached)
            if self.max_delay == self.delay:
                arrive = np.full(senders.size, t + self.delay)
            else:
                arrive = t + self._rng.integers(self.delay, self.max_delay + 1, senders.size)
            if self.in_order:
                arrive = np.maximum(arrive, self._due[r, senders])
                self._due[r, senders] = arrive
            for s, when in zip(senders.tolist(), arrive.tolist(), strict=True):
                slot = self._slots[when % size][agent]
                busy = slot["mask"][s] or ("public_mask" in slot and slot["public_mask"][s])
                superseded[agent] += int(bool(busy))
                self._held[agent] += int(bool(o["mask"][s])) - int(bool(slot["mask"][s]))
                for k in slot:
                    slot[k][s] = o[k][s]
        return self._deliver(obs, rewards, terms, truncs, infos, superseded)

    def _deliver(
        self,
        obs: dict[AgentID, Observation],
        rewards: dict[AgentID, float],
        terms: dict[AgentID, bool],
        truncs: dict[AgentID, bool],
        infos: dict[AgentID, dict[str, Any]],
        superseded: dict[AgentID, int],
    ) -> StepResult:
        """Show what is due at this step and free its slot."""
        here = self._t % (self.max_delay + 1)
        due = self._slots[here]
        out = {a: {**o, **due[a]} for a, o in obs.items()}
        self._slots[here] = {a: {k: np.zeros_like(v) for k, v in e.items()} for a, e in due.items()}
        for agent in out:
            self._held[agent] -= int(np.count_nonzero(due[agent]["mask"]))
            infos[agent] = {
                **infos[agent],
                "messages_in_flight": self._held[agent],
                "messages_superseded": superseded[agent],
            }
        return out, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        extra = "" if self.max_delay == self.delay else f", max_delay={self.max_delay}"
        order = "" if self.in_order else ", in_order=False"
        return f"MessageDelay({self.env!r}, delay={self.delay}{extra}{order})"


__all__ = ["MessageDelay"]
