"""``TeamPosterior`` in vector form: the team posterior per arm for every agent of ``B``
envs, on any device."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.vector.wrappers.base import VecWrapper
from fedbandit_env.wrappers.team_posterior import (
    PosteriorState,
    broadcast_graph,
    posterior_space,
    prior_of,
)


class VecTeamPosterior(VecWrapper):
    """Observations become ``arm`` ``(B, N)`` (the last pull), ``posterior`` ``(B, N,
    M, F)`` and ``step`` ``(B, N, 1)``; ``step(arms)`` sends every agent's counts and
    sums itself; ``infos`` gain ``rejected_messages`` ``(B, N)``: the same
    :class:`~fedbandit_env.wrappers.team_posterior.PosteriorState`
    as :class:`~fedbandit_env.wrappers.TeamPosterior`, so both see the same bits.

    Its ``message_dim`` is 0: a layer above sends nothing (the messages are this
    layer's).

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = VecTeamPosterior(FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=5,
        ...                                            message_dim=4, num_envs=2))
        >>> obs, _ = venv.reset(seed=0)
        >>> obs, rewards, *_ , infos = venv.step(np.ones((2, 3), int))
        >>> obs["posterior"].shape, infos["rejected_messages"].shape
        ((2, 3, 2, 10), (2, 3))
    """

    ANY_DEVICE = True

    def __init__(self, env: VectorEnv, strength: float = 1.0) -> None:
        super().__init__(env)
        single = env.single_observation_space
        m, n, b = self.n_arms, self.n_agents, self.num_envs
        if not isinstance(single, spaces.Dict) or self.message_dim != 2 * m:
            raise ValueError(
                f"VecTeamPosterior sends each agent's counts and sums: the env must carry "
                f"messages of 2 * n_arms = {2 * m} numbers (message_dim={2 * m})"
            )
        if "counts" in single.spaces and "private_means" not in single.spaces:
            raise ValueError("VecTeamPosterior keeps its own statistics: wrap it directly")
        self._private = "private_means" in single.spaces
        reward = single["reward"]
        assert isinstance(reward, spaces.Box)
        bounds = (float(reward.low.min()), float(reward.high.max()))
        self.prior = prior_of(env, bounds, self.horizon, strength)
        self.single_observation_space = spaces.Dict(
            {
                "arm": single["arm"],
                "step": single["step"],
                "posterior": spaces.Box(
                    -np.inf, np.inf, (n, *posterior_space(m).shape), np.float32
                ),
            }
        )
        self.observation_space = batch_space(self.single_observation_space, b)
        arms = spaces.MultiDiscrete(np.full(n, m))
        self.single_action_space = arms
        self.action_space = batch_space(arms, b)
        self.graph = broadcast_graph(env)  # per-sender statistics: O(B N M) a step
        verify = None if self.backend.is_numpy else False  # on a device: by construction
        self.state = PosteriorState(self.backend, (b, n, m), self.prior, self.graph, verify)
        self.message_dim = 0

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the envs and every agent's statistics."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self.state.reset()
        return self._observe(obs), self._infos(infos)

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Every agent pulls ``arms[b, i]`` and sends its counts and sums."""
        if isinstance(actions, dict):
            actions = actions.get("arm")
        if messages is not None:
            raise ValueError("VecTeamPosterior sends the agents' messages itself: pass arms")
        resets = self.needs_reset
        sent = self.state.message()
        obs, rewards, terms, truncs, infos = self.env.step(actions, sent)  # type: ignore[call-arg]
        state = self.state
        if resets:
            state.reset()
        else:
            if self._private:
                state.set_private(obs["counts"], obs["private_means"])
            else:
                state.fold(obs["arm"], obs["reward"][..., 0])
            state.receive(obs["messages"][:, None], obs["mask"], self.t)
        return self._observe(obs), rewards, terms, truncs, self._infos(infos)

    def _observe(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {"arm": obs["arm"], "posterior": self.state.features(self.t), "step": obs["step"]}

    def _infos(self, infos: dict[str, Any]) -> dict[str, Any]:
        return {**infos, "rejected_messages": self.backend.copy(self.state.rejected)}


__all__ = ["VecTeamPosterior"]
