"""A learned Thompson sampler on the team posterior
(:class:`~fedbandit_env.wrappers.TeamPosterior`): the posterior net.

Every arm is scored by one network shared over arms (a Deep Sets network, as
:class:`~fedbandit_env.rl.arm_policy.ArmScoringPolicy`), on the team posterior's per-arm
features (``POSTERIOR_FEATURES``: the posterior's z-score, mean and spread, pooled and own
counts, the agent's own mean and how far it lies from the team's, ``log(1 + t)`` and the
share of the team heard). Its output is not a softmax but the mean and spread of a
normal score per arm, as corrections of the posterior's own (:mod:`fedbandit_env.rl.posterior_net`
writes the formula): the agent draws one score per arm and pulls the best, so the
untrained network *is* Thompson sampling on the averaged posterior, and what it learns
is how far to move each arm's score and how widely to draw it, from the arm's
statistics. A *reading*: the issue's learner is an MLP scoring arms from these features;
a network that outputs the terms of an index is the structure meta-learned bandit
policies use (Boutilier et al. 2020, Kveton et al. 2020), and the one whose behaviour
carries to longer horizons (the corrections scale with the posterior's spread).

For PPO the action is the vector of drawn scores ``u`` (``M`` numbers; the env sees its
argmax), whose log-density under the policy is
``sum_a log N(u_a; mean_a, sd_a)``: a likelihood ratio PPO can clip. Only the batched
trainer (:mod:`fedbandit_env.rl.batched_ppo`) trains it; SB3's ``predict`` and the
evaluation paths draw the scores with the trial's normals (:meth:`PosteriorArmPolicy.draw`).

The critic reads the arms' mean embedding. Relabelling the arms permutes the scores and
leaves the value unchanged, and the same weights run on any number of arms and at any
horizon (no input is bounded by ``T``).

:func:`~fedbandit_env.rl.posterior_net.posterior_scores` is the network's forward pass in
NumPy (the shipped learned references, :mod:`baselines.learned`, evaluate without
torch); a test holds it to the torch module's (:func:`export_weights` gives its arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from fedbandit_env.rl.arm_policy import Tanh, check_arms
from fedbandit_env.rl.posterior_net import FEATURE_SCALES, LOG_SPREAD, MEAN, STD


def posterior_layout(space: spaces.Space[Any]) -> dict[str, Any]:
    """Where ``posterior`` lies in an agent's flat observation (saved with the model).

    Raises:
        ValueError: If the observation has no ``posterior`` entry (add ``TeamPosterior``).

    Examples:
        >>> from fedbandit_env.wrappers.team_posterior import posterior_space
        >>> sp = spaces.Dict({"arm": spaces.Discrete(3), "posterior": posterior_space(3),
        ...                   "step": spaces.Box(0, 200, (1,))})
        >>> layout = posterior_layout(sp)
        >>> layout["start"], layout["n_arms"], layout["features"], layout["step"]
        (3, 3, 10, 33)
    """
    if not isinstance(space, spaces.Dict) or "posterior" not in space.spaces:
        keys = sorted(space.spaces) if isinstance(space, spaces.Dict) else space
        raise ValueError(
            f"the posterior net reads the 'posterior' entry of TeamPosterior, got {keys}"
        )
    starts, start = {}, 0
    for key, sub in space.spaces.items():  # gymnasium flattens a Dict in this order
        starts[key] = start
        start += int(spaces.flatdim(sub))
    shape = space.spaces["posterior"].shape
    assert shape is not None
    layout: dict[str, Any] = {
        "start": starts["posterior"],
        "n_arms": int(shape[0]),
        "features": int(shape[1]),
    }
    step = space.spaces.get("step")
    if isinstance(step, spaces.Box):  # the critic reads t / T (training only)
        layout.update(step=starts["step"], horizon=float(np.asarray(step.high).reshape(-1)[0]))
    return layout


class PosteriorFeatures(BaseFeaturesExtractor):
    """Every arm's embedding, with the posterior's mean and standard deviation kept beside
    it for the score head: ``(batch, n_arms * (hidden + 2))``.

    Args:
        observation_space: The flat ``Box`` SB3 passes.
        layout: :func:`posterior_layout` of the agent's Dict observation.
        hidden: Width of every arm's embedding.

    Examples:
        >>> f = PosteriorFeatures(spaces.Box(-1, 1, (33,)), {"start": 3, "n_arms": 3,
        ...                       "features": 10}, hidden=8)
        >>> f(th.zeros(2, 33)).shape
        torch.Size([2, 30])
    """

    scales: th.Tensor

    def __init__(self, observation_space: spaces.Box, layout: dict[str, Any], hidden: int = 32):
        m, k = int(layout["n_arms"]), int(layout["features"])
        super().__init__(observation_space, features_dim=m * (hidden + 2))
        self.layout, self.n_arms, self.hidden, self.n_features = layout, m, hidden, k
        self.register_buffer("scales", th.tensor(FEATURE_SCALES[:k], dtype=th.float32))
        self.embed = nn.Sequential(nn.Linear(k, hidden), Tanh(), nn.Linear(hidden, hidden), Tanh())

    def arm_inputs(self, obs: th.Tensor) -> th.Tensor:
        """The ``(batch, n_arms, F)`` posterior features, unscaled."""
        start = int(self.layout["start"])
        block = obs[:, start : start + self.n_arms * self.n_features]
        return block.reshape(-1, self.n_arms, self.n_features)

    def parts(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Every arm's embedding ``(batch, M, hidden)`` and the posterior's mean and
        standard deviation ``(batch, M)`` (the heads' inputs, without a copy into one
        latent)."""
        x = self.arm_inputs(obs)
        return self.embed(x * self.scales), x[..., MEAN], x[..., STD]

    def progress(self, obs: th.Tensor) -> th.Tensor:
        """``t / T`` ``(batch, 1)`` for the critic (0 where the layout has no step)."""
        if "step" not in self.layout:
            return obs.new_zeros((obs.shape[0], 1))
        at = int(self.layout["step"])
        return obs[:, at : at + 1] / float(self.layout["horizon"])

    def forward(self, obs: th.Tensor) -> th.Tensor:
        """Embed every arm; append the posterior's mean and standard deviation."""
        h, m, s = self.parts(obs)
        return th.cat([h, m[..., None], s[..., None]], dim=-1).flatten(1)


class ScoreHead(nn.Module):
    """Per arm, the normal score's mean and spread (:mod:`fedbandit_env.rl.posterior_net`):
    ``latent (batch, M (hidden + 2)) -> (mean, sd)``, each ``(batch, M)``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.shift = nn.Linear(hidden, 1)
        self.spread = nn.Linear(hidden, 1)
        self.b0 = nn.Parameter(th.zeros(()))
        self.c0 = nn.Parameter(th.zeros(()))

    def forward(self, latent: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        per_arm = latent.reshape(latent.shape[0], -1, self.hidden + 2)
        return self.scores(per_arm[..., : self.hidden], per_arm[..., -2], per_arm[..., -1])

    def scores(self, h: th.Tensor, m: th.Tensor, s: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """The mean and spread from the embedding ``h`` and the posterior's ``m``, ``s``."""
        shift = self.b0 + self.shift(h).squeeze(-1)
        spread = (self.c0 + self.spread(h).squeeze(-1)).clamp(*LOG_SPREAD)
        return m + s * shift, s * th.exp(spread)


class _PooledValue(nn.Module):
    """The critic on the arms' mean embedding and the episode's progress ``t / T`` (the
    regret still to come scales with the steps left: a critic may read the horizon, it
    is not used when the policy acts)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.net = nn.Sequential(nn.Linear(hidden + 1, hidden), Tanh(), nn.Linear(hidden, 1))

    def forward(self, latent: th.Tensor) -> th.Tensor:
        per_arm = latent.reshape(latent.shape[0], -1, self.hidden + 2)
        return self.pooled(per_arm[..., : self.hidden], latent.new_zeros((latent.shape[0], 1)))

    def pooled(self, h: th.Tensor, progress: th.Tensor) -> th.Tensor:
        """The value from the arms' embeddings ``(batch, M, hidden)`` and ``t / T``."""
        return self.net(th.cat([h.mean(dim=1), progress], dim=1))


def score_log_prob(u: th.Tensor, mean: th.Tensor, sd: th.Tensor) -> th.Tensor:
    """``sum_a log N(u_a; mean_a, sd_a)`` up to a constant, per row.

    Examples:
        >>> float(score_log_prob(th.zeros(1, 2), th.zeros(1, 2), th.ones(1, 2))[0])
        0.0
    """
    z = (u - mean) / sd
    return (-0.5 * z * z - th.log(sd)).sum(dim=-1)


class PosteriorArmPolicy(ActorCriticPolicy):
    """SB3's actor-critic with :class:`PosteriorFeatures`, a normal score per arm
    (:class:`ScoreHead`) and a pooled critic (module docstring).

    Args:
        observation_space: The flat observation box.
        action_space: ``Discrete(n_arms)``.
        lr_schedule: SB3's learning-rate schedule.
        layout: :func:`posterior_layout` of the agent's Dict observation.
        hidden: Embedding width.
        **kwargs: Passed to ``ActorCriticPolicy`` (``net_arch`` is fixed to ``[]``).

    Examples:
        >>> from stable_baselines3 import PPO
        >>> from fedbandit_env.rl import LearnerStack
        >>> from fedbandit_env.rl.vector_sb3 import VectorAgentVecEnv
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> stack = LearnerStack.for_setting("neighbours", posterior=True)
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=4, setting="neighbours", instances="train")
        >>> venv = VectorAgentVecEnv.for_stack(stack, s, copies=2)
        >>> kw = {"layout": posterior_layout(venv.dict_space)}
        >>> model = PPO(PosteriorArmPolicy, venv, n_steps=4, batch_size=8, policy_kwargs=kw)
        >>> mean, sd, values = model.policy.scores_and_values(th.zeros(5, 23))
        >>> mean.shape, values.shape
        (torch.Size([5, 2]), torch.Size([5]))
    """

    FIXED: tuple[str, ...] = ("net_arch", "features_extractor_class", "features_extractor_kwargs")

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        lr_schedule: Any,
        layout: dict[str, Any] | None = None,
        hidden: int = 32,
        **kwargs: Any,
    ) -> None:
        self.layout = check_arms("PosteriorArmPolicy", layout, action_space)
        self.hidden = int(hidden)
        kwargs.update(
            net_arch=[],
            features_extractor_class=PosteriorFeatures,
            features_extractor_kwargs={"layout": layout, "hidden": self.hidden},
        )
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        me: Any = self  # SB3 types its heads as Linear
        super()._build(lr_schedule)
        me.action_net = ScoreHead(self.hidden)
        me.value_net = _PooledValue(self.hidden)
        if self.ortho_init:  # the corrections start near 0 (Thompson sampling); a unit critic
            for layer in (me.action_net.shift, me.action_net.spread):
                layer.apply(lambda m: self.init_weights(m, gain=0.01))
            me.value_net.apply(lambda m: self.init_weights(m, gain=1.0))
        me.optimizer = me.optimizer_class(me.parameters(), lr=lr_schedule(1), **me.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()
        data.update(layout=self.layout, hidden=self.hidden)
        for key in self.FIXED:
            data.pop(key, None)
        return data

    def scores_and_values(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Every arm's score mean and spread ``(batch, M)`` and the value ``(batch,)``."""
        extractor: Any = self.features_extractor
        h, m, s = extractor.parts(obs)
        mean, sd = self.action_net.scores(h, m, s)  # type: ignore[operator]
        value = self.value_net.pooled(h, extractor.progress(obs))  # type: ignore[operator]
        return mean, sd, value.reshape(-1)

    def draw(self, obs: th.Tensor, normals: th.Tensor | None) -> th.Tensor:
        """Each row's arm: the best drawn score (``normals`` ``(batch, M)``), or the best
        mean (``None``: greedy)."""
        h, m, s = self.features_extractor.parts(obs)  # type: ignore[operator]
        mean, sd = self.action_net.scores(h, m, s)  # type: ignore[operator]
        return (mean if normals is None else mean + sd * normals).argmax(dim=1)

    def _predict(self, observation: Any, deterministic: bool = False) -> th.Tensor:
        """SB3's ``predict``: the best mean, or the best score drawn with torch's normals."""
        normals = None
        if not deterministic:
            normals = th.randn((observation.shape[0], int(self.layout["n_arms"])),
                               device=observation.device)  # fmt: skip
        return self.draw(observation, normals)


def export_weights(policy: PosteriorArmPolicy) -> dict[str, np.ndarray]:
    """The actor's weights as NumPy arrays (float32) for
    :func:`~fedbandit_env.rl.posterior_net.posterior_scores`.

    Examples:
        >>> import inspect
        >>> "policy" in inspect.signature(export_weights).parameters
        True
    """
    f = policy.features_extractor
    assert isinstance(f, PosteriorFeatures)
    first: Any = f.embed[0]
    second: Any = f.embed[2]
    head = policy.action_net
    assert isinstance(head, ScoreHead)

    def arr(t: Any) -> np.ndarray:
        return np.asarray(t.detach().cpu().numpy(), dtype=np.float32)

    return {
        "scales": arr(f.scales),
        "w1": arr(first.weight).T.copy(),
        "b1": arr(first.bias),
        "w2": arr(second.weight).T.copy(),
        "b2": arr(second.bias),
        "wm": arr(head.shift.weight)[0],
        "bm": arr(head.shift.bias)[0],
        "ws": arr(head.spread.weight)[0],
        "bs": arr(head.spread.bias)[0],
        "b0": arr(head.b0),
        "c0": arr(head.c0),
    }


__all__ = [
    "PosteriorArmPolicy",
    "PosteriorFeatures",
    "ScoreHead",
    "export_weights",
    "posterior_layout",
    "score_log_prob",
]
