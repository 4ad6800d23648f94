"""Policies by id, as ``fedbandit bench --policies`` names them.

Example:
    >>> sorted(POLICIES)
    ['cdp_mab', 'ddp_mab', 'fed_ucb', 'gossip_ucb', 'hdp_mab', 'local_ucb', 'oracle_ucb', 'random']
    >>> make_team("local_ucb").name
    'local_ucb'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from baselines.elimination import CDPMAB, DDPMAB, HDPMAB
from baselines.gossip_ucb import FedUCB, GossipUCB
from baselines.index_policies import LocalUCB1, RandomPolicy
from baselines.oracle import OracleUCB
from fedbandit_env.policies import IndependentTeam, Team

POLICIES: dict[str, Callable[..., Team]] = {
    "local_ucb": lambda **kw: IndependentTeam(lambda: LocalUCB1(**kw), name="local_ucb"),
    "oracle_ucb": lambda **kw: OracleUCB(**kw),
    "random": lambda **kw: IndependentTeam(RandomPolicy, name="random"),
    "gossip_ucb": lambda **kw: IndependentTeam(lambda: GossipUCB(**kw), name="gossip_ucb"),
    "fed_ucb": lambda epsilon=1.0, **kw: IndependentTeam(
        lambda: FedUCB(epsilon, **kw), name="fed_ucb"
    ),
    "cdp_mab": lambda **kw: IndependentTeam(lambda: CDPMAB(**kw), name="cdp_mab"),
    "ddp_mab": lambda **kw: IndependentTeam(lambda: DDPMAB(**kw), name="ddp_mab"),
    "hdp_mab": lambda **kw: IndependentTeam(lambda: HDPMAB(**kw), name="hdp_mab"),
}
"""Team factories by id; keyword arguments go to the policy's constructor."""


def make_team(policy_id: str, **kwargs: Any) -> Team:
    """Build the team of a policy id (see :data:`POLICIES`).

    Raises:
        ValueError: For an unknown id, listing the known ones.


    Example:
        >>> make_team("fed_ucb", epsilon=2.0).requirements(3, 4).epsilon
        2.0
    """
    if policy_id not in POLICIES:
        raise ValueError(f"unknown policy id {policy_id!r}; known ids: {sorted(POLICIES)}")
    return POLICIES[policy_id](**kwargs)
