"""Arms as the only action: a message-carrying env for libraries that expect
``Discrete`` actions (such as SuperSuit, CleanRL-style scripts or TorchRL's PettingZoo
wrapper). Checked with PettingZoo's own API tests and with SuperSuit's PettingZoo -> SB3
vec env training PPO (``tests/rl/test_rl.py``); TorchRL is not checked here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import ParallelWrapper

MessageFn = Callable[[AgentID, Observation], np.ndarray]
"""``(agent, its latest observation) -> message``: what a learner sends when the env
talks."""


def arm_space(env: ParallelEnv[Any, Any, Any], agent: AgentID) -> tuple[spaces.Discrete, int]:
    """The learner's ``Discrete`` arm space and the env's message length (0: none).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> arm_space(federated_mab_v0.parallel_env(n_arms=3, message_dim=2), "agent_0")
        (Discrete(3), 2)
    """
    space = env.action_space(agent)
    if isinstance(space, spaces.Dict):
        arm, message = space["arm"], space["message"]
        if not isinstance(arm, spaces.Discrete):
            raise TypeError(f"the arm of {agent} must be Discrete, got {arm!r}")
        return arm, int(np.prod(message.shape or (0,)))
    if not isinstance(space, spaces.Discrete):
        raise TypeError(f"expected a Discrete arm space for {agent}, got {space!r}")
    return space, 0


def pack(
    arm: Any,
    agent: AgentID,
    observation: Observation,
    message_dim: int,
    message_fn: MessageFn | None,
) -> Action:
    """The env action for a learner's arm: the arm itself, or ``{"arm", "message"}``.

    Examples:
        >>> pack(np.int64(2), "agent_0", {}, 0, None)
        2
        >>> pack(1, "agent_0", {}, 2, None)["message"].tolist()
        [0.0, 0.0]
    """
    a = int(arm) if isinstance(arm, np.integer) else arm  # the env checks the rest
    if not message_dim:
        return a
    if message_fn is None:
        message = np.zeros(message_dim, dtype=np.float32)
    else:
        message = np.asarray(message_fn(agent, observation), dtype=np.float32)
    return {"arm": a, "message": message}


class ArmActions(ParallelWrapper):
    """Each agent's action space becomes ``Discrete(M)`` (its arm); the message the env
    expects is filled in by ``message_fn`` from the agent's latest observation (zeros
    without one).

    The message is the wrapper's, not the learner's choice, so a learner under this
    wrapper decides only where to pull; ``LearnerStack.message_fn`` (an agent's own
    means, or its private means under ``PrivateRewards``) is the usual choice. On an env
    without messages the wrapper changes nothing.

    Args:
        env: A parallel env whose actions are ``{"arm", "message"}`` (or bare arms).
        message_fn: ``(agent, observation) -> message`` of the env's message length.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(n_agents=2, n_arms=3, horizon=3, message_dim=3)
        >>> env = ArmActions(base, lambda agent, obs: np.full(3, 0.5, np.float32))
        >>> env.action_space("agent_0")
        Discrete(3)
        >>> _ = env.reset(seed=0)
        >>> obs, *_ = env.step({"agent_0": 2, "agent_1": 0})
        >>> obs["agent_1"]["messages"][0].tolist()  # agent_0's message reached agent_1
        [0.5, 0.5, 0.5]
    """

    def __init__(
        self, env: ParallelEnv[AgentID, Observation, Action], message_fn: MessageFn | None = None
    ) -> None:
        super().__init__(env)
        if message_fn is not None and not callable(message_fn):
            raise TypeError(f"message_fn must be callable, got {message_fn!r}")
        self.message_fn = message_fn
        self._arms: dict[AgentID, spaces.Discrete] = {}
        self._dims: dict[AgentID, int] = {}
        for agent in env.possible_agents:
            self._arms[agent], self._dims[agent] = arm_space(env, agent)
        self._last: dict[AgentID, Observation] = {}

    def action_space(self, agent: AgentID) -> spaces.Space[Any]:
        """``Discrete(M)``."""
        return self._arms[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset; remember each agent's observation for its next message."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._last = dict(obs)
        return obs, infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Pack each arm with its agent's message, then step."""
        packed: dict[AgentID, Action] = {}
        for agent, arm in actions.items():
            if agent not in self._dims:
                raise ValueError(f"unknown agent {agent!r}")
            last = self._last[agent]
            packed[agent] = pack(arm, agent, last, self._dims[agent], self.message_fn)
        obs, rewards, terms, truncs, infos = self.env.step(packed)
        self._last.update(obs)
        return obs, rewards, terms, truncs, infos


__all__ = ["ArmActions", "MessageFn", "arm_space", "pack"]
