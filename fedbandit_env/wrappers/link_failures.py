"""Link failures: every edge of the graph goes down and comes back up, a two-state Markov
chain per edge, so the graph the messages travel on varies with time (issue 17).

Each step, before the messages of the step are seen, an up edge fails with probability
``fail`` and a down edge is repaired with probability ``repair`` (one uniform per edge,
in the network's edge order, from the wrapper's own stream); every edge starts up. A
message delivered from ``s`` to ``r`` over a down edge ``{s, r}`` is lost (its row of
``messages`` zeroed, ``mask`` and ``public_mask`` cleared); the cost in ``infos`` still
counts the attempt. The long-run share of down edges is ``fail / (fail + repair)``.

Only one-hop deliveries have an edge to fail: the wrapper refuses protocols whose
messages travel several hops (LOCAL with ``gamma > 1``, flooding, hybrid) and leaves
server messages alone. ``infos[agent]["links_down"]`` is the number of down edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import NetworkWrapper, check_probability, require_messages

ONE_HOP = ("broadcast", "random_edge_gossip", "neighbour_gossip")
"""Protocols whose every delivery crosses one edge."""

ONE_HOP_NAMES = ("local", "gamma_hops")
"""Names of :class:`~fedbandit_env.protocols.GammaHops` (``local`` is its former name),
one-hop when ``gamma = 1``."""


def is_one_hop(protocol: object) -> bool:
    """Whether every delivery of ``protocol`` crosses exactly one edge.

    True for the :data:`ONE_HOP` protocols and for
    :class:`~fedbandit_env.protocols.GammaHops` with ``gamma = 1``.

    Example:
        >>> from fedbandit_env.protocols import GammaHops
        >>> is_one_hop(GammaHops(gamma=1)), is_one_hop(GammaHops(gamma=2))
        (True, False)
    """
    name = getattr(protocol, "name", "")
    return name in ONE_HOP or (name in ONE_HOP_NAMES and getattr(protocol, "gamma", 0) == 1)


class LinkFailures(NetworkWrapper):
    """Edges fail with probability ``fail`` and recover with ``repair`` each step.

    Args:
        env: A parallel env with one-hop message delivery (``messages`` and ``mask``).
        fail: Probability that an up edge goes down at a step.
        repair: Probability that a down edge comes back up at a step.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3, message_dim=1)
        >>> env = LinkFailures(base, fail=1.0, repair=0.0)
        >>> _ = env.reset(seed=0)
        >>> talk = {a: {"arm": 0, "message": [1.0]} for a in env.agents}
        >>> obs, _, _, _, infos = env.step(talk)
        >>> int(obs["agent_0"]["mask"].sum()), infos["agent_0"]["links_down"]
        (0, 6)
    """

    STEP_INFO: ClassVar[Mapping[str, Any]] = {"links_down": 0}

    def __init__(
        self, env: ParallelEnv[AgentID, Observation, Action], fail: float, repair: float
    ) -> None:
        super().__init__(env)
        self.fail = check_probability("fail", fail)
        self.repair = check_probability("repair", repair)
        require_messages(env, "LinkFailures")
        base = env.unwrapped
        protocol = getattr(base, "protocol", None)
        name = getattr(protocol, "name", "")
        if not is_one_hop(protocol):
            raise ValueError(
                f"LinkFailures needs one-hop delivery ({', '.join(ONE_HOP)}, or local with "
                f"gamma = 1), got the {name!r} protocol"
            )
        network = base.network
        self._edges = np.asarray(network.edges, dtype=np.int64).reshape(-1, 2)
        self._index = {a: i for i, a in enumerate(env.possible_agents)}
        self._up = np.ones(len(self._edges), dtype=bool)
        self._down = np.zeros((len(env.possible_agents),) * 2, dtype=bool)

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Every edge up."""
        self._up[:] = True
        self._down[:] = False
        return obs

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Move every edge's chain one step, then lose what crossed a down edge."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        u = self._rng.random(len(self._edges))
        self._up = np.where(self._up, u >= self.fail, u < self.repair)
        self._down[:] = False
        down = self._edges[~self._up]
        self._down[down[:, 0], down[:, 1]] = True
        self._down[down[:, 1], down[:, 0]] = True
        n_down = len(down)
        out: dict[AgentID, Observation] = {}
        for agent, o in obs.items():
            cut = self._down[self._index[agent]]  # the senders behind a down edge
            if cut.any():
                mask = np.asarray(o["mask"])
                messages = np.array(o["messages"], dtype=np.float32)
                messages[cut] = 0.0
                o = {**o, "messages": messages, "mask": np.where(cut, 0, mask).astype(mask.dtype)}
                if "public_mask" in o:
                    pm = np.asarray(o["public_mask"])
                    o["public_mask"] = np.where(cut, 0, pm).astype(pm.dtype)
            out[agent] = o
            infos[agent] = {**infos[agent], "links_down": n_down}
        return out, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        return f"LinkFailures({self.env!r}, fail={self.fail}, repair={self.repair})"


__all__ = ["ONE_HOP", "LinkFailures", "is_one_hop"]
