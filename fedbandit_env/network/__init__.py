"""Communication graphs and the quantities the papers need from them."""

from fedbandit_env.network.graph import GRAPH_KINDS, Network, make_network

__all__ = ["GRAPH_KINDS", "Network", "make_network"]
