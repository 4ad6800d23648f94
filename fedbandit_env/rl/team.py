"""A trained model as a Team, evaluated like any reference policy."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.policies import Team
from fedbandit_env.rl.common import batch_observations, scale_box
from fedbandit_env.type_aliases import Action, AgentID, Observation, SeedLike
from fedbandit_env.wrappers.arm_actions import MessageFn, arm_space, pack
from fedbandit_env.wrappers.flatten import flat_box


class Predictor(Protocol):
    """Anything with SB3's ``predict(observation, deterministic=...) -> (action, state)``."""

    def predict(self, observation: Any, deterministic: bool = ...) -> tuple[Any, Any]:
        """Actions for a batch of observations."""
        ...


class ModelTeam(Team):
    """Every agent acts with one model (shared parameters), on its own observation,
    flattened as :class:`~fedbandit_env.rl.AgentVecEnv` flattens it for training.

    Args:
        model: A trained model (e.g. ``stable_baselines3.PPO``) or any :class:`Predictor`.
        name: Label in result tables.
        deterministic: Greedy actions (default) or sampled ones.
        flatten: Must match how the model was trained.
        message_fn: Each agent's message when the env carries messages (default zeros).
        scale: Scale observations as the model was trained (``AgentVecEnv(scale=...)``).

    Example:
        >>> from fedbandit_env import federated_mab_v0
        >>> class Always1:
        ...     def predict(self, obs, deterministic=True):
        ...         return np.ones(len(obs), dtype=int), None
        >>> env = federated_mab_v0.parallel_env(n_agents=2, n_arms=3, horizon=2)
        >>> obs, _ = env.reset(seed=0)
        >>> team = ModelTeam(Always1()); team.reset(env)
        >>> team.act(obs)
        {'agent_0': 1, 'agent_1': 1}
    """

    def __init__(
        self,
        model: Predictor,
        name: str = "model",
        deterministic: bool = True,
        flatten: bool = True,
        message_fn: MessageFn | None = None,
        scale: bool = False,
    ) -> None:
        if not callable(getattr(model, "predict", None)):
            raise TypeError(f"model must have a predict method, got {type(model).__name__}")
        self.model, self.name = model, name
        self.deterministic, self.flatten, self.message_fn = deterministic, flatten, message_fn
        self.scale = scale
        # an LSTM policy (sb3-contrib's RecurrentPPO) carries its state between steps
        self._recurrent = hasattr(getattr(model, "policy", None), "lstm_actor")
        self._scaling: tuple[np.ndarray, np.ndarray] | None = None
        self._inner: spaces.Space[Any] | None = None
        self._message_dim = 0

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Read the env's spaces (the model itself keeps no episode state)."""
        first = env.possible_agents[0]
        self._inner = env.observation_space(first)
        self._state: Any = None  # a recurrent model's memory, per agent
        self._starts = np.ones(len(env.possible_agents), dtype=bool)
        if self.scale and self.flatten:
            self._scaling = scale_box(flat_box(self._inner))
        _, self._message_dim = arm_space(env, first)

    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """One batched ``predict`` over the live agents."""
        if self._inner is None:
            raise RuntimeError("act() before reset(env)")
        agents = list(observations)
        batch = batch_observations(self._inner, observations, agents, self.flatten, self._scaling)
        if self._recurrent:
            recurrent: Any = self.model  # sb3-contrib's predict also takes the memory
            arms, self._state = recurrent.predict(
                batch,
                state=self._state,
                episode_start=self._starts,
                deterministic=self.deterministic,
            )
            self._starts = np.zeros(len(agents), dtype=bool)
        else:
            arms, _ = self.model.predict(batch, deterministic=self.deterministic)
        arms = np.asarray(arms).reshape(-1)
        return {
            a: pack(arms[i], a, observations[a], self._message_dim, self.message_fn)
            for i, a in enumerate(agents)
        }
