"""Protocols: who hears whom at each step, and what that costs.

A protocol is the only place that decides delivery.  Each step the env hands it the
messages every agent sent, shape ``(N, D)``, and gets back a :class:`Delivery`: an inbox
of shape ``(N, N, D)`` indexed ``[receiver, sender]`` with a boolean mask of the same
first two axes.  Slots the mask leaves off are zero, so an observation can never carry
what was not delivered.  Protocols with delays (flooding, server rounds) keep their
own queues in their state; protocols with randomness (gossip, participation) draw from
the generator the env passes at ``reset``.  A protocol with a server
(:attr:`Protocol.has_server`) also returns what the server sent each agent.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from fedbandit_env.network.graph import Network
from fedbandit_env.type_aliases import BoolArray, FloatArray


@dataclass(frozen=True, eq=False)
class Delivery:
    """What a protocol delivered in one step.

    A protocol whose receivers of one sender all get the same content (every MAB
    protocol but relays) hands over the sender-indexed ``rows`` ``(N, D)`` and the
    ``mask``, and ``messages`` is ``None``: the per-receiver inbox is built only if
    someone reads :attr:`inbox` (``O(N^2 D)``), never by the batched core, which keeps
    one row per sender (issue 62: a step of a flooding or server protocol no longer
    costs ``N^2 D``). A relay whose copies differ by receiver hands over ``messages``.

    Attributes:
        messages: ``(N, N, D)`` float array or ``None``: ``messages[r, s]`` is what
            receiver ``r`` got from sender ``s`` (zeros where nothing arrived); ``None``
            when ``rows`` says it.
        mask: ``(N, N)`` bool array, ``mask[r, s]`` is True iff ``r`` got a message
            from ``s`` this step.
        peer_links: Agent-agent links used this step (Li & Song's ``c2`` links).
        server_links: Agent-server links used this step (``c1`` links).
        public_mask: ``(N, N)`` bool array or ``None``: where only the *public* prefix of
            a message (its first ``public_dim`` entries) arrived, e.g. the pull counts
            Zhu et al. let every neighbour see while estimates travel by gossip.
        server: ``(N, D)`` float array or ``None``: what the server sent each agent this
            step (protocols with :attr:`Protocol.has_server`).
        server_mask: ``(N,)`` bool array or ``None``: True where the server sent something.
        rows: ``(N, D)`` float array or ``None``: ``rows[s]`` is the message of sender
            ``s``, whole to every ``r`` with ``mask[r, s]``, its first ``public_dim``
            entries to every ``r`` with ``public_mask[r, s]`` only.
        public_dim: The public prefix's length (with ``rows`` and ``public_mask``).

    Examples:
        >>> d = Delivery(np.zeros((2, 2, 1)), np.eye(2, dtype=bool)[::-1], 1, 0)
        >>> d.mask.sum(axis=1).tolist()
        [1, 1]
        >>> d = Delivery(None, np.array([[0, 1], [0, 0]], bool), rows=np.array([[1.0], [2.0]]))
        >>> d.inbox[:, :, 0].tolist()
        [[0.0, 2.0], [0.0, 0.0]]
    """

    messages: FloatArray | None
    mask: BoolArray
    peer_links: int = 0
    server_links: int = 0
    public_mask: BoolArray | None = None
    server: FloatArray | None = None
    server_mask: BoolArray | None = None
    rows: FloatArray | None = None
    public_dim: int = 0

    def __post_init__(self) -> None:
        if self.messages is None and self.rows is None:
            raise ValueError("a Delivery needs messages (per receiver) or rows (per sender)")

    @property
    def inbox(self) -> FloatArray:
        """The per-receiver inbox ``(N, N, D)``: ``messages``, or built from ``rows``
        (zeros where nothing arrived; the public prefix where only it did)."""
        if self.messages is not None:
            return self.messages
        rows = np.asarray(self.rows)
        mask = np.asarray(self.mask, dtype=bool)
        inbox = np.where(mask[:, :, None], rows[None, :, :], 0.0)
        if self.public_mask is not None and self.public_dim:
            reached = (mask | np.asarray(self.public_mask, dtype=bool))[:, :, None]
            prefix = rows[None, :, : self.public_dim]
            inbox[:, :, : self.public_dim] = np.where(reached, prefix, 0.0)
        object.__setattr__(self, "messages", inbox)  # built once
        return inbox


class Protocol(ABC):
    """Base class of delivery rules.

    Subclasses set :attr:`requires_connected` and implement :meth:`route`; stateful
    ones also override :meth:`reset`.

    Examples:
        >>> from fedbandit_env.protocols import Broadcast
        >>> from fedbandit_env.network import Network
        >>> proto = Broadcast()
        >>> proto.reset(Network.path(3), np.random.default_rng(0))
        >>> proto.route(np.arange(3.0).reshape(3, 1), t=1).mask.astype(int).tolist()
        [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    """

    requires_connected: bool = True
    """Whether the env must refuse a disconnected network for this protocol."""

    name: str = "protocol"
    """Short name used in logs and result tables."""

    public_dim: int = 0
    """Length of the message prefix delivered to every neighbour each step (0: none)."""

    per_sender: bool = True
    """Whether every receiver of a sender gets the same content in a step (what the
    batched core's sender-indexed messages need; ``False`` for relays whose copies
    differ by receiver, such as :class:`~fedbandit_env.protocols.GammaHops`)."""

    has_server: bool = False
    """Whether a server sends agents messages (the env then adds ``server`` and
    ``server_mask`` to the observations)."""

    def __init__(self) -> None:
        self._network: Network | None = None
        self._rng: np.random.Generator = np.random.default_rng()

    @property
    def network(self) -> Network:
        """The network bound at :meth:`reset`."""
        if self._network is None:
            raise RuntimeError(f"{type(self).__name__} used before reset(network, rng)")
        return self._network

    def check_network(self, network: Network) -> None:
        """Raise ``ValueError`` if this protocol cannot run on ``network``."""
        if self.requires_connected and not network.is_connected:
            raise ValueError(
                f"protocol {self.name!r} needs a connected network, got one with "
                f"{network.n_agents} agents that is disconnected"
            )

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Bind to ``network`` and a dedicated generator; clear any queued messages."""
        self.check_network(network)
        self._network = network
        self._rng = rng

    @abstractmethod
    def route(self, messages: FloatArray, t: int) -> Delivery:
        """Deliver the messages sent at step ``t`` (1-based).

        Args:
            messages: ``(N, D)`` messages, row ``s`` sent by agent ``s``.
            t: The step the messages were sent at.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def deliver_mask(
    messages: FloatArray,
    mask: BoolArray,
    peer_links: int = 0,
    server_links: int = 0,
    public_mask: BoolArray | None = None,
    public_dim: int = 0,
) -> Delivery:
    """Hand ``messages[s]`` to every ``r`` with ``mask[r, s]``, and only its first
    ``public_dim`` entries to every ``r`` with ``public_mask[r, s]`` but not ``mask[r, s]``.

    Examples:
        >>> d = deliver_mask(np.array([[1.0], [2.0]]), np.array([[0, 1], [0, 0]], bool))
        >>> d.inbox[:, :, 0].tolist()
        [[0.0, 2.0], [0.0, 0.0]]
        >>> msgs = np.array([[1.0, 10.0], [2.0, 20.0]])
        >>> nobody = np.zeros((2, 2), bool)
        >>> everyone = ~np.eye(2, dtype=bool)
        >>> deliver_mask(msgs, nobody, public_mask=everyone, public_dim=1).inbox[0].tolist()
        [[0.0, 0.0], [2.0, 0.0]]
    """
    rows = np.array(messages)  # the content as sent (a copy: the caller may reuse it)
    return Delivery(
        None, mask, peer_links, server_links, public_mask, rows=rows, public_dim=public_dim
    )
