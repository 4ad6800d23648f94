"""One stack plan for both speeds: the wrapper layers a scenario puts over a policy's env,
declared before anything is built.

:meth:`Scenario.plan <fedbandit_env.scenario.scenario.Scenario.plan>` lists the layers
(privacy or clipping, then the network's faults), each with what it does to rewards and
messages and, for a layer that draws random numbers, its stream key: the wrapper stream
of its depth in the stack (``fedbandit_env.seeding``). ``Scenario.make_env`` builds the
PettingZoo stack from the plan, and the fast runners take their generators from the same
plan (:meth:`StackPlan.generator`), so neither can move a layer without the other
following; a test builds every plan and checks each drawing layer's stream against the
plan's key.

Examples:
    >>> from fedbandit_env.policies import Requirements
    >>> from fedbandit_env.scenario.scenario import Scenario
    >>> plan = Scenario(loss=0.2, delay=1).plan(Requirements(message_dim=2))
    >>> [layer.name for layer in plan.layers], plan.stream_key("MessageLoss")
    (['MessageDelay', 'MessageLoss'], (2, 1))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.privacy.mechanisms import noise_generator
from fedbandit_env.seeding import WRAPPER_KEY, wrapper_generator

Env: TypeAlias = ParallelEnv[Any, Any, Any]


@dataclass(frozen=True)
class Layer:
    """One wrapper of a plan.

    Attributes:
        name: The wrapper's class name (what :meth:`StackPlan.stream_key` looks up).
        build: ``env -> wrapped env``.
        draws: Whether it draws from a wrapper stream (its own, at its depth).
        rewards: What it does to rewards (``"privatise"``, ``"clip"``, ``""``).
        messages: What it does to messages (``"lie"``, ``"crash"``, ``"delay"``,
            ``"lose"``, ``""``).
        secure: Its noise comes from OS entropy, not from its stream (``noise="secure"``).
        vector: ``vector env -> wrapped vector env``, its vector form
            (:mod:`fedbandit_env.vector.wrappers`); ``None`` where it has none yet.

    Examples:
        >>> Layer("X", lambda env: env).draws
        False
    """

    name: str
    build: Callable[[Env], Env]
    draws: bool = False
    rewards: str = ""
    messages: str = ""
    secure: bool = False
    vector: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class StackPlan:
    """The layers over a policy's env, innermost first.

    Examples:
        >>> StackPlan(()).names
        ()
    """

    layers: tuple[Layer, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The layers' names, innermost first."""
        return tuple(layer.name for layer in self.layers)

    def depth(self, name: str) -> int:
        """How many layers lie below the layer ``name`` (its depth above the env).

        Raises:
            ValueError: If the plan has no such layer.
        """
        if name not in self.names:
            raise ValueError(f"the plan has no {name} layer (it has {list(self.names)})")
        return self.names.index(name)

    def stream_key(self, name: str) -> tuple[int, int]:
        """The wrapper stream key of the layer ``name``: ``(2, depth)``."""
        return (WRAPPER_KEY, self.depth(name))

    def generator(self, name: str, env_seed: int) -> np.random.Generator:
        """The generator the layer ``name`` draws from after ``reset(seed=env_seed)``:
        what the fast runners use in its place (OS entropy for secure noise)."""
        layer = self.layers[self.depth(name)]
        if layer.secure:
            return noise_generator("secure", None)
        return wrapper_generator(env_seed, self.depth(name))

    def build(self, env: Env) -> Env:
        """Wrap ``env`` in every layer, innermost first."""
        for layer in self.layers:
            env = layer.build(env)
        return env

    def build_vector(self, venv: Any) -> Any:
        """Wrap the vector env ``venv`` in every layer's vector form, innermost first.

        Raises:
            ValueError: Naming the layers that have no vector form yet.
        """
        missing = [layer.name for layer in self.layers if layer.vector is None]
        if missing:
            raise ValueError(
                f"the stack {list(self.names)} has layers without a vector form yet "
                f"({missing}); use scenario.make_env(needs) (the PettingZoo env)"
            )
        for layer in self.layers:
            assert layer.vector is not None
            venv = layer.vector(venv)
        return venv


__all__ = ["Layer", "StackPlan"]
