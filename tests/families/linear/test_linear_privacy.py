"""Privacy of the linear family, audited through the public API as an observer (the
controller) sees it: FedUCB as published leaks through *when* it synchronises (Zhou &
Chowdhury, ICLR 2024); the corrected variant (fixed schedule, exact Gaussian-DP tree)
passes the same audit, and the noise audit catches it with half its noise.

``pytest tests/families/linear/test_linear_privacy.py -s | grep AUDIT`` prints every bound.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest

from baselines.linear import FedLinUCB, linear_env
from fedbandit_env.policies import AgentSpec, IndependentTeam
from fedbandit_env.privacy import Episode, ReplaceContexts, ReplaceReward, audit_env
from fedbandit_env.privacy.audit import AuditResult
from fedbandit_env.privacy.gaussian import gdp_epsilon, gdp_mu
from fedbandit_env.problems.linear import LinearProblem

CLAIM, DELTA = 1.0, 0.1
# one vector, zero mean, no noise: the only difference between two runs is the secret
PROBLEM = LinearProblem([[1.0, 0.0]], [0.0, 0.0], set_size=1, n_agents=2, sigma=0.0)
E0 = np.array([[1.0, 0.0]], dtype=np.float32)


def _report(r: AuditResult, claim: float) -> None:
    name = os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[-1].split(" ")[0]
    print(f"\nAUDIT {name}: epsilon_lb={r.epsilon_lb:.3f} claim={claim:.3f} ({r.event})")


def _published_threshold(horizon: int, observations: int) -> float:
    """A ``D`` for which agent 0 of FedUCB-as-published flags after ``observations``
    observations of ``e0`` and one observation later if one of them was ``0``: midway
    between the two values of the rule ``(log det W - log det S) t_i`` (line 12)."""
    pol = FedLinUCB(epsilon=CLAIM, delta=DELTA)
    pol.reset(AgentSpec(0, 2, 1, horizon, message_dim=10, context_dim=2), seed=0)
    s = 2 * pol.rho_min * np.eye(2)
    w0 = s + pol.extra * np.eye(2)

    def rule(k: int) -> float:
        w = w0 + k * np.outer([1.0, 0.0], [1.0, 0.0])
        return (np.linalg.slogdet(w)[1] - np.linalg.slogdet(s)[1]) * observations

    return 0.5 * (rule(observations) + rule(observations - 1))


def _timing_audit(policy: Any, horizon: int, runs: int) -> AuditResult:
    """The secret: agent 0's decision set at step 1 (``e0`` or the zero vector). The
    controller sees agent 0's upload requests and uploads: the view is the first step at
    which agent 0 flags and the Gram entry ``(0, 0)`` it sends then."""

    def make_env(secret: np.ndarray) -> Any:
        return ReplaceContexts(linear_env(PROBLEM, horizon), "agent_0", 1, secret)

    def observe(ep: Episode) -> list[float]:
        for t, actions in enumerate(ep.actions):
            message = actions["agent_0"]["message"]
            if message[0] > 0.5:
                return [float(t + 1), float(message[1])]
        return [float(horizon + 1), 0.0]

    team = IndependentTeam(policy)
    return audit_env(make_env, E0, np.zeros_like(E0), team, observe, runs=runs, seed=3, delta=DELTA)


@pytest.mark.slow
def test_fedlin_ucb_as_published_leaks_when_it_synchronises() -> None:
    horizon = 20
    threshold = _published_threshold(horizon, observations=8)
    r = _timing_audit(
        lambda: FedLinUCB(epsilon=CLAIM, delta=DELTA, threshold=threshold), horizon, runs=200
    )
    _report(r, CLAIM)
    assert r.epsilon_lb > CLAIM, r


@pytest.mark.slow
def test_the_corrected_variant_passes_the_same_timing_audit() -> None:
    r = _timing_audit(
        lambda: FedLinUCB(sync="fixed", batch=8, epsilon=CLAIM, delta=DELTA, calibration="gdp"),
        horizon=20,
        runs=200,
    )
    _report(r, CLAIM)
    assert r.epsilon_lb <= CLAIM, r


def _noise_audit(noise_scale: float, runs: int) -> AuditResult:
    """The secret: agent 0's reward at step 1 (-1 or +1, the largest change of ``sum z
    z^T`` for ``||x|| = 1``: ``sqrt(2) (L^2 + 1)`` in Frobenius norm). A round every step
    (``T = 5``: 4 rounds, a 3-level tree); the record sits in the nodes released at
    rounds 1, 2 and 4, so the controller's sufficient statistic is the sum of the ``u``
    entry ``(0, d)`` of those three releases: the audit is tight (its ``mu`` is the
    calibration's)."""
    horizon = 5

    def make_env(secret: float) -> Any:
        return ReplaceReward(linear_env(PROBLEM, horizon), "agent_0", 1, secret)

    def observe(ep: Episode) -> list[float]:
        entry = 1 + 2  # the message's flag, then (0, 2) of the 3 x 3 release
        return [sum(float(ep.actions[t]["agent_0"]["message"][entry]) for t in (1, 2, 4))]

    team = IndependentTeam(
        lambda: FedLinUCB(
            sync="fixed",
            batch=1,
            epsilon=CLAIM,
            delta=DELTA,
            calibration="gdp",
            noise_scale=noise_scale,
        )
    )
    return audit_env(make_env, -1.0, 1.0, team, observe, runs=runs, seed=5, delta=DELTA)


@pytest.mark.parametrize(("noise_scale", "caught"), [(1.0, False), (0.5, True)])
@pytest.mark.parametrize(
    "runs",  # 5 s in the quick subset (it catches half the noise already), 20 s in CI
    [1000, pytest.param(4000, marks=pytest.mark.slow)],
)
def test_corrected_variant_noise_audit_with_power(
    noise_scale: float, caught: bool, runs: int
) -> None:
    r = _noise_audit(noise_scale, runs=runs)
    _report(r, CLAIM)
    assert (r.epsilon_lb > CLAIM) is caught, r


def test_gdp_calibration_is_exactly_the_claim_and_half_the_noise_is_not() -> None:
    pol = FedLinUCB(sync="fixed", batch=1, epsilon=CLAIM, delta=DELTA, calibration="gdp")
    pol.reset(AgentSpec(0, 2, 1, 5, message_dim=10, context_dim=2), seed=0)
    mu = math.sqrt(pol.levels) * 2.0 / pol.noise_std  # (L^2 + 1) = 2
    assert mu == pytest.approx(gdp_mu(CLAIM, DELTA), rel=1e-9)
    assert gdp_epsilon(mu, DELTA) == pytest.approx(CLAIM, rel=1e-6)
    assert gdp_epsilon(2 * mu, DELTA) > 3 * CLAIM
