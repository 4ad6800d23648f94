"""The constructor checks every bandit env shares (one validation, one wording)."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from fedbandit_env.network.graph import Network
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.protocols.broadcast import Broadcast
from fedbandit_env.validation import check_int


@dataclass(frozen=True)
class Wiring:
    """The checked communication arguments of an env.

    Examples:
        >>> w = check_wiring(3, None, None, 100, 2, (-1.0, 1.0), (25, 1), None, ["ansi"])
        >>> w.network.n_edges, type(w.protocol).__name__, w.link_costs
        (3, 'Broadcast', (25.0, 1.0))
    """

    network: Network
    protocol: Protocol
    horizon: int
    message_dim: int
    message_bounds: tuple[float, float]
    link_costs: tuple[float, float]


def check_wiring(
    n_agents: int,
    network: Network | nx.Graph | None,
    protocol: Protocol | None,
    horizon: int,
    message_dim: int,
    message_bounds: tuple[float, float],
    link_costs: tuple[float, float],
    render_mode: str | None,
    render_modes: list[str],
) -> Wiring:
    """Check an env's network, protocol, horizon, messages, costs and render mode.

    Raises:
        ValueError, TypeError: Naming the argument, its value and what is allowed.
    """
    if n_agents < 2:
        raise ValueError(f"problem must have at least 2 agents for a federated env, got {n_agents}")
    if network is None:
        network = Network.complete(n_agents)
    elif isinstance(network, nx.Graph):
        network = Network(network, require_connected=False)
    elif not isinstance(network, Network):
        raise TypeError(
            f"network must be a Network, a networkx.Graph or None, got {type(network).__name__}"
        )
    if network.n_agents != n_agents:
        raise ValueError(
            f"network has {network.n_agents} nodes but problem has {n_agents} agents; they "
            "must agree"
        )
    protocol = Broadcast() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise TypeError(f"protocol must be a Protocol, got {type(protocol).__name__}")
    if message_dim:  # no messages, nothing to route: any graph will do
        protocol.check_network(network)
    horizon = check_int("horizon", horizon, 1)
    message_dim = check_int("message_dim", message_dim, 0)
    if protocol.public_dim > message_dim:
        raise ValueError(
            f"protocol public_dim={protocol.public_dim} exceeds message_dim={message_dim}"
        )
    c1, c2 = (float(c) for c in link_costs)
    if not (c1 >= 0 and c2 >= 0 and np.isfinite(c1) and np.isfinite(c2)):
        raise ValueError(f"link_costs must be two finite numbers >= 0, got {link_costs!r}")
    lo, hi = (float(b) for b in message_bounds)
    if not lo < hi:
        raise ValueError(f"message_bounds must satisfy low < high, got {message_bounds!r}")
    if render_mode is not None and render_mode not in render_modes:
        raise ValueError(f"render_mode must be None or one of {render_modes}, got {render_mode!r}")
    return Wiring(network, protocol, horizon, message_dim, (lo, hi), (c1, c2))


__all__ = ["Wiring", "check_wiring"]
