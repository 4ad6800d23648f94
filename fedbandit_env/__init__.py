"""fedbandit_env: federated bandit settings as PettingZoo parallel environments.

Problems (reward models), networks and protocols assemble into ``ParallelEnv``s;
wrappers add gossip, privacy and feature views; ``baselines`` holds reference policies;
the runner turns many seeded runs into regret tables and plots.

Example:
    >>> import pettingzoo
    >>> import fedbandit_env
    >>> env = pettingzoo.make("parallel", "fedbandit/federated_mab-v0", horizon=20)
    >>> env.metadata["name"]
    'federated_mab_v0'
"""

from __future__ import annotations

from pettingzoo import register

from fedbandit_env import federated_mab_v0
from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.network.graph import Network, make_network
from fedbandit_env.problems.mab import MABProblem, conflicting, homogeneous, zhu_synthetic
from fedbandit_env.protocols import Broadcast, Delivery, Protocol

__version__ = "0.1.0"

ENV_IDS: tuple[str, ...] = ("fedbandit/federated_mab-v0",)
"""Every env this package registers with PettingZoo (parallel and AEC)."""

register("parallel", "fedbandit/federated_mab-v0", entry_point=federated_mab_v0.parallel_env)
register("aec", "fedbandit/federated_mab-v0", entry_point=federated_mab_v0.env)

__all__ = [
    "ENV_IDS",
    "Broadcast",
    "Delivery",
    "FederatedMABEnv",
    "MABProblem",
    "Network",
    "Protocol",
    "conflicting",
    "federated_mab_v0",
    "homogeneous",
    "make_network",
    "zhu_synthetic",
]
