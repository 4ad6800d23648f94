"""Versioned entry point of the federated linear contextual bandit env (PettingZoo style).

Examples:
    >>> from fedbandit_env import federated_linear_v0
    >>> env = federated_linear_v0.parallel_env(n_agents=3, dim=2, horizon=10)
    >>> len(env.possible_agents), env.n_arms, env.dim
    (3, 4, 2)
    >>> federated_linear_v0.env(n_agents=2, dim=2, horizon=5).possible_agents
    ['agent_0', 'agent_1']
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from pettingzoo.utils.conversions import parallel_to_aec
from pettingzoo.utils.env import AECEnv

from fedbandit_env.envs.federated_linear import FederatedLinearEnv, LinearSampler
from fedbandit_env.network.graph import Network, make_network
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
from fedbandit_env.protocols import make_protocol
from fedbandit_env.protocols.base import Protocol

raw_env = FederatedLinearEnv


def parallel_env(
    problem: LinearProblem | LinearSampler | None = None,
    network: Network | nx.Graph | str | None = None,
    protocol: Protocol | str | None = None,
    horizon: int = 1000,
    message_dim: int = 0,
    *,
    n_agents: int = 4,
    dim: int = 10,
    set_size: int | None = None,
    seed: int | None = 0,
    **kwargs: Any,
) -> FederatedLinearEnv:
    """Make the parallel env; without ``problem``, Dubey & Pentland's synthetic sets
    (:func:`~fedbandit_env.problems.linear.dubey_synthetic`, seeded by ``seed``).

    Args:
        problem: A problem or a sampler ``rng -> LinearProblem``.
        network: A :class:`Network`, a networkx graph, a graph kind name or ``None``.
        protocol: A :class:`Protocol`, a protocol name (``"broadcast"``,
            ``"random_edge_gossip"``, ...: :data:`~fedbandit_env.protocols.PROTOCOLS`) or
            ``None`` for broadcast to neighbours.
        horizon: Steps per episode.
        message_dim: Message length per agent and step (0: no messages).
        n_agents: Agents of the default problem.
        dim: Dimension ``d`` of the default problem.
        set_size: ``K`` of the default problem (default ``d^2``).
        seed: Seed of the default problem and of a random graph kind.
        **kwargs: Passed on to :class:`FederatedLinearEnv`.

    Examples:
        >>> parallel_env(n_agents=2, dim=3, set_size=5).n_arms
        5
    """
    if problem is None:
        problem = dubey_synthetic(n_agents, dim, set_size, seed=seed)
    if isinstance(network, str):
        n = problem.n_agents if isinstance(problem, LinearProblem) else n_agents
        network = make_network(network, n, seed=seed)
    if isinstance(protocol, str):
        protocol = make_protocol(protocol)
    return FederatedLinearEnv(problem, network, protocol, horizon, message_dim, **kwargs)


def env(**kwargs: Any) -> AECEnv[Any, Any, Any]:
    """The same env through PettingZoo's AEC API (``parallel_to_aec``).

    Examples:
        >>> env(n_agents=2, dim=2, horizon=3).possible_agents
        ['agent_0', 'agent_1']
    """
    return parallel_to_aec(parallel_env(**kwargs))


__all__ = ["env", "parallel_env", "raw_env"]
