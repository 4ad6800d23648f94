"""``HorizonFree`` in vector form: features a model can read at any horizon."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.wrappers.horizon_free import REPLACED, horizon_free_features


class VecHorizonFree(VecWrapper):
    """Drop ``step``, ``counts`` and ``age``; add ``log_step`` ``(B, N, 1)``, ``shares``
    and ``bonus`` ``(B, N, M)`` and, over held messages, ``log_age`` ``(B, N, N)``: the
    same function (:func:`~fedbandit_env.wrappers.horizon_free.horizon_free_features`)
    as :class:`~fedbandit_env.wrappers.HorizonFree`, so both see the same bits.

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> from fedbandit_env.vector.wrappers import VecLocalStatistics
        >>> venv = VecHorizonFree(VecLocalStatistics(
        ...     FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=5, num_envs=2)))
        >>> sorted(venv.reset(seed=0)[0])
        ['arm', 'bonus', 'log_step', 'means', 'reward', 'shares']
    """

    ANY_DEVICE = True

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        single = env.single_observation_space
        if not isinstance(single, spaces.Dict) or not {"step", "counts"} <= set(single.spaces):
            raise TypeError(
                "VecHorizonFree needs the counts and the step (wrap VecLocalStatistics or "
                "VecPrivateRewards first)"
            )
        n, m = self.n_agents, self.n_arms
        kept: dict[str, spaces.Space[Any]] = {
            k: v for k, v in single.spaces.items() if k not in REPLACED
        }
        kept["log_step"] = spaces.Box(0.0, np.inf, (n, 1), np.float32)
        kept["shares"] = spaces.Box(0.0, 1.0, (n, m), np.float32)
        kept["bonus"] = spaces.Box(0.0, np.inf, (n, m), np.float32)
        if "age" in single.spaces:
            kept["log_age"] = spaces.Box(0.0, np.inf, single["age"].shape, np.float32)
        self.single_observation_space = spaces.Dict(kept)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the envs; the first observations in the new form."""
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._convert(obs), infos

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step; every observation in the new form."""
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        return self._convert(obs), rewards, terms, truncs, infos

    def _convert(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        be, xp = self.backend, self.backend.xp
        log_step, shares, bonus = horizon_free_features(self.t, obs["counts"])
        out = {k: v for k, v in obs.items() if k not in REPLACED}
        out["log_step"] = be.copy(xp.broadcast_to(log_step, (*obs["step"].shape[:2], 1)))
        out["shares"], out["bonus"] = shares, bonus
        if "age" in obs:
            out["log_age"] = xp.astype(xp.log1p(xp.astype(obs["age"], be.float64)), be.float32)
        return out


__all__ = ["VecHorizonFree"]
