"""The plain baselines: local UCB1 (no communication), the pooled oracle, random.

``policies.py`` and ``oracle.py`` hold the per-agent policies, ``vector.py`` their vector
forms (what the registry makes), ``kernels.py`` their indices and compiled steps,
``fast.py`` their fast paths (the core's compiled rollout of the vector forms, no trial
loop of their own);
``baselines.registration`` registers them as ``local_ucb``, ``kl_ucb``, ``oracle_ucb`` and
``random``.

Examples:
    >>> from baselines.ucb import LocalUCB1
    >>> LocalUCB1(scale=0.5).scale
    0.5
"""

from baselines.ucb.oracle import OracleUCB
from baselines.ucb.policies import IndexPolicy, LocalKLUCB, LocalUCB1, RandomPolicy

__all__ = ["IndexPolicy", "LocalKLUCB", "LocalUCB1", "OracleUCB", "RandomPolicy"]
