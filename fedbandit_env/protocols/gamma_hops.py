"""The LOCAL protocol with a time-to-live (Dubey & Pentland, Sec. 4.2; Linial 1992).

Every step every agent sends its message to its neighbours; each message is forwarded
from agent to agent, one hop per step, for ``gamma`` hops, then dropped. So agent ``u``
receives the message that agent ``v`` sent at step ``s`` at step ``s + d(u, v) - 1``
if ``d(u, v) <= gamma`` (``d``: hop distance; neighbours in the step it was sent, as
with :class:`~fedbandit_env.protocols.Broadcast`, which is ``gamma = 1``), indexed by
its *origin* ``v`` in ``messages``/``mask``. The paper: agent ``v`` "receives messages
``m_{v', t - d(v, v')}`` from all the agents ``v'`` such that ``d(v, v') <= gamma``".

Cost (a reading: the paper does not price links): as for ``Broadcast``, a link is an
edge used in a step; every agent sends every step, so every edge carries messages (new
ones and forwarded ones) every step: ``|E|`` peer links a step, whatever ``gamma``. What
grows with ``gamma`` is the volume: :attr:`GammaHops.message_hops` counts the
(message, edge) pairs of a step, ``sum_v sum_{u: d(u, v) < gamma} deg(u)``. With
``gamma = 1`` the protocol is ``Broadcast``, delivery and cost alike (tested).
"""

from __future__ import annotations

import numpy as np

from fedbandit_env.network.graph import Network
from fedbandit_env.protocols.base import Delivery, Protocol
from fedbandit_env.type_aliases import FloatArray


class GammaHops(Protocol):
    """Messages travel ``gamma`` hops, one hop per step, then are dropped.

    Args:
        gamma: The time-to-live in hops (``>= 1``).

    Examples:
        >>> proto = GammaHops(gamma=2)
        >>> proto.reset(Network.path(3), np.random.default_rng(0))
        >>> first = proto.route(np.array([[1.0], [2.0], [3.0]]), t=1)
        >>> first.mask.astype(int).tolist()   # neighbours, in the step it was sent
        [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
        >>> second = proto.route(np.zeros((3, 1)), t=2)
        >>> second.messages[0, 2, 0], second.mask[2, 0]   # two hops: one step later
        (np.float64(3.0), np.True_)
    """

    per_sender = False  # a receiver d hops away gets the origin's message of d - 1 steps ago

    name = "gamma_hops"
    requires_connected = False

    def __init__(self, gamma: int = 1) -> None:
        super().__init__()
        if isinstance(gamma, bool) or not isinstance(gamma, int | np.integer) or gamma < 1:
            raise ValueError(f"gamma must be an int >= 1, got {gamma!r}")
        self.gamma = int(gamma)
        self._hops = np.zeros((0, 0), dtype=np.int64)
        self._queue = np.zeros((0, 0, 0, 0))
        self._arrives = np.zeros((0, 0, 0), dtype=bool)
        self.message_hops = 0
        """(message, edge) pairs a step once the pipeline is full."""

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Bind to the network; nothing in flight."""
        super().reset(network, rng)
        dist = network.hop_distances  # [u, v], symmetric; -1 where unreachable
        self._hops = np.where((dist >= 1) & (dist <= self.gamma), dist, 0)  # [receiver, origin]
        forwards = (dist >= 0) & (dist < self.gamma)  # [origin, forwarder]
        self.message_hops = int((forwards * network.degrees[None, :]).sum())
        n = network.n_agents
        self._queue = np.zeros((self.gamma, n, n, 0))
        self._arrives = np.zeros((self.gamma, n, n), dtype=bool)

    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Queue this step's messages by distance; deliver what arrives now."""
        n, d = messages.shape
        if self._queue.shape[3] != d:
            self._queue = np.zeros((self.gamma, n, n, d))
        # slot j holds what arrives j steps from now: a message h hops away goes to h - 1
        for h in range(1, self.gamma + 1):
            reach = self._hops == h
            self._queue[h - 1] = np.where(
                reach[:, :, None], messages[None, :, :], self._queue[h - 1]
            )
            self._arrives[h - 1] |= reach
        inbox, mask = self._queue[0].copy(), self._arrives[0].copy()
        self._queue[:-1], self._arrives[:-1] = self._queue[1:].copy(), self._arrives[1:].copy()
        self._queue[-1], self._arrives[-1] = 0.0, False
        return Delivery(inbox, mask, peer_links=self.network.n_edges)

    def resume(self, sent: FloatArray, t: int) -> None:
        """Hold in flight what :meth:`route` holds after step ``t``, given what every agent
        sent at its last ``gamma`` steps (``sent`` ``(gamma, N, D)``, ``sent[s % gamma]``
        the messages of step ``s``): a compiled rollout that routed the steps itself
        (:func:`~fedbandit_env.core.hops.rollout_linear_hops`) hands the protocol back
        this way, and the next :meth:`route` delivers what it would have.

        Examples:
            >>> proto = GammaHops(gamma=2)
            >>> proto.reset(Network.path(3), np.random.default_rng(0))
            >>> sent = np.zeros((2, 3, 1)); sent[1, 2, 0] = 3.0  # step 1's messages
            >>> proto.resume(sent, t=1)
            >>> proto.route(np.zeros((3, 1)), t=2).messages[0, 2, 0]  # two hops away
            np.float64(3.0)
        """
        g, n, d = self.gamma, self._hops.shape[0], sent.shape[2]
        self._queue = np.zeros((g, n, n, d))
        self._arrives = np.zeros((g, n, n), dtype=bool)
        for j in range(g):  # slot j: what arrives at step t + 1 + j
            for h in range(j + 2, g + 1):
                s = t + j + 2 - h  # sent at step s, h hops away
                if s < 1:
                    continue
                reach = self._hops == h
                self._queue[j] = np.where(reach[:, :, None], sent[s % g][None], self._queue[j])
                self._arrives[j] |= reach

    def __repr__(self) -> str:
        return f"GammaHops(gamma={self.gamma})"
