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


def action_probabilities(model: Predictor, batch: Any) -> np.ndarray | None:
    """The policy's probability of every arm for each row of ``batch`` (float64), from
    an actor-critic policy (SB3's PPO, A2C); ``None`` for a model without one (DQN, any
    bare ``predict``).

    SB3's ``MlpPolicy`` over a flat ``Box`` (a ``FlattenExtractor``, a policy network of
    ``Linear`` layers and ``Tanh`` or ``ReLU``, a categorical head) is run by
    :func:`mlp_actor`: torch's linear layers, NumPy's ``tanh`` and softmax (torch's
    one-thread ``tanh`` took 7.5x NumPy's on a 1000 x 64 batch here). Any other policy
    goes through its own ``get_distribution``. Both evaluation paths call this, so
    they draw from the same numbers.

    Examples:
        >>> class Bare:
        ...     def predict(self, obs, deterministic=True):
        ...         return np.zeros(len(obs), dtype=int), None
        >>> action_probabilities(Bare(), np.zeros((2, 3))) is None
        True
    """
    policy = getattr(model, "policy", None)
    if not callable(getattr(policy, "get_distribution", None)):
        return None
    import torch as th

    assert policy is not None
    layers = mlp_actor(policy)
    with th.no_grad():
        if layers is not None:
            return _run_mlp(layers, np.asarray(batch, dtype=np.float32))
        obs, _ = policy.obs_to_tensor(batch)
        probs = policy.get_distribution(obs).distribution.probs
    return np.asarray(probs.cpu().numpy(), dtype=np.float64)


def mlp_actor(policy: Any) -> list[tuple[str, Any]] | None:
    """The actor of an SB3 ``MlpPolicy`` as ``[("linear", module) | ("tanh", None) |
    ("relu", None), ...]`` ending in the action head, or ``None`` for any other policy
    (another extractor, activation or distribution).

    Examples:
        >>> mlp_actor(object()) is None
        True
    """
    try:
        from stable_baselines3.common.distributions import CategoricalDistribution
        from stable_baselines3.common.policies import ActorCriticPolicy
        from stable_baselines3.common.torch_layers import FlattenExtractor
        from torch import nn
    except ImportError:  # pragma: no cover - SB3 is a dependency
        return None
    if type(policy) is not ActorCriticPolicy or not isinstance(
        policy.action_dist, CategoricalDistribution
    ):
        return None
    if type(policy.pi_features_extractor) is not FlattenExtractor:
        return None
    out: list[tuple[str, Any]] = []
    for module in [*policy.mlp_extractor.policy_net, policy.action_net]:
        if type(module) is nn.Linear:
            out.append(("linear", module))
        elif type(module) is nn.Tanh:
            out.append(("tanh", None))
        elif type(module) is nn.ReLU:
            out.append(("relu", None))
        else:
            return None
    return out


def _run_mlp(layers: list[tuple[str, Any]], batch: np.ndarray) -> np.ndarray:
    """:func:`mlp_actor`'s layers on a float32 batch; the softmax of the last, float64."""
    import torch as th
    import torch.nn.functional as F

    x = np.ascontiguousarray(batch.reshape(len(batch), -1))
    for kind, module in layers:
        if kind == "linear":
            x = F.linear(th.from_numpy(x), module.weight, module.bias).numpy()
        elif kind == "tanh":
            np.tanh(x, out=x)
        else:
            np.maximum(x, 0.0, out=x)
    logits = x.astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    return logits


def is_recurrent(model: Any) -> bool:
    """Whether ``model`` carries a memory between steps (sb3-contrib's ``RecurrentPPO``,
    whose policy has an ``lstm_actor``).

    Examples:
        >>> is_recurrent(object())
        False
    """
    return hasattr(getattr(model, "policy", None), "lstm_actor")


def recurrent_probabilities(model: Any, batch: Any, state: Any) -> tuple[np.ndarray, Any]:
    """A recurrent model's probability of every arm for each row of ``batch`` (float64)
    and its memory after the step; ``state`` is the memory before it (``None``: zeros,
    an episode's start). Both evaluation paths call this and draw with
    :func:`draw_arms` from the trial's model stream, as they do for feedforward models.

    Examples:
        >>> from fedbandit_env.rl.recurrent_arm import RecurrentArmPolicy
        >>> from fedbandit_env.rl.arm_policy import arm_layout
        >>> from fedbandit_env.wrappers.flatten import flat_box
        >>> sp = spaces.Dict({"arm": spaces.Discrete(2), "counts": spaces.Box(0, 9, (2,)),
        ...                   "means": spaces.Box(0, 1, (2,)), "step": spaces.Box(0, 9, (1,))})
        >>> class Model:
        ...     policy = RecurrentArmPolicy(flat_box(sp), spaces.Discrete(2), lambda _: 1e-3,
        ...                                 layout=arm_layout(sp, scale=False), hidden=4)
        >>> probs, (h, c) = recurrent_probabilities(Model(), np.zeros((3, 7)), None)
        >>> probs.shape, h.shape
        ((3, 2), torch.Size([1, 3, 8]))
    """
    import torch as th

    policy = model.policy
    obs, _ = policy.obs_to_tensor(batch)
    rows = int(obs.shape[0])
    if state is None:
        layers, _, size = policy.lstm_hidden_state_shape
        state = (th.zeros((layers, rows, size)), th.zeros((layers, rows, size)))
    with th.no_grad():
        distribution, state = policy.get_distribution(obs, state, th.zeros(rows))
    return np.asarray(distribution.distribution.probs.cpu().numpy(), dtype=np.float64), state


def score_sampler(model: Any) -> bool:
    """Whether ``model``'s policy draws a score per arm and pulls the best (the posterior
    net, :class:`~fedbandit_env.rl.posterior_policy.PosteriorArmPolicy`): its arms come
    from normals, not from action probabilities.

    Examples:
        >>> score_sampler(object())
        False
    """
    return callable(getattr(getattr(model, "policy", None), "draw", None))


def score_arms(model: Any) -> int:
    """The number of arms a score sampler scores (its layout's).

    Examples:
        >>> class P:
        ...     layout = {"n_arms": 4}
        >>> class M:
        ...     policy = P()
        >>> score_arms(M())
        4
    """
    return int(model.policy.layout["n_arms"])


def draw_scores(model: Any, batch: Any, normals: np.ndarray | None) -> np.ndarray:
    """A score sampler's arm for each row of ``batch``: the best of its scores drawn with
    ``normals`` (``(rows, M)``, from the trial's model stream), or its best mean
    (``None``).

    Examples:
        >>> import inspect
        >>> list(inspect.signature(draw_scores).parameters)
        ['model', 'batch', 'normals']
    """
    import torch as th

    policy = model.policy
    obs = th.as_tensor(np.asarray(batch, dtype=np.float32).reshape(len(batch), -1))
    noise = None if normals is None else th.as_tensor(np.asarray(normals, dtype=np.float32))
    with th.no_grad():
        arms = policy.draw(obs, noise)
    return np.asarray(arms.cpu().numpy(), dtype=np.int64)


def draw_arms(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One arm per row of ``probs`` by inversion of its CDF at ``u`` (uniforms in
    ``[0, 1)``, one per row; the CDF's last entry stands for 1, so rows need not sum to
    1 exactly).

    Examples:
        >>> draw_arms(np.array([[0.5, 0.5], [0.1, 0.9]]), np.array([0.7, 0.05])).tolist()
        [1, 0]
    """
    cdf = np.cumsum(probs, axis=1)
    scaled = u * cdf[:, -1]
    return np.minimum((cdf <= scaled[:, None]).sum(axis=1), probs.shape[1] - 1)


def model_arms(
    model: Predictor, batch: Any, deterministic: bool, rng: np.random.Generator
) -> np.ndarray:
    """One arm per row of ``batch``: the most likely arm (``deterministic``), or one drawn
    from the policy's action distribution with ``rng`` (so seeded trials replay).

    Sampling reads the probabilities of an actor-critic policy
    (:func:`action_probabilities`) and draws with one uniform per row
    (:func:`draw_arms`); a model without them (DQN, whose policy is the argmax of its
    Q-values, or any bare ``predict``) acts through ``predict(deterministic=True)``.

    Examples:
        >>> class Fixed:
        ...     def predict(self, obs, deterministic=True):
        ...         return np.zeros(len(obs), dtype=int), None
        >>> model_arms(Fixed(), np.zeros((2, 3)), False, np.random.default_rng(0)).tolist()
        [0, 0]
    """
    if score_sampler(model):  # the posterior net: a normal score per arm, the best pulled
        rows = len(batch)
        normals = None if deterministic else rng.standard_normal((rows, score_arms(model)))
        return draw_scores(model, batch, normals)
    probs = None if deterministic else action_probabilities(model, batch)
    if probs is None:
        arms, _ = model.predict(batch, deterministic=True)
        return np.asarray(arms).reshape(-1)
    return draw_arms(probs, rng.random(len(probs)))


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
        self._recurrent = is_recurrent(model)
        self._scaling: tuple[np.ndarray, np.ndarray] | None = None
        self._inner: spaces.Space[Any] | None = None
        self._message_dim = 0
        self._rng = np.random.default_rng()

    def reset(self, env: ParallelEnv[Any, Any, Any], seed: SeedLike = None) -> None:
        """Read the env's spaces and seed the action draws; a recurrent model's memory
        starts at zeros."""
        self._rng = model_generator(seed)
        first = env.possible_agents[0]
        self._inner = env.observation_space(first)
        self._state: Any = None  # a recurrent model's memory, per agent
        if self.scale and self.flatten:
            self._scaling = scale_box(flat_box(self._inner))
        _, self._message_dim = arm_space(env, first)

    def act(self, observations: dict[AgentID, Observation]) -> dict[AgentID, Action]:
        """One batched ``predict`` over the live agents."""
        if self._inner is None:
            raise RuntimeError("act() before reset(env)")
        agents = list(observations)
        batch = batch_observations(self._inner, observations, agents, self.flatten, self._scaling)
        if self._recurrent:  # the memory's step, then the same draw as any model's
            probs, self._state = recurrent_probabilities(self.model, batch, self._state)
            arms = (
                probs.argmax(axis=1)
                if self.deterministic
                else draw_arms(probs, self._rng.random(len(probs)))
            )
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
