"""Trials of a :class:`~fedbandit_env.vector.policy.VectorPolicy` on the vector env, in
batches: the path :func:`~fedbandit_env.runner.evaluate.evaluate` takes for a policy
written against arrays (``meta["path"] == "vector"``).

Trial ``j`` is the same trial as on the PettingZoo path: its env is env ``b`` of a batch
reset with the trial's env seed (the vector env replays the PettingZoo env, faults and
private noise included), and the policy's generator for it is
:func:`~fedbandit_env.seeding.vector_policy_generator` of the trial's team seed, which
:class:`~fedbandit_env.vector.policy.VectorTeam` gives it on the PettingZoo path.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fedbandit_env.policies import Requirements
from fedbandit_env.runner.results import RegretCurves
from fedbandit_env.scenario.trial import record_steps
from fedbandit_env.seeding import spawn, split_trial_seed, vector_policy_generator
from fedbandit_env.type_aliases import IntArray
from fedbandit_env.vector.policy import VectorPolicy, VectorSpec


def vector_unsupported(scenario: Any, needs: Requirements | None) -> str | None:
    """Why ``scenario`` under ``needs`` has no vector env (a linear bandit, a layer
    without a vector form, a protocol that hands receivers different copies), or
    ``None`` if it has one.

    Examples:
        >>> from fedbandit_env.scenario import Scenario
        >>> vector_unsupported(Scenario(n_agents=3, n_arms=2, horizon=5), None) is None
        True
        >>> vector_unsupported(Scenario(n_agents=3, n_arms=2, horizon=5, protocol="gamma_hops"),
        ...                    Requirements(message_dim=2))
        'the protocol gamma_hops (its copies differ by receiver)'
    """
    if scenario.linear:
        return "a linear bandit"
    plan = scenario.plan(needs)
    missing = [layer.name for layer in plan.layers if layer.vector is None]
    if missing:
        return f"the layers {missing}"
    protocol = scenario.protocol_for(needs)
    if protocol is not None and not protocol.per_sender:
        return f"the protocol {protocol.name} (its copies differ by receiver)"
    return None


def _start(venv: Any, policy: VectorPolicy, seeds: list[Any], agents: Any) -> Any:
    """Reset env ``b`` of ``venv`` with trial ``b``'s env seed and ``policy`` with each
    trial's generator (the trial seeds split as every path splits them); the first
    observations."""
    env_seeds, rngs, team_seeds = [], [], []
    for child in seeds:
        env_seed, team_seed = split_trial_seed(child)
        env_seeds.append(int(env_seed))
        rngs.append(vector_policy_generator(team_seed))
        team_seeds.append(team_seed)
    obs, _ = venv.reset(seed=env_seeds)
    policy.reset(VectorSpec(len(seeds), agents, tuple(team_seeds)), rngs)
    return obs


def run_vector_trials(
    policy: VectorPolicy,
    scenario: Any,
    needs: Requirements | None,
    n_trials: int,
    seed: int = 0,
    first_trial: int = 0,
    record_every: int = 1,
    batch: int = 256,
    progress: bool = False,
    label: str | None = None,
) -> RegretCurves:
    """Trials ``first_trial ..`` of ``policy`` on ``make_vec(scenario, ., needs)``,
    ``batch`` at a time (see the module docstring); each trial's seconds are its share of
    its batch's wall time. ``needs=None`` takes the policy's own requirements.

    Examples:
        >>> from fedbandit_env.scenario import Scenario
        >>> class Arm0(VectorPolicy):
        ...     def reset(self, spec, rngs): self.shape = (spec.num_envs, spec.n_agents)
        ...     def act(self, observations): return np.zeros(self.shape, np.int64), None
        >>> curves = run_vector_trials(Arm0(), Scenario(n_agents=3, n_arms=2, horizon=6),
        ...                            None, n_trials=5, record_every=3, batch=2)
        >>> curves.regret.shape, curves.t.tolist()
        ((5, 3, 2), [3, 6])
    """
    from fedbandit_env.vector import make_vec

    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    if needs is None:
        needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    if first_trial < 0:
        raise ValueError(f"first_trial must be >= 0, got {first_trial}")
    reason = vector_unsupported(scenario, needs)
    if reason is not None:
        raise ValueError(f"the vector env does not model {reason}")
    probe = scenario.make_env(needs)
    agents = VectorSpec.from_env(probe, 1).agents
    probe.close()
    horizon = int(scenario.horizon)
    steps = record_steps(horizon, record_every)
    children = spawn(seed, first_trial + n_trials)[first_trial:]
    name = str(label or getattr(policy, "name", "vector"))
    regret = np.zeros((n_trials, len(agents), steps.size))
    cost = np.zeros((n_trials, steps.size))
    seconds = np.zeros(n_trials)
    rejected = np.zeros(n_trials, dtype=np.int64)
    bar = tqdm(total=n_trials * horizon, desc=name, unit="step", disable=not progress, leave=False)
    with bar:
        for first in range(0, n_trials, batch):
            chunk = children[first : first + batch]
            k = len(chunk)
            begin = time.perf_counter()
            venv = make_vec(scenario, k, needs)
            obs = _start(venv, policy, chunk, agents)
            r, shown = 0, 0
            for t in range(1, horizon + 1):
                arms, messages = policy.act(obs)
                obs, _, _, _, infos = venv.step(arms, messages)
                if r < steps.size and t == steps[r]:
                    regret[first : first + k, :, r] = infos["cumulative_regret"]
                    cost[first : first + k, r] = infos["cumulative_comm_cost"]
                    r += 1
                if t % 64 == 0 or t == horizon:
                    bar.update(k * (t - shown))
                    shown = t
            venv.close()
            seconds[first : first + k] = (time.perf_counter() - begin) / k
            rejected[first : first + k] = _rejected(policy, k)
    curves = RegretCurves(
        name, steps, regret, seconds, comm_cost=cost,
        seeds=np.arange(first_trial, first_trial + n_trials),
    )  # fmt: skip
    # messages the receivers dropped as ones no honest sender can send, per trial (as
    # run_trials records them on the PettingZoo path)
    curves.meta["rejected_messages"] = rejected
    return curves


def _rejected(policy: VectorPolicy, k: int) -> IntArray:
    """Each of the batch's ``k`` envs' dropped messages (the policy's ``rejected``,
    ``(B, N)`` or ``(B,)``, summed per env; zeros for a policy that does not validate)."""
    counts = np.asarray(getattr(policy, "rejected", 0), dtype=np.int64)
    if counts.ndim == 0 or counts.shape[0] != k:
        return np.zeros(k, dtype=np.int64)
    return counts.reshape(k, -1).sum(axis=1)


def run_episodes(
    policy: VectorPolicy, scenario: Any, seeds: list[Any], needs: Requirements | None = None
) -> np.ndarray:
    """Play one episode per seed (a trial's seed, split as every path splits it) in one
    vector env; return each episode's final regret per agent ``(len(seeds),)``, the
    agents' mean. What :func:`~fedbandit_env.runner.tune.tune` scores candidates by.

    Examples:
        >>> from fedbandit_env.scenario import Scenario
        >>> class Arm0(VectorPolicy):
        ...     def reset(self, spec, rngs): self.shape = (spec.num_envs, spec.n_agents)
        ...     def act(self, observations): return np.zeros(self.shape, np.int64), None
        >>> regret = run_episodes(Arm0(), Scenario(n_agents=3, n_arms=2, horizon=6),
        ...                       spawn(0, 4))
        >>> regret.shape
        (4,)
    """
    from fedbandit_env.vector import make_vec

    if needs is None:
        needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, len(seeds), needs)
    probe = scenario.make_env(needs)
    agents = VectorSpec.from_env(probe, 1).agents
    probe.close()
    obs = _start(venv, policy, seeds, agents)
    infos: dict[str, Any] = {}
    for _ in range(int(scenario.horizon)):
        arms, messages = policy.act(obs)
        obs, _, _, _, infos = venv.step(arms, messages)
    venv.close()
    return np.asarray(infos["cumulative_regret"], dtype=np.float64).mean(axis=1)


__all__ = ["run_episodes", "run_vector_trials", "vector_unsupported"]
