"""CDP-, DDP- and HDP-MAB as a vector policy: every agent of ``B`` envs in one compiled
step (:func:`~baselines.elimination.kernels.elimination_step`).

It plays, trial for trial, what the per-agent policies
(:class:`~baselines.elimination.CDPMAB`, :class:`~baselines.elimination.DDPMAB`,
:class:`~baselines.elimination.HDPMAB`, which the registry plays on the PettingZoo path)
play: their options (``epsilon``, ``participation``, ``rounds``, ``min_gap``, ``clip``,
``noise``), their readings (the module docstring of :mod:`baselines.elimination.policies`)
and each agent's Laplace draws from the generator
:class:`~fedbandit_env.policies.IndependentTeam` gives it
(``tests/families/elimination/test_elimination_vector.py``). Each agent keeps its own
epoch books, so it plays through the vector env's layers (message loss and delays
included: agents may then finish rounds at different steps) and reads a screened
inbox's ``server_dropped`` where an observation has it, not only in lockstep.

CDP-MAB's step also rolls out in compiled code over ``ServerRounds``
(:attr:`~EliminationVector.kernel_rounds`, ``core.rounds.rollout_rounds``), DDP-MAB's
over GIS flooding (``core.rounds.rollout_flooding``) and HDP-MAB's over the hybrid
structure (``core.rounds.rollout_hybrid``): the same trials
(``tests/families/elimination/test_elimination_vector.py``). In those rollouts the step
plans the steps in which every agent explores its epoch's arms in turn or plays its
committed arm (:class:`~fedbandit_env.core.rounds.QuietSteps`, at most
:data:`QUIET_STEPS` ahead), which the core plays without calling it; it takes them in
when next called, the same numbers. These rollouts are the family's registered fast path
(:mod:`baselines.elimination.fast`: the whole-trial loop they replaced is gone).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.elimination.kernels import (
    KIND_FLOODING,
    KIND_SERVER,
    EliminationSetup,
    elimination_step,
    flooding_step,
    start_epoch,
)
from baselines.elimination.policies import CDPMAB, DDPMAB, HDPMAB, EliminationPolicy
from fedbandit_env.core.kernels import WireChanges
from fedbandit_env.core.rounds import QuietSteps
from fedbandit_env.policies import Requirements
from fedbandit_env.privacy.mechanisms import clip_range, fresh_generator
from fedbandit_env.rng_kernels import generator_table
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import (
    CompiledAct,
    VectorObs,
    VectorPolicy,
    VectorSpec,
    agent_generators,
)

QUIET_STEPS = 256
"""The most steps :func:`~baselines.elimination.kernels.elimination_step` plans ahead
for a round rollout to play without calling it (:class:`~fedbandit_env.core.rounds.
QuietSteps`: an exploring agent's pulls are known to the end of its epoch)."""


class EliminationVector(VectorPolicy):
    """An elimination policy (``template``: a :class:`~baselines.elimination.CDPMAB`,
    :class:`~baselines.elimination.DDPMAB` or :class:`~baselines.elimination.HDPMAB`)
    for every agent of every env, with the template's options.

    A round's result is read where the template reads it: the server's broadcast
    (``server``, ``server_mask``) for CDP and HDP; for DDP the flooded payloads of the
    senders in ``mask``, averaged with the agent's own upload in agent order.

    Args:
        template: The per-agent policy whose options and readings it plays.

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> agents = tuple(AgentSpec(i, 2, 3, 100, message_dim=4) for i in range(2))
        >>> policy = EliminationVector(CDPMAB(epsilon=None))
        >>> policy.reset(VectorSpec(1, agents), [np.random.default_rng(0)])
        >>> obs = {"reward": np.zeros((1, 2, 1), np.float32),
        ...        "messages": np.zeros((1, 2, 4), np.float32),
        ...        "mask": np.zeros((1, 2, 2), np.int8),
        ...        "server": np.zeros((1, 2, 4), np.float32),
        ...        "server_mask": np.zeros((1, 2, 1), np.int8)}
        >>> [policy.act(obs)[0].tolist() for _ in range(4)]
        [[[0, 0]], [[1, 1]], [[2, 2]], [[0, 0]]]
    """

    kernel_talks = True
    kernel_rounds = True

    def __init__(self, template: EliminationPolicy) -> None:
        if not isinstance(template, (CDPMAB, DDPMAB, HDPMAB)):
            raise TypeError(f"EliminationVector plays a CDPMAB, DDPMAB or HDPMAB, got {template!r}")
        self.template = template
        self.name = {CDPMAB: "cdp_mab", DDPMAB: "ddp_mab", HDPMAB: "hdp_mab"}[type(template)]
        self.kernel_rounds = not isinstance(template, DDPMAB)  # DDP's step reads the flood

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """The per-agent policy's: ``[flag, ybar]`` through its round protocol."""
        return self.template.requirements(n_agents, n_arms)

    def privacy_epsilon(self, n_agents: int, n_arms: int) -> float | None:
        """The per-agent policy's claim: ``n eps`` (``None`` without noise)."""
        return self.template.privacy_epsilon(n_agents, n_arms)

    def noise_source(self) -> str | None:
        """The per-agent policy's: ``"seeded"`` or ``"secure"``, ``None`` without noise."""
        return self.template.noise_source()

    @property
    def rounds_done(self) -> IntArray:
        """``(B, N)``: the rounds each agent has finished (the per-agent ``rounds_done``)."""
        return self._books[:, 7].reshape(self._shape).copy()

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Start epoch 1 with every arm active, for every agent of every env."""
        template = self.template
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        if spec.message_dim != 1 + m:
            raise ValueError(
                f"{type(template).__name__} needs message_dim = 1 + n_arms = {1 + m}, "
                f"got {spec.message_dim}; build the env from policy.requirements(...)"
            )
        lo, hi, width = -np.inf, np.inf, 1.0
        if template.epsilon is not None:
            lo, hi = clip_range(template.clip, spec.agents[0].reward_bounds,
                                type(template).__name__)  # fmt: skip
            width = hi - lo
        self.setup = EliminationSetup(
            KIND_FLOODING if isinstance(template, DDPMAB) else KIND_SERVER,
            template.uploaders(n),
            float("inf") if template.epsilon is None else float(template.epsilon),
            float(lo),
            float(hi),
            float(width),
            int(template.rounds or 0),
            float(template.min_gap or 0.0),
            int(spec.agents[0].horizon),
        )
        rows = b * n
        self._shape = (b, n)
        self._counts, self._sums = np.zeros((rows, m)), np.zeros((rows, m))
        self._epoch_sums, self._ybar = np.zeros((rows, m)), np.zeros((rows, m))
        self._kept = np.zeros((rows, m))
        self._active = np.ones((rows, m), dtype=np.bool_)
        self._order = np.zeros((rows, m), dtype=np.int64)
        self._books = np.zeros((rows, 11), dtype=np.int64)
        self._books[:, 8] = -1  # no arm pulled yet
        self._radius = np.zeros(rows)
        self._work = np.zeros((2, m))
        self._primed = np.zeros(1, dtype=np.int64)  # 0: the step writes whole rows
        # the steps a round rollout may play unasked after one (QuietSteps: two steps
        # at least, else at most 2**16 agent-steps of arms and float32 observations)
        self._quiet = QuietSteps.of(max(2, min(QUIET_STEPS, (1 << 16) // rows)), b, n)
        d = spec.message_dim  # an upload and the zeros after it, for every agent at most
        self._changes = WireChanges(np.zeros((b, 2, 2 * n * d), np.int64), np.full(b, -1))
        if template.noise == "secure":  # fresh OS entropy, as noise_generator gives
            self._generators = [fresh_generator() for _ in range(rows)]
        else:
            self._generators = agent_generators(spec, rngs)  # alive while the table is
        self._table = generator_table(self._generators)
        for c in range(rows):
            start_epoch(self.setup, self._active, self._order, self._epoch_sums,
                        self._books, self._radius, c)  # fmt: skip
        self._no_server = np.zeros((b, n, 1), dtype=np.int8)
        self._no_drops = np.zeros((b, n), dtype=np.int8)
        self._last = np.zeros((b, n), dtype=np.int64)  # not read: the books hold it

    def _state(self, heard: np.ndarray, mask: np.ndarray, dropped: np.ndarray) -> tuple:
        return (heard, mask, dropped, self.setup, self._counts, self._sums, self._epoch_sums,
                self._ybar, self._kept, self._active, self._order, self._books, self._radius,
                self._table, self._work, self._quiet, self._primed, self._changes)  # fmt: skip

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray]:
        """Record the last pull, take a round's result if it arrived, and play the epoch's
        next step for every agent: ``(B, N)`` arms and ``(B, N, 1 + M)`` messages."""
        b, n = self._shape
        seen = np.ascontiguousarray(observations["reward"], dtype=np.float32).reshape(b, n)
        heard = np.ascontiguousarray(observations["messages"], dtype=np.float32)
        mask = np.ascontiguousarray(observations["mask"], dtype=np.int8)
        if "server_mask" in observations:
            server = np.ascontiguousarray(observations["server"], dtype=np.float32)
            arrived = np.ascontiguousarray(observations["server_mask"], dtype=np.int8)
            arrived = arrived.reshape(b, n, 1)
        else:
            server, arrived = heard, self._no_server
        dropped = self._no_drops
        if "server_dropped" in observations:
            dropped = np.ascontiguousarray(observations["server_dropped"], dtype=np.int8)
            dropped = dropped.reshape(b, n)
        arms = np.empty((b, n), dtype=np.int64)
        sent = np.empty((b, n, heard.shape[2]))
        step: Any = elimination_step  # a numba dispatcher: the state's arity is not typed
        self._primed[0] = 0  # a fresh array: every entry written
        step(self._last, seen, 0, server, arrived, *self._state(heard, mask, dropped), arms,
             sent)  # fmt: skip
        self._primed[0] = 0  # a rollout's `sent` is not this array
        return arms, sent

    def kernel(self) -> CompiledAct | None:
        """:func:`~baselines.elimination.kernels.elimination_step` and the state, for a
        rollout over ``ServerRounds`` (CDP-MAB) or ``Hybrid`` (HDP-MAB), which reads the
        server's broadcast (:attr:`kernel_rounds`), or
        :func:`~baselines.elimination.kernels.flooding_step`, for one over ``Flooding``
        (DDP-MAB). The step lists what it writes (an upload, the zeros after it), so a
        rollout checks only those entries."""
        self._primed[0] = 0  # the rollout's `sent` is not what the step wrote last
        b, n = self._shape
        d = 1 + self._counts.shape[1]
        heard, mask = np.zeros((b, n, d), np.float32), np.zeros((b, n, n), np.int8)
        if self.setup.kind == KIND_SERVER:
            return elimination_step, self._state(heard, mask, self._no_drops)
        # the server's arrays in the state, where flooding_step takes them (not read)
        return flooding_step, self._state(heard, self._no_server, self._no_drops)


def cdp_mab(**options: object) -> EliminationVector:
    """CDP-MAB's vector form, with :class:`~baselines.elimination.CDPMAB`'s options.

    Examples:
        >>> cdp_mab(participation=0.5).requirements(4, 3).participation
        0.5
    """
    return EliminationVector(CDPMAB(**options))  # type: ignore[arg-type]


def ddp_mab(**options: object) -> EliminationVector:
    """DDP-MAB's vector form, with :class:`~baselines.elimination.DDPMAB`'s options.

    Examples:
        >>> ddp_mab(epsilon=None).requirements(4, 3).protocol
        'gis_flooding'
    """
    return EliminationVector(DDPMAB(**options))  # type: ignore[arg-type]


def hdp_mab(**options: object) -> EliminationVector:
    """HDP-MAB's vector form, with :class:`~baselines.elimination.HDPMAB`'s options.

    Examples:
        >>> hdp_mab().requirements(4, 3).protocol
        'hybrid'
    """
    return EliminationVector(HDPMAB(**options))  # type: ignore[arg-type]


__all__ = ["EliminationVector", "cdp_mab", "ddp_mab", "hdp_mab"]
