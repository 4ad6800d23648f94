"""Clip every agent's reward into a known range, and declare that range."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, Observation, StepResult
from fedbandit_env.wrappers.base import BanditSpaces, ParallelWrapper


def check_clip(low: Any, high: Any, owner: str) -> tuple[float, float]:
    """A clipping range checked: two floats, finite, ``low < high`` (``owner`` names the
    wrapper in the error).

    Examples:
        >>> check_clip(0, 1.0, "ClipRewards")
        (0.0, 1.0)
    """
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
            raise TypeError(f"{name} must be a float, got {type(value).__name__} {value!r}")
    lo, hi = float(low), float(high)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"{owner} needs finite low < high, got [{low!r}, {high!r}]")
    return lo, hi


class ClipRewards(ParallelWrapper):
    """Rewards clipped to ``[low, high]``, in the observation and in what ``step`` returns.

    The ``reward`` box is narrowed to ``[low, high]``, so a policy that privatises its own
    rewards (Li & Song's epoch means) reads a finite range from its
    :class:`~fedbandit_env.policies.AgentSpec` and calibrates its noise to the width:
    unbounded (Gaussian) rewards become private-able, and the sensitivity the policy
    assumes holds. The clipped value is computed in double precision, then stored as the
    float32 observation. Regret is untouched (it is scored on the problem's means).

    Args:
        env: A parallel env whose observations hold ``arm``, ``reward`` and ``step``.
        low: Lower end of the range.
        high: Upper end of the range (``> low``; both finite).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.problems import MABProblem
        >>> base = federated_mab_v0.parallel_env(
        ...     problem=MABProblem([[0.5], [0.5]], "gaussian", 10.0), horizon=3)
        >>> env = ClipRewards(base, 0.0, 1.0)
        >>> env.observation_space("agent_0")["reward"].high.tolist()
        [1.0]
        >>> _ = env.reset(seed=0)
        >>> obs, rewards, *_ = env.step({"agent_0": 0, "agent_1": 0})
        >>> all(0.0 <= r <= 1.0 for r in rewards.values())
        True
    """

    vector_form = "fedbandit_env.vector.wrappers.clip:VecClipRewards"

    def __init__(
        self, env: ParallelEnv[AgentID, Observation, Action], low: float, high: float
    ) -> None:
        super().__init__(env)
        self.low, self.high = lo, hi = check_clip(low, high, "ClipRewards")
        box = spaces.Box(lo, hi, shape=(1,), dtype=np.float32)
        self._spaces = {}
        for agent in env.possible_agents:
            info = BanditSpaces.of(env, agent, "ClipRewards")
            self._spaces[agent] = spaces.Dict({**info.base.spaces, "reward": box})

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The wrapped space with ``reward`` in ``[low, high]``."""
        return self._spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env (the first observation's placeholder reward is clipped too)."""
        obs, infos = self.env.reset(seed=seed, options=options)
        return {a: self._clip_obs(o) for a, o in obs.items()}, infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step, then clip each agent's reward."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        lo, hi = self.low, self.high
        clipped = {a: min(max(float(r), lo), hi) for a, r in rewards.items()}
        out = {a: {**o, "reward": np.array([clipped[a]], dtype=np.float32)} for a, o in obs.items()}
        return out, clipped, terms, truncs, infos

    def _clip_obs(self, o: Observation) -> Observation:
        value = min(max(float(o["reward"][0]), self.low), self.high)
        return {**o, "reward": np.array([value], dtype=np.float32)}


__all__ = ["ClipRewards", "check_clip"]
