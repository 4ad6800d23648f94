"""A permutation-equivariant actor-critic: every arm scored by one shared network.

An MLP on the flat observation sees arm 3 as input columns 3, 8, 13, ... and must learn
the same rule separately for every arm; relabelling the arms of an instance changes what
it does. A bandit strategy does not depend on the arms' labels: UCB scores every arm with
one formula of that arm's statistics. :class:`ArmScoringPolicy` builds that in (a Deep
Sets network, Zaheer et al. 2017):

- :class:`ArmFeatures` reads, for every arm ``a``, the agent's statistics of ``a`` (its
  mean, its count, the exploration terms ``1/sqrt(1+n_a)`` and ``sqrt(log(1+t)/(1+n_a))``,
  whether ``a`` was the last pull, how far its mean is below the best one; with
  :class:`~fedbandit_env.wrappers.HorizonFree` its pull share ``n_a/t`` for the count and
  ``log(1+t)/10`` for ``t/T``, so that nothing depends on the horizon) and, where the
  setting carries messages, the neighbours' messages about ``a`` (their mean, min and max
  over this step's senders - over every neighbour heard so far, with their latest
  messages, when ``HeldMessages`` is in the stack - and the gap to the best arm by that
  mean; a message of ``k M`` numbers is read as ``k`` per-arm blocks, e.g. Gossip_UCB's
  counts and estimates, each summarised so); the step and the last reward are appended
  to every arm;
- one MLP embeds each arm's features; the mean of the embeddings over arms (what the
  other arms look like) is appended and mixed by a second shared layer;
- the actor's logit of arm ``a`` is one shared linear read-out of arm ``a``'s embedding;
  the critic reads the mean embedding.

Relabelling the arms therefore permutes the logits and leaves the value unchanged (tested),
and the same weights run on any number of arms. The features are computed from the raw
statistics (the scaling of :class:`~fedbandit_env.rl.AgentVecEnv` is undone inside), so
the exploration terms are exact. Hand-derived features are a choice: they are the inputs
of the reference index policies (UCB1's ``sqrt(log t / n)``), and the network still has to
learn how to weigh them against the neighbours' information.

For PPO and A2C (``fedbandit train ppo --policy arms``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from fedbandit_env.rl.common import scale_box
from fedbandit_env.wrappers.flatten import flat_box

POLICIES = ("mlp", "arms", "posterior")
"""``--net`` choices: SB3's ``MlpPolicy``, :class:`ArmScoringPolicy`, or the posterior
net (:class:`~fedbandit_env.rl.posterior_policy.PosteriorArmPolicy`, on ``TeamPosterior``)."""


def arm_layout(space: spaces.Space[Any], scale: bool) -> dict[str, Any]:
    """Where each entry of an agent's observation sits in its flat (scaled) vector: what
    :class:`ArmFeatures` needs, as plain lists (saved inside the model's zip).

    Raises:
        ValueError: If the observation has no per-arm ``means`` / ``private_means`` and
            ``counts`` (add ``LocalStatistics`` or ``PrivateRewards``).

    Examples:
        >>> sp = spaces.Dict({"arm": spaces.Discrete(3), "counts": spaces.Box(0, 9, (3,)),
        ...                   "means": spaces.Box(0, 1, (3,)), "reward": spaces.Box(0, 1, (1,)),
        ...                   "step": spaces.Box(0, 9, (1,))})
        >>> layout = arm_layout(sp, scale=True)
        >>> layout["slices"]["counts"], layout["n_arms"], layout["horizon"]
        ([3, 6], 3, 9.0)
    """
    if not isinstance(space, spaces.Dict):
        raise ValueError(f"the arms policy reads a Dict observation, got {space!r}")
    mean_key = "private_means" if "private_means" in space.spaces else "means"
    horizon_free = "shares" in space.spaces  # HorizonFree: log_step, shares, bonus
    needed = ("shares", "bonus", "log_step") if horizon_free else ("counts", "step")
    for key in (mean_key, "arm", *needed):
        if key not in space.spaces:
            raise ValueError(
                f"the arms policy needs {key!r} in the observation (the agent's statistics: "
                f"LocalStatistics or PrivateRewards), got keys {sorted(space.spaces)}"
            )
    slices, start = {}, 0
    for key, sub in space.spaces.items():  # gymnasium flattens a Dict in this order
        size = int(spaces.flatdim(sub))
        slices[key] = [start, start + size]
        start += size
    offset, factor = scale_box(flat_box(space)) if scale else (np.zeros(start), np.ones(start))
    step_space = space.spaces.get("step")
    horizon = float(np.asarray(getattr(step_space, "high", 1.0)).reshape(-1)[0])
    held = "held" in space.spaces  # HeldMessages: every neighbour's latest message
    message_key, mask_key = ("held", "heard") if held else ("messages", "mask")
    messages = space.spaces.get(message_key)
    n_arms = int(spaces.flatdim(space.spaces["arm"]))
    channels = n_slots = 0
    if messages is not None and messages.shape and len(messages.shape) == 2:
        n_slots, width = (int(v) for v in messages.shape)
        if width % n_arms:
            raise ValueError(
                f"the arms policy reads messages of k * {n_arms} numbers (k per-arm blocks), "
                f"got {width} per message"
            )
        channels = width // n_arms
    return {
        "slices": slices,
        "mean_key": mean_key,
        "n_arms": n_arms,
        "n_slots": n_slots if channels else 0,
        "channels": channels,
        "message_key": message_key,
        "mask_key": mask_key,
        "horizon": horizon if np.isfinite(horizon) and horizon > 0 else 1.0,
        "horizon_free": horizon_free,
        "offset": [float(v) for v in offset],
        "factor": [float(v) for v in factor],
    }


def arm_policy_kwargs(env: Any, hidden: int = 64) -> dict[str, Any]:
    """SB3's ``policy_kwargs`` for :class:`ArmScoringPolicy` on one of our adapters
    (:class:`~fedbandit_env.rl.AgentVecEnv`, :class:`~fedbandit_env.rl.SingleAgentEnv`,
    or a ``gymnasium.make`` of it).

    Examples:
        >>> import gymnasium as gym
        >>> import fedbandit_env
        >>> env = gym.make("fedbandit/FederatedMABSingle-v0", others="gossip_ucb",
        ...                setting="neighbours", n_agents=3, n_arms=3)
        >>> arm_policy_kwargs(env)["layout"]["channels"]  # Gossip_UCB's counts, estimates
        2
    """
    inner = getattr(env, "unwrapped", env)
    if not hasattr(inner, "dict_space"):
        raise TypeError(f"expected AgentVecEnv or SingleAgentEnv, got {type(env).__name__}")
    layout = arm_layout(inner.dict_space, bool(getattr(inner, "scaled", False)))
    return {"layout": layout, "hidden": hidden}


class Tanh(nn.Tanh):
    """``tanh``, computed as ``2 sigmoid(2 x) - 1`` when no gradient is taken.

    On one thread torch's ``tanh`` costs about six times its ``sigmoid`` (1.34 against
    0.22 ms on a 16,000 x 32 batch here), and the rollouts and evaluations of the arms
    network are forward passes without gradients: there the identity is used (the two
    agree to 2e-7); with gradients (PPO's update) torch's own ``tanh``, whose backward pass
    is the cheaper. A subclass of ``nn.Tanh``, so models saved with either load alike.

    Examples:
        >>> x = th.linspace(-4, 4, 9)
        >>> with th.no_grad():
        ...     fast = Tanh()(x)
        >>> bool(th.allclose(fast, th.tanh(x), atol=1e-6))
        True
    """

    def forward(self, x: th.Tensor) -> th.Tensor:
        if th.is_grad_enabled():
            return th.tanh(x)
        return th.sigmoid(2.0 * x).mul_(2.0).sub_(1.0)


class ArmFeatures(BaseFeaturesExtractor):
    """Per-arm features and their shared embedding: ``(batch, n_arms * hidden)``.

    Args:
        observation_space: The flat ``Box`` SB3 passes.
        layout: :func:`arm_layout` of the agent's Dict observation.
        hidden: Width of every arm's embedding.

    Examples:
        >>> sp = spaces.Dict({"arm": spaces.Discrete(3), "counts": spaces.Box(0, 9, (3,)),
        ...                   "means": spaces.Box(0, 1, (3,)), "step": spaces.Box(0, 9, (1,))})
        >>> f = ArmFeatures(flat_box(sp), arm_layout(sp, scale=False), hidden=8)
        >>> f(th.zeros(2, 10)).shape
        torch.Size([2, 24])
    """

    offset: th.Tensor
    factor: th.Tensor

    def __init__(self, observation_space: spaces.Box, layout: dict[str, Any], hidden: int = 64):
        n_arms = int(layout["n_arms"])
        super().__init__(observation_space, features_dim=n_arms * hidden)
        self.layout, self.n_arms, self.hidden = layout, n_arms, hidden
        self.channels = int(layout.get("channels", 1)) if layout["n_slots"] > 0 else 0
        self.register_buffer("offset", th.tensor(layout["offset"], dtype=th.float32))
        self.register_buffer("factor", th.tensor(layout["factor"], dtype=th.float32))
        n_in = 7 + 4 * self.channels + (1 if "reward" in layout["slices"] else 0)
        self.embed = nn.Sequential(nn.Linear(n_in, hidden), Tanh(), nn.Linear(hidden, hidden))
        self.mix = nn.Sequential(Tanh(), nn.Linear(2 * hidden, hidden), Tanh())
        self.n_in = n_in

    def _take(self, raw: th.Tensor, key: str) -> th.Tensor:
        start, stop = self.layout["slices"][key]
        return raw[:, start:stop]

    def arm_inputs(self, obs: th.Tensor) -> th.Tensor:
        """The ``(batch, n_arms, n_in)`` features of every arm (documented above)."""
        raw = (obs - self.offset) / self.factor  # undo AgentVecEnv's scaling
        means = self._take(raw, self.layout["mean_key"])
        last = self._take(raw, "arm")
        m = self.n_arms
        gap = means - means.max(dim=1, keepdim=True).values
        if self.layout.get("horizon_free"):  # the same columns, free of T
            log_t = self._take(raw, "log_step")[:, :1].clamp(min=0.0)
            shares = self._take(raw, "shares").clamp(min=0.0)
            counts = shares * th.expm1(log_t)
            bonus = self._take(raw, "bonus").clamp(min=0.0)
            width = th.rsqrt(1.0 + counts)
            cols = [means, shares, width, bonus, last, gap, (log_t / 10.0).expand(-1, m)]
        else:
            t = self._take(raw, "step")[:, :1].clamp(min=0.0)
            counts = self._take(raw, "counts").clamp(min=0.0)
            cols = [
                means,
                counts / self.layout["horizon"],
                th.rsqrt(1.0 + counts),
                th.sqrt(th.log1p(t) / (1.0 + counts)),
                last,
                gap,
                (t / self.layout["horizon"]).expand(-1, m),
            ]
        if self.channels:
            slots = self.layout["n_slots"]
            key, mask_key = (
                self.layout.get("message_key", "messages"),
                self.layout.get("mask_key", "mask"),
            )
            blocks = self._take(raw, key).reshape(-1, slots, self.channels, m)
            mask = (self._take(raw, mask_key) > 0.5).to(obs.dtype).unsqueeze(-1)  # senders
            senders = mask.sum(dim=1)  # (batch, 1)
            any_ = (senders > 0).to(obs.dtype)
            big = th.finfo(obs.dtype).max / 4
            for k in range(self.channels):  # e.g. Gossip_UCB: counts, then estimates
                msgs = blocks[:, :, k, :]
                nb_mean = (msgs * mask).sum(dim=1) / senders.clamp(min=1.0)
                nb_max = th.where(mask > 0, msgs, -big).max(dim=1).values * any_
                nb_min = th.where(mask > 0, msgs, big).min(dim=1).values * any_
                nb_gap = (nb_mean - nb_mean.max(dim=1, keepdim=True).values) * any_
                cols += [nb_mean, nb_max, nb_min, nb_gap]
        if "reward" in self.layout["slices"]:
            cols.append(self._take(raw, "reward")[:, :1].expand(-1, m))
        return th.stack(cols, dim=-1)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        """Embed every arm with the shared network, then mix in the mean embedding."""
        h = self.embed(self.arm_inputs(obs))  # (batch, arms, hidden)
        pooled = h.mean(dim=1, keepdim=True).expand_as(h)
        return self.mix(th.cat([h, pooled], dim=-1)).flatten(1)


class _ArmLogits(nn.Module):
    """One shared linear read-out per arm: ``(batch, arms * hidden) -> (batch, arms)``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.score = nn.Linear(hidden, 1)

    def forward(self, latent: th.Tensor) -> th.Tensor:
        return self.score(latent.reshape(latent.shape[0], -1, self.hidden)).squeeze(-1)


class _PooledValue(nn.Module):
    """The critic on the arms' mean embedding (invariant to relabelling the arms)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.net = nn.Sequential(nn.Linear(hidden, hidden), Tanh(), nn.Linear(hidden, 1))

    def forward(self, latent: th.Tensor) -> th.Tensor:
        return self.net(latent.reshape(latent.shape[0], -1, self.hidden).mean(dim=1))


def check_arms(policy: str, layout: dict[str, Any] | None, action_space: Any) -> dict[str, Any]:
    """``layout`` checked against the action space of an arms policy named ``policy``.

    Examples:
        >>> check_arms("P", {"n_arms": 3}, spaces.Discrete(3))["n_arms"]
        3
    """
    if layout is None:
        raise ValueError(f"{policy} needs layout=arm_layout(dict_space, scale)")
    if not isinstance(action_space, spaces.Discrete) or action_space.n != layout["n_arms"]:
        raise ValueError(f"expected Discrete({layout['n_arms']}) arms, got {action_space}")
    return layout


class ArmHeads:
    """The arms policies' heads, for a subclass of an SB3 actor-critic (feedforward or
    sb3-contrib's recurrent): the per-arm logits and the pooled critic built in place of
    SB3's, and the constructor parameters a saved model passes back (``layout``,
    ``hidden``; the network's shape is fixed by the class).

    Examples:
        >>> ArmHeads in ArmScoringPolicy.__mro__
        True
    """

    hidden: int
    layout: dict[str, Any]
    FIXED: tuple[str, ...] = ("net_arch", "features_extractor_class", "features_extractor_kwargs")

    def _build(self, lr_schedule: Any) -> None:
        me: Any = self
        super()._build(lr_schedule)  # type: ignore[misc]
        me.action_net = _ArmLogits(self.hidden)
        me.value_net = _PooledValue(self.hidden)
        if me.ortho_init:  # SB3's gains: a near-uniform first policy, unit-scale critic
            me.action_net.apply(lambda m: me.init_weights(m, gain=0.01))
            me.value_net.apply(lambda m: me.init_weights(m, gain=1.0))
        params = me.parameters()  # the optimizer must hold the new heads' weights
        me.optimizer = me.optimizer_class(params, lr=lr_schedule(1), **me.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()  # type: ignore[misc]
        data.update(layout=self.layout, hidden=self.hidden)
        for key in self.FIXED:
            data.pop(key, None)
        return data


class ArmScoringPolicy(ArmHeads, ActorCriticPolicy):
    """SB3's actor-critic with :class:`ArmFeatures`, per-arm logits and a pooled critic.

    Args:
        observation_space: The flat observation box.
        action_space: ``Discrete(n_arms)``.
        lr_schedule: SB3's learning-rate schedule.
        layout: :func:`arm_layout` of the agent's Dict observation.
        hidden: Embedding width.
        **kwargs: Passed to ``ActorCriticPolicy`` (``net_arch`` is fixed to ``[]``).

    Examples:
        >>> from stable_baselines3 import PPO
        >>> from fedbandit_env.rl import AgentVecEnv, LearnerStack
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> stack = LearnerStack.for_setting("local")
        >>> env = stack.make_env(Scenario(n_agents=2, n_arms=3, horizon=8, instances="train"))
        >>> kw = {"layout": arm_layout(env.observation_space("agent_0"), scale=True)}
        >>> venv = AgentVecEnv(env, scale=True)
        >>> model = PPO(ArmScoringPolicy, venv, n_steps=8, batch_size=16, policy_kwargs=kw)
        >>> model.policy.action_net(th.zeros(1, 3 * 64)).shape
        torch.Size([1, 3])
    """

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        lr_schedule: Any,
        layout: dict[str, Any] | None = None,
        hidden: int = 64,
        **kwargs: Any,
    ) -> None:
        self.layout = check_arms("ArmScoringPolicy", layout, action_space)
        self.hidden = hidden
        kwargs.update(
            net_arch=[],
            features_extractor_class=ArmFeatures,
            features_extractor_kwargs={"layout": layout, "hidden": hidden},
        )
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)


__all__ = [
    "POLICIES",
    "ArmFeatures",
    "ArmHeads",
    "ArmScoringPolicy",
    "arm_layout",
    "arm_policy_kwargs",
    "check_arms",
]
