"""PPO on the vector env, batched end to end (``fedbandit train ppo --batched``).

SB3's PPO spends its time around the env rather than in it: a rollout buffer filled one
step at a time through numpy copies, a callback per step, ten epochs of small
minibatches. This trainer keeps SB3's policy (the same
:class:`~fedbandit_env.rl.arm_policy.ArmScoringPolicy` or ``MlpPolicy``, the same saved
``model.zip``, so ``fedbandit bench ppo:...`` evaluates it as any model) and replaces the
loop, as CleanRL's ``ppo.py`` does (Huang et al. 2022, "The 37 implementation details of
PPO"):

- every agent of ``copies`` envs acts in one forward pass a step
  (:class:`~fedbandit_env.rl.vector_sb3.VectorAgentVecEnv`), into preallocated tensors;
- a rollout is ``rollout`` steps of every env (25; 0: a whole episode, ``T``); the
  episode's end is the horizon, which the agent observes (its step or ``log(1 + t)``), so
  it is terminal, not bootstrapped, and a rollout that ends inside an episode is
  bootstrapped from the value of the observation after it (:func:`gae`): many short
  rollouts of many envs, as massively parallel PPO runs them. Episodes cut at sampled
  lengths (the venv's ``episode_lengths``, all envs at once) end there too: *a reading*
  (CleanRL's), since a horizon-free agent cannot see the cut, the value of its last
  steps is biased low; the alternative, bootstrapping through the cut, needs the
  observation the cut hides;
- rewards scaled by ``reward_scale`` (0.1) so that the returns stay of order 1: with a
  critic that shares the actor's arm embedding and gradients clipped to norm 0.5, large
  returns let the value loss's gradient take the whole norm and the policy never moved
  (measured: entropy stuck at log M);
- advantages by GAE, normalised per minibatch; the clipped surrogate, a value loss and an
  entropy bonus (0.01: without it the policy committed within a few updates and its
  episodes' regret swung between 9 and 31); one pass (``epochs``) over ``minibatches``
  (4) large minibatches at learning rate 6e-4; gradients clipped; Adam (the policy's own
  optimizer); with the arms net, an embedding of 32 (``fedbandit train`` passes it).

A recurrent policy (:mod:`fedbandit_env.rl.recurrent_arm`, or sb3-contrib's
``MlpLstmPolicy``) trains in the same loop, as CleanRL's ``ppo_atari_lstm.py`` does: the
memory of every agent is carried from step to step and rollout to rollout, zeroed when
the episodes end, and the update recomputes each minibatch's sequences (whole 25-step
rollouts of a quarter of the agents) from the memory they started with: truncated
backpropagation through time.

Readings chosen: SB3's PPO defaults for gamma (0.99), GAE lambda (0.95), clip (0.2),
value coefficient (0.5) and gradient norm (0.5); the rest as above, from a few trials on
train instances (not on held-out ones). One epoch of a 32-wide net learns as much per
second of training as two epochs of a 64-wide one (measured on held-out instances:
10.2 after 4.3M agent-steps in 59 s against 9.1 after 1.28M in 52 s) at 3.4x the
agent-steps per second; the backward pass is the cost (an epoch of the 64-wide net: 3.3 s
per 128,000 agent-steps, the rollout's forward passes 1.5 s, the env 0.3 s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class BatchedPPOConfig:
    """The trainer's hyperparameters (module docstring).

    Examples:
        >>> BatchedPPOConfig().epochs, BatchedPPOConfig(epochs=4).minibatches
        (1, 4)
    """

    learning_rate: float = 6e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    max_grad_norm: float = 0.5
    epochs: int = 1
    minibatches: int = 4
    rollout: int = 25
    reward_scale: float = 0.1

    def __post_init__(self) -> None:
        for name in ("learning_rate", "clip", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not (0 <= self.gamma <= 1 and 0 <= self.gae_lambda <= 1):
            raise ValueError("gamma and gae_lambda must lie in [0, 1]")
        if self.epochs < 1 or self.minibatches < 1:
            raise ValueError("epochs and minibatches must be >= 1")
        if self.rollout < 0:
            raise ValueError(f"rollout must be >= 0 (0: a whole episode), got {self.rollout}")


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    gamma: float,
    lam: float,
    ended: np.ndarray | None = None,
    last_values: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates (Schulman et al. 2016) of a rollout: ``(T, n)``
    rewards and values, ``ended[t]`` whether the episodes ended after step ``t`` (at the
    horizon: terminal, no bootstrap; default: after the last step only), and
    ``last_values`` the value of the observation after the rollout (its bootstrap when
    the episode goes on). Returns ``(advantages, returns)``.

    Examples:
        >>> adv, ret = gae(np.ones((3, 1)), np.zeros((3, 1)), 1.0, 1.0)
        >>> ret[:, 0].tolist(), adv[:, 0].tolist()
        ([3.0, 2.0, 1.0], [3.0, 2.0, 1.0])
        >>> adv, _ = gae(np.ones((2, 1)), np.zeros((2, 1)), 1.0, 1.0, np.zeros(2, bool), 5.0)
        >>> adv[:, 0].tolist()  # the episode goes on: bootstrapped from the last value
        [7.0, 6.0]
    """
    steps = rewards.shape[0]
    if ended is None:
        ended = np.zeros(steps, dtype=bool)
        ended[-1] = True
    adv = np.zeros_like(rewards, dtype=np.float64)
    last = np.zeros(rewards.shape[1:])
    for t in reversed(range(steps)):
        going = 0.0 if ended[t] else 1.0
        following = values[t + 1] if t + 1 < steps else last_values
        delta = rewards[t] + gamma * going * following - values[t]
        last = delta + gamma * lam * going * last
        adv[t] = last
    return adv, adv + values


class Memory:
    """A recurrent policy's memory in :func:`train_batched`: every agent's LSTM state
    carried across steps and rollouts, zeroed when an episode ends (all envs at once:
    they run in lockstep), the state at each rollout's first step kept for the update's
    truncated backpropagation through the rollout, and where in the rollout episodes
    started (sb3-contrib's ``episode_starts``: the state is zeroed there).

    Examples:
        >>> from fedbandit_env.rl.arm_policy import arm_layout
        >>> from fedbandit_env.rl.recurrent_arm import RecurrentArmPolicy
        >>> from fedbandit_env.wrappers.flatten import flat_box
        >>> from gymnasium import spaces
        >>> import torch as th
        >>> sp = spaces.Dict({"arm": spaces.Discrete(2), "counts": spaces.Box(0, 9, (2,)),
        ...                   "means": spaces.Box(0, 1, (2,)), "step": spaces.Box(0, 9, (1,))})
        >>> policy = RecurrentArmPolicy(flat_box(sp), spaces.Discrete(2), lambda _: 1e-3,
        ...                             layout=arm_layout(sp, scale=False), hidden=4)
        >>> memory = Memory.of(policy, width=3, length=2)
        >>> first = memory.start_rollout()
        >>> with th.no_grad():
        ...     actions, values, logp = memory.act(th.zeros(3, 7), 0)
        >>> memory.episode_ended(0)
        >>> with th.no_grad():
        ...     _ = memory.act(th.zeros(3, 7), 1)
        >>> memory.starts.tolist()  # the second step started an episode
        [0.0, 1.0]
        >>> Memory.of(object(), 3, 2) is None  # a feedforward policy has none
        True
    """

    def __init__(self, policy: Any, width: int, length: int) -> None:
        import torch as th
        from sb3_contrib.common.recurrent.type_aliases import RNNStates

        self.policy, self.width, self.length = policy, int(width), int(length)
        size = int(policy.lstm_hidden_state_shape[-1])
        layers = int(policy.lstm_hidden_state_shape[0])
        self._zeros = lambda: th.zeros((layers, self.width, size))
        self._states = RNNStates
        self.state = self._fresh()
        self.starts = th.zeros(self.length)
        self._reset_next = False
        self._none = th.zeros(self.width)

    def _fresh(self) -> Any:
        """Zero memory for every agent (actor's and critic's)."""
        return self._states((self._zeros(), self._zeros()), (self._zeros(), self._zeros()))

    @classmethod
    def of(cls, policy: Any, width: int, length: int) -> Memory | None:
        """The memory of ``policy``, or ``None`` when it has none (no ``lstm_actor``)."""
        return cls(policy, width, length) if hasattr(policy, "lstm_actor") else None

    def _zero_if_ended(self, t: int) -> None:
        if self._reset_next:
            self.state = self._fresh()
            self._reset_next = False
            if t > 0:
                self.starts[t] = 1.0

    def start_rollout(self) -> Any:
        """Begin a rollout; returns the state its first step starts from."""
        self.starts.zero_()
        self._zero_if_ended(0)
        return self.state

    def act(self, obs: Any, t: int) -> tuple[Any, Any, Any]:
        """Actions, values and log-probabilities at the rollout's step ``t``."""
        self._zero_if_ended(t)
        actions, values, logp, self.state = self.policy(obs, self.state, self._none)
        return actions, values, logp

    def episode_ended(self, t: int) -> None:
        """The episodes ended after step ``t``: the next step starts from zeros."""
        self._reset_next = True

    def values(self, obs: Any) -> Any:
        """The critic's value of the observation after the rollout."""
        state = self.state.vf if not self._reset_next else (self._zeros(), self._zeros())
        return self.policy.predict_values(obs, state, self._none)

    def sequence_order(self, columns: Any, length: int) -> Any:
        """Indices into the ``(length * width)`` rollout rows, whole sequences: for every
        env column of ``columns`` its ``length`` steps in order."""
        import torch as th

        steps = th.arange(length) * self.width
        return (columns.reshape(-1, 1) + steps.reshape(1, -1)).reshape(-1)

    def evaluate(self, first: Any, obs: Any, actions: Any, idx: Any) -> tuple[Any, Any, Any]:
        """The policy's values, log-probabilities and entropies of the sequences ``idx``
        (:meth:`sequence_order`), from the states they started at (``first``)."""
        columns = idx[:: self.length] % self.width
        pick = lambda pair: (pair[0][:, columns], pair[1][:, columns])  # noqa: E731
        states = self._states(pick(first.pi), pick(first.vf))
        starts = self.starts.repeat(len(columns))
        return self.policy.evaluate_actions(obs, actions, states, starts)


def train_batched(
    model: Any,
    venv: Any,
    timesteps: int,
    config: BatchedPPOConfig,
    seed: int = 0,
    progress: bool = False,
    log: Any = None,
) -> dict[str, float]:
    """Train ``model.policy`` (an SB3 PPO's, or an sb3-contrib ``RecurrentPPO``'s: then its
    memory is carried by :class:`Memory` and every minibatch is whole rollouts of some
    envs' agents) on ``venv`` (a
    :class:`~fedbandit_env.rl.vector_sb3.VectorAgentVecEnv`) for ``timesteps`` agent-steps
    (whole rollouts: rounded up). ``log`` is called with each update's statistics (the
    losses, entropy, clip fraction and CleanRL's ``approx_kl``). Returns the run's totals.

    Examples:
        >>> import stable_baselines3 as sb3
        >>> from fedbandit_env.rl import LearnerStack
        >>> from fedbandit_env.rl.vector_sb3 import VectorAgentVecEnv
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> s = Scenario(n_agents=2, n_arms=3, horizon=4, instance="biased", instances="train")
        >>> venv = VectorAgentVecEnv.for_stack(LearnerStack.for_setting("local"), s, copies=3)
        >>> model = sb3.PPO("MlpPolicy", venv, n_steps=4, batch_size=8, device="cpu")
        >>> r = train_batched(model, venv, 40, BatchedPPOConfig(rollout=2))  # 2 x 6 a rollout
        >>> r["agent_steps"], r["updates"]
        (48, 4)
    """
    import torch as th
    from tqdm.auto import tqdm

    policy = model.policy
    for group in policy.optimizer.param_groups:
        group["lr"] = config.learning_rate
    horizon = int(venv.venv.horizon)
    length = config.rollout or horizon  # steps of every env per update
    width = venv.num_envs
    per_update = length * width
    updates = max(1, -(-int(timesteps) // per_update))
    obs_dim = int(np.prod(venv.observation_space.shape))
    obs_buf = th.zeros((length, width, obs_dim), dtype=th.float32)
    act_buf = th.zeros((length, width), dtype=th.int64)
    logp_buf = th.zeros((length, width), dtype=th.float32)
    val_buf = np.zeros((length, width), dtype=np.float64)
    rew_buf = np.zeros((length, width), dtype=np.float64)
    ended = np.zeros(length, dtype=bool)
    venv.seed(seed)
    th.manual_seed(seed)
    gen = th.Generator().manual_seed(seed)
    start = time.perf_counter()
    bar = tqdm(total=updates * per_update, desc="train ppo (batched)", unit="step",
               disable=not progress)  # fmt: skip
    episode_regret = []
    memory = Memory.of(policy, width, length)  # None for a feedforward policy
    obs = venv.reset()
    for update in range(updates):
        policy.set_training_mode(False)
        first = memory.start_rollout() if memory is not None else None
        for t in range(length):
            obs_t = th.as_tensor(obs, dtype=th.float32).reshape(width, obs_dim)
            with th.no_grad():
                if memory is None:
                    actions, values, logp = policy(obs_t)
                else:
                    actions, values, logp = memory.act(obs_t, t)
            obs_buf[t] = obs_t
            act_buf[t] = actions
            logp_buf[t] = logp
            val_buf[t] = values.reshape(-1).numpy()
            obs, rewards, dones, infos = venv.step(actions.numpy())  # resets at the horizon
            rew_buf[t] = rewards * config.reward_scale
            ended[t] = bool(dones[0])  # the envs run in lockstep
            if dones[0]:
                episode_regret.append(float(np.mean([i["cumulative_regret"] for i in infos])))
                if memory is not None:
                    memory.episode_ended(t)
        with th.no_grad():  # the bootstrap of episodes that go on past the rollout
            next_obs = th.as_tensor(obs, dtype=th.float32).reshape(width, obs_dim)
            if memory is None:
                last_values = policy.predict_values(next_obs).reshape(-1).numpy()
            else:
                last_values = memory.values(next_obs).reshape(-1).numpy()
        adv, ret = gae(rew_buf, val_buf, config.gamma, config.gae_lambda, ended, last_values)
        b_obs = obs_buf.reshape(per_update, obs_dim)
        b_act = act_buf.reshape(-1)
        b_logp = logp_buf.reshape(-1)
        b_adv = th.as_tensor(adv.reshape(-1), dtype=th.float32)
        b_ret = th.as_tensor(ret.reshape(-1), dtype=th.float32)
        policy.set_training_mode(True)
        size = per_update // config.minibatches
        if memory is not None:  # whole env columns a minibatch
            size = -(-width // config.minibatches) * length
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "clip_fraction": 0.0,
                 "approx_kl": 0.0}  # fmt: skip
        for _ in range(config.epochs):
            order = th.randperm(per_update, generator=gen)
            if memory is not None:  # whole sequences: minibatches of env columns
                order = memory.sequence_order(th.randperm(width, generator=gen), length)
            for k in range(config.minibatches):
                idx = order[k * size : (k + 1) * size]
                if len(idx) == 0:  # fewer env columns than minibatches
                    continue
                if memory is None:
                    values, logp, entropy = policy.evaluate_actions(b_obs[idx], b_act[idx])
                else:
                    values, logp, entropy = memory.evaluate(first, b_obs[idx], b_act[idx], idx)
                log_ratio = logp - b_logp[idx]
                ratio = th.exp(log_ratio)
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                surrogate = th.max(
                    -a * ratio, -a * th.clamp(ratio, 1 - config.clip, 1 + config.clip)
                )
                policy_loss = surrogate.mean()
                value_loss = ((values.reshape(-1) - b_ret[idx]) ** 2).mean()
                ent = entropy.mean() if entropy is not None else -logp.mean()
                loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * ent
                policy.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                policy.optimizer.step()
                n = config.epochs * config.minibatches
                stats["policy_loss"] += float(policy_loss.detach()) / n
                stats["value_loss"] += float(value_loss.detach()) / n
                stats["entropy"] += float(ent.detach()) / n
                stats["approx_kl"] += float(((ratio - 1) - log_ratio).mean().detach()) / n
                stats["clip_fraction"] += (
                    float(((ratio - 1).abs() > config.clip).float().mean()) / n
                )
        bar.update(per_update)
        if log is not None:
            last = episode_regret[-1] if episode_regret else float("nan")
            log({"update": update + 1, "episode_regret": last, **stats})
    bar.close()
    seconds = time.perf_counter() - start
    model.num_timesteps = updates * per_update
    return {
        "agent_steps": updates * per_update,
        "updates": updates,
        "seconds": seconds,
        "agent_steps_per_s": updates * per_update / seconds if seconds > 0 else float("nan"),
        "last_episode_regret": episode_regret[-1] if episode_regret else float("nan"),
    }


__all__ = ["BatchedPPOConfig", "Memory", "gae", "train_batched"]
