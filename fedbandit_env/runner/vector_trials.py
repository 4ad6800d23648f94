"""Trials of a :class:`~fedbandit_env.vector.policy.VectorPolicy` on the vector env, in
batches: the path :func:`~fedbandit_env.runner.evaluate.evaluate` takes for a policy
written against arrays (``meta["path"] == "vector"``).

Trial ``j`` is the same trial as on the PettingZoo path: its env is env ``b`` of a batch
reset with the trial's env seed (the vector env replays the PettingZoo env, faults and
private noise included), and the policy's generator for it is
:func:`~fedbandit_env.seeding.vector_policy_generator` of the trial's team seed, which
:class:`~fedbandit_env.vector.policy.VectorTeam` gives it on the PettingZoo path.

A policy with a compiled step (:meth:`VectorPolicy.kernel
<fedbandit_env.vector.policy.VectorPolicy.kernel>`) on a bare env without messages plays
each batch in one call, with no Python between steps (:meth:`MABCore.rollout
<fedbandit_env.core.mab.MABCore.rollout>`): the same trials, to the bit. That is also a
family's fast path (:class:`CompiledTrials`, the registry's ``fast_entry_point``), in
place of a whole-trial loop of its own.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fedbandit_env.core.mab import RolloutStopped
from fedbandit_env.entry_points import load_entry_point
from fedbandit_env.policies import AgentSpec, Requirements
from fedbandit_env.runner.results import RegretCurves
from fedbandit_env.scenario.trial import TrialResult, TrialSetup, record_steps
from fedbandit_env.seeding import spawn, split_trial_seed, vector_policy_generator
from fedbandit_env.type_aliases import IntArray
from fedbandit_env.vector.policy import CompiledAct, VectorPolicy, VectorSpec


def vector_unsupported(scenario: Any, needs: Requirements | None) -> str | None:
    """Why ``scenario`` under ``needs`` has no vector trials (a layer without a vector
    form, any layer over a linear bandit, a protocol that hands receivers different
    copies: the linear vector env carries GammaHops' by receiver, but the trials'
    ``VectorTeam`` reads one message per sender), or ``None`` if it has them.

    Examples:
        >>> from fedbandit_env.scenario import Scenario
        >>> vector_unsupported(Scenario(n_agents=3, n_arms=2, horizon=5), None) is None
        True
        >>> vector_unsupported(Scenario(n_agents=3, n_arms=2, horizon=5, protocol="gamma_hops"),
        ...                    Requirements(message_dim=2))
        'the protocol gamma_hops (its copies differ by receiver)'
        >>> vector_unsupported(Scenario(n_agents=3, n_arms=4, horizon=5, instance="dubey",
        ...                             dim=2), None) is None
        True
    """
    plan = scenario.plan(needs)
    if scenario.linear and plan.layers:  # the linear vector env takes no layers yet
        return f"a linear bandit under the layers {list(plan.names)}"
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
    return _start_split(venv, policy, [split_trial_seed(child) for child in seeds], agents)


def _start_split(
    venv: Any, policy: VectorPolicy, pairs: Sequence[tuple[int, Any]], agents: Any
) -> Any:
    """:func:`_start` of seeds already split into ``(env_seed, team_seed)``."""
    env_seeds = [int(env_seed) for env_seed, _ in pairs]
    team_seeds = tuple(team_seed for _, team_seed in pairs)
    obs, _ = venv.reset(seed=env_seeds)
    rngs = [vector_policy_generator(team_seed) for team_seed in team_seeds]
    policy.reset(VectorSpec(len(pairs), agents, team_seeds), rngs)
    return obs


@functools.lru_cache(maxsize=16)
def agent_specs(scenario: Any, needs: Requirements) -> tuple[AgentSpec, ...]:
    """Every agent's public facts in ``scenario.make_env(needs)`` (built once per
    scenario and requirements: a batch of trials asks for them again).

    Examples:
        >>> from fedbandit_env.scenario import Scenario
        >>> len(agent_specs(Scenario(n_agents=3, n_arms=2, horizon=5), Requirements()))
        3
    """
    probe = scenario.make_env(needs)
    agents = VectorSpec.from_env(probe, 1).agents
    probe.close()
    return agents


def compiled_act(venv: Any, policy: VectorPolicy) -> CompiledAct | None:
    """The policy's compiled step where ``venv`` is a NumPy env that
    :meth:`MABCore.rollout <fedbandit_env.core.mab.MABCore.rollout>` plays (no messages,
    or Broadcast's, RandomEdgeGossip's, NeighbourGossip's, ServerRounds', Flooding's or
    Hybrid's:
    ``MABCore.rolls_out``), bare
    or under a layer that plays its part inside the rollout (``venv.rolls_out``:
    ``VecPrivateRewards``), and the step's form fits it (talking where the env carries
    messages: ``kernel_talks``; reading what the layer hands out: ``kernel_observes``
    is the stack's ``rollout_observes``; hearing every neighbour's prefix:
    ``kernel_hears_graph`` where the protocol delivers so; reading the server's broadcast,
    ``kernel_rounds``, exactly over ServerRounds and Hybrid; reading GammaHops' copies by receiver,
    ``kernel_hops``, exactly over GammaHops), else ``None``. Call after
    the policy's ``reset``; roll out with ``venv.rollout(*compiled, ...)``.

    Examples:
        >>> from fedbandit_env.scenario import Scenario
        >>> from fedbandit_env.vector import make_vec
        >>> class Arm0(VectorPolicy):
        ...     def reset(self, spec, rngs): pass
        ...     def act(self, observations): return np.zeros((1, 1), np.int64), None
        >>> compiled_act(make_vec(Scenario(n_agents=3, n_arms=2, horizon=5), 2), Arm0()) is None
        True
    """
    if not getattr(venv, "rolls_out", False):
        return None
    if getattr(venv, "rollout_observes", None) != getattr(policy, "kernel_observes", None):
        return None  # the policy reads other numbers than the stack hands out
    core = venv.unwrapped.core
    if bool(core.message_dim) != bool(getattr(policy, "kernel_talks", False)):
        return None  # a silent step in an env that carries messages, or the reverse
    if getattr(policy, "kernel_hears_graph", False) and not core.router.prefix_reaches_graph:
        return None  # the step takes every neighbour's prefix as heard; not so here
    rounds = bool(core.message_dim) and core.router.kind in ("server_rounds", "hybrid")
    if rounds != bool(getattr(policy, "kernel_rounds", False)):
        return None  # a step that reads the server's broadcast, or one that does not
    if bool(getattr(core, "gamma", 0)) != bool(getattr(policy, "kernel_hops", False)):
        return None  # a linear step that reads GammaHops' copies, or one that does not
    return policy.kernel()


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
            compiled = compiled_act(venv, policy)
            if compiled is not None:  # the whole batch in compiled code
                out = np.zeros((k, len(agents), steps.size))
                venv.rollout(*compiled, steps, out, cost_out=cost[first : first + k])
                regret[first : first + k] = out
                bar.update(k * horizon)
            else:
                _play_batch(venv, policy, obs, steps, regret[first : first + k],
                            cost[first : first + k], bar)  # fmt: skip
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


STATE_BUDGET = 4 << 20
"""Bytes of policy state one compiled rollout steps at most (the envs of a batch beyond
it play in smaller batches; one env always plays). The rollout steps every env of a
batch each step, so a batch whose state outgrows the caches reads it from memory:
measured, two trials of ``coop_ts_relay`` at N = 50, M = 100 (4 MB of tables an env) took
7.0 s as one batch and 5.3 s one after the other, while ``coop_ts`` (1.8 MB an env) and
N = 10 (30 kB) ran faster batched."""


def _state_bytes(state: Sequence[Any]) -> int:
    """Bytes of the arrays of a compiled step's state.

    Examples:
        >>> _state_bytes((np.zeros(4), 3, np.zeros((2, 2), np.int8)))
        36
    """
    return sum(int(a.nbytes) for a in state if isinstance(a, np.ndarray))


class CompiledTrials:
    """A family's fast path from a vector policy with a compiled step: trials of
    ``factory(**params)`` played by :meth:`MABCore.rollout
    <fedbandit_env.core.mab.MABCore.rollout>` on the vector env of the scenario, a batch
    of envs at a time, in place of a whole-trial loop of the family's own. Register it as
    the policy's ``fast_entry_point``; :func:`~fedbandit_env.runner.fast.run_fast` gives
    each thread one batch (:meth:`run_batch`), and calling it plays one trial (the
    :data:`~fedbandit_env.scenario.trial.TrialRunner` contract). The trials are those
    of the PettingZoo path (``tests/runner/test_replay.py``).

    Args:
        factory: ``(**params) -> VectorPolicy`` (an entry point or a ``"module:attr"``).
        fallback: A per-trial runner (or its ``"module:attr"``) for the scenarios the
            compiled rollout does not play (a layer such as ``PrivateRewards``, a
            protocol routed by its own object); ``None``: refuse them.

    Examples:
        >>> from fedbandit_env.scenario import Scenario
        >>> from fedbandit_env.seeding import trial_seeds
        >>> runner = CompiledTrials("baselines.ucb.vector:local_ucb")
        >>> st = TrialSetup.build(Scenario(n_agents=3, n_arms=2, horizon=20), np.array([20]),
        ...                       False, {})
        >>> runner(st, trial_seeds(0, 1)[0]).regret.shape
        (3, 1)
    """

    faults: tuple[str, ...] = ()
    """The faults it models: none (a faulty stack has no bare env; ``evaluate`` plays it
    on the vector env's wrappers)."""

    def __init__(
        self,
        factory: Callable[..., VectorPolicy] | str,
        fallback: Callable[..., TrialResult] | str | None = None,
    ) -> None:
        self.factory = factory
        self.fallback = fallback

    @property
    def compiled_modules(self) -> list[str]:
        """The modules whose numba caches its trials use: the core's rollout, the
        policy's own and the fallback's (``run_fast`` drops them when a kernel they call
        has changed)."""
        made = load_entry_point(self.factory, "a compiled fast path's factory")
        modules = ["fedbandit_env.core.kernels", str(getattr(made, "__module__", ""))]
        if self.fallback is not None:
            runner = load_entry_point(self.fallback, "a compiled fast path's fallback")
            modules.append(str(getattr(runner, "__module__", "")))
        return modules

    def policy(self, params: dict[str, Any]) -> VectorPolicy:
        """A fresh policy with the constructor options ``params``."""
        factory = load_entry_point(self.factory, "a compiled fast path's factory")
        policy = factory(**params)
        if not isinstance(policy, VectorPolicy):
            raise TypeError(f"{self.factory!r} must make a VectorPolicy, got {policy!r}")
        return policy

    def __call__(self, st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
        """One trial: ``seeds`` is its ``(env_seed, team_seed)``."""
        return self.run_batch(st, [seeds])[0]

    def run_batch(
        self,
        st: TrialSetup,
        seeds: Sequence[tuple[int, Any]],
        stop: Callable[[], bool] | None = None,
    ) -> list[TrialResult]:
        """The trials of ``seeds`` (each ``(env_seed, team_seed)``) as one batch of envs;
        ``stop`` is asked between blocks of steps (and between the fallback's trials),
        ending the batch with :class:`~fedbandit_env.core.mab.RolloutStopped` when it
        says so (``run_fast`` on Ctrl-C)."""
        from fedbandit_env.vector import make_vec

        scenario, k = st.scenario, len(seeds)
        policy = self.policy(st.params)
        needs = policy.requirements(scenario.n_agents, scenario.n_arms)
        agents = agent_specs(scenario, needs)
        venv = make_vec(scenario, k, needs)
        _start_split(venv, policy, seeds, agents)
        compiled = compiled_act(venv, policy)
        if compiled is None and self.fallback is not None:
            venv.close()
            runner = load_entry_point(self.fallback, "a compiled fast path's fallback")
            results: list[TrialResult] = []
            for pair in seeds:
                if stop is not None and stop():
                    raise RolloutStopped(f"stopped after {len(results)} of {k} trials")
                results.append(runner(st, pair))
            return results
        if compiled is None and k > 1:  # e.g. linear pools of different sizes: one by one
            venv.close()
            return [result for pair in seeds for result in self.run_batch(st, [pair], stop)]
        if compiled is None:
            raise ValueError(
                f"{getattr(policy, 'name', type(policy).__name__)} has a compiled step for "
                "a bare env without messages or with Broadcast's or a gossip protocol's "
                "(under PrivateRewards where the step reads the private means) only; this "
                "scenario's is not: run it through evaluate (the vector env's layers)"
            )
        per_env = _state_bytes(compiled[1]) / k
        if k > 1 and per_env * k > STATE_BUDGET:  # smaller batches, each within the budget
            venv.close()
            size = max(1, int(STATE_BUDGET // per_env))
            return [result for j in range(0, k, size)
                    for result in self.run_batch(st, seeds[j : j + size], stop)]  # fmt: skip
        n, horizon = len(agents), int(scenario.horizon)
        out, cost = np.zeros((k, n, st.steps.size)), np.zeros((k, st.steps.size))
        shape = (k, horizon, n) if st.trace else (0, 0, 0)
        arms, rewards = np.zeros(shape, np.int64), np.zeros(shape, np.float32)
        venv.rollout(*compiled, st.steps, out, (arms, rewards), cost, stop=stop)
        talks = bool(venv.unwrapped.core.message_dim)
        venv.close()
        if not st.trace:
            arms, rewards = np.zeros((k, 0, n), np.int64), np.zeros((k, 0, n), np.float32)
        return [TrialResult(out[j], arms[j], rewards[j], cost[j] if talks else None)
                for j in range(k)]  # fmt: skip


def _play_batch(
    venv: Any,
    policy: VectorPolicy,
    obs: Any,
    steps: IntArray,
    regret: np.ndarray,
    cost: np.ndarray,
    bar: Any,
) -> None:
    """Step a batch to the horizon through ``policy.act``, recording the regret ``(B, N,
    R)`` and cost ``(B, R)`` at ``steps``."""
    k, horizon = regret.shape[0], int(venv.horizon)
    r, shown = 0, 0
    for t in range(1, horizon + 1):
        arms, messages = policy.act(obs)
        obs, _, _, _, infos = venv.step(arms, messages)
        if r < steps.size and t == steps[r]:
            regret[:, :, r] = infos["cumulative_regret"]
            cost[:, r] = infos["cumulative_comm_cost"]
            r += 1
        if t % 64 == 0 or t == horizon:
            bar.update(k * (t - shown))
            shown = t


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
    compiled = compiled_act(venv, policy)
    if compiled is not None:  # the whole batch in compiled code
        horizon = int(scenario.horizon)
        venv.rollout(*compiled, np.array([horizon]), np.zeros((len(seeds), len(agents), 1)))
        regret = venv.unwrapped.core.cum_regret.copy()
        venv.close()
        return np.asarray(regret, dtype=np.float64).mean(axis=1)
    infos: dict[str, Any] = {}
    for _ in range(int(scenario.horizon)):
        arms, messages = policy.act(obs)
        obs, _, _, _, infos = venv.step(arms, messages)
    venv.close()
    return np.asarray(infos["cumulative_regret"], dtype=np.float64).mean(axis=1)


__all__ = [
    "CompiledTrials",
    "agent_specs",
    "compiled_act",
    "run_episodes",
    "run_vector_trials",
    "vector_unsupported",
]
