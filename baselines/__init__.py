"""Reference policies and plain baselines, using only ``fedbandit_env``'s public API.

One folder per algorithm family, each with its policies (``policies.py``), their
compiled mathematics (``kernels.py``) and their batched trial loop (``fast.py``):

- :mod:`baselines.ucb`: local UCB1, the pooled oracle, random;
- :mod:`baselines.gossip`: Zhu et al.'s Gossip_UCB and Fed_UCB;
- :mod:`baselines.elimination`: Li & Song's CDP-, DDP- and HDP-MAB;
- :mod:`baselines.common`: what every family shares.

:mod:`baselines.registration` puts them in the core registry
(:mod:`fedbandit_env.registry`), which is how the runner and the ``fedbandit`` command
find them. Importing ``baselines`` is cheap: a class is imported when first named.

Examples:
    >>> from baselines import LocalUCB1, make_team
    >>> make_team("oracle_ucb").name
    'oracle_ucb'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from baselines.registration import register_policies
from fedbandit_env.registry import make as make_team

if TYPE_CHECKING:
    from baselines.common import argmax_random_tie
    from baselines.elimination import CDPMAB, DDPMAB, HDPMAB, EliminationPolicy
    from baselines.gossip import FedUCB, GossipUCB
    from baselines.ucb import IndexPolicy, LocalUCB1, OracleUCB, RandomPolicy

_LAZY = {
    "CDPMAB": "baselines.elimination",
    "DDPMAB": "baselines.elimination",
    "HDPMAB": "baselines.elimination",
    "EliminationPolicy": "baselines.elimination",
    "FedUCB": "baselines.gossip",
    "GossipUCB": "baselines.gossip",
    "IndexPolicy": "baselines.ucb",
    "LocalUCB1": "baselines.ucb",
    "OracleUCB": "baselines.ucb",
    "RandomPolicy": "baselines.ucb",
    "argmax_random_tie": "baselines.common",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'baselines' has no attribute {name!r}")


register_policies()  # also without the installed entry point (a bare source checkout)

__all__ = [
    "CDPMAB",
    "DDPMAB",
    "HDPMAB",
    "EliminationPolicy",
    "FedUCB",
    "GossipUCB",
    "IndexPolicy",
    "LocalUCB1",
    "OracleUCB",
    "RandomPolicy",
    "argmax_random_tie",
    "make_team",
    "register_policies",
]
