"""Consensus bandits for homogeneous agents that talk to every neighbour every step:
DDUCB (Martinez-Rubio, Kanade and Rebeschini 2019), accelerated and plain, and coop-UCB2
(Landgren, Srivastava and Leonard 2016).

``policies.py`` holds the policies (and the readings chosen against the authors' code),
``kernels.py`` their mathematics (the per-agent helpers and the vector step
``consensus_step``), ``vector.py`` the vector policies, ``fast.py`` their fast paths (the
core's compiled rollout with Broadcast's messages, no trial loop of their own);
``baselines.registration`` registers them as ``dducb``, ``dducb_plain`` and
``coop_ucb2``.

Examples:
    >>> from baselines.consensus import DDUCB
    >>> DDUCB().requirements(n_agents=3, n_arms=2).message_dim
    4
"""

from baselines.consensus.policies import DDUCB, CoopUCB2

__all__ = ["DDUCB", "CoopUCB2"]
