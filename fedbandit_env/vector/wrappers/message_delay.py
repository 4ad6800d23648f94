"""``MessageDelay`` in vector form, for a fixed delay: every delivered peer message
arrives ``delay`` steps late."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.vector.wrappers.kernels import count_in_flight

_KEYS = ("messages", "mask", "public_mask")


class VecMessageDelay(VecWrapper):
    """:class:`~fedbandit_env.wrappers.MessageDelay` with a fixed ``delay`` for ``B``
    envs: what the protocol delivered at step ``t`` (each sender's row, the masks) is
    shown at step ``t + delay``; the first ``delay`` observations of an episode show no
    messages and what is in flight at the end is never seen. No random draws (the
    PettingZoo wrapper's random delays, ``max_delay``, have no vector form yet).
    ``infos`` gains ``messages_in_flight`` ``(B, N)`` (held for each receiver) and
    ``messages_superseded`` ``(B, N)`` (always 0 at a fixed delay).

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = VecMessageDelay(FederatedMABVecEnv(conflicting(3, 3, seed=0), horizon=4,
        ...                        message_dim=1, num_envs=2), delay=1)
        >>> _ = venv.reset(seed=0)
        >>> first = venv.step(np.zeros((2, 3), int), np.ones((2, 3, 1)))[0]
        >>> second = venv.step(np.zeros((2, 3), int), np.ones((2, 3, 1)))[0]
        >>> int(first["mask"].sum()), int(second["mask"].sum())
        (0, 12)
    """

    def __init__(self, env: VectorEnv, delay: int) -> None:
        super().__init__(env)
        if isinstance(delay, bool) or not isinstance(delay, int | np.integer) or delay < 0:
            raise ValueError(f"delay must be an int >= 0, got {delay!r}")
        if not self.message_dim:
            raise ValueError("VecMessageDelay needs an env that carries messages")
        self.delay = int(delay)
        self._slots: list[dict[str, np.ndarray]] = []
        self._held = np.zeros((self.num_envs, self.n_agents), dtype=np.int64)
        self._t = 0

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        """Reset the envs; nothing in flight."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._restart(obs)
        return obs, self._with_counts(infos)

    def _restart(self, obs: dict[str, np.ndarray]) -> None:
        empty = {k: np.zeros(np.shape(obs[k]), np.asarray(obs[k]).dtype) for k in _KEYS if k in obs}
        self._slots = [{k: v.copy() for k, v in empty.items()} for _ in range(self.delay + 1)]
        self._held[:] = 0
        self._t = 0

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step; file what the protocol delivered under its arrival step; show what is due."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        if resets:
            self._restart(obs)
            return obs, rewards, terms, truncs, self._with_counts(infos)
        if not self.delay:
            return obs, rewards, terms, truncs, self._with_counts(infos)
        self._t += 1
        size = self.delay + 1
        # the due slot is refilled at the next step (its arrival slot then), so it is
        # handed out as it is and never written again
        self._slots[(self._t + self.delay) % size] = {
            k: np.array(obs[k]) for k in _KEYS if k in obs
        }
        due = self._slots[self._t % size]
        count_in_flight(np.asarray(obs["mask"]), due["mask"], self._held)
        return {**obs, **due}, rewards, terms, truncs, self._with_counts(infos)

    def _with_counts(self, infos: dict[str, Any]) -> dict[str, Any]:
        none = np.zeros((self.num_envs, self.n_agents), dtype=np.int64)
        return {**infos, "messages_in_flight": self._held.copy(), "messages_superseded": none}


__all__ = ["VecMessageDelay"]
