"""Named bundles for the compiled trial loops: a loop takes a few of these (numba passes
NamedTuples of arrays, numbers and generators as they are) instead of 24-32 positional
arguments, so a swapped argument is a named field, not a silent mix-up.

Every family's loop takes the problem, the network, the streams and the recording as
bundled here, and its own parameters as a NamedTuple of its own (``GossipParams``,
...). Bundles are defined at module level so numba's disk cache recognises their types
across runs. A loop unpacks them once, at its top (``mu, noise, sigma, gaps =
problem``): locals cost nothing per step.

Examples:
    >>> from fedbandit_env.scenario.trial import TrialSetup
    >>> from fedbandit_env.scenario.scenario import Scenario
    >>> st = TrialSetup.build(Scenario(n_agents=3, n_arms=2, horizon=10), np.array([10]),
    ...                       False, {})
    >>> problem_arrays(st).mu.shape, problem_arrays(st).noise
    ((3, 2), 0)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


class ProblemArrays(NamedTuple):
    """The reward model: local means ``(N, M)``, the noise code and scale, global gaps."""

    mu: FloatArray
    noise: int
    sigma: float
    gaps: FloatArray


class NetworkArrays(NamedTuple):
    """The graph and its delivery rule: the protocol's code, whether a public prefix
    reaches every neighbour, the edge list, neighbour table, degrees, adjacency, and the
    cost of a peer link."""

    protocol: int
    public: bool
    edges: IntArray
    neighbors: IntArray
    degrees: IntArray
    adjacency: Any
    peer_cost: float


class Streams(NamedTuple):
    """The trial's generators: rewards, protocol, one wrapper stream (from the stack
    plan: ``PrivateRewards``' noise, ``MessageLoss``'s losses), and the agents' table
    (:func:`fedbandit_env.rng_kernels.generator_table`)."""

    reward: np.random.Generator
    protocol: np.random.Generator
    wrapper: np.random.Generator
    agents: npt.NDArray[np.uint64]


class Recording(NamedTuple):
    """The horizon, the recorded steps, and the buffers a loop writes: regret ``(N,
    R)``, traced arms and rewards ``(T, N)`` (or ``(0, N)``), the network's cost ``(R,)``."""

    horizon: int
    steps: IntArray
    out: FloatArray
    t_arms: IntArray
    t_rewards: Float32Array
    cost_out: FloatArray


def problem_arrays(st: Any) -> ProblemArrays:
    """The problem bundle of a :class:`~fedbandit_env.runner.fast.TrialSetup`."""
    return ProblemArrays(st.mu, int(st.noise), float(st.sigma), st.gaps)


def network_arrays(
    net: Any, protocol: int, public: bool, peer_cost: float, adjacency: Any = None
) -> NetworkArrays:
    """The network bundle of a :class:`~fedbandit_env.network.Network` (``adjacency``:
    the loop's own view of it, default the network's)."""
    return NetworkArrays(
        int(protocol),
        bool(public),
        net.edges,
        net.neighbors,
        net.degrees,
        net.adjacency if adjacency is None else adjacency,
        float(peer_cost),
    )


def recording(
    horizon: int,
    steps: IntArray,
    out: FloatArray,
    t_arms: IntArray,
    t_rewards: Float32Array,
    cost_out: FloatArray,
) -> Recording:
    """The recording bundle (the buffers of :meth:`TrialSetup.buffers` and a cost row)."""
    return Recording(int(horizon), steps, out, t_arms, t_rewards, cost_out)


__all__ = [
    "NetworkArrays",
    "ProblemArrays",
    "Recording",
    "Streams",
    "network_arrays",
    "problem_arrays",
    "recording",
]
