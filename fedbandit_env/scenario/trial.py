"""The trial contract both speeds share: the steps a trial records, what every fast-path
trial of a scenario shares (:class:`TrialSetup`) and what one returns
(:class:`TrialResult`). Every family's compiled runner is a :data:`TrialRunner`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedbandit_env.scenario.plan import StackPlan
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


def record_steps(horizon: int, record_every: int) -> IntArray:
    """The steps at which cumulative regret is recorded: every ``k``-th and the last.

    Examples:
        >>> record_steps(10, 4).tolist()
        [4, 8, 10]
    """
    if record_every < 1:
        raise ValueError(f"record_every must be >= 1, got {record_every}")
    steps = np.arange(record_every, horizon + 1, record_every, dtype=np.int64)
    if steps.size == 0 or steps[-1] != horizon:
        steps = np.append(steps, horizon)
    return steps


@dataclass
class TrialResult:
    """One trial of the fast path.

    Attributes:
        regret: Per-agent cumulative pseudo-regret at the recorded steps, ``(N, R)``.
        arms: Arm of every agent at every step, ``(T, N)`` (only when traced).
        rewards: Reward every agent observed, ``(T, N)`` float32 (only when traced):
            the raw reward, or the private increment under privacy.
        comm_cost: The network's cumulative communication cost at the recorded steps
            (``None``: the policy never talks).

    Examples:
        >>> TrialResult(np.zeros((2, 1)), np.zeros((0, 2), int), np.zeros((0, 2))).comm_cost is None
        True
    """

    regret: FloatArray
    arms: IntArray
    rewards: Float32Array
    comm_cost: FloatArray | None = None


@dataclass(frozen=True)
class TrialSetup:
    """What every trial of one ``run_fast`` call shares, built once from the scenario.

    Attributes:
        scenario: The setting.
        mu: Local means ``(N, M)``, C-contiguous.
        noise: The problem's noise code (``fedbandit_env.problems.kernels``).
        sigma: Gaussian noise scale.
        gaps: Global gaps ``(M,)``.
        reward_bounds: The range the env declares for rewards.
        steps: The recorded steps.
        trace: Whether trials keep every step's arms and rewards.
        params: The policy's constructor options.
        problem: The generated problem itself, for what the arrays above do not carry.
        plan: The layers the PettingZoo path puts over the policy's env
            (:meth:`Scenario.plan <fedbandit_env.scenario.scenario.Scenario.plan>`): a
            runner takes a layer's generator from it (:meth:`StackPlan.generator
            <fedbandit_env.scenario.plan.StackPlan.generator>`), never from a depth of its
            own.

    Examples:
        >>> st = TrialSetup.build(Scenario(n_agents=3, n_arms=2, horizon=10), np.array([10]),
        ...                    False, {})
        >>> st.mu.shape, [b.shape for b in st.buffers()]
        ((3, 2), [(3, 1), (0, 3), (0, 3)])
    """

    scenario: Scenario
    mu: FloatArray
    noise: int
    sigma: float
    gaps: FloatArray
    reward_bounds: tuple[float, float]
    steps: IntArray
    trace: bool
    params: dict[str, Any]
    problem: Any = None
    plan: StackPlan = field(default_factory=lambda: StackPlan(()))

    @classmethod
    def build(
        cls,
        scenario: Scenario,
        steps: IntArray,
        trace: bool,
        params: dict[str, Any],
        env_seed: int = 0,
        plan: StackPlan | None = None,
    ) -> TrialSetup:
        """Generate the problem of a trial with ``env_seed`` (the same for every trial
        of a fixed-instance scenario; the network is built by the runners that need it)."""
        p = scenario.problem_for(env_seed)
        mu = np.ascontiguousarray(p.local_means)
        bounds = p.reward_bounds
        gaps = getattr(p, "gaps", np.zeros(0))  # a linear problem's gaps depend on the sets
        return cls(
            scenario,
            mu,
            p.noise_code,
            p.sigma,
            gaps,
            bounds,
            steps,
            trace,
            params,
            problem=p,
            plan=plan if plan is not None else StackPlan(()),
        )

    def buffers(self) -> tuple[FloatArray, IntArray, Float32Array]:
        """Fresh regret and trace arrays of one trial: ``(N, R)`` regret, and ``(T, N)``
        arms and rewards when tracing (else ``(0, N)``)."""
        n = self.scenario.n_agents
        shape = (self.scenario.horizon, n) if self.trace else (0, n)
        arms, rewards = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.float32)
        return np.zeros((n, self.steps.size)), arms, rewards


TrialRunner = Callable[[TrialSetup, tuple[int, Any]], TrialResult]
"""``(setup, (env_seed, team_seed)) -> TrialResult``: one whole trial (a registered
policy's ``fast_entry_point``)."""


__all__ = ["TrialResult", "TrialRunner", "TrialSetup", "record_steps"]
