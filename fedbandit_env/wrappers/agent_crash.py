"""Agent crashes: agents drop off the network and, in crash-recover, come back (issue 17).

Each step every agent that may crash (``agents``, default all) moves on a two-state
Markov chain: an up agent crashes with probability ``crash``, a crashed agent recovers
with probability ``recover`` (``recover = 0``: crash-stop, the agent never returns). One
uniform per such agent per step, in agent order, from the wrapper's own stream; every
agent starts up.

What a crash means here (one reading, chosen so the env stays consistent):

- **sends**: nothing a crashed agent sends is delivered: its row of every receiver's
  ``messages`` is zeroed, ``mask`` and ``public_mask`` cleared;
- **hears**: nothing is delivered to it (its ``messages``, ``mask``, ``public_mask``
  zeroed, and ``server``/``server_mask`` where a server talks);
- **pulls**: the agent's node is down, not its bandit: it keeps pulling the arm its
  policy chooses from its own rewards (a hospital whose link failed still treats
  patients), so it learns alone while crashed;
- **regret**: counted as every agent's (its pulls are real); ``infos[agent]["crashed"]``
  says whether it was down this step, ``"recovered"`` is True on the step it came back
  (a policy that models amnesia may restart itself then), ``"agents_down"`` counts the
  crashed agents.

The crash acts on the step's deliveries, so the cost in ``infos`` still counts the
links the protocol used. Only one-hop protocols (broadcast, the gossip protocols, LOCAL
with ``gamma = 1``, or the :class:`~fedbandit_env.wrappers.Gossip` wrapper over
broadcast) are accepted: a message relayed through a crashed agent, or a server's
aggregate that includes it, cannot be undone afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import (
    NetworkWrapper,
    agent_name,
    check_probability,
    require_messages,
)
from fedbandit_env.wrappers.link_failures import ONE_HOP, is_one_hop

_ZEROED = ("messages", "mask", "public_mask", "server", "server_mask")


class AgentCrash(NetworkWrapper):
    """Agents crash with probability ``crash`` and recover with ``recover`` each step.

    Args:
        env: A parallel env with one-hop message delivery.
        crash: Probability that an up agent crashes at a step.
        recover: Probability that a crashed agent comes back at a step (0: crash-stop).
        agents: The agents that may crash (names or indices); default all.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3, message_dim=1)
        >>> env = AgentCrash(base, crash=1.0, agents=["agent_0"])
        >>> _ = env.reset(seed=0)
        >>> obs, _, _, _, infos = env.step({a: {"arm": 0, "message": [1.0]} for a in env.agents})
        >>> obs["agent_1"]["mask"].tolist(), infos["agent_0"]["crashed"]
        ([0, 0, 1, 1], True)
    """

    vector_form = "fedbandit_env.vector.wrappers.agent_crash:VecAgentCrash"

    STEP_INFO: ClassVar[Mapping[str, Any]] = {
        "crashed": False,
        "recovered": False,
        "agents_down": 0,
    }

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        crash: float,
        recover: float = 0.0,
        agents: Sequence[AgentID | int] | None = None,
    ) -> None:
        super().__init__(env)
        self.crash = check_probability("crash", crash)
        self.recover = check_probability("recover", recover)
        require_messages(env, "AgentCrash")
        protocol = getattr(env.unwrapped, "protocol", None)
        name = getattr(protocol, "name", "")
        if not is_one_hop(protocol):
            raise ValueError(
                f"AgentCrash needs one-hop delivery ({', '.join(ONE_HOP)}, or local with "
                f"gamma = 1), got the {name!r} protocol"
            )
        names = list(env.possible_agents)
        chosen = names if agents is None else [agent_name(a, names) for a in agents]
        if not chosen:
            raise ValueError("agents must name at least one agent that may crash")
        self.crashing = sorted(set(chosen), key=names.index)
        self._may = np.array([a in self.crashing for a in names])
        self._index = {a: i for i, a in enumerate(names)}
        self._down = np.zeros(len(names), dtype=bool)

    @property
    def crashed(self) -> list[AgentID]:
        """The agents down after the last step."""
        return [a for a, i in self._index.items() if self._down[i]]

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Every agent up."""
        self._down[:] = False
        return obs

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Move every agent's chain, then cut the crashed agents off this step's messages."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        u = self._rng.random(int(self._may.sum()))
        was = self._down.copy()
        may = self._down[self._may]
        self._down[self._may] = np.where(may, u >= self.recover, u < self.crash)
        down = self._down
        out: dict[AgentID, Observation] = {}
        for agent, o in obs.items():
            i = self._index[agent]
            if down[i]:
                o = {**o, **{k: np.zeros_like(o[k]) for k in _ZEROED if k in o}}
            elif down.any():
                messages = np.array(o["messages"], dtype=np.float32)
                messages[down] = 0.0
                o = {**o, "messages": messages}
                for k in ("mask", "public_mask"):
                    if k in o:
                        m = np.asarray(o[k])
                        o[k] = np.where(down, 0, m).astype(m.dtype)
            out[agent] = o
            infos[agent] = {
                **infos[agent],
                "crashed": bool(down[i]),
                "recovered": bool(was[i] and not down[i]),
                "agents_down": int(down.sum()),
            }
        return out, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        return f"AgentCrash({self.env!r}, crash={self.crash}, recover={self.recover})"


__all__ = ["AgentCrash"]
