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
    anneal: bool = False

    @classmethod
    def for_posterior(cls) -> BatchedPPOConfig:
        """The posterior learner's reading (:mod:`fedbandit_env.rl.posterior_policy`),
        chosen on train instances: whole episodes (``rollout=0``, terminal at the
        horizon), ``gamma = 1`` and GAE lambda 1 (regret is undiscounted, and a lock-on
        costs long after the choice that caused it: lambda 0.95 let the rare lock-ons
        grow), one epoch of four minibatches, learning rate 1e-3 annealed linearly to 0,
        no entropy bonus (the draw's spread is learned), rewards times 0.05.

        Examples:
            >>> BatchedPPOConfig.for_posterior().rollout
            0
        """
        return cls(learning_rate=1e-3, gamma=1.0, gae_lambda=1.0, entropy_coef=0.0, epochs=1,
                   rollout=0, reward_scale=0.05, anneal=True)  # fmt: skip

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
    rewards: Any,
    values: Any,
    gamma: float,
    lam: float,
    ended: np.ndarray | None = None,
    last_values: Any = 0.0,
) -> tuple[Any, Any]:
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
    from fedbandit_env.backend import array_backend

    be = array_backend(rewards)
    xp = be.xp
    steps = int(rewards.shape[0])
    if ended is None:
        ended = np.zeros(steps, dtype=bool)
        ended[-1] = True
    going = [0.0 if bool(e) else 1.0 for e in be.to_numpy(ended)]
    adv = xp.zeros_like(rewards)
    last = xp.zeros_like(rewards[0])
    for t in reversed(range(steps)):
        following = values[t + 1] if t + 1 < steps else last_values
        delta = rewards[t] + gamma * going[t] * following - values[t]
        last = delta + gamma * lam * going[t] * last
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
        device = getattr(policy, "device", "cpu")
        self._zeros = lambda: th.zeros((layers, self.width, size), device=device)
        self._states = RNNStates
        self.state = self._fresh()
        self.starts = th.zeros(self.length, device=device)
        self._reset_next = False
        self._none = th.zeros(self.width, device=device)

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

        steps = th.arange(length, device=columns.device) * self.width
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
    validate: Any = None,
    checkpoints: int = 0,
) -> dict[str, Any]:
    """Train ``model.policy`` (an SB3 PPO's, or an sb3-contrib ``RecurrentPPO``'s: then its
    memory is carried by :class:`Memory` and every minibatch is whole rollouts of some
    envs' agents) on ``venv`` (a :class:`~fedbandit_env.rl.view.LearnerView`, or a
    :class:`~fedbandit_env.rl.vector_sb3.VectorAgentVecEnv`: its view) for ``timesteps``
    agent-steps (whole rollouts: rounded up). ``log`` is called with each update's
    statistics (the losses, entropy, clip fraction and CleanRL's ``approx_kl``). Returns
    the run's totals.

    Checkpoint selection: with ``validate`` (``policy -> regret``, lower is better; run
    on *train*-split instances no training episode used, never on held-out ones) and
    ``checkpoints = k``, the policy is scored after every ``1/k`` of the updates and the
    best-scoring weights are the ones kept (early stopping, as a supervised learner keeps
    its best validation epoch: PPO's last update is not its best, measured here).

    Everything lives on the view's device: on a torch device (``make_vec(...,
    device="cuda")``) the policy moves there and the rollout, its buffers, the advantages
    and the updates never leave it; a step reads nothing back to the host but at an
    episode's end (its regret, for the log). On NumPy the batches cross to torch on the
    CPU without copies. A policy with ``scores_and_values`` (the posterior net) draws a
    normal score per arm and pulls the best; its action for PPO is the vector of scores
    (:func:`~fedbandit_env.rl.posterior_policy.score_log_prob`).

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

    from fedbandit_env.rl.view import LearnerView

    view: LearnerView = venv if isinstance(venv, LearnerView) else venv.view
    be = view.backend
    device = th.device("cpu") if be.is_numpy else be.device
    policy = model.policy.to(device)
    for group in policy.optimizer.param_groups:
        group["lr"] = config.learning_rate
    horizon = view.horizon
    length = config.rollout or horizon  # steps of every env per update
    width = view.rows
    per_update = length * width
    updates = max(1, -(-int(timesteps) // per_update))
    obs_dim = int(view.layout.width)

    def tensor(x: Any) -> Any:  # NumPy batches cross without a copy; tensors stay
        return x if isinstance(x, th.Tensor) else th.from_numpy(np.asarray(x))

    def zeros(*shape: int, dtype: Any = th.float32) -> Any:
        return th.zeros(shape, dtype=dtype, device=device)

    obs_buf = zeros(length, width, obs_dim)
    fast = hasattr(policy, "scores_and_values")
    n_arms = int(view.n_arms)
    act_buf = zeros(length, width, n_arms) if fast else zeros(length, width, dtype=th.int64)
    logp_buf = zeros(length, width)
    val_buf = zeros(length, width, dtype=th.float64)
    rew_buf = zeros(length, width, dtype=th.float64)
    ended = np.zeros(length, dtype=bool)
    view.seed_lengths(seed)
    th.manual_seed(seed)
    gen = th.Generator(device=device).manual_seed(seed)
    start = time.perf_counter()
    bar = tqdm(total=updates * per_update, desc="train ppo (batched)", unit="step",
               disable=not progress)  # fmt: skip
    episode_regret: list[float] = []
    memory = Memory.of(policy, width, length)  # None for a feedforward policy
    n_agents = view.n_agents
    first_seeds = [seed + b * n_agents for b in range(view.copies)]  # SB3's seed + index
    obs = tensor(view.reset(first_seeds))

    def act(obs_t: Any, t: int) -> tuple[Any, Any, Any]:
        if memory is not None:
            return memory.act(obs_t, t)
        if not fast:
            return policy(obs_t)
        from fedbandit_env.rl.posterior_policy import score_log_prob

        mean, sd, values = policy.scores_and_values(obs_t)
        scores = mean + sd * th.randn(mean.shape, generator=gen, device=device)
        return scores, values, score_log_prob(scores, mean, sd)

    every = max(1, updates // checkpoints) if validate is not None and checkpoints > 0 else 0
    scores: list[tuple[int, float]] = []
    best: tuple[float, Any] | None = None
    validating = 0.0
    for update in range(updates):
        if config.anneal:
            for group in policy.optimizer.param_groups:
                group["lr"] = config.learning_rate * (1.0 - update / updates)
        policy.set_training_mode(False)
        first = memory.start_rollout() if memory is not None else None
        for t in range(length):
            obs_t = obs.to(th.float32).reshape(width, obs_dim)
            with th.no_grad():
                actions, values, logp = act(obs_t, t)
            obs_buf[t] = obs_t
            act_buf[t] = actions
            logp_buf[t] = logp
            val_buf[t] = values.reshape(-1)
            if fast:  # the scores drawn: the env sees their argmax
                actions = actions.argmax(dim=1)
            arms = actions if not be.is_numpy else actions.numpy()
            next_obs, rewards, done, totals = view.step(arms)  # resets at the horizon
            rew_buf[t] = tensor(rewards).to(th.float64) * config.reward_scale
            ended[t] = done  # the envs run in lockstep
            if totals is not None:
                episode_regret.append(float(be.to_numpy(totals["regret"]).mean()))
                if memory is not None:
                    memory.episode_ended(t)
            obs = tensor(next_obs)
        with th.no_grad():  # the bootstrap of episodes that go on past the rollout
            next_t = obs.to(th.float32).reshape(width, obs_dim)
            if memory is not None:
                last_values = memory.values(next_t).reshape(-1)
            elif fast:
                last_values = policy.scores_and_values(next_t)[2]
            else:
                last_values = policy.predict_values(next_t).reshape(-1)
        adv, ret = gae(rew_buf, val_buf, config.gamma, config.gae_lambda, ended,
                       last_values.to(th.float64))  # fmt: skip
        b_obs = obs_buf.reshape(per_update, obs_dim)
        b_act = act_buf.reshape(per_update, n_arms) if fast else act_buf.reshape(-1)
        b_logp = logp_buf.reshape(-1)
        b_adv = adv.reshape(-1).to(th.float32)
        b_ret = ret.reshape(-1).to(th.float32)
        policy.set_training_mode(True)
        size = per_update // config.minibatches
        if memory is not None:  # whole env columns a minibatch
            size = -(-width // config.minibatches) * length
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "clip_fraction": 0.0,
                 "approx_kl": 0.0}  # fmt: skip
        for _ in range(config.epochs):
            order = th.randperm(per_update, generator=gen, device=device)
            if memory is not None:  # whole sequences: minibatches of env columns
                columns = th.randperm(width, generator=gen, device=device)
                order = memory.sequence_order(columns, length)
            for k in range(config.minibatches):
                idx = order[k * size : (k + 1) * size]
                if len(idx) == 0:  # fewer env columns than minibatches
                    continue
                if memory is not None:
                    values, logp, entropy = memory.evaluate(first, b_obs[idx], b_act[idx], idx)
                elif fast:
                    from fedbandit_env.rl.posterior_policy import score_log_prob

                    mean, sd, values = policy.scores_and_values(b_obs[idx])
                    logp = score_log_prob(b_act[idx], mean, sd)
                    entropy = th.log(sd).sum(dim=1)  # the normals' entropy, up to a constant
                else:
                    values, logp, entropy = policy.evaluate_actions(b_obs[idx], b_act[idx])
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
                if log is not None:  # the statistics cost a read-back each
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
        if every and ((update + 1) % every == 0 or update + 1 == updates):
            began = time.perf_counter()
            score = float(validate(policy))
            validating += time.perf_counter() - began
            scores.append(((update + 1) * per_update, score))
            if best is None or score < best[0]:
                best = (score, {k: v.detach().clone() for k, v in policy.state_dict().items()})
            policy.to(device)
    bar.close()
    if best is not None:
        policy.load_state_dict(best[1])
    if device.type == "cuda":
        th.cuda.synchronize(device)
    seconds = time.perf_counter() - start - validating
    model.num_timesteps = updates * per_update
    policy.to("cpu")  # saved and evaluated on the host
    return {
        "agent_steps": updates * per_update,
        "updates": updates,
        "seconds": seconds,
        "agent_steps_per_s": updates * per_update / seconds if seconds > 0 else float("nan"),
        "last_episode_regret": episode_regret[-1] if episode_regret else float("nan"),
        "episode_regret": episode_regret,
        "validation": scores,
        "validation_seconds": validating,
        "kept": min(scores, key=lambda s: s[1])[0] if scores else updates * per_update,
    }


__all__ = ["BatchedPPOConfig", "Memory", "gae", "train_batched"]
