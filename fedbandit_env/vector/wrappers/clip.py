"""``ClipRewards`` in vector form: every agent's reward clipped into a declared range."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space
from numba import njit

from fedbandit_env.core.kernels import UNCOUNTED
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray
from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.wrappers.clip import check_clip


@njit(cache=True, nogil=True, **UNCOUNTED)
def observe_clipped(
    arms: IntArray,
    rewards: FloatArray,
    t: int,
    low: float,
    high: float,
    seen: Float32Array,
    traced: Float32Array,
) -> None:  # pragma: no cover
    """The rollouts' observation under :class:`VecClipRewards` (the hook of
    :func:`~fedbandit_env.core.kernels.observe_raw`'s form): every agent reads its
    reward clipped to ``[low, high]`` in double precision, then stored as float32, as
    :meth:`VecClipRewards.step` stores it (``np.clip`` of a finite reward is ``min(max(r,
    low), high)``); its trace keeps the same.

    Examples:
        >>> seen, traced = np.zeros((1, 3), np.float32), np.zeros((1, 3), np.float32)
        >>> observe_clipped(np.zeros((1, 3), np.int64), np.array([[-0.5, 0.25, 7.0]]), 1,
        ...                 0.0, 1.0, seen, traced)
        >>> seen.tolist(), traced.tolist()
        ([[0.0, 0.25, 1.0]], [[0.0, 0.25, 1.0]])
    """
    n_envs, n = rewards.shape
    for b in range(n_envs):
        for i in range(n):
            seen[b, i] = np.float32(min(max(rewards[b, i], low), high))
            traced[b, i] = seen[b, i]


class VecClipRewards(VecWrapper):
    """:class:`~fedbandit_env.wrappers.ClipRewards` for ``B`` envs: rewards ``(B, N)``
    and the ``reward`` observation clipped to ``[low, high]`` (in double precision, then
    stored as float32, as the PettingZoo wrapper does), and the ``reward`` box narrowed
    to that range. Regret is untouched (scored on the problem's means).

    Args:
        env: A vector env (or layer) with a ``reward`` observation.
        low: Lower end of the range.
        high: Upper end (``> low``; both finite).

    Examples:
        >>> from fedbandit_env.problems import MABProblem
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> problem = MABProblem([[0.5], [0.5]], "gaussian", 10.0)
        >>> venv = VecClipRewards(FederatedMABVecEnv(problem, horizon=3, num_envs=4), 0.0, 1.0)
        >>> _ = venv.reset(seed=0)
        >>> rewards = venv.step(np.zeros((4, 2), int))[1]
        >>> bool(((rewards >= 0) & (rewards <= 1)).all())
        True
        >>> venv.single_observation_space["reward"].high.max().item()
        1.0
    """

    def __init__(self, env: VectorEnv, low: float, high: float) -> None:
        super().__init__(env)
        self.low, self.high = lo, hi = check_clip(low, high, "VecClipRewards")
        single = env.single_observation_space
        if not isinstance(single, spaces.Dict) or "reward" not in single.spaces:
            raise ValueError("VecClipRewards needs dict observations with a 'reward'")
        shape = single["reward"].shape
        box = spaces.Box(lo, hi, shape=shape, dtype=np.float32)
        self.single_observation_space = spaces.Dict({**single.spaces, "reward": box})
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the envs (the first observation's placeholder reward is clipped too)."""
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._clip_obs(obs), infos

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step, then clip every agent's reward (an autoreset step's zero rewards stay
        zero: no pull happened; its first observations are clipped as at reset)."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        if resets:
            return self._clip_obs(obs), rewards, terms, truncs, infos
        clipped = np.clip(np.asarray(rewards, dtype=np.float64), self.low, self.high)
        out = {**obs, "reward": clipped.astype(np.float32)[..., None]}
        return out, clipped, terms, truncs, infos

    @property
    def rolls_out(self) -> bool:
        """Whether a compiled rollout plays this layer: directly over a NumPy env of the
        multi-armed core that rolls out (the clip is the rollout's observation hook,
        :func:`observe_clipped`); a layer between them, or the linear env, is stepped.

        Examples:
            >>> from fedbandit_env.problems import conflicting
            >>> from fedbandit_env.vector import FederatedMABVecEnv
            >>> venv = FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=4, num_envs=2)
            >>> VecClipRewards(venv, 0.0, 1.0).rolls_out
            True
        """
        return self._over_rolling_core()

    def rollout(
        self,
        act: Any,
        state: tuple[Any, ...],
        steps: Any,
        out: Any,
        trace: Any = None,
        cost_out: Any = None,
        stop: Any = None,
        observe: Any = None,
    ) -> None:
        """``FederatedMABVecEnv.rollout`` through this layer: the policy reads each reward
        clipped (:func:`observe_clipped`, what :meth:`step` hands out) and the trace keeps
        it; the regret is the env's. A policy's compiled step reads ``seen`` as the
        ``reward`` observation, so its ``kernel_observes`` is ``None`` here too.

        Examples:
            >>> from numba import njit
            >>> from fedbandit_env.problems import MABProblem
            >>> from fedbandit_env.vector import FederatedMABVecEnv
            >>> @njit
            ... def arm_0(last, seen, t, arms):
            ...     arms[:] = 0
            >>> problem = MABProblem([[0.5], [0.5]], "gaussian", 10.0)
            >>> venv = VecClipRewards(FederatedMABVecEnv(problem, horizon=6, num_envs=2),
            ...                       0.0, 1.0)
            >>> _ = venv.reset(seed=0)
            >>> trace = np.zeros((2, 6, 2), np.int64), np.zeros((2, 6, 2), np.float32)
            >>> venv.rollout(arm_0, (), np.array([6]), np.zeros((2, 2, 1)), trace)
            >>> bool(((trace[1] >= 0) & (trace[1] <= 1)).all()), venv.t
            (True, 6)
        """
        if not self.rolls_out:
            raise ValueError(
                "VecClipRewards rolls out directly over a NumPy FederatedMABVecEnv that "
                "rolls out: step this stack instead"
            )
        if observe is not None:
            raise ValueError("a layer over VecClipRewards cannot change what it observes")
        core: Any = self.env.unwrapped.core  # type: ignore[attr-defined]
        last = np.asarray(core.last_rewards, dtype=np.float64)
        first = np.clip(last, self.low, self.high).astype(np.float32)  # what was read last
        self.env.rollout(act, state, steps, out, trace, cost_out, stop,  # type: ignore[attr-defined]
                         (observe_clipped, (float(self.low), float(self.high)), first))  # fmt: skip

    def _clip_obs(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        reward = np.asarray(obs["reward"], dtype=np.float64)
        return {**obs, "reward": np.clip(reward, self.low, self.high).astype(np.float32)}


__all__ = ["VecClipRewards"]
