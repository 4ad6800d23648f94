"""Base class of our wrappers: PettingZoo's ``BaseParallelWrapper`` with our conventions.

Wrappers validate their arguments at construction, keep their state in their own
attributes (never patched onto the env), and forward everything else to the wrapped
env; private attributes are not forwarded (PettingZoo's guarded ``__getattr__``).
"""

from __future__ import annotations

from typing import Any

from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from fedbandit_env.type_aliases import Action, AgentID, Observation


class ParallelWrapper(BaseParallelWrapper[AgentID, Observation, Action]):
    """A parallel-env wrapper that keeps ``agents`` in sync with the wrapped env.

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = ParallelWrapper(federated_mab_v0.parallel_env(horizon=3))
        >>> _ = env.reset(seed=0)
        >>> len(env.agents), env.unwrapped.horizon
        (4, 3)
    """

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action]) -> None:
        if not isinstance(env, ParallelEnv):
            raise TypeError(f"env must be a PettingZoo ParallelEnv, got {type(env).__name__}")
        super().__init__(env)
        self.metadata: dict[str, Any] = dict(getattr(env, "metadata", {}))

    @property
    def agents(self) -> list[AgentID]:
        """The wrapped env's live agents."""
        return list(self.env.agents)

    @property
    def possible_agents(self) -> list[AgentID]:
        """The wrapped env's agents."""
        return list(self.env.possible_agents)
