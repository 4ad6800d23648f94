"""fedbandit_env: federated bandit settings as PettingZoo parallel environments.

Problems (reward models), networks and protocols assemble into ``ParallelEnv``s;
wrappers add gossip, privacy and feature views; policies are found by id in the
registry (:mod:`fedbandit_env.registry`), where the reference algorithms of
``baselines`` register themselves; the runner turns many seeded runs into regret
tables and plots.

Importing the package is cheap: the envs are registered with PettingZoo by name, and a
class below is imported when it is first used.

Examples:
    >>> import pettingzoo
    >>> import fedbandit_env
    >>> env = pettingzoo.make("parallel", "fedbandit/federated_mab-v0", horizon=20)
    >>> env.metadata["name"]
    'federated_mab_v0'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import gymnasium
from pettingzoo import register

if TYPE_CHECKING:
    from fedbandit_env import federated_linear_v0, federated_mab_v0
    from fedbandit_env.envs.federated_linear import FederatedLinearEnv
    from fedbandit_env.envs.federated_mab import FederatedMABEnv
    from fedbandit_env.network.graph import Network, make_network
    from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
    from fedbandit_env.problems.mab import MABProblem, conflicting, homogeneous, zhu_synthetic
    from fedbandit_env.protocols import Broadcast, Delivery, Protocol

__version__ = "0.1.0"

ENV_IDS: tuple[str, ...] = ("fedbandit/federated_mab-v0", "fedbandit/federated_linear-v0")
"""Every env this package registers with PettingZoo (parallel and AEC); the single-agent
view is registered with Gymnasium as ``fedbandit/FederatedMABSingle-v0``."""

register("parallel", "fedbandit/federated_mab-v0", "fedbandit_env.federated_mab_v0:parallel_env")
register("aec", "fedbandit/federated_mab-v0", "fedbandit_env.federated_mab_v0:env")
register(
    "parallel", "fedbandit/federated_linear-v0", "fedbandit_env.federated_linear_v0:parallel_env"
)
register("aec", "fedbandit/federated_linear-v0", "fedbandit_env.federated_linear_v0:env")
# the single-agent view (one learner among registered policies), for Gymnasium users
gymnasium.register(
    "fedbandit/FederatedMABSingle-v0", "fedbandit_env.rl.single_agent:make_single_agent"
)

_LAZY = {
    "Broadcast": "fedbandit_env.protocols",
    "Delivery": "fedbandit_env.protocols",
    "Protocol": "fedbandit_env.protocols",
    "FederatedMABEnv": "fedbandit_env.envs.federated_mab",
    "FederatedLinearEnv": "fedbandit_env.envs.federated_linear",
    "LinearProblem": "fedbandit_env.problems.linear",
    "dubey_synthetic": "fedbandit_env.problems.linear",
    "MABProblem": "fedbandit_env.problems.mab",
    "conflicting": "fedbandit_env.problems.mab",
    "homogeneous": "fedbandit_env.problems.mab",
    "zhu_synthetic": "fedbandit_env.problems.mab",
    "Network": "fedbandit_env.network.graph",
    "make_network": "fedbandit_env.network.graph",
}


def __getattr__(name: str) -> Any:
    if name in ("federated_mab_v0", "federated_linear_v0"):
        return importlib.import_module(f"fedbandit_env.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fedbandit_env' has no attribute {name!r}")


__all__ = [
    "ENV_IDS",
    "Broadcast",
    "Delivery",
    "FederatedLinearEnv",
    "FederatedMABEnv",
    "LinearProblem",
    "MABProblem",
    "Network",
    "Protocol",
    "conflicting",
    "dubey_synthetic",
    "federated_linear_v0",
    "federated_mab_v0",
    "homogeneous",
    "make_network",
    "zhu_synthetic",
]
