"""Communication graphs and the quantities the papers need from them."""

from fedbandit_env.network.graph import GRAPH_KINDS, GraphKind, Network, check_graph, make_network

__all__ = ["GRAPH_KINDS", "GraphKind", "Network", "check_graph", "make_network"]
