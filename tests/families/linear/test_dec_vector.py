"""Decentralized FedUCB as a vector policy over GammaHops (issue 62 item 2): its step is
the per-agent policy's on any observation (forged messages included), and the rollout,
the step through ``act`` and a mix of both play the same trials, to the bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baselines.linear.dec_vector import DecFedLinUCBVector, dec_fedlin_ucb
from baselines.linear.decentralized import HEADER, DecFedLinUCB
from fedbandit_env.network.graph import Network
from fedbandit_env.policies import AgentSpec
from fedbandit_env.problems.linear import dubey_synthetic
from fedbandit_env.protocols import GammaHops
from fedbandit_env.seeding import team_generators
from fedbandit_env.vector import FederatedLinearVecEnv
from fedbandit_env.vector.policy import VectorSpec

VARIANTS: list[dict[str, Any]] = [
    {"gamma": 2, "threshold": 3.0},
    {"gamma": 3, "sync": "fixed", "batch": 2},
    {"gamma": 2, "threshold": 3.0, "epsilon": 3.0},  # the published noise, adaptive
    {"gamma": 2, "sync": "fixed", "batch": 2, "epsilon": 1.0, "calibration": "gdp"},
]


def _forge(message: np.ndarray, kind: int, gamma: int) -> np.ndarray:
    """A message no honest agent sends: a statistic entry not finite, a flag neither 0
    nor 1, an estimator out of range or not an integer."""
    forged = message.copy()
    if kind == 0:
        forged[HEADER + 4] = np.nan
    elif kind == 1:
        forged[0] = 0.5
    elif kind == 2:
        forged[2] = gamma
    else:
        forged[2] = 0.5
    return forged


@pytest.mark.parametrize("options", VARIANTS)
def test_dec_steps_are_the_per_agent_policys_on_any_observations(options: dict[str, Any]) -> None:
    """The vector step against ``DecFedLinUCB`` agent by agent, fed the same random
    observations: decision sets, rewards, and inboxes with random senders heard,
    requests and statistics, some messages forged (dropped and counted). Every arm,
    message and count of dropped messages is the same, to the bit."""
    n, k, d, horizon = 4, 5, 2, 30
    e = d + 1
    width = HEADER + e * e
    gamma = options["gamma"]
    seed = np.random.SeedSequence(13)
    agents = tuple(AgentSpec(i, n, k, horizon, width, context_dim=d) for i in range(n))
    singles = [DecFedLinUCB(**options) for _ in range(n)]
    for i, (policy, rng) in enumerate(zip(singles, team_generators(seed, n), strict=True)):
        policy.reset(agents[i], seed=rng)
    vector = dec_fedlin_ucb(**options)
    vector.reset(VectorSpec(1, agents, (seed,)), [])
    rng = np.random.default_rng(5)
    inbox, mask = np.zeros((n, n, width), np.float32), np.zeros((n, n), np.int8)
    responded, forged = 0, 0
    for t in range(horizon):
        contexts = (rng.uniform(-1, 1, (n, k, d)) / np.sqrt(d)).astype(np.float32)
        reward = rng.uniform(-1.5, 1.5, n).astype(np.float32)
        obs = {"contexts": contexts[None], "arm": np.zeros((1, n), np.int64),
               "reward": reward[None, :, None], "step": np.full((1, n, 1), t, np.float32),
               "messages": inbox[None].copy(), "mask": mask[None].copy()}  # fmt: skip
        arms, sent = vector.act(obs)
        moves = [policy.act({"contexts": contexts[i], "reward": reward[i : i + 1],
                             "step": np.array([t], np.float32), "messages": inbox[i],
                             "mask": mask[i]})
                 for i, policy in enumerate(singles)]  # fmt: skip
        assert arms[0].tolist() == [m["arm"] for m in moves], t
        for i, m in enumerate(moves):
            assert sent[0, i].tobytes() == m["message"].astype(np.float64).tobytes(), (t, i)
        responded += sum(int(m["message"][1]) for m in moves)
        if t == horizon - 1:
            break
        # the next inboxes: what the agents sent, heard at random, some forged
        mask = (rng.random((n, n)) < 0.6).astype(np.int8)
        np.fill_diagonal(mask, 0)
        inbox = np.zeros((n, n, width), np.float32)
        for r in range(n):
            for v in np.flatnonzero(mask[r]):
                message = np.asarray(moves[v]["message"], np.float32)
                if rng.random() < 0.3:  # a request and a made-up statistic, honest in form
                    message = message.copy()
                    message[0], message[1] = 1.0, 1.0
                    message[2] = float(rng.integers(gamma))
                    stat = rng.normal(0, 0.2, (e, e)) + np.eye(e)
                    message[HEADER:] = ((stat + stat.T) / 2).ravel()
                if rng.random() < 0.15:
                    forged += 1
                    message = _forge(message, forged % 4, gamma)
                inbox[r, v] = message
    assert vector.rejected[0].tolist() == [p.rejected for p in singles]
    assert responded > 0 and forged > 0 and sum(p.rejected for p in singles) == forged


@pytest.mark.parametrize("options", VARIANTS)
def test_dec_rollout_and_act_play_the_same_trials(options: dict[str, Any]) -> None:
    """Over GammaHops on a path: all steps through ``act`` and the env's protocol
    objects, all rolled out by the core (which routes the hops itself), and seven
    through ``act`` then the rest rolled out: the same arms, regret and cost in each of
    three envs."""
    n, k, d, horizon = 5, 6, 3, 40
    width = HEADER + (d + 1) ** 2
    problem = dubey_synthetic(n, dim=d, set_size=k, seed=1)
    venv = FederatedLinearVecEnv(problem, Network.path(n), GammaHops(options["gamma"]),
                                 horizon=horizon, message_dim=width, num_envs=3)  # fmt: skip
    spec = VectorSpec(3, tuple(AgentSpec(i, n, k, horizon, width, context_dim=d)
                               for i in range(n)),
                      tuple(np.random.SeedSequence(s) for s in (1, 2, 3)))  # fmt: skip

    def play(python_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs, _ = venv.reset(seed=5)
        policy: DecFedLinUCBVector = dec_fedlin_ucb(**options)
        policy.reset(spec, [])
        arms_seen = np.zeros((3, horizon, n), np.int64)
        for t in range(python_steps):
            arms, sent = policy.act(obs)
            arms_seen[:, t] = arms
            obs, *_ = venv.step(arms, sent)
        if python_steps < horizon:
            trace = np.zeros((3, horizon, n), np.int64), np.zeros((3, horizon, n), np.float32)
            venv.rollout(*policy.kernel(), np.array([horizon]), np.zeros((3, n, 1)), trace)
            arms_seen[:, python_steps:] = trace[0][:, python_steps:]
        return arms_seen, venv.core.cum_regret.copy(), venv.core.cum_cost.copy()

    arms, regret, cost = play(horizon)
    assert cost.tolist() == [horizon * (n - 1.0)] * 3  # every edge a step, c2 = 1
    for python_steps in (0, 7):
        again = play(python_steps)
        np.testing.assert_array_equal(again[0], arms)
        assert again[1].tobytes() == regret.tobytes() and again[2].tobytes() == cost.tobytes()


def test_the_vector_step_refuses_a_sender_indexed_inbox() -> None:
    """``act`` reads each receiver's inbox ``(B, N, N, D)``; sender rows ``(B, N, D)``
    (another protocol's form) are refused by name rather than misread."""
    agents = tuple(AgentSpec(i, 2, 3, 10, HEADER + 9, context_dim=2) for i in range(2))
    policy = dec_fedlin_ucb(gamma=1)
    policy.reset(VectorSpec(1, agents), [np.random.default_rng(0)])
    obs = {"contexts": np.zeros((1, 2, 3, 2), np.float32), "arm": np.zeros((1, 2), np.int64),
           "reward": np.zeros((1, 2, 1), np.float32), "step": np.zeros((1, 2, 1), np.float32),
           "messages": np.zeros((1, 2, HEADER + 9), np.float32),
           "mask": np.zeros((1, 2, 2), np.int8)}  # fmt: skip
    with pytest.raises(ValueError, match="each receiver's inbox"):
        policy.act(obs)
    with pytest.raises(ValueError, match="sends 12 numbers"):
        policy.reset(VectorSpec(1, tuple(AgentSpec(i, 2, 3, 10, 5, context_dim=2)
                                         for i in range(2))), [])  # fmt: skip
