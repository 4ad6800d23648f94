"""A policy written against arrays (a :class:`~fedbandit_env.vector.policy.VectorPolicy`):
every agent of every env in one call, registered like any policy and benchmarked on the
vector env.

Run it (from the repository root) with::

    fedbandit bench --import examples/my_vector_policy.py --setting neighbours \\
        --policies pooled_ucb,coop_ts,gossip_ucb,local_ucb --instances held_out

``bench`` plays it on the vector env (trials in batches); where a stack has no vector
form it plays the same trials through the PettingZoo env.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedbandit_env import registry
from fedbandit_env.policies import Requirements
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.policy import VectorObs, VectorPolicy, VectorSpec


class PooledUCB(VectorPolicy):
    """UCB1 on pooled statistics: every agent sends its own pull counts and reward sums
    (``2 M`` numbers) each step, keeps the latest it heard from each neighbour, and pulls
    the arm of largest ``mean + sqrt(c log t / n)`` over its own and its neighbours'
    pulls; ties broken by a tiny draw from the env's generator.

    Args:
        c: Exploration constant (UCB1: 2).

    Examples:
        >>> from fedbandit_env.policies import AgentSpec
        >>> spec = VectorSpec(2, tuple(AgentSpec(i, 3, 4, 10, message_dim=8) for i in range(3)))
        >>> policy = PooledUCB()
        >>> policy.reset(spec, [np.random.default_rng(b) for b in range(2)])
        >>> obs = {"arm": np.zeros((2, 3), int), "reward": np.zeros((2, 3, 1), np.float32),
        ...        "step": np.zeros((2, 3, 1), np.float32), "messages": np.zeros((2, 3, 8)),
        ...        "mask": np.zeros((2, 3, 3), np.int8)}
        >>> arms, messages = policy.act(obs)
        >>> arms.shape, messages.shape
        ((2, 3), (2, 3, 8))
    """

    name = "pooled_ucb"

    def __init__(self, c: float = 2.0) -> None:
        if not c >= 0.0:
            raise ValueError(f"c must be >= 0, got {c!r}")
        self.c = float(c)

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages of ``2 M`` numbers: counts, then sums."""
        return Requirements(message_dim=2 * n_arms)

    def reset(self, spec: VectorSpec, rngs: Sequence[np.random.Generator]) -> None:
        """Zero statistics; ``rngs[b]`` breaks env ``b``'s ties."""
        b, n, m = spec.num_envs, spec.n_agents, spec.n_arms
        self.rngs = list(rngs)
        self.counts, self.sums = np.zeros((b, n, m)), np.zeros((b, n, m))
        self.held = np.zeros((b, n, n, 2 * m))  # [env, receiver, sender]: latest heard
        self.rows = np.arange(b)[:, None], np.arange(n)[None, :]

    def act(self, observations: VectorObs) -> tuple[IntArray, FloatArray | None]:
        """Fold in the last pull and what was heard; pull the pooled UCB arm."""
        t = float(observations["step"][0, 0, 0])
        _, n, m = self.counts.shape
        if t > 0:
            arm = observations["arm"]
            self.counts[(*self.rows, arm)] += 1.0
            self.sums[(*self.rows, arm)] += observations["reward"][..., 0]
        mask = np.asarray(observations["mask"], dtype=bool)  # [env, receiver, sender]
        sent = np.asarray(observations["messages"], dtype=np.float64)[:, None, :, :]
        self.held = np.where(mask[..., None], sent, self.held)
        heard = self.held.sum(axis=2)
        counts = self.counts + heard[..., :m]
        sums = self.sums + heard[..., m:]
        with np.errstate(divide="ignore", invalid="ignore"):
            index = sums / counts + np.sqrt(self.c * np.log(max(t, 1.0)) / counts)
        index = np.where(counts == 0, np.inf, index)
        jitter = np.stack([g.random((n, m)) for g in self.rngs]) * 1e-9
        arms = np.argmax(index + jitter, axis=2)
        messages = np.concatenate([self.counts, self.sums], axis=2).astype(np.float32)
        return arms, messages


registry.register(
    "pooled_ucb",
    PooledUCB,
    description="UCB1 on own and neighbours' pooled counts (arrays)",
    settings=("neighbours", "gossip"),
)
