"""What every vector wrapper of the suite shares: the bandit's facts, the step signature
``step(arms, messages=None)``, its depth in the stack (hence its noise stream) and the
autoreset signal."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from fedbandit_env.seeding import wrapper_generator


def vector_depth(env: VectorEnv) -> int:
    """Vector wrappers between ``env`` and the vector env (0 for the env itself).

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=4)
        >>> vector_depth(venv), vector_depth(VecWrapper(VecWrapper(venv)))
        (0, 2)
    """
    depth = 0
    while isinstance(env, VectorWrapper):
        depth, env = depth + 1, env.env
    return depth


class VecWrapper(VectorWrapper):
    """A layer over :class:`~fedbandit_env.vector.FederatedMABVecEnv` (or another
    layer): forwards ``step(arms, messages)``, the bandit's facts (``n_agents``,
    ``n_arms``, ``horizon``, ``message_dim``, ``protocol``) and :attr:`needs_reset`.

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> w = VecWrapper(FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=4, num_envs=2))
        >>> w.n_agents, w.depth, w.reset(seed=0)[0]["arm"].shape
        (3, 0, (2, 3))
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self.depth = vector_depth(env)
        """Vector wrappers below this one (0: it wraps the vector env)."""
        base: Any = env.unwrapped
        self.n_agents: int = base.n_agents
        self.n_arms: int = base.n_arms
        self.horizon: int = base.horizon
        self.message_dim: int = base.message_dim
        self.protocol = base.protocol

    @property
    def needs_reset(self) -> bool:
        """Whether the next :meth:`step` resets every env (autoreset)."""
        return bool(self.env.unwrapped.needs_reset)  # type: ignore[attr-defined]

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step the layer below with the same arms and messages."""
        return self.env.step(actions, messages)  # type: ignore[call-arg]

    def streams(
        self, seed: int | list[int | None], num_envs: int
    ) -> list[np.random.Generator | None]:
        """Each env's generator of this layer after ``reset(seed)``: the wrapper stream of
        its depth under env ``b``'s seed (``seed + b``, or ``seed[b]``), as the
        PettingZoo layer at the same depth draws under that env's seed; ``None`` where
        an env continues its generator."""
        seeds = [seed + b for b in range(num_envs)] if isinstance(seed, int) else list(seed)
        return [None if s is None else wrapper_generator(int(s), self.depth) for s in seeds]


__all__ = ["VecWrapper", "vector_depth"]
