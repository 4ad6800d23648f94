"""Agents see their own rewards only through a differentially private mechanism."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.envs.render import render_text
from fedbandit_env.envs.spaces import joint_state, state_space
from fedbandit_env.privacy.accountant import PrivacyAccountant
from fedbandit_env.privacy.mechanisms import (
    Estimator,
    Noise,
    TreeMechanism,
    check_noise,
    clip_range,
    noise_generator,
)
from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, StepResult
from fedbandit_env.wrappers.base import (
    BanditSpaces,
    ParallelWrapper,
    agent_rows,
    refuse_twice,
    stack_reset,
)

PUBLIC_KEYS = frozenset(
    {
        "arm",
        "step",
        "contexts",  # its own choice, the clock, its decision set
        "messages",
        "mask",
        "public_mask",
        "server",
        "server_mask",  # what others sent
        "held",
        "heard",
        "age",  # HeldMessages: the latest of those, kept
    }
)
"""Observation entries ``PrivateRewards`` passes through as they are: the agent's own
choices, the clock and what other agents sent (each of them private by its own
mechanism, or not ours to protect). Anything else below it could be computed from raw
rewards (``LocalStatistics``' ``means``, a user's statistics) and is refused."""


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

    Observers: every entry of the wrapped observation other than the reward must be
    public (:data:`PUBLIC_KEYS`, or named in ``public_keys``), so a layer below that
    computes statistics of the raw rewards (``LocalStatistics``) is refused: put it
    *outside* ``PrivateRewards``, where it computes them from the private rewards.
    :meth:`state` and :meth:`render` show the private rewards, never the raw ones; an
    env that prints raw rewards itself (``render_mode="human"``) is refused.
    ``unwrapped`` is the simulator, a privileged view no setting hands to a policy.

    Threat model: the noise is drawn from this layer's own stream of the run's seed
    (``noise="seeded"``, replayable: the two speeds agree and a run can be re-checked),
    which assumes that the seed stays secret: whoever knows it regenerates the noise.
    ``noise="secure"`` draws it from fresh OS entropy at every reset instead (results
    are not replayable; the seed then reveals nothing).

    Args:
        env: A parallel env whose observations hold ``arm``, ``reward`` and ``step``.
        epsilon: Privacy of each agent's whole reward stream (> 0).
        estimator: ``"dyadic"`` (the paper) or ``"honaker"`` (lower variance, same
            privacy).
        clip: ``(low, high)`` range rewards are clipped to before privatisation.
        noise: ``"seeded"`` (replayable from the run's seed) or ``"secure"``
            (:data:`Noise`).
        public_keys: Further observation entries of the wrapped env that are not
            functions of the rewards (passed through; say so only if it is true).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> env = PrivateRewards(federated_mab_v0.parallel_env(n_arms=3, horizon=8), epsilon=1.0)
        >>> obs, _ = env.reset(seed=0)
        >>> obs, rewards, _, _, infos = env.step({a: 1 for a in env.agents})
        >>> obs["agent_0"]["counts"].tolist(), infos["agent_0"]["epsilon"]
        ([0.0, 1.0, 0.0], 0.25)
    """

    vector_form = "fedbandit_env.vector.wrappers.private_rewards:VecPrivateRewards"

    STEP_INFO: ClassVar[Mapping[str, Any]] = {"epsilon": 0.0, "delta": 0.0}

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        epsilon: float,
        estimator: Estimator = "dyadic",
        clip: tuple[float, float] | None = None,
        noise: Noise = "seeded",
        public_keys: Iterable[str] = (),
    ) -> None:
        super().__init__(env)
        refuse_twice(env, PrivateRewards)
        self.noise = check_noise(noise, "PrivateRewards")
        if isinstance(public_keys, str):
            raise TypeError(f"public_keys must be a collection of names, got {public_keys!r}")
        self.public_keys = PUBLIC_KEYS | frozenset(public_keys)
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float | np.floating):
            raise TypeError(
                f"epsilon must be a number > 0, got {type(epsilon).__name__} {epsilon!r}"
            )
        agent0 = env.possible_agents[0]
        info = BanditSpaces.of(env, agent0, "PrivateRewards")
        ours = {"reward", "counts", "private_means"}  # replaced by this layer
        raw = sorted(set(info.base.spaces) - self.public_keys - ours)
        if raw:
            raise ValueError(
                f"PrivateRewards would hand the agents {raw} of the env below it, which may "
                "be computed from the raw rewards (LocalStatistics' 'means' is): wrap those "
                "layers outside PrivateRewards, or name entries that are not functions of "
                "the rewards in public_keys"
            )
        if getattr(env, "render_mode", None) == "human":
            raise ValueError(
                "PrivateRewards cannot wrap an env with render_mode='human': it prints the raw "
                "rewards at every step; use render_mode='ansi' and the private stack's render()"
            )
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
        self._last: FloatArray = np.zeros(n)  # private rewards of the last step
        self._arms = np.zeros(n, dtype=np.int64)
        self._infos: dict[AgentID, dict[str, Any]] = {}  # the last step's, for render()
        # the env's state layout with private rewards, which are unbounded
        self._state_space = state_space(n, m, (-np.inf, np.inf), self.horizon)
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
        with stack_reset():
            obs, infos = self.env.reset(seed=seed, options=options)
            if self.noise == "secure":
                self._rng = noise_generator("secure", None)  # OS entropy, every episode
            elif seed is not None:
                self._rng = self.stream(seed)
        self._tree = self._new_tree(self._rng)
        self._last[:], self._arms[:], self._infos = 0.0, 0, {}
        self.accountant.reset()
        self._counts[:] = 0.0
        self._prefix[:] = 0.0
        rows = agent_rows(self._row, obs, len(obs))
        zeros = np.zeros(len(obs), dtype=np.float32)
        return self._views(obs, rows, zeros), self.with_step_info(infos)

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Step, privatise the rewards, and hand out only private views (the step's
        clipping, counts, increments and means one NumPy call each for all agents)."""
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        n, m = self._counts.shape
        values = np.zeros((n, m))
        present = np.zeros((n, m), dtype=bool)
        keys = list(obs)
        k = len(keys)
        rows = agent_rows(self._row, keys, k)
        arms = np.fromiter((int(o["arm"]) for o in obs.values()), np.int64, k)
        raw = np.fromiter((float(rewards[a]) for a in keys), np.float64, k)
        lo, hi = self.clip
        values[rows, arms] = np.minimum(np.maximum(raw, lo), hi)
        present[rows, arms] = True
        self._counts[rows, arms] += 1.0  # distinct cells: one pull per agent
        previous = self._prefix
        self._prefix = self._tree.step(values.ravel(), present.ravel()).reshape(n, m)
        spent = self._tree.epsilon_spent()
        if spent > self.accountant.epsilon:  # a new tree level: one more epsilon'
            self.accountant.spend(spent - self.accountant.epsilon)
        increments = self._prefix[rows, arms] - previous[rows, arms]
        self._last[rows], self._arms[rows] = increments, arms
        views = self._views(obs, rows, increments.astype(np.float32))
        private_rewards = dict(zip(keys, increments.tolist(), strict=True))
        for agent in keys:
            infos[agent] = {**infos[agent], "epsilon": spent, "delta": 0.0}
        self._infos = infos
        return views, private_rewards, terms, truncs, infos

    @property
    def state_space(self) -> spaces.Box:
        """The space of :meth:`state`: the env's layout, private rewards unbounded."""
        return self._state_space

    def state(self) -> np.ndarray:
        """The joint state (:func:`~fedbandit_env.envs.spaces.joint_state`: each agent's
        last arm and reward, the step) with the *private* rewards, never the raw ones.

        Examples:
            >>> from fedbandit_env import federated_mab_v0
            >>> env = PrivateRewards(federated_mab_v0.parallel_env(n_agents=2, horizon=4), 1.0)
            >>> _ = env.reset(seed=0); obs, rew, *_ = env.step({"agent_0": 0, "agent_1": 1})
            >>> reward_0 = env.state()[env.n_arms]  # after agent 0's one-hot arm
            >>> bool(reward_0 == np.float32(rew["agent_0"]))
            True
        """
        return joint_state(self._arms, self._last, self._tree.t, self.n_arms)

    def render(self) -> str | None:
        """The env's text view with the private rewards (``None`` without a
        ``render_mode``)."""
        mode = getattr(self.env, "render_mode", None)
        if mode is None:
            return None
        if mode == "rgb_array":  # the picture shows arms and deliveries, never a reward
            picture: Any = self.env.render()
            return picture
        base: Any = self.unwrapped
        best = int(getattr(getattr(base, "problem", None), "best_arm", -1))
        regret = [float(self._infos.get(a, {}).get("cumulative_regret", 0.0)) for a in self._agents]
        return render_text(
            best, self._tree.t, self.horizon, self._agents, self._arms, self._last, np.array(regret)
        )

    def _views(
        self, obs: dict[AgentID, Observation], rows: np.ndarray, rewards: np.ndarray
    ) -> dict[AgentID, Observation]:
        """Every agent's private view: its private ``reward`` (``rewards[j]`` for the
        ``j``-th agent of ``obs``, at row ``rows[j]``), counts and private means."""
        c = self._counts[rows]
        means = np.divide(self._prefix[rows], c, out=np.zeros_like(c), where=c > 0)
        counts32, means32 = list(c.astype(np.float32)), list(means.astype(np.float32))
        return {
            agent: {
                **o,
                "reward": rewards[j : j + 1],
                "counts": counts32[j],
                "private_means": means32[j],
            }
            for j, (agent, o) in enumerate(obs.items())
        }
