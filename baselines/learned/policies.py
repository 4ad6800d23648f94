"""A learned arm scorer as a reference policy: the posterior net's weights, acting on the
team posterior it keeps itself.

:class:`LearnedPolicy` is a :class:`~fedbandit_env.vector.policy.VectorPolicy`: every agent
of ``B`` envs in one call, so it is benched on the vector env (and, through
``VectorTeam``, on the PettingZoo env, draw for draw). Each agent keeps the statistics of
:class:`~fedbandit_env.wrappers.TeamPosterior` with the same code
(:class:`~fedbandit_env.wrappers.team_posterior.PosteriorState`: its own counts and sums,
or its private view under ``PrivateRewards``; the newest honest pair held from each
sender, the rest dropped and counted in ``rejected``), sends its counts and sums, computes
every arm's normal score with the network's forward pass in NumPy
(:func:`~fedbandit_env.rl.posterior_net.posterior_scores`: a learned Thompson sampler),
draws one score per arm with normals from its env's generator and pulls the best. It
needs neither torch nor stable-baselines3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedbandit_env.backend import backend
from fedbandit_env.policies import Requirements
from fedbandit_env.rl.posterior_net import WEIGHTS, draw_scores, posterior_scores
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import VectorObs, VectorPolicy, VectorSpec
from fedbandit_env.wrappers.team_posterior import PosteriorState, Prior

_BLOCK = 64  # steps of normals taken from each env's generator at a time


class LearnedPolicy(VectorPolicy):
    """The posterior net's policy on arrays (module docstring).

    Args:
        weights: The network's arrays (:data:`~fedbandit_env.rl.posterior_net.WEIGHTS`).
        epsilon: Read rewards through ``PrivateRewards(epsilon)`` (``None``: raw), as the
            model was trained.
        clip: ``PrivateRewards``' clip range under privacy (the prior's range and the
            width of the tree's sensitivity).
        strength: The prior's pseudo-pulls (the model's training value).
        deterministic: Pull the highest score mean instead of drawing.
        name: Its name in results.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> rng = np.random.default_rng(0)
        >>> w = {"scales": np.ones(10), "w1": rng.normal(size=(10, 4)), "b1": np.zeros(4),
        ...      "w2": rng.normal(size=(4, 4)), "b2": np.zeros(4), "wm": np.ones(4),
        ...      "bm": 0.0, "ws": np.zeros(4), "bs": 0.0, "b0": 0.0, "c0": 0.0}
        >>> spec = VectorSpec(2, tuple(AgentSpec(i, 3, 3, 10, message_dim=6) for i in range(3)))
        >>> policy = LearnedPolicy(w)
        >>> policy.reset(spec, [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32), "messages": np.zeros((2, 3, 6)),
        ...        "mask": np.zeros((2, 3, 3), np.int8)}
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages.shape
        ((2, 3), (2, 3, 6))
    """

    name = "learned"

    def __init__(
        self,
        weights: Mapping[str, Any],
        epsilon: float | None = None,
        clip: tuple[float, float] = (0.0, 1.0),
        strength: float = 1.0,
        deterministic: bool = False,
        name: str | None = None,
    ) -> None:
        missing = [k for k in WEIGHTS if k not in weights]
        if missing:
            raise ValueError(f"weights lack {missing} (a posterior net has {list(WEIGHTS)})")
        if epsilon is not None and not epsilon > 0:
            raise ValueError(f"epsilon must be > 0 or None, got {epsilon!r}")
        lo, hi = (float(v) for v in clip)
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise ValueError(f"clip must be a finite range (low, high), got {clip!r}")
        if not strength > 0:
            raise ValueError(f"strength must be > 0, got {strength!r}")
        self.weights = {k: np.asarray(weights[k]) for k in WEIGHTS}
        self.epsilon, self.clip, self.strength = epsilon, (lo, hi), float(strength)
        self.deterministic = bool(deterministic)
        if name is not None:
            self.name = name

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages of ``2 M`` numbers (counts, then sums); private rewards with
        ``epsilon``."""
        return Requirements(message_dim=2 * n_arms, epsilon=self.epsilon)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty statistics; env ``b``'s draws from ``rngs[b]``."""
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        if len(rngs) != b:
            raise ValueError(f"need one generator per env ({b}), got {len(rngs)}")
        if self.epsilon is None:
            prior = Prior.for_rewards(spec.reward_bounds, strength=self.strength)
        else:
            prior = Prior.for_private(self.clip, spec.horizon, self.epsilon, self.strength)
        self.prior = prior
        # per-sender statistics while every delivery is the graph's broadcast (checked)
        self.state = PosteriorState(backend(None), (b, n, m), prior, spec.adjacency)
        self.rngs = list(rngs)
        self.normals = np.zeros((b, 0, n, m))

    @property
    def rejected(self) -> IntArray:
        """Messages each agent's receiver dropped this episode, ``(B, N)``."""
        return np.asarray(self.state.rejected)

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Fold in the last pull and what was heard; draw every agent's arm."""
        t = int(observations["step"][0, 0, 0])
        state = self.state
        if "private_means" in observations:
            state.set_private(observations["counts"], observations["private_means"])
        elif t > 0:
            state.fold(observations["arm"], observations["reward"][..., 0])
        if t > 0 and "mask" in observations:
            state.receive(observations["messages"][:, None], observations["mask"], t)
        mean, sd = posterior_scores(self.weights, state.features(t))
        if self.deterministic:
            arms: IntArray = np.argmax(mean, axis=2).astype(np.int64)
        else:
            arms = draw_scores(mean, sd, self._normals(t))
        return arms, np.asarray(state.message())

    def _normals(self, t: int) -> FloatArray:
        """This step's standard normals ``(B, N, M)``: env ``b``'s drawn ``_BLOCK`` steps
        at a time from ``rngs[b]`` (the same numbers at any batch size)."""
        k = t % _BLOCK
        if k == 0 or self.normals.shape[1] == 0:
            _, n, m = self.state.shape
            self.normals = np.stack([g.standard_normal((_BLOCK, n, m)) for g in self.rngs])
        return self.normals[:, k]


__all__ = ["LearnedPolicy"]
