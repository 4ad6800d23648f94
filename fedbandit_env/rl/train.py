"""Train a parameter-shared stable-baselines3 model on a distribution of instances.

What ``fedbandit train`` runs. The learner

- acts in one **information setting** (:mod:`fedbandit_env.settings`), the one it will
  be compared in: its stack (:class:`~fedbandit_env.rl.LearnerStack`) is built from
  the setting, and saved with the model;
- trains on **train instances**: the scenario draws a fresh instance at every episode
  (``Scenario(instances="train")``), never one of the held-out instance seeds that
  ``fedbandit bench --held-out`` evaluates on;
- is rewarded by default with **what the agent observes** (its local reward). The
  privileged ``neg_regret`` signal (minus the regret against the global means, which
  no agent can see) is an explicit option, recorded in the saved stack and marked in
  every result row.

Torch runs on one thread unless told otherwise: on a few cores its default thread
count oversubscribes them and small-network training slows down about tenfold.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from fedbandit_env.files import package_versions, strict_json, write_text_atomic
from fedbandit_env.rl.common import quiet_logger, set_torch_threads
from fedbandit_env.rl.stack import SB3_ALGOS, LearnerStack, algorithm
from fedbandit_env.scenario.scenario import Scenario


def train_model(
    algo: str,
    scenario: Scenario,
    stack: LearnerStack,
    timesteps: int,
    out: str | Path,
    seed: int = 0,
    threads: int | None = 1,
    progress: bool = False,
    copies: int = 1,
    net: str = "mlp",
    episode_lengths: tuple[int, int] | None = None,
    batched: bool = False,
    device: Any = None,
    checkpoints: int = 0,
    overwrite: bool = True,
) -> Path:
    """Train ``algo`` (``ppo``, ``a2c``, ``dqn``, or ``recurrent_ppo``: an LSTM policy on
    the raw observations where the setting allows) with parameters shared by all agents;
    save ``out/model.zip``, its stack beside it and ``out/train.json``.

    Args:
        algo: The stable-baselines3 algorithm.
        scenario: The setting; trained on its train instances (``instances`` is set to
            ``"train"``).
        stack: What the learner observes and is rewarded with.
        timesteps: Agent-steps of training (SB3 counts each agent's step).
        out: Output folder.
        seed: Seed of the model and of the first episode.
        threads: Torch threads (``None``: torch's default).
        progress: Show SB3's progress bar.
        copies: Envs in the batch: each PPO update then sees ``copies`` times as many
            episodes (instances). They run on the vector env
            (:class:`~fedbandit_env.rl.vector_sb3.VectorAgentVecEnv`, all envs in lockstep)
            where the stack has a vector form, else as PettingZoo copies
            (:class:`~fedbandit_env.rl.sb3.AgentVecEnv`).
        net: ``"mlp"`` (SB3's ``MlpPolicy`` on the flat observation, sb3-contrib's
            ``MlpLstmPolicy`` for ``recurrent_ppo``) or ``"arms"``
            (:class:`~fedbandit_env.rl.arm_policy.ArmScoringPolicy`: every arm scored by
            one shared network; PPO and A2C on the agent's statistics; with
            ``recurrent_ppo`` and ``batched``, the same network with a memory per arm,
            :class:`~fedbandit_env.rl.recurrent_arm.RecurrentArmPolicy`).
        episode_lengths: ``(low, high)``: train over episodes cut at lengths drawn
            log-uniformly from ``low..high`` (on the vector env one length for all envs
            each episode), with ``high`` the scenario's horizon; recorded as the stack's
            ``min_horizon`` and ``horizon``. Pair it with ``stack.horizon_free``: a model
            that reads the step scaled by the horizon learns nothing general from it.
        batched: ``ppo`` and ``recurrent_ppo``: train with
            :mod:`fedbandit_env.rl.batched_ppo` (every agent of ``copies`` envs in one
            forward pass a step, 25-step rollouts, one epoch of four minibatches; a
            recurrent policy's memory carried across them) instead of SB3's loop; the
            same policy classes and saved model. Needs the stack's vector form.
            ``net="posterior"`` (:class:`~fedbandit_env.rl.posterior_policy.PosteriorArmPolicy`
            on ``TeamPosterior``: a stack with ``posterior=True``) trains batched, with
            ``BatchedPPOConfig.for_posterior()`` (:mod:`fedbandit_env.rl.batched_ppo`).
        device: Where the batched trainer runs the envs and the network: ``None`` (NumPy
            envs, torch on the CPU), ``"cpu"``, ``"cuda"`` or ``"auto"`` (a GPU where one
            is visible); the saved model is on the CPU either way.
        checkpoints: Batched training: score the policy this many times on train-split
            validation episodes (:func:`validation_regret`) and keep the best weights
            (0: keep the last).
        overwrite: Replace an earlier model in ``out``; ``False`` refuses one (after
            the arguments are checked, before any training).

    Returns:
        The saved model's path.

    Examples:
        >>> import tempfile
        >>> s = Scenario(n_agents=2, n_arms=2, horizon=8, setting="local")
        >>> path = train_model("a2c", s, LearnerStack.for_setting("local"), 32, tempfile.mkdtemp())
        >>> path.name, LearnerStack.load(path).setting
        ('model.zip', 'local')
    """
    from stable_baselines3.common.vec_env import VecMonitor

    from fedbandit_env.rl.arm_policy import POLICIES, ArmScoringPolicy, arm_policy_kwargs
    from fedbandit_env.rl.batched import unsupported
    from fedbandit_env.rl.sb3 import AgentVecEnv
    from fedbandit_env.rl.vector_sb3 import VectorAgentVecEnv

    if algo not in SB3_ALGOS:
        raise ValueError(f"algo must be one of {SB3_ALGOS}, got {algo!r}")
    if timesteps < 1:
        raise ValueError(f"timesteps must be >= 1, got {timesteps}")
    used = set_torch_threads(threads)
    scenario = replace(scenario, instances="train")
    low = 0
    if episode_lengths is not None:
        low, high = (int(v) for v in episode_lengths)
        if high != scenario.horizon:
            raise ValueError(
                f"episode_lengths' high ({high}) must be the scenario's horizon "
                f"({scenario.horizon}): the env runs that long"
            )
    stack = replace(
        stack,
        distribution=scenario.distribution_name,
        horizon=scenario.horizon,
        min_horizon=low if low < scenario.horizon else 0,
    )
    recurrent_arms = algo == "recurrent_ppo" and net == "arms"  # the arms net's memory
    if (
        algo == "recurrent_ppo"
        and not recurrent_arms
        and (stack.epsilon is not None or not stack.share_means)
    ):
        stack = replace(stack, statistics=False)  # raw observations: the LSTM remembers
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise ValueError(f"copies must be an int >= 1, got {copies!r}")
    if net not in POLICIES:
        raise ValueError(f"net must be one of {POLICIES}, got {net!r}")
    if net == "arms" and (algo not in ("ppo", "a2c", "recurrent_ppo") or not stack.statistics):
        raise ValueError(
            f"net='arms' is an actor-critic on the agent's statistics: ppo, a2c or "
            f"recurrent_ppo, not {algo!r}"
        )
    if batched and algo not in ("ppo", "recurrent_ppo"):
        raise ValueError(f"batched training is PPO (or recurrent_ppo): not {algo}")
    if (net == "posterior") != stack.posterior:
        raise ValueError(
            "net='posterior' reads TeamPosterior's observation: pair it with a stack made with "
            "posterior=True (and that stack with net='posterior')"
        )
    if net == "posterior" and (algo != "ppo" or not batched):
        raise ValueError("net='posterior' trains with the batched PPO loop: ppo, batched=True")
    if device not in (None, "numpy") and not batched:
        raise ValueError(f"device={device!r} is the batched trainer's: batched=True")
    if recurrent_arms and not batched:
        raise ValueError("recurrent_ppo with net='arms' trains on the batched loop: batched=True")
    earlier = [n for n in ("model.zip", "train.json") if (Path(out) / n).exists()]
    if earlier and not overwrite:
        raise ValueError(
            f"--out {out} holds an earlier model ({', '.join(earlier)}); pass --overwrite "
            "to replace it, or --out another folder"
        )
    venv: Any
    if batched:
        from fedbandit_env.rl.view import LearnerView

        why = unsupported(stack.make_env(scenario))
        if why is not None:
            raise ValueError(f"batched training runs on the vector env, which {why}")
        view = LearnerView.for_stack(stack, scenario, copies=copies, device=device,
                                     episode_lengths=episode_lengths)  # fmt: skip
        return _train_batched(algo, scenario, stack, view, timesteps, out, seed, used, copies,
                              net, progress, episode_lengths, checkpoints)  # fmt: skip
    if unsupported(stack.make_env(scenario)) is None:  # the vector env: envs in lockstep
        venv = VectorAgentVecEnv.for_stack(
            stack, scenario, copies=copies, episode_lengths=episode_lengths
        )
    else:  # a stack without a vector form (a recurrent policy, a relaying protocol)
        venv = AgentVecEnv(
            [stack.make_env(scenario) for _ in range(copies)],
            reward=stack.reward,
            message_fn=stack.message_fn,
            scale=stack.scale,
            episode_lengths=episode_lengths,
        )
    n = venv.num_envs
    monitored = VecMonitor(venv)  # episode returns and lengths: SB3's rollout/ep_rew_mean
    kwargs: dict[str, Any] = {"seed": seed, "verbose": 0, "device": "cpu"}
    if algo in ("ppo", "recurrent_ppo"):  # a few episodes per update: many instances
        n_steps = max(2 * (low or scenario.horizon), 64)  # the shortest episodes'
        kwargs |= {"n_steps": n_steps, "batch_size": n_steps * n // 8}  # 8 minibatches
    policy: Any = "MlpLstmPolicy" if algo == "recurrent_ppo" else "MlpPolicy"
    if net == "arms":
        policy = ArmScoringPolicy
        kwargs["policy_kwargs"] = arm_policy_kwargs(venv)
    model: Any = quiet_logger(algorithm(algo)(policy, monitored, **kwargs))
    start = time.perf_counter()
    stats = episode_stats()
    model.learn(total_timesteps=timesteps, callback=[_progress(timesteps, algo, progress), stats])
    seconds = time.perf_counter() - start
    returns = [float(e["r"]) for e in model.ep_info_buffer]  # the last 100 agent-episodes
    record = {
        "algo": algo,
        "timesteps": timesteps,
        "seed": seed,
        "copies": copies,
        "net": net,
        "episode_lengths": list(episode_lengths) if episode_lengths else None,
        "torch_threads": used,
        "seconds": seconds,
        "agent_steps": int(model.num_timesteps),  # whole rollouts: at least timesteps
        "agent_steps_per_s": model.num_timesteps / seconds if seconds > 0 else float("nan"),
        "last_episode_returns_mean": sum(returns) / len(returns) if returns else None,
        "last_episodes": stats.summary(),
        "scenario": scenario.to_dict(),
        "stack": asdict(stack),
    }
    return save_trained(model, stack, out, record)


def save_trained(model: Any, stack: LearnerStack, out: str | Path, record: dict[str, Any]) -> Path:
    """Save ``out/model.zip``, its stack beside it, and ``out/train.json`` (``record``
    with the packages' versions); returns the model's path.

    Examples:
        >>> import inspect  # train_model and the batched trainer both end here
        >>> list(inspect.signature(save_trained).parameters)
        ['model', 'stack', 'out', 'record']
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.zip"
    model.save(path)
    stack.save(path)
    record = {**record, "versions": package_versions()}
    write_text_atomic(folder / "train.json", strict_json(record, indent=2) + "\n")
    return path


def _train_batched(
    algo: str,
    scenario: Scenario,
    stack: LearnerStack,
    view: Any,
    timesteps: int,
    out: str | Path,
    seed: int,
    threads: int,
    copies: int,
    net: str,
    progress: bool,
    episode_lengths: tuple[int, int] | None = None,
    checkpoints: int = 0,
) -> Path:
    """:func:`train_model` with ``batched=True`` (its arguments checked there): the model
    is built against one NumPy copy of the env (SB3 reads its spaces there), then trained
    on ``view`` (:class:`~fedbandit_env.rl.view.LearnerView`, on its device)."""
    from fedbandit_env.rl.arm_policy import ArmScoringPolicy, arm_policy_kwargs
    from fedbandit_env.rl.batched_ppo import BatchedPPOConfig, train_batched
    from fedbandit_env.rl.vector_sb3 import VectorAgentVecEnv

    venv = VectorAgentVecEnv.for_stack(stack, scenario, copies=1)
    kwargs: dict[str, Any] = {"seed": seed, "verbose": 0, "device": "cpu"}
    kwargs |= {"n_steps": scenario.horizon, "batch_size": scenario.horizon * venv.num_envs}
    policy: Any = "MlpPolicy" if algo == "ppo" else "MlpLstmPolicy"
    config = BatchedPPOConfig()
    if net == "arms":
        policy = ArmScoringPolicy
        kwargs["policy_kwargs"] = arm_policy_kwargs(venv, hidden=32)  # batched_ppo's reading
    if net == "posterior":
        from fedbandit_env.rl.posterior_policy import PosteriorArmPolicy, posterior_layout

        policy = PosteriorArmPolicy
        kwargs["policy_kwargs"] = {"layout": posterior_layout(view.dict_space)}
        config = BatchedPPOConfig.for_posterior()
    if algo == "recurrent_ppo":
        # the trainer keeps its own buffers: SB3's rollout buffer (a memory state per
        # agent and step) is built for the model's n_steps, so keep that small
        kwargs |= {"n_steps": 2, "batch_size": 2 * venv.num_envs}
        if net == "arms":
            from fedbandit_env.rl.recurrent_arm import RecurrentArmPolicy

            policy = RecurrentArmPolicy
    model = algorithm(algo)(policy, venv, **kwargs)
    validate = validation_regret(stack, scenario) if checkpoints > 0 else None
    result = train_batched(model, view, timesteps, config, seed=seed, progress=progress,
                           validate=validate, checkpoints=checkpoints)  # fmt: skip
    record = {
        "algo": algo,
        "batched": True,
        "timesteps": timesteps,
        "agent_steps": result["agent_steps"],
        "seed": seed,
        "copies": copies,
        "net": net,
        "episode_lengths": list(episode_lengths) if episode_lengths else None,
        "torch_threads": threads,
        "device": view.backend.label,
        "seconds": result["seconds"],
        "agent_steps_per_s": result["agent_steps_per_s"],
        "last_episode_regret": result["last_episode_regret"],
        "validation": result["validation"],
        "kept_agent_steps": result["kept"],
        "config": asdict(config),
        "scenario": scenario.to_dict(),
        "stack": asdict(stack),
    }
    return save_trained(model, stack, out, record)


VALIDATION_SEEDS = 10**8
"""The first env seed of the train-split validation episodes (far above any seed a
training run resets its envs with, ``seed + b N``; the instances are train-split draws,
``instance_seed(s, "train")``, never held-out ones)."""


def validation_regret(
    stack: LearnerStack, scenario: Scenario, episodes: int = 512, seed: int = VALIDATION_SEEDS
) -> Any:
    """A checkpoint scorer for :func:`~fedbandit_env.rl.batched_ppo.train_batched`:
    ``policy -> mean per-agent regret`` over ``episodes`` whole episodes of ``scenario``
    on its *train* instances (env seeds ``seed .. seed + episodes - 1``), the arms drawn
    from the policy's probabilities with one fixed generator (the same numbers for every
    checkpoint: common random numbers, so two checkpoints differ by what they learned).

    Examples:
        >>> import inspect
        >>> list(inspect.signature(validation_regret).parameters)
        ['stack', 'scenario', 'episodes', 'seed']
    """
    import numpy as np
    import torch as th

    from fedbandit_env.rl.view import LearnerView

    view = LearnerView.for_stack(stack, replace(scenario, instances="train"), copies=episodes)

    def score(policy: Any) -> float:
        device = next(policy.parameters()).device
        gen = th.Generator(device=device).manual_seed(0)
        obs = view.reset([seed + b for b in range(episodes)])
        regret = None
        with th.no_grad():
            for _ in range(view.horizon):
                x = th.as_tensor(obs, dtype=th.float32, device=device)
                if hasattr(policy, "draw"):  # the posterior net: a normal score per arm
                    noise = th.randn((x.shape[0], view.n_arms), generator=gen, device=device)
                    arms = policy.draw(x, noise).cpu().numpy()
                else:
                    logits = th.log(policy.get_distribution(x).distribution.probs + 1e-30)
                    u = th.rand(logits.shape, generator=gen, device=device).clamp_(min=1e-12)
                    arms = (logits - th.log(-th.log(u))).argmax(dim=1).cpu().numpy()
                obs, _, done, ended = view.step(arms)
                if done and ended is not None:
                    regret = np.asarray(ended["regret"])
        assert regret is not None
        return float(regret.mean())

    return score


def episode_stats(window: int = 100) -> Any:
    """An SB3 callback that logs, at every rollout's end, each finished agent-episode's
    regret against the global means, the network's communication cost and the epsilon
    spent (``fedbandit/regret``, ``fedbandit/comm_cost``, ``fedbandit/epsilon`` in
    TensorBoard), averaged over the last ``window`` agent-episodes. Logged, never used
    for learning: the regret is what a researcher watches, not what an agent sees.

    Examples:
        >>> cb = episode_stats(window=2)
        >>> cb.add({"cumulative_regret": 3.0, "cumulative_comm_cost": 10.0, "epsilon": 1.0})
        >>> cb.add({"cumulative_regret": 1.0, "cumulative_comm_cost": 0.0})
        >>> cb.summary()
        {'regret': 2.0, 'comm_cost': 5.0, 'epsilon': 1.0, 'episodes': 2}
    """
    from collections import deque

    from stable_baselines3.common.callbacks import BaseCallback

    class EpisodeStats(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.recent: deque[dict[str, float]] = deque(maxlen=window)

        def add(self, info: dict[str, Any]) -> None:
            self.recent.append(
                {
                    "regret": float(info.get("cumulative_regret", float("nan"))),
                    "comm_cost": float(info.get("cumulative_comm_cost", 0.0)),
                    "epsilon": float(info.get("epsilon", float("nan"))),
                }
            )

        def summary(self) -> dict[str, float | int]:
            out: dict[str, float | int] = {}
            for key in ("regret", "comm_cost", "epsilon"):
                values = [e[key] for e in self.recent if e[key] == e[key]]  # skip nan
                out[key] = sum(values) / len(values) if values else float("nan")
            out["episodes"] = len(self.recent)
            return out

        def _on_step(self) -> bool:
            for info, done in zip(self.locals["infos"], self.locals["dones"], strict=True):
                if done:
                    self.add(info)
            return True

        def _on_rollout_end(self) -> None:
            if self.recent:
                for key, value in self.summary().items():
                    if key != "episodes":
                        self.logger.record(f"fedbandit/{key}", value)

    return EpisodeStats()


def _progress(total: int, label: str, show: bool) -> Any:
    """A tqdm bar over agent-steps as an SB3 callback (SB3's own needs ``rich``)."""
    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm.auto import tqdm

    class Progress(BaseCallback):
        def _on_training_start(self) -> None:
            self.bar = tqdm(total=total, desc=f"train {label}", unit="step", disable=not show)

        def _on_step(self) -> bool:
            self.bar.update(min(self.training_env.num_envs, total - self.bar.n))
            return True

        def _on_training_end(self) -> None:
            self.bar.close()

    return Progress()


__all__ = [
    "VALIDATION_SEEDS",
    "episode_stats",
    "save_trained",
    "set_torch_threads",
    "train_model",
    "validation_regret",
]
