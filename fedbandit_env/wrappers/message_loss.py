"""Message loss: each delivered peer message is dropped independently with probability
``p`` (issue 17's first fault model).

The wrapper sits on a message-carrying env (``messages`` and ``mask`` in the
observations) and removes what the network lost *after* the protocol routed it: a lost
message still used its link (the cost in ``infos`` is unchanged), its row of
``messages`` is zeroed and its ``mask`` entry cleared; where the protocol delivers a
public prefix (``public_mask``, Zhu et al.'s counts) the same transmission carries it,
so it is lost with the message. Server messages (``server``) are not touched: a lost
upload or broadcast would break a round protocol's bookkeeping, a later fault model.

Draws: one uniform per delivered message, receivers in order and, within a receiver,
senders in order, from the wrapper's own stream (``ParallelWrapper.stream``), so the
losses do not depend on the policies' or the rewards' draws and ``p = 0`` replays the
unwrapped run exactly. ``infos[agent]["messages_lost"]`` counts what that agent lost this
step, ``"messages_lost_total"`` the whole network's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import ParallelWrapper, check_probability, require_messages


class MessageLoss(ParallelWrapper):
    """Drop each delivered peer message with probability ``p``.

    Args:
        env: A parallel env whose observations hold ``messages`` and ``mask``.
        p: Loss probability in ``[0, 1]``.

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = MessageLoss(federated_mab_v0.parallel_env(horizon=3, message_dim=2), p=1.0)
        >>> _ = env.reset(seed=0)
        >>> talk = {a: {"arm": 0, "message": [1.0, 2.0]} for a in env.agents}
        >>> obs, _, _, _, infos = env.step(talk)
        >>> int(obs["agent_0"]["mask"].sum()), infos["agent_0"]["messages_lost"]
        (0, 3)
    """

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action], p: float) -> None:
        super().__init__(env)
        self.p = check_probability("p", p)
        require_messages(env, "MessageLoss")
        self._rng = np.random.default_rng()

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env; with a ``seed``, restart the losses from this wrapper's stream."""
        obs, infos = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = self.stream(seed)
        return obs, infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step, then lose each delivered peer message with probability ``p``."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        out: dict[AgentID, Observation] = {}
        lost: dict[AgentID, int] = {}
        for agent in self.possible_agents:  # receivers in order, whatever the dict order
            if agent not in obs:
                continue
            o = obs[agent]
            mask = np.asarray(o["mask"])
            public = o.get("public_mask")
            reached = mask.astype(bool)
            if public is not None:
                reached = reached | np.asarray(public).astype(bool)
            senders = np.flatnonzero(reached)
            drop = senders[self._rng.random(senders.size) < self.p]
            lost[agent] = int(drop.size)
            if drop.size:
                messages = np.array(o["messages"], dtype=np.float32)
                messages[drop] = 0.0
                new_mask = mask.copy()
                new_mask[drop] = 0
                o = {**o, "messages": messages, "mask": new_mask}
                if public is not None:
                    new_public = np.array(public).copy()
                    new_public[drop] = 0
                    o["public_mask"] = new_public
            out[agent] = o
        total = sum(lost.values())
        for agent in out:
            infos[agent] = {
                **infos[agent],
                "messages_lost": lost[agent],
                "messages_lost_total": total,
            }
        return out, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        return f"MessageLoss({self.env!r}, p={self.p})"


__all__ = ["MessageLoss"]
