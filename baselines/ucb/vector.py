"""The plain baselines as vector policies: every agent of ``B`` envs in one compiled step.

These are what the registry runs as ``local_ucb``, ``kl_ucb``, ``random`` and
``oracle_ucb`` (issue 62: a family's fast path is a compiled step over the vector env,
not a trial loop of its own). Each keeps the per-agent policy's statistics as ``(B, N,
M)`` arrays and calls the same kernels (:mod:`baselines.ucb.kernels`), and its agents
draw from the generators :class:`~fedbandit_env.policies.IndependentTeam` gives the
per-agent policies (:func:`~fedbandit_env.vector.policy.agent_generators` of the trial's
team seed), so a trial is the per-agent team's to the bit, on the vector env and on the
PettingZoo env (``tests/families/test_ucb_vector.py``). The per-agent classes
(:class:`~baselines.ucb.LocalUCB1`, ...) stay for use in any PettingZoo loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import baselines.ucb.kernels as kernels
from baselines.ucb.policies import kl_range
from fedbandit_env.rng_kernels import generator_table
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import (
    CompiledAct,
    VectorObs,
    VectorPolicy,
    VectorSpec,
    agent_generators,
)


def _silence(spec: VectorSpec) -> FloatArray | None:
    """The messages of an agent that says nothing: zeros where the env carries messages
    (as a silent per-agent policy's team sends), ``None`` where it does not."""
    if not spec.message_dim:
        return None
    return np.zeros((spec.num_envs, spec.n_agents, spec.message_dim))


def _play(policy: VectorPolicy, observations: VectorObs) -> IntArray:
    """The arms of the policy's compiled step (:meth:`VectorPolicy.kernel`) on the step
    ``t``, the last arms ``(B, N)`` and the float32 rewards ``(B, N)`` of the
    observations: ``act`` and the compiled rollout run the same function."""
    step_count = np.asarray(observations["step"])
    t, shape = int(step_count[0, 0, 0]), step_count.shape[:2]
    if "arm" in observations:
        arm = np.ascontiguousarray(observations["arm"], dtype=np.int64)
        reward = np.asarray(observations["reward"])[..., 0]
        reward = np.ascontiguousarray(reward, dtype=np.float32)
    else:  # a view without the last pull (the random policy reads none)
        arm, reward = np.zeros(shape, np.int64), np.zeros(shape, np.float32)
    compiled = policy.kernel()
    assert compiled is not None
    step, state = compiled
    arms = np.empty(arm.shape, dtype=np.int64)
    step(arm, reward, t, *state, arms)
    return arms


class LocalIndexVector(VectorPolicy):
    """Local UCB1 (``kl=False``) or KL-UCB (``kl=True``) for every agent: each agent's
    own counts and sums, no communication (:class:`~baselines.ucb.LocalUCB1`,
    :class:`~baselines.ucb.LocalKLUCB`).

    Args:
        scale: The bonus multiplier (UCB1) or the Gaussian ``kl``'s noise scale (KL-UCB).
        c: KL-UCB's ``log log t`` coefficient.
        kl: KL-UCB instead of UCB1.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> policy = LocalIndexVector()
        >>> spec = VectorSpec(2, tuple(AgentSpec(i, 3, 4, 10) for i in range(3)))
        >>> policy.reset(spec, [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32)}
        >>> policy.act(obs)[0].tolist()  # every arm once first
        [[0, 0, 0], [0, 0, 0]]
    """

    name = "local_ucb"

    def __init__(self, scale: float = 1.0, c: float = 0.0, kl: bool = False) -> None:
        if not (scale > 0 and np.isfinite(scale)):
            raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
        if not (c >= 0 and np.isfinite(c)):
            raise ValueError(f"c must be a finite number >= 0, got {c!r}")
        self.scale, self.c, self.kl = float(scale), float(c), bool(kl)
        if kl:
            self.name = "kl_ucb"

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty statistics; each agent's generator for its ties."""
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        self._generators = agent_generators(spec, rngs)  # alive while the table is used
        self._table = generator_table(self._generators)
        self.counts, self.sums = np.zeros((b, n, m)), np.zeros((b, n, m))
        self.lo, self.width = kl_range(spec.reward_bounds) if self.kl else (0.0, 1.0)
        self._messages = _silence(spec)
        self._index = np.zeros(m)  # the kernel's work space

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Fold in the last pull; pull the first unpulled arm or the largest index."""
        return _play(self, observations), self._messages

    def kernel(self) -> CompiledAct:
        """:func:`~baselines.ucb.kernels.local_index_step` and its statistics."""
        state = (self.counts, self.sums, self.kl, self.scale, self.c, self.lo, self.width,
                 self._table, self._index)  # fmt: skip
        return kernels.local_index_step, state


def local_ucb(scale: float = 1.0) -> LocalIndexVector:
    """``local_ucb``: UCB1 on every agent's own rewards.

    Examples:
        >>> local_ucb(0.5).scale, local_ucb().kl
        (0.5, False)
    """
    return LocalIndexVector(scale=scale)


def kl_ucb(c: float = 0.0, scale: float = 1.0) -> LocalIndexVector:
    """``kl_ucb``: KL-UCB on every agent's own rewards.

    Examples:
        >>> kl_ucb().name, kl_ucb(c=3.0).c
        ('kl_ucb', 3.0)
    """
    return LocalIndexVector(scale=scale, c=c, kl=True)


class RandomVector(VectorPolicy):
    """A uniformly random arm for every agent, each from its own generator
    (:class:`~baselines.ucb.RandomPolicy`).

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> policy = RandomVector()
        >>> spec = VectorSpec(2, tuple(AgentSpec(i, 3, 4, 10) for i in range(3)))
        >>> policy.reset(spec, [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32)}
        >>> arms, _ = policy.act(obs)
        >>> arms.shape, bool(((0 <= arms) & (arms < 4)).all())
        ((2, 3), True)
    """

    name = "random"

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Each agent's generator."""
        self._generators = agent_generators(spec, rngs)
        self._table = generator_table(self._generators)
        self.shape, self.m = (spec.num_envs, spec.n_agents), spec.n_arms
        self._messages = _silence(spec)

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Every agent's uniform arm."""
        return _play(self, observations), self._messages

    def kernel(self) -> CompiledAct:
        """:func:`~baselines.ucb.kernels.random_step` and the agents' generators."""
        return kernels.random_step, (self._table, self.m)


class OracleVector(VectorPolicy):
    """The pooled oracle of every env: centralized UCB1 on every agent's rewards, all
    agents pulling one arm (:class:`~baselines.ucb.OracleUCB`; a privileged bound).

    Args:
        scale: Multiplier of the bonus.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> policy = OracleVector()
        >>> spec = VectorSpec(1, tuple(AgentSpec(i, 3, 2, 10) for i in range(3)))
        >>> policy.reset(spec, [np.random.default_rng(0)])
        >>> obs = {"arm": np.zeros((1, 3), int), "reward": np.ones((1, 3, 1), np.float32),
        ...        "step": np.zeros((1, 3, 1), np.float32)}
        >>> policy.act(obs)[0].tolist()
        [[0, 0, 0]]
    """

    name = "oracle_ucb"

    def __init__(self, scale: float = 1.0) -> None:
        if not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale!r}")
        self.scale = float(scale)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Empty pooled statistics; each env's team generator for its ties (the first
        agent's stream of the team seed, as ``OracleUCB``'s)."""
        one = VectorSpec(spec.num_envs, spec.agents[:1], spec.team_seeds)
        self._generators = agent_generators(one, rngs)
        self._table = generator_table(self._generators)
        self.counts = np.zeros((spec.num_envs, spec.n_arms))
        self.sums = np.zeros((spec.num_envs, spec.n_arms))
        self._messages = _silence(spec)
        self._work = np.zeros(spec.n_arms), np.zeros(spec.n_agents)  # the kernel's

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Pool the last step's rewards; send every agent to the best pooled index."""
        return _play(self, observations), self._messages

    def kernel(self) -> CompiledAct:
        """:func:`~baselines.ucb.kernels.oracle_step` and the pooled statistics."""
        return kernels.oracle_step, (self.counts, self.sums, self.scale, self._table, *self._work)


__all__ = ["LocalIndexVector", "OracleVector", "RandomVector", "kl_ucb", "local_ucb"]
