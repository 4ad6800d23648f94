"""Reference policies and plain baselines, using only ``fedbandit_env``'s public API.

Example:
    >>> from baselines import LocalUCB1, OracleUCB, make_team
    >>> make_team("oracle_ucb").name
    'oracle_ucb'
"""

from baselines.elimination import CDPMAB, DDPMAB, HDPMAB, EliminationPolicy
from baselines.gossip_ucb import FedUCB, GossipUCB
from baselines.index_policies import (
    IndexPolicy,
    LocalUCB1,
    RandomPolicy,
    argmax_random_tie,
)
from baselines.oracle import OracleUCB
from baselines.registry import POLICIES, make_team

__all__ = [
    "CDPMAB",
    "DDPMAB",
    "HDPMAB",
    "POLICIES",
    "EliminationPolicy",
    "FedUCB",
    "GossipUCB",
    "IndexPolicy",
    "LocalUCB1",
    "OracleUCB",
    "RandomPolicy",
    "argmax_random_tie",
    "make_team",
]
