"""Message delay: every delivered peer message arrives ``delay`` steps late (issue 17).

The wrapper holds what the protocol delivered (``messages``, ``mask`` and, where the
protocol has one, ``public_mask``) and hands it to the receiver ``delay`` steps later,
in order; the first ``delay`` observations of an episode show no messages, and what is
still in flight when the episode ends is never seen. Server messages are not delayed
(a round protocol's bookkeeping, a later fault model). A fixed delay needs no random
draws; ``infos[agent]["messages_in_flight"]`` counts the agent's held messages.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import ParallelWrapper, require_messages

_KEYS = ("messages", "mask", "public_mask")


class MessageDelay(ParallelWrapper):
    """Deliver every peer message ``delay`` steps after the protocol did.

    Args:
        env: A parallel env whose observations hold ``messages`` and ``mask``.
        delay: Steps of delay (``>= 0``; 0 is the unwrapped env).

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = MessageDelay(federated_mab_v0.parallel_env(horizon=4, message_dim=1), 2)
        >>> _ = env.reset(seed=0)
        >>> talk = {a: {"arm": 0, "message": [1.0]} for a in env.agents}
        >>> [int(env.step(talk)[0]["agent_0"]["mask"].sum()) for _ in range(3)]
        [0, 0, 3]
    """

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action], delay: int) -> None:
        super().__init__(env)
        if isinstance(delay, bool) or not isinstance(delay, int | np.integer) or delay < 0:
            raise ValueError(f"delay must be an int >= 0, got {delay!r}")
        require_messages(env, "MessageDelay")
        self.delay = int(delay)
        self._queue: deque[dict[AgentID, dict[str, Any]]] = deque()
        self._empty: dict[AgentID, dict[str, Any]] = {}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env; nothing in flight."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._empty = {a: {k: np.zeros_like(o[k]) for k in _KEYS if k in o} for a, o in obs.items()}
        self._queue = deque()
        return obs, infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step; show what the protocol delivered ``delay`` steps ago."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        if not self.delay:
            return obs, rewards, terms, truncs, infos
        self._queue.append({a: {k: o[k] for k in _KEYS if k in o} for a, o in obs.items()})
        due = self._queue.popleft() if len(self._queue) > self.delay else self._empty
        out = {a: {**o, **due.get(a, self._empty[a])} for a, o in obs.items()}
        for agent in out:
            held = sum(int(np.asarray(q[agent]["mask"]).sum()) for q in self._queue if agent in q)
            infos[agent] = {**infos[agent], "messages_in_flight": held}
        return out, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        return f"MessageDelay({self.env!r}, delay={self.delay})"


__all__ = ["MessageDelay"]
