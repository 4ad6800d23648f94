"""Base class of our wrappers: PettingZoo's ``BaseParallelWrapper`` with our conventions.

Wrappers validate their arguments at construction, keep their state in their own
attributes (never patched onto the env), and forward everything else to the wrapped
env; private attributes are not forwarded (PettingZoo's guarded ``__getattr__``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from fedbandit_env.seeding import wrapper_generator
from fedbandit_env.type_aliases import Action, AgentID, Observation


def wrapper_depth(env: ParallelEnv[Any, Any, Any]) -> int:
    """How many wrapper layers lie between ``env`` and the base env (0 for the base).

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3)
        >>> wrapper_depth(base), wrapper_depth(ParallelWrapper(ParallelWrapper(base)))
        (0, 2)
    """
    depth = 0
    while isinstance(env, BaseParallelWrapper):
        depth += 1
        env = env.env
    return depth


class ParallelWrapper(BaseParallelWrapper[AgentID, Observation, Action]):
    """A parallel-env wrapper that keeps ``agents`` in sync with the wrapped env.

    A wrapper that draws random numbers takes them from :meth:`stream`, its own spawned
    stream (key ``(2, depth)`` of the env seed, :attr:`depth` its layer above the env):
    never the reward or protocol stream, never another wrapper's.

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
        self.depth = wrapper_depth(env)
        """Wrapper layers below this one (0: it wraps the base env)."""

    def stream(self, seed: int) -> np.random.Generator:
        """This wrapper's own generator after ``reset(seed=seed)`` (seeding's table).

        Example:
            >>> from fedbandit_env import federated_mab_v0
            >>> w = ParallelWrapper(ParallelWrapper(federated_mab_v0.parallel_env(horizon=3)))
            >>> w.depth, w.stream(0).random() == w.env.stream(0).random()
            (1, False)
        """
        return wrapper_generator(seed, self.depth)

    @property
    def agents(self) -> list[AgentID]:
        """The wrapped env's live agents."""
        return list(self.env.agents)

    @property
    def possible_agents(self) -> list[AgentID]:
        """The wrapped env's agents."""
        return list(self.env.possible_agents)


class NetworkWrapper(ParallelWrapper):
    """Base of the communication wrappers (gossip, loss, delay, failures, liars): each
    draws from its own stream (:meth:`ParallelWrapper.stream`, restarted by every seeded
    reset) and keeps per-episode state, cleared by :meth:`restart`.

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> w = NetworkWrapper(federated_mab_v0.parallel_env(horizon=3, message_dim=1))
        >>> _ = w.reset(seed=0)
        >>> w._rng.random() == w.stream(0).random()
        True
    """

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action]) -> None:
        super().__init__(env)
        self._rng = np.random.default_rng()

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env; with a ``seed``, restart this wrapper's stream; then
        :meth:`restart` the episode's state (which may add to the observations)."""
        obs, infos = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = self.stream(seed)
        return self.restart(obs), infos

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Clear the per-episode state at a reset; return the first observations."""
        return obs


def check_probability(name: str, value: Any) -> float:
    """``value`` as a float in ``[0, 1]``, or an error naming ``name``.

    Example:
        >>> check_probability("p", 0.25)
        0.25
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__} {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return float(value)


def require_messages(env: ParallelEnv[Any, Any, Any], wrapper: str) -> None:
    """Raise ``TypeError`` naming ``wrapper`` unless ``env``'s observations carry
    messages (``messages`` and ``mask``): the network-fault wrappers act on them.

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> require_messages(federated_mab_v0.parallel_env(message_dim=1), "X")
    """
    space = env.observation_space(env.possible_agents[0])
    if not (isinstance(space, spaces.Dict) and {"messages", "mask"} <= set(space.spaces)):
        raise TypeError(
            f"{wrapper} needs an env that carries messages (observations with 'messages' "
            f"and 'mask'), got {space!r}"
        )


def refuse_twice(env: ParallelEnv[Any, Any, Any], cls: type) -> None:
    """Raise ``ValueError`` if ``env`` or a layer below it is already a ``cls``
    (wrappers that transform rewards or add statistics make no sense twice).

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3)
        >>> refuse_twice(ParallelWrapper(base), ParallelWrapper)
        Traceback (most recent call last):
        ...
        ValueError: the env is already wrapped in ParallelWrapper (twice has no meaning)
    """
    layer: Any = env
    while True:
        if isinstance(layer, cls):
            raise ValueError(f"the env is already wrapped in {cls.__name__} (twice has no meaning)")
        if not isinstance(layer, BaseParallelWrapper):
            return
        layer = layer.env


def agent_name(agent: AgentID | int, names: list[AgentID]) -> AgentID:
    """``agent`` (a name or an index into ``names``) as a name, or a ``ValueError``.

    Example:
        >>> agent_name(1, ["agent_0", "agent_1"]), agent_name("agent_0", ["agent_0"])
        ('agent_1', 'agent_0')
    """
    if isinstance(agent, int | np.integer) and not isinstance(agent, bool):
        if 0 <= int(agent) < len(names):
            return names[int(agent)]
    elif agent in names:
        return agent
    raise ValueError(f"unknown agent {agent!r} in agents (the env has {names[0]}..{names[-1]})")


@dataclass(frozen=True)
class BanditSpaces:
    """The pieces of a bandit observation space that statistics wrappers build on.

    Attributes:
        base: The whole ``Dict`` observation space.
        n_arms: Number of arms (``arm`` is ``Discrete(n_arms)``).
        reward_low: Lowest reward the ``reward`` box allows.
        reward_high: Highest reward the ``reward`` box allows.
        horizon: Largest ``step`` value.


    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> BanditSpaces.of(federated_mab_v0.parallel_env(horizon=9), "agent_1", "X").horizon
        9.0
    """

    base: spaces.Dict
    n_arms: int
    reward_low: float
    reward_high: float
    horizon: float

    @classmethod
    def of(cls, env: ParallelEnv[Any, Any, Any], agent: AgentID, wrapper: str) -> BanditSpaces:
        """Read them from ``env``'s space for ``agent``, or raise ``TypeError`` naming
        ``wrapper``.

        Example:
            >>> from fedbandit_env import federated_mab_v0
            >>> env = federated_mab_v0.parallel_env(n_arms=3, horizon=7)
            >>> BanditSpaces.of(env, "agent_0", "X").n_arms
            3
        """
        base = env.observation_space(agent)
        ok = isinstance(base, spaces.Dict) and {"arm", "reward", "step"} <= set(base.spaces)
        if ok:
            arm, reward, step = base["arm"], base["reward"], base["step"]
            ok = (
                isinstance(arm, spaces.Discrete)
                and isinstance(reward, spaces.Box)
                and isinstance(step, spaces.Box)
            )
        if not ok:
            raise TypeError(
                f"{wrapper} needs Dict observations with a Discrete 'arm' and Box 'reward' "
                f"and 'step', got {base!r} for {agent}"
            )
        assert isinstance(base, spaces.Dict)
        arm, reward, step = base["arm"], base["reward"], base["step"]
        assert isinstance(arm, spaces.Discrete)
        assert isinstance(reward, spaces.Box) and isinstance(step, spaces.Box)
        return cls(
            base, int(arm.n), float(reward.low[0]), float(reward.high[0]), float(step.high[0])
        )
