"""Versioned entry point of the federated multi-armed bandit env (PettingZoo style).

Examples:
    >>> from fedbandit_env import federated_mab_v0
    >>> env = federated_mab_v0.parallel_env(n_agents=3, n_arms=4, horizon=10)
    >>> len(env.possible_agents), env.n_arms
    (3, 4)
    >>> aec = federated_mab_v0.env(n_agents=3, n_arms=4, horizon=10)
    >>> aec.possible_agents
    ['agent_0', 'agent_1', 'agent_2']
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from pettingzoo.utils.conversions import parallel_to_aec
from pettingzoo.utils.env import AECEnv

from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.network.graph import Network, make_network
from fedbandit_env.problems.mab import MABProblem, biased
from fedbandit_env.protocols import make_protocol
from fedbandit_env.protocols.base import Protocol

raw_env = FederatedMABEnv


def parallel_env(
    problem: MABProblem | None = None,
    network: Network | nx.Graph | str | None = None,
    protocol: Protocol | str | None = None,
    horizon: int = 1000,
    message_dim: int = 0,
    *,
    n_agents: int = 4,
    n_arms: int = 5,
    seed: int | None = 0,
    **kwargs: Any,
) -> FederatedMABEnv:
    """Make the parallel env; without ``problem``, a seeded biased instance (the default
    kind everywhere: ``Scenario``, ``fedbandit bench`` and ``fedbandit train``).

    Args:
        problem: The reward model; default ``biased(n_agents, n_arms, seed=seed)``
            (:func:`~fedbandit_env.problems.biased`).
        network: A :class:`Network`, a networkx graph, a graph kind name
            (``"ring"``, ``"erdos_renyi"``, ...) or ``None`` for the complete graph.
        protocol: A :class:`Protocol`, a protocol name (``"broadcast"``,
            ``"random_edge_gossip"``, ...: :data:`~fedbandit_env.protocols.PROTOCOLS`) or
            ``None`` for broadcast to neighbours.
        horizon: Steps per episode.
        message_dim: Message length per agent and step (0: no messages).
        n_agents: Agents of the default problem (ignored when ``problem`` is given).
        n_arms: Arms of the default problem (ignored when ``problem`` is given).
        seed: Seed of the default problem and of a random graph kind.
        **kwargs: Passed on to :class:`FederatedMABEnv` (``message_bounds``,
            ``render_mode``).


    Examples:
        >>> parallel_env(n_agents=2, n_arms=3, network="path").network.n_edges
        1
        >>> parallel_env(n_agents=3, protocol="random_edge_gossip", message_dim=2).protocol
        RandomEdgeGossip(public_dim=0)
    """
    if problem is None:
        problem = biased(n_agents, n_arms, seed=seed)
    if isinstance(network, str):
        network = make_network(network, problem.n_agents, seed=seed)
    if isinstance(protocol, str):
        protocol = make_protocol(protocol)
    return FederatedMABEnv(problem, network, protocol, horizon, message_dim, **kwargs)


def env(**kwargs: Any) -> AECEnv[Any, Any, Any]:
    """The same env through PettingZoo's AEC API (``parallel_to_aec``).

    Examples:
        >>> env(n_agents=2, horizon=3).possible_agents
        ['agent_0', 'agent_1']
    """
    return parallel_to_aec(parallel_env(**kwargs))


__all__ = ["env", "parallel_env", "raw_env"]
