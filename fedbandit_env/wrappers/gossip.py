"""Gossip as a wrapper: over an env that broadcasts to neighbours, only the pairs a
:class:`~fedbandit_env.protocols.schedules.Schedule` draws hear each other (issue 17).

The base env delivers every message to every neighbour (the
:class:`~fedbandit_env.protocols.Broadcast` protocol); at each step the wrapper draws
the partner mask from its schedule (random edge, every agent calls a neighbour, random
matching, periodic, or a user function) and keeps, for each receiver, only its
partners' messages. With ``public_dim = P > 0`` the first ``P`` entries of every
message still reach all neighbours (Zhu et al.'s public counts): the observation gains
``public_mask`` (what the base env delivered) and a non-partner's row keeps its prefix,
exactly the layout of the gossip protocols. The schedule is the same object the
protocols draw from (:class:`~fedbandit_env.protocols.RandomEdgeGossip` is
``Gossip(broadcast env, "random_edge")`` with the protocol's generator; the replay test
in tests/wrappers/test_gossip_wrapper.py runs Gossip_UCB both ways, bit for bit).

Cost: the wrapper rewrites ``peer_links`` to the calls made (plus ``|E|`` for the
public prefix, as the protocols count), ``comm_cost`` and ``cumulative_comm_cost``
accordingly. Draws come from the wrapper's own stream. ``infos[agent]["gossip_calls"]``
is the number of calls of the step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.protocols.schedules import Schedule, make_schedule
from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.validation import check_int
from fedbandit_env.wrappers.base import NetworkWrapper, require_messages
from fedbandit_env.wrappers.link_failures import ONE_HOP_NAMES


class Gossip(NetworkWrapper):
    """Keep only the messages between the pairs ``schedule`` picks each step.

    Args:
        env: A parallel env whose base delivers by broadcast to neighbours.
        schedule: ``"random_edge"`` (Zhu et al.), ``"neighbour_calls"``,
            ``"random_matching"``, ``"periodic:k"``, a
            :class:`~fedbandit_env.protocols.schedules.Schedule`, or a function
            ``(network, rng, t) -> (N, N) bool mask``.
        public_dim: Length of the message prefix that still reaches every neighbour.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = Gossip(federated_mab_v0.parallel_env(horizon=3, message_dim=2), "random_edge")
        >>> _ = env.reset(seed=0)
        >>> talk = {a: {"arm": 0, "message": [1.0, 2.0]} for a in env.agents}
        >>> obs, _, _, _, infos = env.step(talk)
        >>> sum(int(o["mask"].sum()) for o in obs.values()), infos["agent_0"]["peer_links"]
        (2, 1)
    """

    STEP_INFO: ClassVar[Mapping[str, Any]] = {"gossip_calls": 0}

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        schedule: str | Schedule | Callable[..., Any] = "random_edge",
        public_dim: int = 0,
    ) -> None:
        super().__init__(env)
        self.schedule = make_schedule(schedule)
        require_messages(env, "Gossip")
        base = env.unwrapped
        protocol = getattr(base, "protocol", None)
        name = getattr(protocol, "name", "")
        if not (
            name == "broadcast" or (name in ONE_HOP_NAMES and getattr(protocol, "gamma", 0) == 1)
        ):
            raise ValueError(
                f"Gossip needs an env that broadcasts to neighbours (the 'broadcast' protocol), "
                f"got the {name!r} protocol"
            )
        self.public_dim = check_int("public_dim", public_dim, 0)
        dim = int(base.message_dim)
        if self.public_dim > dim:
            raise ValueError(f"public_dim must be <= message_dim = {dim}, got {public_dim}")
        self._network = base.network
        self._index = {a: i for i, a in enumerate(env.possible_agents)}
        self._t = 0
        self._cum_cost = 0.0
        self._spaces: dict[AgentID, spaces.Space[Any]] = {}
        for agent in env.possible_agents:
            space = env.observation_space(agent)
            assert isinstance(space, spaces.Dict)
            if self.public_dim:
                space = spaces.Dict(
                    {**space.spaces, "public_mask": spaces.MultiBinary(len(env.possible_agents))}
                )
            self._spaces[agent] = space

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The env's space, with ``public_mask`` when a prefix is public."""
        return self._spaces[agent]

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Step count and cost 0; an empty ``public_mask`` when a prefix is public."""
        self._t = 0
        self._cum_cost = 0.0
        if self.public_dim:
            n = len(self.possible_agents)
            obs = {a: {**o, "public_mask": np.zeros(n, dtype=np.int8)} for a, o in obs.items()}
        return obs

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step the env, then keep the scheduled partners' messages (and the prefix)."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self._t += 1
        partners, calls = self.schedule.draw(self._network, self._rng, self._t)
        out: dict[AgentID, Observation] = {}
        p = self.public_dim
        for agent, o in obs.items():
            row = partners[self._index[agent]]
            mask = np.asarray(o["mask"])
            kept = (mask.astype(bool) & row).astype(mask.dtype)
            messages = np.array(o["messages"], dtype=np.float32)
            cut = ~row
            if p:
                messages[cut, p:] = 0.0
                o = {**o, "messages": messages, "mask": kept, "public_mask": mask.astype(np.int8)}
            else:
                messages[cut] = 0.0
                o = {**o, "messages": messages, "mask": kept}
            out[agent] = o
        links = calls + (self._network.n_edges if p else 0)
        c1, c2 = self.env.unwrapped.link_costs
        first: dict[str, Any] = next(iter(infos.values()), {})
        server = first.get("server_links", 0)
        cost = c1 * server + c2 * links
        self._cum_cost += cost
        for agent in out:
            infos[agent] = {
                **infos[agent],
                "peer_links": links,
                "comm_cost": cost,
                "cumulative_comm_cost": self._cum_cost,
                "gossip_calls": calls,
            }
        return out, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        return f"Gossip({self.env!r}, schedule={self.schedule!r}, public_dim={self.public_dim})"


__all__ = ["Gossip"]
