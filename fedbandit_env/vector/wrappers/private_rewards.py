"""``PrivateRewards`` in vector form: every env's agents see their rewards only through
the binary-tree mechanism (Zhu et al., Algorithms 2-3)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.backend import seed_of
from fedbandit_env.privacy.batched_kernels import (
    list_open_blocks,
    private_observe,
    release_all,
)
from fedbandit_env.privacy.batched_tree import BatchedTree
from fedbandit_env.privacy.mechanisms import (
    Estimator,
    Noise,
    TreeMechanism,
    check_noise,
    clip_range,
    noise_generator,
)
from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.wrappers.privacy import PUBLIC_KEYS


class VecPrivateRewards(VecWrapper):
    """:class:`~fedbandit_env.wrappers.PrivateRewards` for ``B`` envs: env ``b`` releases
    what the PettingZoo wrapper at the same depth releases under env ``b``'s seed, bit
    for bit (one tree of ``N M`` streams per env, noised from the wrapper stream of
    that seed, or from fresh OS entropy with ``noise="secure"``;
    :class:`~fedbandit_env.privacy.batched_tree.BatchedTree` steps all trees as arrays).
    On a torch device the trees run there and draw from the device's generator (seeded
    from the envs' seeds; fresh OS entropy with ``noise="secure"``): the same mechanism,
    other numbers.

    Observations: ``reward`` ``(B, N, 1)`` becomes the private increment of the pulled
    arm's sum; ``counts`` and ``private_means`` ``(B, N, M)`` are added; the returned
    rewards are the private increments; ``infos["epsilon"]`` ``(B,)`` the privacy spent.
    Entries of the env below that may be computed from raw rewards are refused, as the
    PettingZoo wrapper refuses them (:data:`~fedbandit_env.wrappers.privacy.PUBLIC_KEYS`).

    Args:
        env: The vector env (or a vector layer over it).
        epsilon: Privacy of each agent's whole reward stream (> 0).
        estimator: ``"dyadic"`` or ``"honaker"``.
        clip: ``(low, high)`` rewards are clipped to (default: the reward bounds).
        noise: ``"seeded"`` or ``"secure"``.

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = VecPrivateRewards(
        ...     FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=8, num_envs=2), 1.0)
        >>> _ = venv.reset(seed=0)
        >>> obs, rewards, _, _, infos = venv.step(np.ones((2, 3), int))
        >>> obs["counts"][0, 0].tolist(), float(infos["epsilon"][0])
        ([0.0, 1.0], 0.25)
    """

    ANY_DEVICE = True

    def __init__(
        self,
        env: VectorEnv,
        epsilon: float,
        estimator: Estimator = "dyadic",
        clip: tuple[float, float] | None = None,
        noise: Noise = "seeded",
    ) -> None:
        super().__init__(env)
        self.noise = check_noise(noise, "VecPrivateRewards")
        single = env.single_observation_space
        if not isinstance(single, spaces.Dict):
            raise ValueError("VecPrivateRewards needs dict observations")
        ours = {"reward", "counts", "private_means"}
        raw = sorted(set(single.spaces) - PUBLIC_KEYS - ours)
        if raw or "private_means" in single.spaces:
            raise ValueError(
                f"VecPrivateRewards would hand the agents {raw or ['private_means']} of the "
                "env below it, which may be computed from the raw rewards: wrap those layers "
                "outside VecPrivateRewards"
            )
        reward = single["reward"]
        assert isinstance(reward, spaces.Box)
        bounds = (float(reward.low.min()), float(reward.high.max()))
        lo, hi = clip_range(clip, bounds, "VecPrivateRewards")
        self.epsilon, self.estimator, self.clip = float(epsilon), estimator, (lo, hi)
        # one tree, to check epsilon and the estimator and to read the calibration
        tree = TreeMechanism(1, self.horizon, self.epsilon, np.random.default_rng(0), hi - lo,
                             estimator)  # fmt: skip
        self.scale, self.levels = tree.scale, tree.depth
        n, m, b = self.n_agents, self.n_arms, self.num_envs
        self.single_observation_space = spaces.Dict(
            {
                **single.spaces,
                "reward": spaces.Box(-np.inf, np.inf, (n, 1), np.float32),
                "counts": spaces.Box(0.0, float(self.horizon), (n, m), np.float32),
                "private_means": spaces.Box(-np.inf, np.inf, (n, m), np.float32),
            }
        )
        self.observation_space = batch_space(self.single_observation_space, b)
        self._rngs: list[np.random.Generator] = [np.random.default_rng() for _ in range(b)]
        self._tree = BatchedTree(self.backend, (b, n, m), self.levels, (lo, hi), self.scale,
                                 estimator == "honaker")  # fmt: skip
        self._stream = None if self.backend.is_numpy else self.backend.stream()
        self._tree.restart(self._rngs, self._stream)
        self._new_rngs = False

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the envs and every tree; with a seed, env ``b``'s noise restarts from
        this layer's stream of env ``b``'s seed (secure noise: fresh OS entropy)."""
        obs, infos = self.env.reset(seed=seed, options=options)
        if seed is not None:
            for b, rng in enumerate(self.streams(seed, self.num_envs)):
                if rng is not None:
                    self._rngs[b] = rng
            if self._stream is not None:  # the device's trees: seeded from the envs' seeds
                seeds = [seed + b for b in range(self.num_envs)] if isinstance(seed, int) \
                    else list(seed)  # fmt: skip
                start = seed_of([None if s is None else s * 4 + 3 for s in seeds])
                if start is not None:
                    self._stream.seed(start)
            self._new_rngs = True
        self._new_episode()
        zeros = self.backend.zeros((self.num_envs, self.n_agents, 1), self.backend.float32)
        return self._views(obs, zeros), self._with_epsilon(infos)

    def _new_episode(self) -> None:
        """Empty trees; their noise continues each env's generator, restarts from new
        ones after a seeded reset, or from fresh OS entropy with secure noise."""
        renew = self._new_rngs
        if self.noise == "secure":
            self._rngs = [noise_generator("secure", None) for _ in range(self.num_envs)]
            if self._stream is not None:
                self._stream.seed(None)
            renew = True
        self._tree.restart(self._rngs if renew else None, self._stream)
        self._new_rngs = False

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step, privatise every env's rewards, hand out only private views."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        be, xp = self.backend, self.backend.xp
        if resets:  # the vector env's autoreset: each tree continues its generator
            self._new_episode()
            zeros = be.zeros((self.num_envs, self.n_agents, 1), be.float32)
            return (
                self._views(obs, zeros),
                xp.zeros_like(rewards),
                terms,
                truncs,
                (self._with_epsilon(infos)),
            )
        increments = self._tree.step(obs["arm"], rewards, self.t)
        views = self._views(obs, xp.astype(increments, be.float32)[..., None])
        return views, increments, terms, truncs, self._with_epsilon(infos)

    rollout_observes = "private_mean"
    """A policy rolled out over this layer reads its pulled arm's private mean."""

    @property
    def rolls_out(self) -> bool:
        """Whether :meth:`rollout` plays this layer: directly over a NumPy env of the
        multi-armed core that rolls out (its trees are the rollout's observation hook; a
        layer between them, even one that rolls out with a hook of its own, such as
        ``VecClipRewards``, is stepped).

        Examples:
            >>> from fedbandit_env.problems import conflicting
            >>> from fedbandit_env.vector import FederatedMABVecEnv
            >>> venv = FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=8, num_envs=2)
            >>> VecPrivateRewards(venv, 1.0, estimator="honaker").rolls_out
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
        """``FederatedMABVecEnv.rollout`` through this layer: the trees step inside the
        compiled rollout (:func:`~fedbandit_env.privacy.batched_kernels.private_observe`,
        the same releases as :meth:`step`, either estimator, noise from each env's
        generator in the same order), the policy reads each pulled arm's private mean and
        the trace keeps the private increments, as the observations of :meth:`step` hold
        them. The arrays this layer handed out before stay as they were; afterwards the
        trees are where the steps left them.

        Examples:
            >>> from numba import njit
            >>> from fedbandit_env.problems import conflicting
            >>> from fedbandit_env.vector import FederatedMABVecEnv
            >>> @njit
            ... def arm_1(last, seen, t, arms):
            ...     arms[:] = 1
            >>> venv = VecPrivateRewards(
            ...     FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=8, num_envs=2), 1.0)
            >>> _ = venv.reset(seed=0)
            >>> venv.rollout(arm_1, (), np.array([8]), np.zeros((2, 3, 1)))
            >>> venv.t, venv._tree.counts[0, 0].tolist()
            (8, [0.0, 8.0])
        """
        if not self.rolls_out:
            raise ValueError(
                "VecPrivateRewards rolls out over a NumPy env that rolls out: step this "
                "stack instead"
            )
        if observe is not None:
            raise ValueError("a layer over VecPrivateRewards cannot change what it observes")
        tree = self._tree
        b, n, m = tree.shape
        tree.prefix, tree.means32 = tree.prefix.copy(), tree.means32.copy()  # handed out
        core: Any = self.unwrapped.core  # type: ignore[attr-defined]
        last = np.asarray(core.last_arms, dtype=np.int64)
        first = np.take_along_axis(tree.means32, last[..., None], axis=2)[..., 0]
        lo, hi = tree.clip
        levels = tree.acc.shape[1] if not tree.honaker else 0  # Honaker's: no lists
        touched, live = np.empty((2, b, levels, n * m), np.int64)
        listed, alive = np.zeros((b, levels, n), np.int64), np.zeros((b, levels), np.int64)
        if levels:
            list_open_blocks(tree.last, tree.node, self.t, touched, listed, live, alive)
        watch = (tree.counts, tree.last, tree.acc, tree.node, tree.noise.table,
                 tree.noise.scale, float(lo), float(hi),
                 tree.var if tree.honaker else np.zeros((0, 0, 0)),
                 2.0 * tree.scale * tree.scale, np.empty((b, n)), touched, listed, live, alive,
                 np.empty((b, n)))  # fmt: skip
        try:
            self.env.rollout(act, state, steps, out, trace, cost_out, stop,  # type: ignore[attr-defined]
                             (private_observe, watch, first))  # fmt: skip
        finally:  # the steps played stand, a stopped rollout's too
            tree.t = self.t
            if tree.t:  # every stream's release (the hook kept the pulled ones' only)
                release_all(tree.node, tree.counts, tree.t, tree.prefix, tree.means32)

    @property
    def scale(self) -> float:
        """The trees' Laplace scale (calibrated; an audit's power check may weaken it)."""
        return self._scale

    @scale.setter
    def scale(self, value: float) -> None:
        self._scale = float(value)
        if "_tree" in self.__dict__:
            self._tree.scale = self._tree.noise.scale = self._scale

    def epsilon_spent(self) -> float:
        """Privacy spent so far by each agent's stream (as ``TreeMechanism``)."""
        return self._tree.epsilon_spent(self.clip[1] - self.clip[0])

    def _with_epsilon(self, infos: dict[str, Any]) -> dict[str, Any]:
        b, be = self.num_envs, self.backend
        return {**infos, "epsilon": be.full((b,), self.epsilon_spent()), "delta": be.zeros((b,))}

    def _views(self, obs: dict[str, np.ndarray], rewards: np.ndarray) -> dict[str, np.ndarray]:
        # the tree makes new arrays every step (and new zeros every episode)
        xp, be = self.backend.xp, self.backend
        return {
            **obs,
            "reward": rewards,
            "counts": xp.astype(self._tree.counts, be.float32),
            "private_means": self._tree.means32,
        }


__all__ = ["VecPrivateRewards"]
