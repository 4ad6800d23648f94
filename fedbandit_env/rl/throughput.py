"""How much of PPO's training time the env costs: PPO through :class:`AgentVecEnv` on a
federated env, against PPO on plain Gymnasium envs with the same observation and
action spaces that do nothing, measured in one run (``fedbandit speed --train``).

The plain env returns a constant observation and a zero reward, so its PPO time is the
learner's own cost (rollout bookkeeping, network forward and backward passes). The
difference is what the env stack adds; the ratio is what to compare across machines.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

from fedbandit_env.rl.common import quiet_logger, set_torch_threads
from fedbandit_env.rl.stack import LearnerStack
from fedbandit_env.scenario.scenario import Scenario


class ConstantEnv(gym.Env[np.ndarray, Any]):
    """A Gymnasium env with given spaces that does nothing: constant observation, zero
    reward, truncated after ``horizon`` steps.

    Examples:
        >>> env = ConstantEnv(gym.spaces.Box(0.0, 1.0, (3,)), gym.spaces.Discrete(2), 2)
        >>> obs, _ = env.reset(seed=0); env.step(1)[3], env.step(0)[3]
        (False, True)
    """

    def __init__(
        self, observation_space: gym.spaces.Box, action_space: gym.spaces.Discrete, horizon: int
    ) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.horizon = horizon
        self._obs = np.zeros(observation_space.shape, dtype=np.float32)
        self._t = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start over."""
        super().reset(seed=seed)
        self._t = 0
        return self._obs, {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Nothing happens."""
        self._t += 1
        return self._obs, 0.0, False, self._t >= self.horizon, {}


def training_throughput(
    setting: str = "neighbours", timesteps: int = 40_000, n_agents: int = 10, n_arms: int = 5
) -> dict[str, float]:
    """Agent-steps per second of PPO on the federated env and on constant envs of the
    same spaces (one torch thread), and the share of training time the env costs.

    Examples:
        >>> r = training_throughput("local", timesteps=512, n_agents=2, n_arms=2)
        >>> sorted(r)
        ['env_share', 'federated', 'plain']
    """
    import stable_baselines3 as sb3
    from stable_baselines3.common.vec_env import DummyVecEnv

    from fedbandit_env.rl.sb3 import AgentVecEnv

    set_torch_threads(1)
    from fedbandit_env.settings import get_setting

    epsilon = 1.0 if get_setting(setting).private else None
    scenario = Scenario(
        n_agents=n_agents,
        n_arms=n_arms,
        horizon=200,
        instances="train",
        setting=setting,
        epsilon=epsilon,
    )
    stack = LearnerStack.for_setting(setting, 1.0)
    venv = AgentVecEnv(stack.make_env(scenario), message_fn=stack.message_fn, scale=stack.scale)
    box, arms = venv.observation_space, venv.action_space
    plain = DummyVecEnv(
        [lambda: ConstantEnv(box, arms, scenario.horizon) for _ in range(venv.num_envs)]  # type: ignore[arg-type]
    )
    rates = {}
    for name, env in (("federated", venv), ("plain", plain)):
        model = quiet_logger(
            sb3.PPO("MlpPolicy", env, n_steps=400, batch_size=500, seed=0, device="cpu")
        )
        start = time.perf_counter()
        model.learn(total_timesteps=timesteps)
        rates[name] = timesteps / (time.perf_counter() - start)
    rates["env_share"] = 1.0 - rates["federated"] / rates["plain"]
    return rates


def training_rates(
    setting: str,
    runs: tuple[tuple[str, str, str, int, bool, int], ...],
    n_agents: int = 10,
    n_arms: int = 5,
    horizon: int = 200,
) -> dict[str, float]:
    """Agent-steps per second of each training run ``(name, algo, net, copies, batched,
    agent-steps)`` on train instances of ``setting`` (``biased``; one torch thread), one
    after the other in this process: the rates of the training loops themselves, from
    each run's ``train.json``.

    Examples:
        >>> runs = (("a2c", "a2c", "mlp", 1, False, 40),)
        >>> sorted(training_rates("local", runs, n_agents=2, n_arms=2, horizon=10))
        ['a2c']
    """
    import json
    import tempfile
    from pathlib import Path

    from fedbandit_env.rl.train import train_model
    from fedbandit_env.settings import get_setting

    epsilon = 1.0 if get_setting(setting).private else None
    scenario = Scenario(n_agents=n_agents, n_arms=n_arms, horizon=horizon, instance="biased",
                        instances="train", setting=setting, epsilon=epsilon)  # fmt: skip
    stack = LearnerStack.for_setting(setting, epsilon)
    rates = {}
    for name, algo, net, copies, batched, steps in runs:
        with tempfile.TemporaryDirectory() as out:
            train_model(algo, scenario, stack, steps, out, copies=copies, net=net,
                        batched=batched)  # fmt: skip
            record = json.loads((Path(out) / "train.json").read_text())
            rates[name] = float(record["agent_steps_per_s"])
    return rates


def batched_speedup(
    setting: str = "neighbours",
    timesteps: int = 100_000,
    n_agents: int = 10,
    n_arms: int = 5,
    horizon: int = 200,
    net: str = "arms",
) -> dict[str, float]:
    """Agent-steps per second of PPO trained three ways on the same setting, one torch
    thread each, in one run: SB3's PPO as ``fedbandit train`` runs it (one env copy),
    SB3's PPO on 64 copies of the vector env, and the batched loop
    (:mod:`fedbandit_env.rl.batched_ppo`, 64 copies). Returns the three rates and the
    batched loop's ratios to the other two.

    Examples:
        >>> r = batched_speedup("local", timesteps=400, n_agents=2, n_arms=3, horizon=10)
        >>> sorted(r)
        ['batched', 'sb3', 'sb3_64', 'vs_sb3', 'vs_sb3_64']
    """
    runs = (
        ("sb3", "ppo", net, 1, False, timesteps),
        ("sb3_64", "ppo", net, 64, False, timesteps),
        ("batched", "ppo", net, 64, True, timesteps),
    )
    rates = training_rates(setting, runs, n_agents, n_arms, horizon)
    rates["vs_sb3"] = rates["batched"] / rates["sb3"]
    rates["vs_sb3_64"] = rates["batched"] / rates["sb3_64"]
    return rates


def recurrent_speedup(
    setting: str = "neighbours",
    timesteps: int = 100_000,
    n_agents: int = 10,
    n_arms: int = 5,
    horizon: int = 200,
    recurrent_timesteps: int | None = None,
) -> dict[str, float]:
    """Agent-steps per second of the recurrent learner trained three ways, one torch
    thread each, in one run: SB3's PPO with the (feedforward) arms net as ``fedbandit
    train`` runs it (one env copy), sb3-contrib's ``RecurrentPPO`` (its LSTM policy, one
    copy: the SB3 family's recurrent trainer) and the batched loop with the recurrent arms
    net (:mod:`fedbandit_env.rl.recurrent_arm`, 64 copies). ``RecurrentPPO`` is two orders
    slower than the others, so it plays ``recurrent_timesteps`` (default a tenth of
    ``timesteps``, at least four episodes of every agent): a rate. Returns the three rates
    and the batched loop's ratios to the other two.

    Examples:
        >>> r = recurrent_speedup("local", timesteps=400, n_agents=2, n_arms=3, horizon=10)
        >>> sorted(r)
        ['batched', 'sb3', 'sb3_recurrent', 'vs_sb3', 'vs_sb3_recurrent']
    """
    slow = recurrent_timesteps or max(timesteps // 10, 4 * horizon * n_agents)
    runs = (
        ("sb3", "ppo", "arms", 1, False, timesteps),
        ("sb3_recurrent", "recurrent_ppo", "mlp", 1, False, slow),
        ("batched", "recurrent_ppo", "arms", 64, True, timesteps),
    )
    rates = training_rates(setting, runs, n_agents, n_arms, horizon)
    rates["vs_sb3"] = rates["batched"] / rates["sb3"]
    rates["vs_sb3_recurrent"] = rates["batched"] / rates["sb3_recurrent"]
    return rates


def posterior_speedup(
    device: Any = None,
    timesteps: int = 400_000,
    copies: int = 64,
    n_agents: int = 10,
    n_arms: int = 5,
    horizon: int = 200,
    baseline: bool = True,
) -> dict[str, Any]:
    """Agent-steps per second of training, one run after the other in this process (one
    torch thread on the CPU), in ``neighbours`` on ``biased`` train instances:

    - ``before``: the learner the guide trained until the posterior net (the arms net on
      horizon-free statistics and pull shares, batched PPO, 64 copies, NumPy envs);
    - ``posterior``: the posterior net's batched PPO (whole episodes, two epochs) on
      ``copies`` envs on ``device`` (``None``: NumPy envs, torch on the CPU).

    Both are the trainer's own rates (``train.json``: rollouts and updates, validation
    left out). ``baseline=False`` skips the first (on a GPU, where only the second is
    asked). Returns both rates, their ratio and the device's name.

    Examples:
        >>> r = posterior_speedup(timesteps=400, copies=2, n_agents=2, n_arms=3, horizon=10)
        >>> sorted(r)
        ['before', 'device', 'posterior', 'ratio']
    """
    import json
    import tempfile
    from pathlib import Path

    from fedbandit_env.backend import backend
    from fedbandit_env.rl.train import train_model

    scenario = Scenario(n_agents=n_agents, n_arms=n_arms, horizon=horizon, instance="biased",
                        instances="train", setting="neighbours")  # fmt: skip
    runs: list[tuple[str, LearnerStack, str, int, Any]] = []
    if baseline:
        old = LearnerStack.for_setting("neighbours", horizon_free=True, share_counts=True)
        runs.append(("before", old, "arms", 64, None))
    new = LearnerStack.for_setting("neighbours", posterior=True, reward="team")
    runs.append(("posterior", new, "posterior", copies, device))
    out: dict[str, Any] = {"before": float("nan")}
    for name, stack, net, k, dev in runs:
        with tempfile.TemporaryDirectory() as folder:
            train_model("ppo", scenario, stack, timesteps, folder, copies=k, net=net,
                        batched=True, device=dev)  # fmt: skip
            record = json.loads((Path(folder) / "train.json").read_text())
            out[name] = float(record["agent_steps_per_s"])
    out["ratio"] = out["posterior"] / out["before"] if baseline else float("nan")
    out["device"] = backend(device).label
    return out


def view_overhead(
    num_envs: int = 1024, steps: int = 200, device: Any = None, repeats: int = 3
) -> dict[str, float]:
    """Seconds per step of the bare vector env (``neighbours``, N = 10, M = 5, messages
    of ``2 M`` numbers, fixed arms and messages) against the posterior learner's view of
    it (:class:`~fedbandit_env.vector.wrappers.VecTeamPosterior` and
    :class:`~fedbandit_env.rl.view.LearnerView`: the statistics, their message, the held
    rows, the features, the flat batch and the rewards), interleaved ``repeats`` times in
    this process (the best of each). Returns both and their ratio.

    Examples:
        >>> r = view_overhead(num_envs=4, steps=5, repeats=1)
        >>> sorted(r)
        ['bare', 'ratio', 'view']
    """
    from fedbandit_env.backend import backend
    from fedbandit_env.policies import Requirements
    from fedbandit_env.rl.view import LearnerView
    from fedbandit_env.vector import make_vec

    be = backend(device)
    scenario = Scenario(n_agents=10, n_arms=5, horizon=steps, instance="biased",
                        instances="train", setting="neighbours")  # fmt: skip
    bare = make_vec(scenario, num_envs, Requirements(message_dim=10), device=device)
    stack = LearnerStack.for_setting("neighbours", posterior=True, reward="team")
    view = LearnerView.for_stack(stack, scenario, copies=num_envs, device=device)
    arms = be.asarray(np.arange(num_envs * 10).reshape(num_envs, 10) % 5)
    messages = be.zeros((num_envs, 10, 10))
    flat_arms = be.xp.reshape(arms, (-1,))

    def sync() -> None:
        if not be.is_numpy and be.device.type == "cuda":
            be._torch.cuda.synchronize(be.device)

    def time_bare() -> float:
        bare.reset(seed=0)
        sync()
        start = time.perf_counter()
        for _ in range(steps - 1):
            bare.step(arms, messages)
        sync()
        return (time.perf_counter() - start) / (steps - 1)

    def time_view() -> float:
        view.reset(seed=0)
        sync()
        start = time.perf_counter()
        for _ in range(steps - 1):
            view.step(flat_arms)
        sync()
        return (time.perf_counter() - start) / (steps - 1)

    best_bare, best_view = float("inf"), float("inf")
    for _ in range(repeats):
        best_bare = min(best_bare, time_bare())
        best_view = min(best_view, time_view())
    return {"bare": best_bare, "view": best_view, "ratio": best_view / best_bare}


__all__ = [
    "ConstantEnv",
    "batched_speedup",
    "posterior_speedup",
    "recurrent_speedup",
    "training_rates",
    "training_throughput",
    "view_overhead",
]
