"""``HeldMessages`` in vector form: each receiver keeps the latest message heard from
each sender."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.vector.wrappers.kernels import hold_arrived


class VecHeldMessages(VecWrapper):
    """Observations gain ``held`` ``(B, N, N, D)`` (receiver ``r``'s latest message from
    each sender), ``heard`` ``(B, N, N)`` and ``age`` ``(B, N, N)``, as
    :class:`~fedbandit_env.wrappers.HeldMessages` adds them to each agent's observation
    (the same update: a message that arrived replaces its slot; an agent never heard
    from has zeros, ``heard`` 0 and the age of the episode). ``held`` is per receiver by
    nature (receivers hear senders at different steps), so it is the one entry of
    ``O(B N^2 D)``.

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.protocols import RandomEdgeGossip
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = VecHeldMessages(FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=5,
        ...     protocol=RandomEdgeGossip(), message_dim=1, num_envs=2))
        >>> _ = venv.reset(seed=0)
        >>> obs = venv.step(np.zeros((2, 3), int), np.ones((2, 3, 1)))[0]
        >>> obs["held"].shape, int(obs["heard"][0].sum())
        ((2, 3, 3, 1), 2)
    """

    ANY_DEVICE = True

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        single = env.single_observation_space
        if not isinstance(single, spaces.Dict) or "messages" not in single.spaces:
            raise ValueError("VecHeldMessages needs an env that carries messages")
        messages = single["messages"]
        assert isinstance(messages, spaces.Box)
        n, d, b = self.n_agents, self.message_dim, self.num_envs
        low = np.broadcast_to(messages.low, (n, n, d))
        high = np.broadcast_to(messages.high, (n, n, d))
        self.single_observation_space = spaces.Dict(
            {
                **single.spaces,
                "held": spaces.Box(low, high, dtype=np.float32),
                "heard": spaces.MultiBinary((n, n)),
                "age": spaces.Box(0.0, float(self.horizon), (n, n), np.float32),
            }
        )
        self.observation_space = batch_space(self.single_observation_space, b)
        self._clear()

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the envs and forget every message."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._clear()
        return self._augment(obs), infos

    def _clear(self) -> None:
        be, b, n, d = self.backend, self.num_envs, self.n_agents, self.message_dim
        self._held = be.zeros((b, n, n, d), be.float32)
        self._heard = be.zeros((b, n, n), be.int8)
        # the step each slot was last heard: whole numbers, exact in float32 below 2**24
        # (half the memory a step reads and writes on NumPy; the same ages)
        exact32 = be.is_numpy and self.horizon < 2**24
        self._last = be.zeros((b, n, n), be.float32 if exact32 else be.float64)

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step, then keep every message that arrived as its slot's latest."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        if resets:
            self._clear()
        elif self.backend.is_numpy:  # the same update compiled, with the age
            b, n, d = self.num_envs, self.n_agents, self.message_dim
            held, heard = np.empty((b, n, n, d), np.float32), np.empty((b, n, n), np.int8)
            last, age = np.empty((b, n, n), self._last.dtype), np.empty((b, n, n), np.float32)
            rows = np.ascontiguousarray(obs["messages"], dtype=np.float32)
            mask = np.asarray(obs["mask"])
            if mask.strides[0] == 0:  # one graph for every env: its first env's, once
                mask = mask[:1]
            hold_arrived(np.ascontiguousarray(mask), rows, self._held, self._heard, self._last,
                         float(self.t), float(self.horizon), held, heard, last, age)  # fmt: skip
            self._held, self._heard, self._last = held, heard, last
            return {**obs, "held": held, "heard": heard, "age": age}, rewards, terms, truncs, infos
        else:  # a whole message arrived where mask: its sender's row, whatever the receiver
            xp = self.backend.xp
            arrived = xp.astype(obs["mask"], self.backend.boolean)
            rows = xp.astype(obs["messages"], self.backend.float32)[:, None, :, :]
            self._held = xp.where(arrived[..., None], rows, self._held)
            self._heard = xp.where(arrived, xp.ones_like(self._heard), self._heard)
            self._last = xp.where(arrived, xp.full_like(self._last, float(self.t)), self._last)
        return self._augment(obs), rewards, terms, truncs, infos

    def _augment(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # every update makes new arrays (and _clear new zeros): the ones handed out stay
        xp, be = self.backend.xp, self.backend
        age = xp.astype(xp.minimum(float(self.t) - self._last, float(self.horizon)), be.float32)
        return {**obs, "held": self._held, "heard": self._heard, "age": age}


__all__ = ["VecHeldMessages"]
