"""``ClipRewards`` in vector form: every agent's reward clipped into a declared range."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.wrappers.clip import check_clip


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

    def _clip_obs(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        reward = np.asarray(obs["reward"], dtype=np.float64)
        return {**obs, "reward": np.clip(reward, self.low, self.high).astype(np.float32)}


__all__ = ["VecClipRewards"]
