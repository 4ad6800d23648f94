"""A trained model as a Team, evaluated like any reference policy."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.policies import Team
from fedbandit_env.rl.common import batch_observations, scale_box
from fedbandit_env.seeding import model_generator
from fedbandit_env.type_aliases import Action, AgentID, Observation, SeedLike
from fedbandit_env.wrappers.arm_actions import MessageFn, arm_space, pack
from fedbandit_env.wrappers.flatten import flat_box


class Predictor(Protocol):
    """Anything with SB3's ``predict(observation, deterministic=...) -> (action, state)``."""

    def predict(self, observation: Any, deterministic: bool = ...) -> tuple[Any, Any]:
        """Actions for a batch of observations."""
        ...


def model_arms(
    model: Predictor, batch: Any, deterministic: bool, rng: np.random.Generator
) -> np.ndarray:
    """One arm per row of ``batch``: the most likely arm (``deterministic``), or one drawn
    from the policy's action distribution with ``rng`` (so seeded trials replay).

    Sampling reads the probabilities of an actor-critic policy (SB3's PPO, A2C: their
    ``policy.get_distribution``); a model without one (DQN, whose policy is the argmax
    of its Q-values, or any bare ``predict``) acts through ``predict(deterministic=True)``.

    Examples:
        >>> class Fixed:
        ...     def predict(self, obs, deterministic=True):
        ...         return np.zeros(len(obs), dtype=int), None
        >>> model_arms(Fixed(), np.zeros((2, 3)), False, np.random.default_rng(0)).tolist()
        [0, 0]
    """
    policy = getattr(model, "policy", None)
    if deterministic or not callable(getattr(policy, "get_distribution", None)):
        arms, _ = model.predict(batch, deterministic=True)
        return np.asarray(arms).reshape(-1)
    import torch as th

    assert policy is not None
    obs, _ = policy.obs_to_tensor(batch)
    with th.no_grad():
        probs = policy.get_distribution(obs).distribution.probs.cpu().numpy().astype(np.float64)
    cdf = np.cumsum(probs, axis=1)
    u = rng.random(len(cdf)) * cdf[:, -1]
    return np.minimum((cdf <= u[:, None]).sum(axis=1), probs.shape[1] - 1)


class ModelTeam(Team):
    """Every agent acts with one model (shared parameters), on its own observation,
    flattened as :class:`~fedbandit_env.rl.AgentVecEnv` flattens it for training.

    Args:
        model: A trained model (e.g. ``stable_baselines3.PPO``) or any :class:`Predictor`.
        name: Label in result tables.
        deterministic: The most likely arm, or (default) one drawn from the policy's
            action distribution with the team's seeded generator (:func:`model_arms`).
            A PPO or A2C policy is a *stochastic* policy: its draws are the exploration
            it was trained with, and its greedy arm can be far worse (measured: a policy
            at 1.5 per-agent regret sampled scores 12.3 greedy, every agent committing
            to the same arm; see docs/guides/learned.md).
        flatten: Must match how the model was trained.
        message_fn: Each agent's message when the env carries messages (default zeros).
        scale: Scale observations as the model was trained (``AgentVecEnv(scale=...)``).

    Examples:
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
        deterministic: bool = False,
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
        self._rng = np.random.default_rng()

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Read the env's spaces and seed the action draws (the model keeps no episode
        state). A recurrent model samples inside sb3-contrib's ``predict``, through
        torch's global generator: that generator is seeded here from the same stream, so
        its trials replay too."""
        self._rng = model_generator(seed)
        if self._recurrent and not self.deterministic and seed is not None:
            import torch as th

            th.manual_seed(int(self._rng.integers(2**62)))
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
            arms = model_arms(self.model, batch, self.deterministic, self._rng)
        arms = np.asarray(arms).reshape(-1)
        return {
            a: pack(arms[i], a, observations[a], self._message_dim, self.message_fn)
            for i, a in enumerate(agents)
        }


class LearnerAmong(Team):
    """A trained model in some seats, a reference team in the others: the evaluation
    counterpart of :class:`~fedbandit_env.rl.SingleAgentEnv` with ``speak="team"``.

    The reference team acts for every agent; in each of ``seats`` its arm is replaced by
    the model's, while its message (the team's member for that seat, whose state follows
    the seat's own pulls and rewards) is sent. A model trained as one learner among
    Gossip_UCB agents is evaluated so, on held-out instances, and may be placed in several
    seats to see how a team copes with more learners.

    Args:
        model: A trained model (SB3's ``predict`` on the flat observation).
        team: The reference team (e.g. ``make("gossip_ucb")``).
        seats: The agents the model acts for.
        name: Label in result tables.
        deterministic: The most likely arm, or (default) a seeded draw
            (:func:`model_arms`).

    Examples:
        >>> from fedbandit_env.registry import make
        >>> from fedbandit_env.rl.single_agent import make_single_agent
        >>> env = make_single_agent("gossip_ucb", "neighbours", n_agents=3, n_arms=3).env
        >>> class Always2:
        ...     def predict(self, obs, deterministic=True):
        ...         return np.full(len(obs), 2), None
        >>> team = LearnerAmong(Always2(), make("gossip_ucb"), seats=["agent_1"])
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> actions = team.act(obs)
        >>> actions["agent_1"]["arm"], actions["agent_1"]["message"].shape
        (2, (6,))
    """

    def __init__(
        self,
        model: Predictor,
        team: Team,
        seats: list[AgentID] | tuple[AgentID, ...] = ("agent_0",),
        name: str | None = None,
        deterministic: bool = False,
    ) -> None:
        if not callable(getattr(model, "predict", None)):
            raise TypeError(f"model must have a predict method, got {type(model).__name__}")
        if not isinstance(team, Team):
            raise TypeError(f"team must be a Team, got {type(team).__name__}")
        self.model, self.team, self.seats = model, team, list(seats)
        self.deterministic = deterministic
        self.name = name or f"model@{len(self.seats)}+{team.name}"
        self._inner: spaces.Space[Any] | None = None

    def requirements(self, n_agents: int, n_arms: int) -> Any:
        """The reference team's (the seats speak its protocol)."""
        return self.team.requirements(n_agents, n_arms)

    def own_privacy(self, n_agents: int, n_arms: int) -> float | None:
        """The reference team's own mechanism, if any."""
        return self.team.own_privacy(n_agents, n_arms)

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Reset the reference team (its members for the seats included)."""
        missing = [s for s in self.seats if s not in env.possible_agents]
        if missing:
            raise ValueError(f"seats {missing} are not agents of the env")
        self._inner = env.observation_space(self.seats[0])
        self.team.reset(env, seed=seed)
        self._rng = model_generator(seed)

    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """The team's actions, with the model's arms in the live seats."""
        if self._inner is None:
            raise RuntimeError("act() before reset(env)")
        actions = self.team.act(observations)
        seats = [s for s in self.seats if s in observations]
        if not seats:
            return actions
        batch = batch_observations(self._inner, observations, seats, True, None)
        arms = model_arms(self.model, batch, self.deterministic, self._rng)
        for seat, arm in zip(seats, np.asarray(arms).reshape(-1), strict=True):
            spoken = actions[seat]
            if isinstance(spoken, dict):
                actions[seat] = {**spoken, "arm": int(arm)}
            else:
                actions[seat] = int(arm)
        return actions
