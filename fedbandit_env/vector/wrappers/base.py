"""What every vector wrapper of the suite shares: the bandit's facts, the step signature
``step(arms, messages=None)``, its depth in the stack (hence its noise stream) and the
autoreset signal."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from fedbandit_env.rng_kernels import generator_table
from fedbandit_env.seeding import wrapper_generator
from fedbandit_env.vector.wrappers.kernels import heard_rows_into


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


def heard_rows(obs: dict[str, np.ndarray], public_dim: int) -> np.ndarray:
    """The sender-indexed ``messages`` of ``obs`` with what no receiver heard any more
    zeroed: a sender's whole row where its ``mask`` column is empty, all but the public
    prefix where only its ``public_mask`` column is not (a fault layer calls it after
    clearing masks, so the rows show only what someone got, as the env's do). Compiled:
    :func:`~fedbandit_env.vector.wrappers.kernels.heard_rows_into`.

    Examples:
        >>> obs = {"messages": np.ones((1, 2, 2), np.float32),
        ...        "mask": np.array([[[0, 1], [0, 0]]], np.int8)}
        >>> heard_rows(obs, 0).tolist()
        [[[0.0, 0.0], [1.0, 1.0]]]
    """
    sent = np.asarray(obs["messages"], dtype=np.float32)
    public = obs.get("public_mask") if public_dim else None
    empty = np.zeros((0, 0, 0), np.int8)
    return heard_rows_into(sent, np.asarray(obs["mask"]),
                           empty if public is None else np.asarray(public), public_dim,
                           np.empty(sent.shape, np.float32))  # fmt: skip


def split_actions(actions: Any, messages: Any) -> tuple[Any, Any]:
    """``(arms, messages)`` from ``step(arms, messages)`` or ``step({"arm", "message"})``.

    Examples:
        >>> split_actions({"arm": 1, "message": 2}, None)
        (1, 2)
    """
    if isinstance(actions, dict):
        if messages is not None:
            raise ValueError("pass the messages in the action dict or as an argument")
        return actions.get("arm"), actions.get("message")
    return actions, messages


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

    ANY_DEVICE = False
    """Whether the layer runs on any device (:mod:`fedbandit_env.backend`); one that does
    not refuses a torch device at construction."""

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self.depth = vector_depth(env)
        """Vector wrappers below this one (0: it wraps the vector env)."""
        base: Any = env.unwrapped
        self.backend = base.backend
        if not self.backend.is_numpy and not self.ANY_DEVICE:
            raise ValueError(
                f"{type(self).__name__} runs on NumPy arrays only, not on the torch device "
                f"{self.backend.label}: make the vector env with device=None"
            )
        self.n_agents: int = base.n_agents
        self.n_arms: int = base.n_arms
        self.horizon: int = base.horizon
        self.message_dim: int = base.message_dim
        self.protocol = base.protocol

    rollout_observes: str | None = None
    """What a policy rolled out over this layer reads of its rewards (a layer that
    :attr:`rolls_out` and changes them says what it hands out instead)."""

    @property
    def rolls_out(self) -> bool:
        """Whether a compiled rollout (``FederatedMABVecEnv.rollout``) plays this stack:
        not through a layer, unless the layer plays its part inside it (it defines
        ``rollout`` and says so here; ``VecPrivateRewards``, ``VecClipRewards``)."""
        return False

    def _over_rolling_core(self) -> bool:
        """Whether this layer sits directly over a NumPy env of the multi-armed core that
        rolls out: where a layer whose part is the rollout's observation hook may roll
        out (the rollout takes one hook, so a layer between them is stepped)."""
        from fedbandit_env.vector.env import FederatedMABVecEnv

        env = self.env
        return (isinstance(env, FederatedMABVecEnv) and bool(env.rolls_out)
                and self.backend.is_numpy)  # fmt: skip

    @property
    def t(self) -> int:
        """Steps taken in the current episodes (every env's; the observations' ``step``,
        read on the host, not from a device)."""
        return int(self.env.unwrapped.core.t)  # type: ignore[attr-defined]

    @property
    def needs_reset(self) -> bool:
        """Whether the next :meth:`step` resets every env (autoreset)."""
        return bool(self.env.unwrapped.needs_reset)  # type: ignore[attr-defined]

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step the layer below with the same arms and messages."""
        return self.env.step(actions, messages)  # type: ignore[call-arg]

    def restart_streams(self, seed: Any) -> None:
        """After ``reset(seed=seed)``: with a seed, each env's generator of this layer
        restarts from :meth:`streams` (``None`` keeps an env's generator going); the
        generator table the kernels draw from follows. A layer that draws keeps its
        generators in ``self._rngs`` and its table in ``self._table``."""
        rngs: list[np.random.Generator] = self.__dict__.get("_rngs") or [
            np.random.default_rng() for _ in range(self.num_envs)
        ]
        if seed is not None:
            for b, rng in enumerate(self.streams(seed, self.num_envs)):
                if rng is not None:
                    rngs[b] = rng
        self._rngs = rngs
        self._table = generator_table(rngs)  # addresses: the generators live on in _rngs

    def streams(
        self, seed: int | list[int | None], num_envs: int
    ) -> list[np.random.Generator | None]:
        """Each env's generator of this layer after ``reset(seed)``: the wrapper stream of
        its depth under env ``b``'s seed (``seed + b``, or ``seed[b]``), as the
        PettingZoo layer at the same depth draws under that env's seed; ``None`` where
        an env continues its generator."""
        seeds = [seed + b for b in range(num_envs)] if isinstance(seed, int) else list(seed)
        return [None if s is None else wrapper_generator(int(s), self.depth) for s in seeds]


__all__ = ["VecWrapper", "heard_rows", "split_actions", "vector_depth"]
