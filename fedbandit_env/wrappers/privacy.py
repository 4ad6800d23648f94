"""Agents see their own rewards only through a differentially private mechanism."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.privacy.accountant import PrivacyAccountant
from fedbandit_env.privacy.mechanisms import Estimator, TreeMechanism, clip_range
from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, StepResult
from fedbandit_env.wrappers.base import BanditSpaces, ParallelWrapper, refuse_twice


class PrivateRewards(ParallelWrapper):
    """Replace each agent's raw rewards by the binary-tree mechanism's private sums.

    For every agent ``i`` and arm ``k`` the stream ``X[i,k](tau) = 1(a_i(tau) = k) X(tau)``
    over global time (Zhu et al., Sec. 4.1) goes through a :class:`TreeMechanism`
    (Algorithms 2-3) calibrated so that each agent's whole reward stream is
    ``epsilon``-DP. The agent then observes

    - ``reward``: the private increment of the pulled arm's sum, ``S~(t) - S~(t-1)``
      (an unbiased, noisy stand-in for the raw reward; also what ``step`` returns as
      reward, so a learner is trained on private data only);
    - ``counts``: its pulls per arm (a function of its own actions);
    - ``private_means``: ``S~_k(t) / n_k(t)`` for every arm (0 before the first pull).

    Everything an agent computes from these, messages included, is post-processing,
    hence ``epsilon``-DP with respect to its reward stream. ``infos[agent]["epsilon"]``
    reports the privacy spent so far.

    Rewards are clipped to ``clip`` (default: the env's reward bounds, which must then
    be finite) and the sensitivity is the width of that range.

    Args:
        env: A parallel env whose observations hold ``arm``, ``reward`` and ``step``.
        epsilon: Privacy of each agent's whole reward stream (> 0).
        estimator: ``"dyadic"`` (the paper) or ``"honaker"`` (lower variance, same
            privacy).
        clip: ``(low, high)`` range rewards are clipped to before privatisation.

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = PrivateRewards(federated_mab_v0.parallel_env(n_arms=3, horizon=8), epsilon=1.0)
        >>> obs, _ = env.reset(seed=0)
        >>> obs, rewards, _, _, infos = env.step({a: 1 for a in env.agents})
        >>> obs["agent_0"]["counts"].tolist(), infos["agent_0"]["epsilon"]
        ([0.0, 1.0, 0.0], 0.25)
    """

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        epsilon: float,
        estimator: Estimator = "dyadic",
        clip: tuple[float, float] | None = None,
    ) -> None:
        super().__init__(env)
        refuse_twice(env, PrivateRewards)
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float | np.floating):
            raise TypeError(
                f"epsilon must be a number > 0, got {type(epsilon).__name__} {epsilon!r}"
            )
        agent0 = env.possible_agents[0]
        info = BanditSpaces.of(env, agent0, "PrivateRewards")
        lo, hi = clip_range(clip, (info.reward_low, info.reward_high), "PrivateRewards")
        self.epsilon = float(epsilon)
        self.estimator: Estimator = estimator
        self.clip = (lo, hi)
        self.n_arms = info.n_arms
        self.horizon = int(info.horizon)
        self._agents = list(env.possible_agents)
        self._row = {a: i for i, a in enumerate(self._agents)}
        # Build once to validate epsilon/estimator now, not at the first reset.
        self._tree = self._new_tree(np.random.default_rng(0))
        m = self.n_arms
        extra = {
            "reward": spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32),
            "counts": spaces.Box(0.0, float(self.horizon), shape=(m,), dtype=np.float32),
            "private_means": spaces.Box(-np.inf, np.inf, shape=(m,), dtype=np.float32),
        }
        self._spaces = {
            a: spaces.Dict({**env.observation_space(a).spaces, **extra}) for a in self._agents
        }
        n = len(self._agents)
        self._counts: FloatArray = np.zeros((n, m))
        self._prefix: FloatArray = np.zeros((n, m))
        self._rng = np.random.default_rng()
        self.accountant = PrivacyAccountant(budget=self.epsilon)
        """Per-agent spending (every agent spends the same, one stream set each)."""

    def _new_tree(
        self, rng: np.random.Generator, sensitivity: float | None = None, levels: int | None = None
    ) -> TreeMechanism:
        """The episode's tree: sensitivity the clip range's width, all levels (the
        overrides exist to build weakened twins for audits)."""
        return TreeMechanism(
            len(self._agents) * self.n_arms,
            self.horizon,
            self.epsilon,
            rng,
            sensitivity=self.clip[1] - self.clip[0] if sensitivity is None else sensitivity,
            estimator=self.estimator,
            levels=levels,
        )

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        """The wrapped space with a private ``reward``, ``counts`` and ``private_means``."""
        return self._spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, Observation], dict[AgentID, dict[str, Any]]]:
        """Reset the env; with a ``seed``, restart the noise from this wrapper's own stream
        (:meth:`~fedbandit_env.wrappers.base.ParallelWrapper.stream`: never the protocol's
        or the rewards', whose draws other agents observe)."""
        obs, infos = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = self.stream(seed)
        self._tree = self._new_tree(self._rng)
        self.accountant.reset()
        self._counts[:] = 0.0
        self._prefix[:] = 0.0
        zero = np.zeros(1, dtype=np.float32)
        return {a: self._view(a, o, zero) for a, o in obs.items()}, infos

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step, privatise the rewards, and hand out only private views."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        n, m = self._counts.shape
        values = np.zeros((n, m))
        present = np.zeros((n, m), dtype=bool)
        arms = {}
        lo, hi = self.clip
        for agent, o in obs.items():
            i, arm = self._row[agent], int(o["arm"])
            arms[agent] = arm
            values[i, arm] = min(max(float(rewards[agent]), lo), hi)
            present[i, arm] = True
            self._counts[i, arm] += 1.0
        previous = self._prefix
        self._prefix = self._tree.step(values.ravel(), present.ravel()).reshape(n, m)
        spent = self._tree.epsilon_spent()
        if spent > self.accountant.epsilon:  # a new tree level: one more epsilon'
            self.accountant.spend(spent - self.accountant.epsilon)
        out, private_rewards = {}, {}
        for agent, o in obs.items():
            i, arm = self._row[agent], arms[agent]
            inc = float(self._prefix[i, arm] - previous[i, arm])
            private_rewards[agent] = inc
            out[agent] = self._view(agent, o, np.array([inc], dtype=np.float32))
            infos[agent] = {**infos[agent], "epsilon": spent}
        return out, private_rewards, terms, truncs, infos

    def _view(self, agent: AgentID, o: Observation, reward: Any) -> Observation:
        i = self._row[agent]
        c = self._counts[i]
        means = np.divide(self._prefix[i], c, out=np.zeros(self.n_arms), where=c > 0)
        return {
            **o,
            "reward": reward,
            "counts": c.astype(np.float32),
            "private_means": means.astype(np.float32),
        }
