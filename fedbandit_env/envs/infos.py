"""The envs' ``infos``: one schema at reset and at every step.

Every agent's info holds the keys of :data:`STEP_INFO` (and ``"instance"``, the id of
the drawn problem, where the episode drew one) from ``reset`` on: reset gives them
their values before any step (zero). Consumers that size their buffers from the reset
infos, as TorchRL's ``PettingZooWrapper`` does, then find a slot for every key a step
writes. Wrappers that add keys declare them the same way
(:attr:`~fedbandit_env.wrappers.base.ParallelWrapper.STEP_INFO`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedbandit_env.type_aliases import AgentID

STEP_INFO: dict[str, Any] = {
    "regret": 0.0,
    "cumulative_regret": 0.0,
    "peer_links": 0,
    "server_links": 0,
    "comm_cost": 0.0,
    "cumulative_comm_cost": 0.0,
}
"""The keys of every agent's step info, with their values at reset: the pseudo-regret of
its pull and its sum, the peer and server links used this step, their cost and its sum."""


def reset_infos(agents: Sequence[AgentID], instance: int | None) -> dict[AgentID, dict[str, Any]]:
    """Every agent's info at reset: :data:`STEP_INFO`, and ``instance`` where drawn.

    Examples:
        >>> reset_infos(["a"], 7)["a"]["instance"], reset_infos(["a"], None)["a"]["regret"]
        (7, 0.0)
    """
    extra = {} if instance is None else {"instance": instance}
    return {a: {**STEP_INFO, **extra} for a in agents}


def step_infos(
    agents: Sequence[AgentID],
    regret: list[float],
    cumulative: list[float],
    peer: int,
    server: int,
    cost: float,
    total: float,
    instance: int | None,
) -> dict[AgentID, dict[str, Any]]:
    """Every agent's info after a step (``regret``, ``cumulative``: one float an agent,
    in the order of ``agents``).

    Examples:
        >>> step_infos(["a"], [0.5], [1.5], 2, 0, 2.0, 3.0, None)["a"]["cumulative_regret"]
        1.5
    """
    infos = {
        a: {
            "regret": g,
            "cumulative_regret": c,
            "peer_links": peer,
            "server_links": server,
            "comm_cost": cost,
            "cumulative_comm_cost": total,
        }
        for a, g, c in zip(agents, regret, cumulative, strict=True)
    }
    if instance is not None:
        for info in infos.values():
            info["instance"] = instance
    return infos
