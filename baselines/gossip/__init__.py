"""Zhu et al.'s Gossip_UCB and Fed_UCB (gossip over a graph; Fed_UCB under the tree
mechanism of ``PrivateRewards``).

``policies.py`` holds the per-agent policies, ``kernels.py`` their mathematics (and
``gossip_step``, every agent of a batch of envs), ``vector.py`` the vector form,
``fast.py`` the batched trial loop, ``robust.py`` our Byzantine-robust variant
(PettingZoo path only); ``baselines.registration`` registers them as ``gossip_ucb``,
``fed_ucb`` and ``robust_gossip_ucb``.

Examples:
    >>> from baselines.gossip import FedUCB
    >>> FedUCB(epsilon=2.0).requirements(n_agents=3, n_arms=4).epsilon
    2.0
"""

from typing import Any

from baselines.gossip.policies import FedUCB, GossipUCB, default_alpha_1
from baselines.gossip.robust import RobustGossipUCB


def fed_ucb_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """Fed_UCB's constructor arguments from the setting options: its ``epsilon``
    (``inf``: the plain tree-free index, no privacy).

    Examples:
        >>> fed_ucb_options({"epsilon": 2.0, "rounds": 3}, None)
        {'epsilon': 2.0}
    """
    return {"epsilon": options.get("epsilon", 1.0)}


__all__ = ["FedUCB", "GossipUCB", "RobustGossipUCB", "default_alpha_1", "fed_ucb_options"]
