"""Information settings: what every agent may know, the same for every policy.

A comparison of policies is fair when they see the same information. An
:class:`InformationSetting` fixes it for everyone:

- **who an agent hears**: no one (``local``), one random edge per step (``gossip``,
  Zhu et al.'s protocol), every neighbour every step (``neighbours``), a server's rounds
  (``server``), GIS flooding (``flooding``) or a hybrid of components and sinks
  (``hybrid``), as Li & Song's three variants communicate;
- **how it sees its own rewards**: raw, or (``+private``) only through
  :class:`~fedbandit_env.wrappers.PrivateRewards`, so that anything it sends is
  post-processing of an ``epsilon``-DP view.

What an agent *sends* stays the policy's own choice (its message length and content);
the setting decides only where it goes and what it may be computed from.
``Scenario(setting=...)`` builds every policy's env through the setting
(:meth:`InformationSetting.requirements` merges what the policy asks for with what
the setting allows, and refuses a policy that needs more), and the privacy each
agent's rewards spend is the setting's stack (plus a mechanism the policy runs
itself), whoever acts.

Examples:
    >>> from fedbandit_env.policies import Requirements
    >>> gp = SETTINGS["gossip+private"]
    >>> needs = gp.requirements(Requirements(message_dim=8, public_dim=4), epsilon=1.0)
    >>> needs.protocol, needs.epsilon, needs.message_dim
    ('random_edge_gossip', 1.0, 8)
    >>> SETTINGS["local"].requirements(Requirements(message_dim=8), epsilon=1.0)
    Traceback (most recent call last):
    ...
    ValueError: the 'local' setting carries no messages, but the policy sends 8 numbers a step
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbandit_env.policies import Requirements


@dataclass(frozen=True)
class InformationSetting:
    """Who an agent hears and how it sees its rewards (see the module docstring).

    Attributes:
        name: The setting's name (``--setting``, the ``setting`` column of results).
        protocol: The delivery rule of every message (a name of
            :data:`~fedbandit_env.protocols.PROTOCOLS`), or ``None``: no messages.
        private: Rewards only through ``PrivateRewards(epsilon)``.
        description: One line for listings.

    Examples:
        >>> SETTINGS["neighbours+private"].protocol, SETTINGS["neighbours+private"].private
        ('broadcast', True)
    """

    name: str
    protocol: str | None = None
    private: bool = False
    description: str = ""

    def requirements(self, needs: Requirements, epsilon: float | None) -> Requirements:
        """The env a policy that asks for ``needs`` gets in this setting.

        Raises:
            ValueError: If the policy needs what the setting does not give: messages
                where there are none, another protocol, or private rewards (its own
                ``PrivateRewards``) in a setting that is not private or at another
                epsilon.
        """
        if needs.message_dim and self.protocol is None:
            raise ValueError(
                f"the {self.name!r} setting carries no messages, but the policy sends "
                f"{needs.message_dim} numbers a step"
            )
        if needs.protocol is not None and needs.protocol != self.protocol:
            raise ValueError(
                f"the policy needs the {needs.protocol!r} protocol; the {self.name!r} setting "
                f"delivers through {self.protocol!r}"
            )
        if self.private and (epsilon is None or not epsilon > 0):
            raise ValueError(f"the {self.name!r} setting needs an epsilon > 0, got {epsilon!r}")
        if needs.epsilon is not None and (not self.private or needs.epsilon != epsilon):
            where = f"epsilon={epsilon}" if self.private else "raw rewards"
            raise ValueError(
                f"the policy sees its rewards through PrivateRewards(epsilon={needs.epsilon}); "
                f"the {self.name!r} setting gives {where}"
            )
        return Requirements(
            message_dim=needs.message_dim,
            public_dim=needs.public_dim,
            epsilon=epsilon if self.private else None,
            protocol=self.protocol if needs.message_dim else None,
            participation=needs.participation,
            bounded_rewards=needs.bounded_rewards,
        )


def _settings() -> dict[str, InformationSetting]:
    out = {}
    for name, protocol, what in (
        ("local", None, "own rewards only; no messages"),
        ("gossip", "random_edge_gossip", "one random edge of the graph talks per step (Zhu)"),
        ("neighbours", "broadcast", "every neighbour hears every step"),
        ("server", "server", "server rounds: upload, aggregate, broadcast (Li & Song CDP)"),
        ("flooding", "gis_flooding", "GIS flooding over the graph (Li & Song DDP)"),
        ("hybrid", "hybrid", "components with sinks, sinks to the server (Li & Song HDP)"),
        ("sync", "sync", "any agent's flag: all upload, the controller sums (Dubey & Pentland)"),
    ):
        out[name] = InformationSetting(name, protocol, False, what)
        if name != "sync" and (protocol is not None or name == "local"):  # rewards: MAB only
            out[f"{name}+private"] = InformationSetting(
                f"{name}+private", protocol, True, what + "; rewards only through PrivateRewards"
            )
    return out


SETTINGS: dict[str, InformationSetting] = _settings()
"""The named settings: ``local``, ``gossip``, ``neighbours``, ``server``, ``flooding``,
``hybrid``, each also ``+private``; ``sync`` (linear scenarios' centralized rounds)."""


def get_setting(name: str) -> InformationSetting:
    """The setting called ``name``.

    Raises:
        ValueError: For an unknown name, listing the known ones.

    Examples:
        >>> get_setting("gossip").protocol
        'random_edge_gossip'
    """
    if name not in SETTINGS:
        raise ValueError(f"setting must be one of {sorted(SETTINGS)}, got {name!r}")
    return SETTINGS[name]


__all__ = ["SETTINGS", "InformationSetting", "get_setting"]
