"""The index family's compiled step (``baselines/index/kernels.py``) against a plain NumPy
statement of the same index (the module docstring of ``baselines.index.policies``): on
random observation streams - forged rows among the honest ones, deliveries from beyond
the graph's neighbours that widen the table, per-env parameters, raw, tree-noised and
epoch-noised sums - every step's arms, messages and dropped-message counts are equal.
A reference that leaves the own row out of the average is caught."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baselines.index import IndexPolicy
from baselines.index.epoch import EpochIndexPolicy
from baselines.index.server import ServerIndexPolicy
from fedbandit_env.policies import AgentSpec
from fedbandit_env.vector.policy import VectorSpec

N, M, B, T = 6, 5, 16, 12


def _ring_spec(message_dim: int) -> VectorSpec:
    agents = tuple(
        AgentSpec(
            i,
            N,
            M,
            T,
            message_dim=message_dim,
            reward_bounds=(0.0, 1.0),
            neighbors=((i - 1) % N, (i + 1) % N),
        )
        for i in range(N)
    )
    return VectorSpec(B, agents)


class _Reference:
    """The index in plain NumPy over a dense ``(B, N, N, 2M)`` table: what every
    receiver last heard from every sender, averaged with its own row."""

    def __init__(self, policy: IndexPolicy, without_own: bool = False) -> None:
        self.policy, self.without_own = policy, without_own
        self.held = np.zeros((B, N, N, 2 * M))
        self.heard = np.zeros((B, N, N), dtype=bool)
        self.rejected = np.zeros((B, N), dtype=np.int64)

    def local(self, counts: np.ndarray, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = self.policy
        alpha = p._per_env["prior_strength"].reshape((B,) + (1,) * (counts.ndim - 1))
        mu0 = p._per_env["prior_mean"].reshape(alpha.shape)
        pulls = counts + alpha
        return (sums + alpha * mu0) / pulls, p.var / pulls + p._noise_variance(counts) / pulls**2

    def arms(self, observations: dict[str, Any], t: int, z: np.ndarray) -> np.ndarray:
        p = self.policy
        mask = np.asarray(observations["mask"], dtype=bool)
        rows = np.asarray(observations["messages"], dtype=np.float64)
        honest = p._honest(rows[..., :M], rows[..., M:], t)
        self.rejected += (mask & ~honest[:, None, :]).sum(axis=2)
        kept = mask & honest[:, None, :]
        self.held = np.where(kept[..., None], rows[:, None, :, :], self.held)
        self.heard |= kept
        weight = self.heard[..., None].astype(np.float64)
        k = self.heard.sum(axis=2) + 1.0
        mean_own, var_own = self.local(p.counts, p.sums)
        if self.without_own:
            mean_own, var_own = 0.0 * mean_own, 0.0 * var_own
        mean_held, var_held = self.local(self.held[..., :M], self.held[..., M:])
        mean = (mean_own + (weight * mean_held).sum(axis=2)) / k[..., None]
        std = np.sqrt(var_own + (weight * var_held).sum(axis=2)) / k[..., None]
        bonus = p._per_env["bonus"][:, None, None]
        index = mean + std * bonus
        if np.any(p.draw_scale > 0):
            index = index + std * p._per_env["draw_scale"][:, None, None] * z
        return np.argmax(index, axis=2)


def _stream(rng: np.random.Generator, t: int, counts: np.ndarray) -> dict[str, Any]:
    """Step ``t``'s observations: a random pull and reward, every sender's honest row
    (its true counts and in-range sums) with some forged, a random mask over all pairs."""
    sums = counts * rng.uniform(0, 1, counts.shape)
    rows = np.concatenate([counts, sums], axis=2).astype(np.float32)
    forged = rng.random((B, N)) < 0.15
    rows[forged, 0] = rng.choice([np.nan, -1.0, 0.5, 1e6], size=int(forged.sum()))
    mask = (rng.random((B, N, N)) < 0.5).astype(np.int8)
    mask[:, np.arange(N), np.arange(N)] = 0
    return {
        "arm": rng.integers(M, size=(B, N)),
        "reward": rng.uniform(0, 1, (B, N, 1)).astype(np.float32),
        "step": np.full((B, N, 1), t, np.float32),
        "messages": rows,
        "mask": mask,
    }


POLICIES = {
    "raw": lambda: IndexPolicy(),
    "ucb": lambda: IndexPolicy(draw_scale=0.0, bonus=1.5),
    "per_env": lambda: IndexPolicy(
        prior_strength=np.linspace(0.1, 4, B),
        prior_mean=np.linspace(0, 1, B),
        draw_scale=np.linspace(0, 2, B),
        bonus=np.linspace(-1, 2, B),
    ),
    "tree_noise": lambda: IndexPolicy(epsilon=1.0),
    "epoch_noise": lambda: EpochIndexPolicy(epsilon=0.5),
}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_compiled_index_is_the_numpy_index(name: str) -> None:
    policy = POLICIES[name]()
    spec = _ring_spec(2 * M)
    policy.reset(spec, [np.random.default_rng(b) for b in range(B)])
    reference = _Reference(policy)
    rng = np.random.default_rng(7)
    counts = np.zeros((B, N, M))
    changed = 0
    for t in range(T):
        observations = _stream(rng, t, counts)
        before = (policy.counts.copy(), policy.sums.copy())
        arms, messages = policy.act(observations)
        z = policy.draws[:, t % 64] if np.any(policy.draw_scale > 0) else None
        # the reference reads the policy's own statistics after the fold (the same fold)
        want = reference.arms(observations, t, z)
        np.testing.assert_array_equal(arms, want)
        np.testing.assert_array_equal(policy.rejected, reference.rejected)
        assert messages is not None
        np.testing.assert_array_equal(messages, np.concatenate([policy.counts, policy.sums], 2))
        changed += int(not np.array_equal(before[0], policy.counts))
        counts = counts + np.eye(M)[observations["arm"]] * (rng.random((B, N, 1)) < 0.8)
    assert policy.held.shape[2] == N - 1  # deliveries from beyond the ring widened it
    assert policy.rejected.sum() > 0 and changed > 0


def test_the_comparison_can_fail() -> None:
    """Power: a reference that leaves the own row out of the average disagrees."""
    policy = IndexPolicy(draw_scale=0.0, bonus=1.0)
    policy.reset(_ring_spec(2 * M), [np.random.default_rng(b) for b in range(B)])
    reference = _Reference(policy, without_own=True)
    rng = np.random.default_rng(7)
    counts = np.zeros((B, N, M))
    differ = 0
    for t in range(T):
        observations = _stream(rng, t, counts)
        arms, _ = policy.act(observations)
        differ += int((arms != reference.arms(observations, t, None)).sum())
        counts = counts + np.eye(M)[observations["arm"]]
    assert differ > 0


def test_the_server_index_reads_the_servers_average() -> None:
    """The compiled server step pulls the NumPy argmax of the server's average once it
    has one, of the own posterior before, and drops a forged broadcast."""
    policy = ServerIndexPolicy(draw_scale=0.0, bonus=0.5)
    spec = VectorSpec(B, tuple(AgentSpec(i, N, M, T, message_dim=1 + 2 * M) for i in range(N)))
    policy.reset(spec, [np.random.default_rng(b) for b in range(B)])
    rng = np.random.default_rng(3)
    server = np.zeros((B, N, 1 + 2 * M), np.float32)
    server[..., 0] = N
    server[..., 1 : 1 + M] = rng.uniform(0, 1, (B, N, M))
    server[..., 1 + M :] = rng.uniform(0.001, 0.01, (B, N, M))
    server[0, 0, 1] = np.nan  # forged: dropped and counted
    arrived = np.ones((B, N, 1), np.int8)
    arrived[1] = 0
    observations = {
        "arm": np.zeros((B, N), np.int64), "reward": np.zeros((B, N, 1), np.float32),
        "step": np.ones((B, N, 1), np.float32), "server": server, "server_mask": arrived,
    }  # fmt: skip
    arms, _ = policy.act(observations)
    mean = server[..., 1 : 1 + M].astype(np.float64)
    std = np.sqrt(server[..., 1 + M :].astype(np.float64) / N)
    want = np.argmax(mean + 0.5 * std, axis=2)
    own_mean, own_var = _Reference(policy).local(policy.counts, policy.sums)
    own = np.argmax(own_mean + 0.5 * np.sqrt(own_var), axis=2)
    have = arrived[..., 0].astype(bool)
    have[0, 0] = False
    np.testing.assert_array_equal(arms, np.where(have, want, own))
    assert policy.rejected[0, 0] == 1 and policy.rejected.sum() == 1
