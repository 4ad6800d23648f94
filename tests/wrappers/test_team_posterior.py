"""TeamPosterior: the team posterior per arm, the agent's statistics as its message."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from fedbandit_env import federated_mab_v0
from fedbandit_env.backend import backend
from fedbandit_env.policies import Requirements
from fedbandit_env.problems import MABProblem
from fedbandit_env.protocols import Broadcast
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_vector_replay
from fedbandit_env.vector import FederatedMABVecEnv
from fedbandit_env.vector.wrappers import VecPrivateRewards, VecTeamPosterior
from fedbandit_env.wrappers import PrivateRewards, TeamPosterior
from fedbandit_env.wrappers.team_posterior import (
    POSTERIOR_FEATURES,
    PosteriorState,
    Prior,
    honest_rows,
)

F = {name: k for k, name in enumerate(POSTERIOR_FEATURES)}


@pytest.mark.parametrize("setting", ["neighbours", "gossip", "gossip+private"])
def test_the_vector_form_replays_the_pettingzoo_wrapper(setting: str) -> None:
    eps = 1.0 if setting.endswith("private") else None
    scenario = Scenario(n_agents=4, n_arms=3, horizon=20, setting=setting, epsilon=eps,
                        instances="train")  # fmt: skip
    check_vector_replay(scenario, Requirements(message_dim=6), num_envs=3, wrap_env=TeamPosterior,
                        wrap_vec=VecTeamPosterior)  # fmt: skip


def test_the_features_are_the_averaged_local_posteriors() -> None:
    """Agent 0 holds its own row and agent 1's; agent 2 was never heard: by hand."""
    state = PosteriorState(backend(None), (1, 3, 2), Prior())
    state.counts[0, 0] = [3.0, 1.0]
    state.sums[0, 0] = [2.0, 1.0]
    rows = np.zeros((1, 1, 3, 4))
    rows[0, 0, 1] = [1.0, 4.0, 1.0, 3.0]  # agent 1: counts (1, 4), sums (1, 3)
    state.receive(rows, np.array([[[0, 1, 0], [0, 0, 0], [0, 0, 0]]]), t=6)
    f = state.features(t=6)[0, 0]
    m_own = np.array([(2 + 0.5) / 4, (1 + 0.5) / 2])
    m_one = np.array([(1 + 0.5) / 2, (3 + 0.5) / 5])
    mean = (m_own + m_one) / 2
    std = np.sqrt(0.25 / np.array([4, 2]) + 0.25 / np.array([2, 5])) / 2
    np.testing.assert_allclose(f[:, F["mean"]], mean, rtol=1e-6)
    np.testing.assert_allclose(f[:, F["std"]], std, rtol=1e-6)
    np.testing.assert_allclose(f[:, F["z"]], (mean - mean.max()) / std, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(f[:, F["log_pooled"]], np.log1p([4.0, 5.0]), rtol=1e-6)
    np.testing.assert_allclose(f[:, F["own_dev"]], m_own - mean, rtol=1e-5, atol=1e-7)
    assert f[0, F["coverage"]] == pytest.approx(2 / 3)
    assert f[0, F["log_step"]] == pytest.approx(np.log1p(6))


def test_the_message_is_counts_then_sums_and_arms_are_the_action() -> None:
    env = TeamPosterior(federated_mab_v0.parallel_env(
        problem=MABProblem([[1.0, 0.0], [1.0, 0.0]]), horizon=4, message_dim=4))  # fmt: skip
    env.reset(seed=0)
    env.step({"agent_0": 0, "agent_1": 1})
    sent = env._state.message()[0]
    assert sent.tolist() == [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    parallel_api_test(TeamPosterior(federated_mab_v0.parallel_env(
        n_agents=3, n_arms=2, horizon=6, message_dim=4)), num_cycles=8)  # fmt: skip


def test_nothing_depends_on_the_horizon() -> None:
    def first_steps(horizon: int) -> list[np.ndarray]:
        venv = VecTeamPosterior(FederatedMABVecEnv(MABProblem(np.full((3, 2), 0.5)),
                                horizon=horizon, message_dim=4, num_envs=2))  # fmt: skip
        out = [venv.reset(seed=1)[0]["posterior"]]
        for t in range(10):
            out.append(venv.step(np.full((2, 3), t % 2))[0]["posterior"])
        return out

    for a, b in zip(first_steps(200), first_steps(20_000), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e300, 2.5, -1.0])
@pytest.mark.parametrize("field", ["counts", "sums"])
def test_a_forged_row_is_dropped_and_counted(field: str, value: float) -> None:
    """What no honest agent sends (non-finite, overflowing, fractional or negative counts,
    sums outside the range's count-fold) never reaches the features; the rest does."""
    state = PosteriorState(backend(None), (1, 3, 2), Prior())
    honest = np.array([2.0, 1.0, 1.0, 0.0])
    forged = honest.copy()
    forged[0 if field == "counts" else 2] = value
    rows = np.stack([honest, forged, honest])[None, None]
    everyone = np.ones((1, 3, 3), np.int8)
    state.receive(rows, everyone, t=5)
    assert state.rejected[0].tolist() == [1, 0, 1]  # agent 1's own row is not a receipt
    assert state.heard[0].tolist() == [[False, False, True], [True, False, True],
                                       [True, False, False]]  # fmt: skip
    assert np.isfinite(state.features(5)).all()


def test_counts_that_outrun_the_step_are_dishonest() -> None:
    be = backend(None)
    c = np.array([[3.0, 3.0]])
    assert honest_rows(be, c, np.zeros((1, 2)), 6, Prior()).tolist() == [True]
    assert honest_rows(be, c, np.zeros((1, 2)), 5, Prior()).tolist() == [False]


def test_private_sums_get_noise_room_and_no_more() -> None:
    """An honest private sum may leave [lo n, hi n] by the tree's noise; a liar's 1e6
    may not (POISON_SCALES standard deviations)."""
    env = PrivateRewards(federated_mab_v0.parallel_env(horizon=64), epsilon=1.0)
    prior = TeamPosterior(_with_messages(env)).prior
    sd = np.sqrt(prior.extra)
    be = backend(None)
    n = np.array([[4.0, 0.0]])
    assert honest_rows(be, n, np.array([[4.0 + 5 * sd, 0.0]]), 8, prior).tolist() == [True]
    assert honest_rows(be, n, np.array([[1e6, 0.0]]), 8, prior).tolist() == [False]


def _with_messages(env: Any) -> Any:
    """A private env whose base carries messages of 2 M numbers (rebuilt)."""
    base = federated_mab_v0.parallel_env(horizon=64, message_dim=10, protocol=Broadcast())
    return PrivateRewards(base, epsilon=1.0)


def test_the_private_vector_form_reads_the_trees_view() -> None:
    venv = VecTeamPosterior(VecPrivateRewards(FederatedMABVecEnv(
        MABProblem(np.full((3, 2), 0.5)), horizon=16, message_dim=4, num_envs=2), 1.0))  # fmt: skip
    venv.reset(seed=0)
    venv.step(np.zeros((2, 3), int))
    counts = venv.state.counts
    assert counts[:, :, 0].tolist() == [[1.0] * 3] * 2
    assert venv.prior.extra > 0
