"""Black-box privacy audits on the vector env: every env of a vector env is one run.

:func:`~fedbandit_env.wrappers.audit.audit_env` plays one PettingZoo episode per run;
here ``runs`` envs of a vector stack play theirs together (env ``b`` seeded
``seed + b``, so each run is the PettingZoo run of that seed), and the observer's views
go to the same bound (:func:`~fedbandit_env.privacy.audit.audit_views`). Neighbouring
inputs come from :class:`VecReplaceReward`, the vector form of
:class:`~fedbandit_env.wrappers.audit.ReplaceReward`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from fedbandit_env.privacy.audit import AuditResult, audit_views
from fedbandit_env.vector.wrappers.base import VecWrapper


class VecReplaceReward(VecWrapper):
    """Agent ``agent``'s reward at step ``step`` replaced by ``value`` in every env (the
    observation's ``reward`` and the returned reward alike): two stacks that differ
    only in ``value`` see reward streams that differ in exactly one item. Put it
    directly on the vector env, under the layers being audited.

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = VecReplaceReward(
        ...     FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=2, num_envs=2), 1, 1, 0.25)
        >>> _ = venv.reset(seed=0)
        >>> obs, rewards, *_ = venv.step(np.zeros((2, 3), int))
        >>> rewards[:, 1].tolist(), obs["reward"][:, 1, 0].tolist()
        ([0.25, 0.25], [0.25, 0.25])
    """

    def __init__(self, env: VectorEnv, agent: int, step: int, value: float) -> None:
        super().__init__(env)
        if not 0 <= int(agent) < self.n_agents:
            raise ValueError(f"agent must lie in [0, {self.n_agents}), got {agent!r}")
        if not 1 <= int(step) <= self.horizon:
            raise ValueError(f"step must lie in [1, {self.horizon}], got {step!r}")
        self.agent, self.step_index, self.value = int(agent), int(step), float(value)
        self._t = 0

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        """Reset the envs and the step count."""
        self._t = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step; at the chosen step, replace the agent's reward in every env."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        self._t = 0 if resets else self._t + 1
        if self._t == self.step_index:
            rewards = np.array(rewards, dtype=np.float64)
            rewards[:, self.agent] = self.value
            seen = np.array(obs["reward"])
            seen[:, self.agent] = self.value
            obs = {**obs, "reward": seen}
        return obs, rewards, terms, truncs, infos


def audit_vector(
    make_venv: Callable[[Any, int], Any],
    d0: Any,
    d1: Any,
    act: Callable[[int, dict[str, np.ndarray]], tuple[np.ndarray, np.ndarray | None]],
    observe: Callable[[list[dict[str, np.ndarray]]], np.ndarray],
    *,
    runs: int = 20_000,
    seed: int = 0,
    alpha: float = 0.01,
    delta: float = 0.0,
    select: float = 0.3,
    bins: int = 64,
) -> AuditResult:
    """Audit a vector stack end to end: ``make_venv(d, runs)`` for each input, one
    episode of every env (``act(t, obs) -> (arms, messages)``), the observer's view of
    each env (``observe(observations) -> (runs, k)``, from the list of the episode's
    observations, reset first), then :func:`~fedbandit_env.privacy.audit.audit_views`.

    The two inputs' envs are seeded alike (env ``b``: ``seed + b``), as
    :func:`~fedbandit_env.wrappers.audit.audit_env` seeds each run's two stacks.

    Examples:
        >>> from fedbandit_env.problems import MABProblem
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> from fedbandit_env.vector.wrappers import VecPrivateRewards
        >>> def make(value, runs):
        ...     base = FederatedMABVecEnv(MABProblem(np.zeros((2, 1))), horizon=2, num_envs=runs)
        ...     return VecPrivateRewards(VecReplaceReward(base, 0, 1, value), 1.0)
        >>> act = lambda t, obs: (np.zeros((2000, 2), int), None)
        >>> sums = lambda trace: trace[-1]["private_means"][:, 0, :] * trace[-1]["counts"][:, 0, :]
        >>> r = audit_vector(make, 0.0, 1.0, act, sums, runs=2000)
        >>> r.epsilon_lb <= 1.0
        True
    """
    views = []
    for value in (d1, d0):
        venv = make_venv(value, runs)
        obs, _ = venv.reset(seed=seed)
        trace = [obs]
        for t in range(1, int(venv.horizon) + 1):
            arms, messages = act(t, obs)
            obs, *_ = venv.step(arms, messages)
            trace.append(obs)
        views.append(np.asarray(observe(trace), dtype=np.float64).reshape(runs, -1))
        venv.close()
    return audit_views(views[0], views[1], alpha=alpha, delta=delta, select=select, bins=bins)


__all__ = ["VecReplaceReward", "audit_vector"]
