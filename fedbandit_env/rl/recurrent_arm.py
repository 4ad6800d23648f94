"""A recurrent arm-scoring actor-critic: the arms network with a memory per arm (RL^2).

RL^2 (Duan et al. 2016, "RL^2: fast reinforcement learning via slow reinforcement
learning"; Wang et al. 2016, "Learning to reinforcement learn") trains a recurrent policy
across many tasks so that its hidden state learns *within* an episode: the outer loop
(PPO over train instances) learns a bandit algorithm, the inner loop (the recurrence over
an episode's steps) runs it. :class:`RecurrentArmPolicy` is that, kept
permutation-equivariant as :class:`~fedbandit_env.rl.arm_policy.ArmScoringPolicy` is:

- every step, :class:`~fedbandit_env.rl.arm_policy.ArmFeatures` embeds each arm's
  statistics and the neighbours' messages about it, mixed with the mean over arms (the
  same features as the feedforward net, including the last arm pulled and its reward,
  RL^2's inputs);
- one LSTM cell, shared by the arms (:class:`ArmLSTM`), carries a memory per arm across
  the episode's steps; its output is added to its input (a residual: at initialisation
  the network is close to the feedforward one, and the memory adds what the statistics
  of one step do not hold, e.g. how the neighbours' messages moved);
- each arm's logit is one shared linear read-out of its output; the critic reads their
  mean, through the same memory (its gradient trains the LSTM too).

Relabelling the arms permutes the logits, the value stays (tested). The class is an
sb3-contrib ``RecurrentActorCriticPolicy`` so that the saved model is a ``RecurrentPPO``
zip: ``fedbandit bench recurrent_ppo:PATH`` evaluates it, carrying each agent's memory
(:class:`~fedbandit_env.rl.team.ModelTeam`, or every trial at once on the vector env).
The memory of ``M`` arms of width ``h`` is presented to sb3-contrib as one LSTM state of
``M h`` numbers, so its ``predict(obs, state, episode_start)`` works unchanged.

Trained by :func:`fedbandit_env.rl.batched_ppo.train_batched` (``fedbandit train
recurrent_ppo --batched --net arms``): truncated backpropagation through each rollout of
25 steps, the memory carried between rollouts and zeroed at every episode's start.
"""

from __future__ import annotations

from typing import Any

import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from torch import nn

from fedbandit_env.rl.arm_policy import ArmFeatures, ArmHeads, check_arms


class ArmLSTM(nn.Module):
    """One LSTM shared by ``n_arms`` arms, shaped as an ``nn.LSTM`` of width
    ``n_arms * hidden`` (what sb3-contrib's sequence code reshapes by): inputs
    ``(steps, batch, n_arms * hidden)`` and states ``(1, batch, n_arms * hidden)``, each
    arm's slice run through the one cell, the output plus the input (a residual).

    Examples:
        >>> lstm = ArmLSTM(n_arms=3, hidden=4)
        >>> zeros = (th.zeros(1, 2, 12), th.zeros(1, 2, 12))
        >>> out, (h, c) = lstm(th.zeros(5, 2, 12), zeros)
        >>> out.shape, h.shape, lstm.input_size
        (torch.Size([5, 2, 12]), torch.Size([1, 2, 12]), 12)
    """

    def __init__(self, n_arms: int, hidden: int) -> None:
        super().__init__()
        self.n_arms, self.hidden = int(n_arms), int(hidden)
        self.input_size = self.hidden_size = self.n_arms * self.hidden
        self.num_layers = 1
        self.cell = nn.LSTM(self.hidden, self.hidden)

    def forward(
        self, x: th.Tensor, states: tuple[th.Tensor, th.Tensor]
    ) -> tuple[th.Tensor, tuple[th.Tensor, th.Tensor]]:
        """Run every arm's sequence through the shared cell (docstring above)."""
        steps, batch = x.shape[0], x.shape[1]
        m, h = self.n_arms, self.hidden
        arms = x.reshape(steps, batch * m, h)
        h0, c0 = (s.reshape(1, batch * m, h) for s in states)
        out, (h1, c1) = self.cell(arms, (h0.contiguous(), c0.contiguous()))
        out = (out + arms).reshape(steps, batch, m * h)
        return out, (h1.reshape(1, batch, m * h), c1.reshape(1, batch, m * h))


class RecurrentArmPolicy(ArmHeads, RecurrentActorCriticPolicy):
    """sb3-contrib's recurrent actor-critic with the arms network (module docstring).

    Args:
        observation_space: The flat observation box.
        action_space: ``Discrete(n_arms)``.
        lr_schedule: SB3's learning-rate schedule.
        layout: :func:`~fedbandit_env.rl.arm_policy.arm_layout` of the agent's Dict
            observation.
        hidden: Width of every arm's embedding and memory.
        **kwargs: Passed to ``RecurrentActorCriticPolicy`` (the network's shape is fixed).

    Examples:
        >>> from fedbandit_env.rl.arm_policy import arm_layout
        >>> from fedbandit_env.wrappers.flatten import flat_box
        >>> sp = spaces.Dict({"arm": spaces.Discrete(3), "counts": spaces.Box(0, 9, (3,)),
        ...                   "means": spaces.Box(0, 1, (3,)), "step": spaces.Box(0, 9, (1,))})
        >>> p = RecurrentArmPolicy(flat_box(sp), spaces.Discrete(3), lambda _: 1e-3,
        ...                        layout=arm_layout(sp, scale=False), hidden=8)
        >>> state = (th.zeros(1, 2, 24), th.zeros(1, 2, 24))
        >>> dist, (h, c) = p.get_distribution(th.zeros(2, 10), state, th.zeros(2))
        >>> dist.distribution.probs.shape, h.shape
        (torch.Size([2, 3]), torch.Size([1, 2, 24]))
    """

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        lr_schedule: Any,
        layout: dict[str, Any] | None = None,
        hidden: int = 32,
        **kwargs: Any,
    ) -> None:
        self.layout = check_arms("RecurrentArmPolicy", layout, action_space)
        n_arms = int(self.layout["n_arms"])
        self.hidden = int(hidden)
        for key in ("lstm_hidden_size", "n_lstm_layers", "shared_lstm", "enable_critic_lstm"):
            kwargs.pop(key, None)  # fixed by this class (a saved model passes them back)
        kwargs.update(
            net_arch=[],
            features_extractor_class=ArmFeatures,
            features_extractor_kwargs={"layout": self.layout, "hidden": self.hidden},
            lstm_hidden_size=n_arms * self.hidden,
            n_lstm_layers=1,
            shared_lstm=True,
            enable_critic_lstm=False,
        )
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)
        self.lstm_actor = ArmLSTM(n_arms, self.hidden)  # type: ignore[assignment]
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )  # type: ignore[call-arg]

    def evaluate_actions(  # type: ignore[override]
        self, obs: th.Tensor, actions: th.Tensor, lstm_states: Any, episode_starts: th.Tensor
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Values, log-probabilities and entropies of a batch of sequences; the critic
        reads the same memory *with* its gradient (sb3-contrib's shared LSTM detaches
        it, which would leave the memory to the actor's loss alone)."""
        features = self.extract_features(obs)
        assert isinstance(features, th.Tensor)
        latent, _ = self._process_sequence(features, lstm_states.pi, episode_starts,
                                           self.lstm_actor)  # fmt: skip
        distribution = self._get_action_dist_from_latent(latent)
        values = self.value_net(latent)
        entropy = distribution.entropy()
        assert entropy is not None  # a categorical distribution has one
        return values, distribution.log_prob(actions), entropy


__all__ = ["ArmLSTM", "RecurrentArmPolicy"]
