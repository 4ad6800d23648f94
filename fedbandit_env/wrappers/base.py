"""Base class of our wrappers: PettingZoo's ``BaseParallelWrapper`` with our conventions.

Wrappers validate their arguments at construction, keep their state in their own
attributes (never patched onto the env), and forward everything else to the wrapped
env; private attributes are not forwarded (PettingZoo's guarded ``__getattr__``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from fedbandit_env.seeding import WRAPPER_KEY, wrapper_generator
from fedbandit_env.type_aliases import Action, AgentID, Observation


def inner_env(layer: Any) -> ParallelEnv[Any, Any, Any] | None:
    """The env ``layer`` wraps, if it shows it: PettingZoo's wrappers and any delegating
    ``ParallelEnv`` that keeps the env it holds as ``env`` (``None`` for a base env).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3)
        >>> inner_env(base) is None, inner_env(ParallelWrapper(base)) is base
        (True, True)
    """
    inner = getattr(layer, "env", None)
    return inner if isinstance(inner, ParallelEnv) and inner is not layer else None


def wrapper_depth(env: ParallelEnv[Any, Any, Any]) -> int:
    """How many layers lie between ``env`` and the base env (0 for the base), counted
    through every layer that shows the env it holds (:func:`inner_env`): PettingZoo's
    wrappers *and* a user's own delegating env, so that no such layer can give two
    wrappers of one stack the same depth, hence the same stream.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3)
        >>> wrapper_depth(base), wrapper_depth(ParallelWrapper(ParallelWrapper(base)))
        (0, 2)
    """
    depth, layer = 0, inner_env(env)
    while layer is not None:
        depth += 1
        if depth > 10_000:
            raise ValueError("the env's layers form a cycle (env.env... never ends)")
        layer = inner_env(layer)
    return depth


_CLAIMS: ContextVar[dict[tuple[int, int], str] | None] = ContextVar(
    "fedbandit_stream_claims", default=None
)


@contextmanager
def stack_reset() -> Iterator[None]:
    """The scope of one reset of a whole stack: every layer that draws claims its stream
    key inside it (:meth:`ParallelWrapper.stream`), and a key claimed twice raises.

    The outermost drawing layer's ``reset`` opens the scope and every layer below it
    resets inside that call, whatever lies between (a user's delegating env that hides
    the env it holds included): so two mechanisms of one stack can never draw from one
    stream unnoticed, even where :func:`wrapper_depth` cannot see every layer.

    Examples:
        >>> with stack_reset():
        ...     claim_stream((2, 0), "A")
        ...     claim_stream((2, 0), "B")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: B and A would draw from one random stream (key (2, 0)) ...
    """
    if _CLAIMS.get() is not None:
        yield
        return
    token = _CLAIMS.set({})
    try:
        yield
    finally:
        _CLAIMS.reset(token)


def claim_stream(key: tuple[int, int], owner: str) -> None:
    """Record that ``owner`` draws from the wrapper stream ``key`` in the current
    :func:`stack_reset` scope (nothing outside one); raise ``ValueError`` if another
    layer of the stack already does.

    Examples:
        >>> claim_stream((2, 0), "outside any reset: no check")
    """
    claims = _CLAIMS.get()
    if claims is None:
        return
    if key in claims:
        raise ValueError(
            f"{owner} and {claims[key]} would draw from one random stream (key {key}) in "
            "one stack: a layer between them hides the env it holds; give it an `env` "
            "attribute (as PettingZoo's BaseParallelWrapper does) so that each layer "
            "gets its own stream"
        )
    claims[key] = owner


def vector_form(kind: type) -> Any:
    """The vector form the wrapper class ``kind`` names in its own
    :attr:`ParallelWrapper.vector_form` (not inherited: a subclass that behaves
    differently, as ``GilbertElliottLoss`` under ``MessageLoss``, names its own), or
    ``None``. The stacks that build vector envs (the scenario's plan, its faults, the
    learner's stack) and the batched loop's check all read it here.

    Examples:
        >>> from fedbandit_env.wrappers import GilbertElliottLoss, MessageLoss
        >>> vector_form(MessageLoss).__name__, vector_form(GilbertElliottLoss)
        ('VecMessageLoss', None)
    """
    import importlib

    path = vars(kind).get("vector_form")
    if path is None:
        return None
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class ParallelWrapper(BaseParallelWrapper[AgentID, Observation, Action]):
    """A parallel-env wrapper that keeps ``agents`` in sync with the wrapped env.

    A wrapper that draws random numbers takes them from :meth:`stream`, its own spawned
    stream (key ``(2, depth)`` of the env seed, :attr:`depth` its layer above the env,
    fixed when the stack is built): never the reward or protocol stream, never another
    wrapper's. Its ``reset`` runs inside :func:`stack_reset`, which refuses two layers
    of one stack that claim one key.

    A wrapper whose ``step`` adds keys to the agents' infos names them in
    :attr:`STEP_INFO` and adds them at reset too (:meth:`with_step_info`), so that reset
    and step infos have one schema (:mod:`fedbandit_env.envs.infos`).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = ParallelWrapper(federated_mab_v0.parallel_env(horizon=3))
        >>> _ = env.reset(seed=0)
        >>> len(env.agents), env.unwrapped.horizon
        (4, 3)
    """

    STEP_INFO: ClassVar[Mapping[str, Any]] = {}
    """The keys this wrapper's ``step`` adds to every agent's info, with their values
    before the first step."""

    vector_form: ClassVar[str | None] = None
    """Where this wrapper's vector form lives, ``"module:Class"`` (a
    :class:`~fedbandit_env.vector.wrappers.VecWrapper` built with the same arguments
    after the vector env, or a leading subset of them: ``VecMessageDelay`` takes a fixed
    delay), or ``None``: the one place a wrapper's vector form is named
    (read by :func:`vector_form`; ``tests/vector/test_vector_wrappers.py`` requires every
    vector wrapper to be named by exactly one wrapper)."""

    def with_step_info(self, infos: dict[AgentID, dict[str, Any]]) -> dict[AgentID, dict[str, Any]]:
        """The reset ``infos`` with this wrapper's :attr:`STEP_INFO` added to every agent's.

        Examples:
            >>> from fedbandit_env import federated_mab_v0
            >>> from fedbandit_env.wrappers import PrivateRewards
            >>> env = PrivateRewards(federated_mab_v0.parallel_env(horizon=3), epsilon=1.0)
            >>> env.with_step_info({"agent_0": {"regret": 0.0}})["agent_0"]["epsilon"]
            0.0
        """
        if not self.STEP_INFO:
            return infos
        return {a: {**info, **self.STEP_INFO} for a, info in infos.items()}

    def __init__(self, env: ParallelEnv[AgentID, Observation, Action]) -> None:
        if not isinstance(env, ParallelEnv):
            raise TypeError(f"env must be a PettingZoo ParallelEnv, got {type(env).__name__}")
        super().__init__(env)
        self.metadata: dict[str, Any] = dict(getattr(env, "metadata", {}))
        self.depth = wrapper_depth(env)
        """Wrapper layers below this one (0: it wraps the base env)."""

    def stream(self, seed: int) -> np.random.Generator:
        """This wrapper's own generator after ``reset(seed=seed)`` (seeding's table).

        Examples:
            >>> from fedbandit_env import federated_mab_v0
            >>> w = ParallelWrapper(ParallelWrapper(federated_mab_v0.parallel_env(horizon=3)))
            >>> w.depth, w.stream(0).random() == w.env.stream(0).random()
            (1, False)
        """
        claim_stream((WRAPPER_KEY, self.depth), f"{type(self).__name__} (depth {self.depth})")
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

    Examples:
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
        with stack_reset():
            obs, infos = self.env.reset(seed=seed, options=options)
            if seed is not None:
                self._rng = self.stream(seed)
        return self.restart(obs), self.with_step_info(infos)

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Clear the per-episode state at a reset; return the first observations."""
        return obs


def check_probability(name: str, value: Any) -> float:
    """``value`` as a float in ``[0, 1]``, or an error naming ``name``.

    Examples:
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

    Examples:
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
    """Raise ``ValueError`` if ``env`` or a layer below it (seen through
    :func:`inner_env`) is already a ``cls`` (wrappers that transform rewards or add
    statistics make no sense twice).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3)
        >>> refuse_twice(ParallelWrapper(base), ParallelWrapper)
        Traceback (most recent call last):
        ...
        ValueError: the env is already wrapped in ParallelWrapper (twice has no meaning)
    """
    layer: Any = env
    while layer is not None:
        if isinstance(layer, cls):
            raise ValueError(f"the env is already wrapped in {cls.__name__} (twice has no meaning)")
        layer = inner_env(layer)


def agent_name(agent: AgentID | int, names: list[AgentID]) -> AgentID:
    """``agent`` (a name or an index into ``names``) as a name, or a ``ValueError``.

    Examples:
        >>> agent_name(1, ["agent_0", "agent_1"]), agent_name("agent_0", ["agent_0"])
        ('agent_1', 'agent_0')
    """
    if isinstance(agent, int | np.integer) and not isinstance(agent, bool):
        if 0 <= int(agent) < len(names):
            return names[int(agent)]
    elif agent in names:
        return agent
    raise ValueError(f"unknown agent {agent!r} in agents (the env has {names[0]}..{names[-1]})")


def step_of(observation: Observation) -> int:
    """The step ``t`` an observation carries in its ``step`` entry; all agents step
    together, so any agent's observation gives the step of all of them.

    Examples:
        >>> step_of({"step": np.array([7.0], dtype=np.float32)})
        7
    """
    return round(float(np.asarray(observation["step"]).reshape(-1)[0]))


def agent_rows(rows: Mapping[AgentID, int], agents: Iterable[AgentID], count: int) -> np.ndarray:
    """Each agent's row (in the order given) in arrays a wrapper keeps for every possible
    agent; ``count`` is how many agents there are.

    Examples:
        >>> agent_rows({"agent_0": 0, "agent_1": 1}, ["agent_1", "agent_0"], 2).tolist()
        [1, 0]
    """
    return np.fromiter(map(rows.__getitem__, agents), np.int64, count)


@dataclass(frozen=True)
class BanditSpaces:
    """The pieces of a bandit observation space that statistics wrappers build on.

    Attributes:
        base: The whole ``Dict`` observation space.
        n_arms: Number of arms (``arm`` is ``Discrete(n_arms)``).
        reward_low: Lowest reward the ``reward`` box allows.
        reward_high: Highest reward the ``reward`` box allows.
        horizon: Largest ``step`` value.


    Examples:
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

        Examples:
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
