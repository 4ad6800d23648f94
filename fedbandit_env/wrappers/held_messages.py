"""Keep the latest message heard from each neighbour: memory for memoryless learners."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, StepResult
from fedbandit_env.wrappers.base import (
    BanditSpaces,
    ParallelWrapper,
    agent_rows,
    refuse_twice,
    step_of,
)


class HeldMessages(ParallelWrapper):
    """Observation gains ``held`` (the latest message heard from each slot), ``heard``
    (whether that slot was ever heard) and ``age`` (steps since it was last heard).

    Under random-edge gossip an agent hears one neighbour a step: ``messages`` holds that
    one message and zeros elsewhere, so a memoryless policy (an MLP, the arms network)
    sees one neighbour at a time and cannot combine them, while Gossip_UCB carries its
    estimates forward. The wrapper keeps what the agent has already heard, as
    :class:`~fedbandit_env.wrappers.LocalStatistics` keeps its own pulls: it adds memory,
    no information (``messages`` and ``mask`` pass unchanged). An agent never heard from
    has ``held`` zeros, ``heard`` 0 and the age of the episode.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.protocols import RandomEdgeGossip
        >>> base = federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=5,
        ...                                      message_dim=1, protocol=RandomEdgeGossip())
        >>> env = HeldMessages(base)
        >>> obs, _ = env.reset(seed=0)
        >>> for v in (1.0, 2.0):
        ...     obs, *_ = env.step({a: {"arm": 0, "message": [v]} for a in env.agents})
        >>> o = obs["agent_0"]
        >>> bool((o["held"][o["heard"] == 1] > 0).all()), bool(o["age"].max() <= 2)
        (True, True)
    """

    vector_form = "fedbandit_env.vector.wrappers.held_messages:VecHeldMessages"

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action]) -> None:
        super().__init__(env)
        refuse_twice(env, HeldMessages)
        self._spaces: dict[AgentID, spaces.Dict] = {}
        for agent in env.possible_agents:
            info = BanditSpaces.of(env, agent, "HeldMessages")
            messages = info.base.spaces.get("messages")
            if not isinstance(messages, spaces.Box) or len(messages.shape) != 2:
                raise ValueError(
                    "HeldMessages needs an env that carries messages (a 'messages' box of "
                    f"one row per slot); {agent}'s observation has {sorted(info.base.spaces)}"
                )
            slots, width = messages.shape
            self._spaces[agent] = spaces.Dict(
                {
                    **info.base.spaces,
                    "held": spaces.Box(messages.low, messages.high, dtype=np.float32),
                    "heard": spaces.MultiBinary(slots),
                    "age": spaces.Box(0.0, info.horizon, shape=(slots,), dtype=np.float32),
                }
            )
        n = len(env.possible_agents)
        self._held = np.zeros((n, slots, width), dtype=np.float32)
        self._heard = np.zeros((n, slots), dtype=np.int8)
        self._last: FloatArray = np.zeros((n, slots))
        self._horizon = info.horizon
        self._row = {a: i for i, a in enumerate(env.possible_agents)}

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The wrapped space plus ``held``, ``heard`` and ``age``."""
        return self._spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env and forget every message."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._held[:] = 0.0
        self._heard[:] = 0
        self._last[:] = 0.0
        return self._augment(obs), infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step, then keep every message that arrived (``mask``) as its slot's latest
        (one NumPy update for all agents)."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        if obs:
            rows = self._rows(obs)
            arrived = np.stack([np.asarray(o["mask"]) for o in obs.values()]).astype(bool)
            sent = np.stack([np.asarray(o["messages"], dtype=np.float32) for o in obs.values()])
            self._held[rows] = np.where(arrived[..., None], sent, self._held[rows])
            self._heard[rows] |= arrived.astype(np.int8)
            self._last[rows] = np.where(
                arrived, step_of(next(iter(obs.values()))), self._last[rows]
            )
        return self._augment(obs), rewards, terms, truncs, infos

    def _rows(self, obs: dict[AgentID, Observation]) -> np.ndarray:
        return agent_rows(self._row, obs, len(obs))

    def _augment(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        if not obs:
            return {}
        rows = self._rows(obs)
        ages = np.minimum(
            step_of(next(iter(obs.values()))) - self._last[rows], self._horizon
        ).astype(np.float32)
        held, heard = list(self._held[rows]), list(self._heard[rows])  # fresh copies
        return {
            agent: {**o, "held": held[j], "heard": heard[j], "age": ages[j]}
            for j, (agent, o) in enumerate(obs.items())
        }


__all__ = ["HeldMessages"]
