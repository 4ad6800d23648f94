"""Dubey & Pentland's federated linear contextual bandits: local LinUCB, centralized
FedUCB as published (adaptive synchronisation, PRIVATIZER) and the corrected private
variant (a fixed schedule, exact Gaussian-DP calibration), with the non-private
ablations.

``policies.py`` holds the policies, ``decentralized.py`` decentralized FedUCB,
``oracle.py`` the pooled oracle, ``kernels.py`` their compiled mathematics, ``vector.py``
LinUCB, the pooled oracle and centralized FedUCB as vector policies, ``dec_vector.py``
decentralized FedUCB as one (the fast paths the linear core rolls out), ``fast.py`` the
registry's fast entry points,
``batched.py`` and ``naive.py`` NumPy yardsticks of speed; ``baselines.registration``
registers them.

Examples:
    >>> from baselines.linear import linear_env
    >>> from fedbandit_env.problems.linear import dubey_synthetic
    >>> env = linear_env(dubey_synthetic(3, dim=2, seed=0), horizon=10, federated=True)
    >>> env.message_dim, env.protocol.name
    (10, 'sync')
"""

from __future__ import annotations

from typing import Any

from baselines.linear.decentralized import DecFedLinUCB
from baselines.linear.oracle import PooledLinUCB
from baselines.linear.policies import FedLinUCB, LinUCB, linear_message_dim
from fedbandit_env.envs.federated_linear import FederatedLinearEnv
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.protocols.sync import Synchronize


def linear_env(
    problem: LinearProblem, horizon: int, federated: bool = True, **kwargs: Any
) -> FederatedLinearEnv:
    """The env a linear policy runs on: with ``federated``, messages of
    :func:`linear_message_dim` over :class:`~fedbandit_env.protocols.Synchronize`.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> linear_env(dubey_synthetic(2, dim=3, seed=0), 5, federated=False).message_dim
        0
    """
    if not federated:
        return FederatedLinearEnv(problem, horizon=horizon, **kwargs)
    dim = linear_message_dim(problem.dim)
    return FederatedLinearEnv(
        problem, protocol=Synchronize(), horizon=horizon, message_dim=dim, **kwargs
    )


def private_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """The private variants' constructor arguments from the setting options: their
    ``epsilon`` (``--epsilon``) and, when not the default, ``noise``
    (``--privacy-noise``).

    Examples:
        >>> private_options({"epsilon": 2.0, "rounds": 3}, None)
        {'epsilon': 2.0}
        >>> private_options({"epsilon": 2.0, "privacy_noise": "secure"}, None)
        {'epsilon': 2.0, 'noise': 'secure'}
    """
    kw: dict[str, Any] = {"epsilon": options.get("epsilon", 1.0)}
    if options.get("privacy_noise", "seeded") != "seeded":
        kw["noise"] = options["privacy_noise"]
    return kw


__all__ = [
    "DecFedLinUCB",
    "FedLinUCB",
    "LinUCB",
    "PooledLinUCB",
    "linear_env",
    "linear_message_dim",
    "private_options",
]
