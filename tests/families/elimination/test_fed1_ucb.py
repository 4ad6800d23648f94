"""Shi & Shen's Fed1-UCB (``fed1_ucb``): the phase schedule of the paper (every active
arm ``floor(kappa log T)`` times, arm after arm; one upload a phase), elimination on the
server's average, forged round results dropped, the same trials on both views of the
env in every rounds setting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.elimination.fed1_ucb import Fed1UCB
from fedbandit_env.policies import AgentSpec
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.vector.policy import VectorSpec

N, M, T = 2, 3, 100


def _policy(**kw: float) -> Fed1UCB:
    policy = Fed1UCB(kappa=1.0, **kw)
    agents = tuple(AgentSpec(i, N, M, T, reward_bounds=(0.0, 1.0), message_dim=7) for i in range(N))
    policy.reset(VectorSpec(1, agents), [np.random.default_rng(0)])
    return policy


def _obs(t: int, arms: np.ndarray, server: np.ndarray | None = None) -> dict[str, np.ndarray]:
    got = server is not None
    return {
        "arm": arms.reshape(1, N),
        "reward": np.full((1, N, 1), 0.5, np.float32),
        "step": np.full((1, N, 1), t, np.float32),
        "server": np.zeros((1, N, 7)) if server is None else np.tile(server, (1, N, 1)),
        "server_mask": np.full((1, N, 1), got, np.int8),
    }


def test_a_phase_pulls_each_active_arm_f_times_then_uploads_once() -> None:
    policy = _policy()
    f = int(math.log(T))
    assert policy.pulls_per_phase == f == 4
    arms, flags = [], []
    a = np.zeros(N, np.int64)
    for t in range(3 * f + 2):
        chosen, messages = policy.act(_obs(t, a))
        a = chosen[0]
        arms.append(int(a[0]))
        flags.append(float(messages[0, 0, 0]))
        assert a.tolist() == [a[0]] * N  # the agents move together
    assert arms == [0] * f + [1] * f + [2] * f + [0, 0]  # phase 2 starts on arm 0
    assert flags == [0.0] * (3 * f) + [1.0, 0.0]  # the upload: the first step after
    _, messages = policy.act(_obs(3 * f + 2, a))
    assert messages[0, :, 1 : 1 + M].tolist() == [[0.5] * M] * N  # local means
    assert messages[0, :, 1 + M :].tolist() == [[f + 2, f, f]] * N  # and counts


def test_the_round_result_eliminates_arms_below_the_best_lower_bound() -> None:
    policy = _policy(c=0.1)  # width sqrt(0.1 / 4 log 100 / (2 * 4)) ~ 0.12
    a = np.zeros(N, np.int64)
    for t in range(13):
        a = policy.act(_obs(t, a))[0][0]
    # the server's average: arm 0 well ahead, arm 1 within the widths, arm 2 below
    result = np.array([2.0, 0.9, 0.8, 0.1, 4.0, 4.0, 4.0])
    a = policy.act(_obs(13, a, result))[0][0]
    assert policy.active[0].tolist() == [[True, True, False]] * N
    assert policy.remaining[0, :, 2].tolist() == [0, 0]
    result = np.array([2.0, 0.9, 0.1, 0.1, 8.0, 8.0, 4.0])
    for t in range(14, 30):
        chosen, messages = policy.act(_obs(t, a, result if t == 14 else None))
        a = chosen[0]
        assert t == 14 or a.tolist() == [0, 0]  # one arm left: pulled to the end
        assert messages[0, :, 0].tolist() == [0.0, 0.0]  # and no more uploads
    assert policy.active[0].tolist() == [[True, False, False]] * N


@pytest.mark.parametrize(
    "forged",
    [
        [0.0, 0.9, 0.1, 0.1, 4, 4, 4],  # nobody uploaded
        [2.5, 0.9, 0.1, 0.1, 4, 4, 4],  # half an uploader
        [2.0, 0.9, 0.1, 0.1, -4, 4, 4],  # a negative count
        [2.0, 0.9, 0.1, 0.1, 400, 4, 4],  # more pulls than steps
        [2.0, 9.0, 0.1, 0.1, 4, 4, 4],  # a mean outside the reward range
        [2.0, np.nan, 0.1, 0.1, 4, 4, 4],
    ],
)
def test_forged_round_results_are_dropped_and_counted(forged: list[float]) -> None:
    policy = _policy(c=0.1)
    a = np.zeros(N, np.int64)
    for t in range(13):
        a = policy.act(_obs(t, a))[0][0]
    policy.act(_obs(13, a, np.array(forged, dtype=np.float64)))
    assert policy.active.all()  # nothing eliminated
    assert policy.rejected[0].tolist() == [1, 1]


@pytest.mark.parametrize("setting", ["server", "hybrid", "flooding"])
def test_both_paths_give_the_same_trials(setting: str) -> None:
    scenario = Scenario(n_agents=5, n_arms=3, horizon=400, setting=setting, graph="ring",
                        instances="held_out")  # fmt: skip
    vector = evaluate("fed1_ucb", scenario, trials=4, seed=3, record_every=50)
    pettingzoo = evaluate("fed1_ucb", scenario, trials=4, seed=3, record_every=50,
                          interactive=True)  # fmt: skip
    assert vector.meta["path"] == "vector"
    np.testing.assert_array_equal(vector.regret, pettingzoo.regret)
    np.testing.assert_array_equal(vector.comm_cost, pettingzoo.comm_cost)


def test_it_learns_the_global_best_arm_with_log_rounds() -> None:
    """Conflicting instances (local rules mislead): after the phases, every agent pulls
    the global best arm, paying a round per phase (c1 = 25 per uploader), far fewer than
    the steps."""
    scenario = Scenario(
        n_agents=5, n_arms=3, horizon=4000, setting="server", instance="conflicting"
    )
    curves = evaluate("fed1_ucb", scenario, {"kappa": 2.0}, trials=3, seed=1)
    group = curves.regret.sum(axis=1)  # (trials, recorded steps)
    late = group[:, -1] - group[:, len(curves.t) // 2]
    assert np.all(late < 1e-9)  # no regret in the second half: the best arm alone
    rounds = curves.comm_cost[:, -1] / (25.0 * 5)
    assert np.all((rounds >= 1) & (rounds <= 10))


def test_bad_arguments_are_refused() -> None:
    for bad in ({"kappa": 0.0}, {"c": -1.0}, {"kappa": float("inf")}, {"sigma": 0.0}):
        with pytest.raises(ValueError, match="must be a finite number"):
            Fed1UCB(**bad)
