"""The privacy of VecPrivateRewards, audited black-box on the vector env (each env one
run), with the PettingZoo audit's observer and claim; the power checks: half the noise,
and a tree one level short, are caught."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env.privacy.audit_log import report
from fedbandit_env.problems import MABProblem
from fedbandit_env.vector import FederatedMABVecEnv
from fedbandit_env.vector.wrappers import VecPrivateRewards
from fedbandit_env.vector.wrappers.audit import VecReplaceReward, audit_vector

RUNS = 20_000


def _audit(weaken: float, secret: float, runs: int = RUNS) -> Any:
    """Agent 0's reward at step 1 is 0 or ``secret`` (all others 0); the observer is
    agent 0's whole view: its private sums at t = 1, 2, clipped and added (the
    likelihood-ratio statistic of a shift), as tests/privacy/test_privacy_audits.py."""

    def make(value: float, runs: int) -> Any:
        base = FederatedMABVecEnv(MABProblem(np.zeros((2, 1))), horizon=2, num_envs=runs)
        venv = VecPrivateRewards(VecReplaceReward(base, 0, 1, value), epsilon=1.0)
        venv.scale *= weaken  # 1.0: as calibrated
        return venv

    def act(t: int, obs: dict[str, np.ndarray]) -> tuple[np.ndarray, None]:
        return np.zeros((runs, 2), dtype=int), None

    def observe(trace: list[dict[str, np.ndarray]]) -> np.ndarray:
        sums = [o["private_means"][:, 0, 0] * o["counts"][:, 0, 0] for o in trace[1:]]
        return np.clip(np.stack(sums, axis=1), 0.0, 1.0).sum(axis=1)

    return audit_vector(make, 0.0, secret, act, observe, runs=runs, seed=6)


def test_vec_private_rewards_holds_its_claim() -> None:
    """At the quick subset's sample size, beside the half-noise power check below."""
    r = _audit(1.0, 1.0, runs=5000)
    report(r, 1.0)
    assert r.epsilon_lb <= 1.0, r


@pytest.mark.slow
@pytest.mark.parametrize("secret", [1.0, 4.0], ids=["in_range", "clipped"])
def test_vec_private_rewards_holds_its_claim_large_sample(secret: float) -> None:
    r = _audit(1.0, secret)
    report(r, 1.0)
    assert r.epsilon_lb <= 1.0, r
    if secret == 1.0:  # the audit is tight: the claim is nearly met, not vacuous
        assert r.epsilon_lb > 0.75, r


def test_power_half_the_noise_is_caught() -> None:
    """Half the calibrated scale: also what a tree one level short gives at T = 2 (two
    levels, calibrated for one)."""
    r = _audit(0.5, 1.0, runs=5000)
    report(r, 1.0)
    assert r.epsilon_lb > 1.0, r


@pytest.mark.slow
def test_power_an_understated_sensitivity_is_caught() -> None:
    """Noise for a sensitivity of 0.8 where it is 1 (epsilon 1.25 spent for a claim of 1):
    the PettingZoo audit's large-sample twin."""
    r = _audit(0.8, 1.0)
    report(r, 1.0)
    assert r.epsilon_lb > 1.0, r


def test_replace_reward_checks_its_target() -> None:
    base = FederatedMABVecEnv(MABProblem(np.zeros((2, 1))), horizon=2, num_envs=2)
    with pytest.raises(ValueError, match="agent"):
        VecReplaceReward(base, 2, 1, 0.0)
    with pytest.raises(ValueError, match="step"):
        VecReplaceReward(base, 0, 3, 0.0)
