"""Message loss: each delivered peer message is dropped independently with probability
``p`` (:class:`MessageLoss`), or in bursts (:class:`GilbertElliottLoss`; issue 17).

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

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, StepResult
from fedbandit_env.wrappers.base import NetworkWrapper, check_probability, require_messages


class MessageLoss(NetworkWrapper):
    """Drop each delivered peer message with probability ``p``.

    Args:
        env: A parallel env whose observations hold ``messages`` and ``mask``.
        p: Loss probability in ``[0, 1]``.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = MessageLoss(federated_mab_v0.parallel_env(horizon=3, message_dim=2), p=1.0)
        >>> _ = env.reset(seed=0)
        >>> talk = {a: {"arm": 0, "message": [1.0, 2.0]} for a in env.agents}
        >>> obs, _, _, _, infos = env.step(talk)
        >>> int(obs["agent_0"]["mask"].sum()), infos["agent_0"]["messages_lost"]
        (0, 3)
    """

    vector_form = "fedbandit_env.vector.wrappers.message_loss:VecMessageLoss"

    STEP_INFO: ClassVar[Mapping[str, Any]] = {"messages_lost": 0, "messages_lost_total": 0}

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action], p: float) -> None:
        super().__init__(env)
        self.p = check_probability("p", p)
        require_messages(env, "MessageLoss")

    def loss_rates(self, receiver: int) -> FloatArray:
        """The probability that a message from each sender to ``receiver`` is lost now."""
        return np.full(len(self.possible_agents), self.p)

    def advance(self) -> None:
        """Move any state of the channel one step (none: losses are independent)."""

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step, then lose each delivered peer message with its link's loss rate."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self.advance()
        out: dict[AgentID, Observation] = {}
        lost: dict[AgentID, int] = {}
        for r, agent in enumerate(self.possible_agents):  # receivers in order, any dict order
            if agent not in obs:
                continue
            o = obs[agent]
            mask = np.asarray(o["mask"])
            public = o.get("public_mask")
            reached = mask.astype(bool)
            if public is not None:
                reached = reached | np.asarray(public).astype(bool)
            senders = np.flatnonzero(reached)
            drop = senders[self._rng.random(senders.size) < self.loss_rates(r)[senders]]
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


class GilbertElliottLoss(MessageLoss):
    """Bursty loss: every directed link is a Gilbert-Elliott channel.

    Each link ``s -> r`` is in a *good* or a *bad* state, a two-state Markov chain moved
    once a step before the step's messages are seen (good -> bad with probability
    ``to_bad``, bad -> good with ``to_good``; one uniform per ordered pair of distinct
    agents, row-major, from the wrapper's stream; every link starts good). A message on
    a link is lost with probability ``loss_good`` in the good state and ``loss_bad`` in
    the bad one. Losses come in bursts of mean length ``1 / to_good`` steps; the
    long-run loss rate is ``(to_good loss_good + to_bad loss_bad) / (to_bad + to_good)``
    (:attr:`mean_loss`). ``infos`` as :class:`MessageLoss`, and ``"links_bad"``: links
    in the bad state.

    Args:
        env: A parallel env whose observations hold ``messages`` and ``mask``.
        to_bad: Probability that a good link turns bad at a step.
        to_good: Probability that a bad link recovers at a step.
        loss_bad: Loss probability in the bad state (default 1).
        loss_good: Loss probability in the good state (default 0).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3, message_dim=1)
        >>> env = GilbertElliottLoss(base, to_bad=0.1, to_good=0.4)
        >>> env.mean_loss
        0.2
    """

    STEP_INFO: ClassVar[Mapping[str, Any]] = {**MessageLoss.STEP_INFO, "links_bad": 0}

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        to_bad: float,
        to_good: float,
        loss_bad: float = 1.0,
        loss_good: float = 0.0,
    ) -> None:
        super().__init__(env, check_probability("loss_good", loss_good))
        self.to_bad = check_probability("to_bad", to_bad)
        self.to_good = check_probability("to_good", to_good)
        self.loss_bad = check_probability("loss_bad", loss_bad)
        self.loss_good = self.p
        if self.to_bad + self.to_good == 0:
            raise ValueError("to_bad and to_good cannot both be 0 (the chain never moves)")
        n = len(env.possible_agents)
        self._bad = np.zeros((n, n), dtype=bool)
        self._off = ~np.eye(n, dtype=bool)

    @property
    def mean_loss(self) -> float:
        """The long-run share of messages lost."""
        bad = self.to_bad / (self.to_bad + self.to_good)
        return round(bad * self.loss_bad + (1 - bad) * self.loss_good, 12)

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Every link good."""
        self._bad[:] = False
        return obs

    def advance(self) -> None:
        """Move every link's chain one step."""
        u = self._rng.random(int(self._off.sum()))
        bad = self._bad[self._off]
        self._bad[self._off] = np.where(bad, u >= self.to_good, u < self.to_bad)

    def loss_rates(self, receiver: int) -> FloatArray:
        """``loss_bad`` on the receiver's bad links, ``loss_good`` on the others."""
        return np.where(self._bad[receiver], self.loss_bad, self.loss_good)

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """As :class:`MessageLoss`, on the links' current states."""
        obs, rewards, terms, truncs, infos = super().step(actions)
        bad = int(self._bad.sum())
        infos = {a: {**i, "links_bad": bad} for a, i in infos.items()}
        return obs, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        return (
            f"GilbertElliottLoss({self.env!r}, to_bad={self.to_bad}, to_good={self.to_good}, "
            f"loss_bad={self.loss_bad}, loss_good={self.loss_good})"
        )


__all__ = ["GilbertElliottLoss", "MessageLoss"]
