"""Privacy of the linear family, audited through the public API as an observer (the
controller) sees it: FedUCB as published leaks through *when* it synchronises (Zhou &
Chowdhury, ICLR 2024); the corrected variant (fixed schedule, exact Gaussian-DP tree)
passes the same audit, and the noise audit catches it with half its noise.

``pytest tests/families/linear/test_linear_privacy.py -s | grep AUDIT`` prints every bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from baselines.linear import DecFedLinUCB, FedLinUCB, linear_env
from baselines.linear.decentralized import HEADER
from fedbandit_env.envs.federated_linear import FederatedLinearEnv
from fedbandit_env.network import Network
from fedbandit_env.policies import AgentSpec, IndependentTeam
from fedbandit_env.privacy.audit import AuditResult
from fedbandit_env.privacy.audit_log import report
from fedbandit_env.privacy.gaussian import gdp_epsilon, gdp_mu
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
from fedbandit_env.protocols import GammaHops
from fedbandit_env.wrappers.audit import Episode, ReplaceContexts, ReplaceReward, audit_env

CLAIM, DELTA = 1.0, 0.1
# one vector, zero mean, no noise: the only difference between two runs is the secret
PROBLEM = LinearProblem([[1.0, 0.0]], [0.0, 0.0], set_size=1, n_agents=2, sigma=0.0)
E0 = np.array([[1.0, 0.0]], dtype=np.float32)


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
    report(r, CLAIM)
    assert r.epsilon_lb > CLAIM, r


@pytest.mark.slow
def test_the_corrected_variant_passes_the_same_timing_audit() -> None:
    r = _timing_audit(
        lambda: FedLinUCB(sync="fixed", batch=8, epsilon=CLAIM, delta=DELTA, calibration="gdp"),
        horizon=20,
        runs=200,
    )
    report(r, CLAIM)
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


def test_gdp_calibration_is_exactly_the_claim_and_half_the_noise_is_not() -> None:
    pol = FedLinUCB(sync="fixed", batch=1, epsilon=CLAIM, delta=DELTA, calibration="gdp")
    pol.reset(AgentSpec(0, 2, 1, 5, message_dim=10, context_dim=2), seed=0)
    mu = math.sqrt(pol.levels) * 2.0 / pol.noise_std  # (L^2 + 1) = 2
    assert mu == pytest.approx(gdp_mu(CLAIM, DELTA), rel=1e-9)
    assert gdp_epsilon(mu, DELTA) == pytest.approx(CLAIM, rel=1e-6)
    assert gdp_epsilon(2 * mu, DELTA) > 3 * CLAIM


# ------------------------------------------------ decentralized FedUCB (Sec. 4.2)
def _local_env(problem: LinearProblem, horizon: int, gamma: int = 1) -> Any:
    """The LOCAL protocol over a path of the problem's agents (agent 1 next to agent 0)."""
    network = Network.path(problem.n_agents)
    return FederatedLinearEnv(
        problem,
        network=network,
        protocol=GammaHops(gamma),
        horizon=horizon,
        message_dim=HEADER + (problem.dim + 1) ** 2,
    )


def _dec_noise_audit(noise_scale: float, runs: int) -> AuditResult:
    """As :func:`_noise_audit`, seen by the *neighbour*: agent 0's reward at step 1 is -1
    or +1; with ``gamma = 1`` and ``batch = 1`` its one estimator releases every step
    from step 2 on, the record sitting in the tree's releases 1, 2 and 4 (actions 1, 2
    and 4), which reach agent 1 one step later; the view is the sum of their ``u``
    entry ``(0, d)`` as agent 1 received them (its observation's row of agent 0)."""
    horizon, entry = 6, HEADER + 2

    def make_env(secret: float) -> Any:
        return ReplaceReward(_local_env(PROBLEM, horizon), "agent_0", 1, secret)

    def observe(ep: Episode) -> list[float]:
        seen = [ep.observations[t + 1]["agent_1"] for t in (1, 2, 4)]
        assert all(o["mask"][0] and o["messages"][0][1] > 0.5 for o in seen)
        return [sum(float(o["messages"][0][entry]) for o in seen)]

    team = IndependentTeam(
        lambda: DecFedLinUCB(gamma=1, batch=1, noise_scale=noise_scale, **DEC_PRIVATE)
    )
    return audit_env(make_env, -1.0, 1.0, team, observe, runs=runs, seed=7, delta=DELTA)


DEC_PRIVATE = {"sync": "fixed", "epsilon": CLAIM, "delta": DELTA, "calibration": "gdp"}


@pytest.mark.parametrize(("noise_scale", "caught"), [(1.0, False), (0.5, True)])
@pytest.mark.parametrize(
    "runs",  # 5 s each in the quick subset (it catches half the noise already), 20 s in CI
    [1000, pytest.param(4000, marks=pytest.mark.slow)],
)
@pytest.mark.parametrize(
    "audit",  # the controller's view of the corrected variant; a neighbour's of the decentralized
    [_noise_audit, _dec_noise_audit],
    ids=["corrected", "decentralized"],
)
def test_private_variants_noise_audit_with_power(
    audit: Callable[..., AuditResult], noise_scale: float, caught: bool, runs: int
) -> None:
    r = audit(noise_scale, runs=runs)
    report(r, CLAIM)
    assert (r.epsilon_lb > CLAIM) is caught, r


def test_decentralized_calibration_is_the_centralized_one_per_estimator_tree() -> None:
    """Each estimator's tree holds ``T / gamma`` observations' releases: with ``gamma =
    1`` it is the centralized tree; with ``gamma = 2`` each tree is calibrated with the
    whole budget (a record enters one estimator), over half the releases."""
    spec = AgentSpec(0, 2, 1, 5, message_dim=HEADER + 9, context_dim=2)
    dec = DecFedLinUCB(gamma=1, batch=1, **DEC_PRIVATE)
    dec.reset(spec, seed=0)
    cen = FedLinUCB(sync="fixed", batch=1, epsilon=CLAIM, delta=DELTA, calibration="gdp")
    cen.reset(AgentSpec(0, 2, 1, 5, message_dim=10, context_dim=2), seed=0)
    assert (dec.rounds, dec.levels, dec.noise_std) == (cen.rounds, cen.levels, cen.noise_std)
    two = DecFedLinUCB(gamma=2, batch=1, **DEC_PRIVATE)
    two.reset(AgentSpec(0, 2, 1, 9, message_dim=HEADER + 9, context_dim=2), seed=0)
    assert two.rounds == 3 and two.levels == 3  # 9 // 2 = 4 uses, 3 releases
    assert math.sqrt(two.levels) * 2.0 / two.noise_std == pytest.approx(gdp_mu(CLAIM, DELTA))


class Requester(DecFedLinUCB):
    """A colluding neighbour: asks every agent for every estimator's statistic at every
    step (and, ``forge``, sends a statistic no Gram matrix can have)."""

    def __init__(self, forge: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.forge = forge

    def act(self, observation: Any) -> Any:
        out = super().act(observation)
        out["message"][0] = 1.0
        if self.forge:
            out["message"][1] = 1.0
            out["message"][HEADER:] = -1e6
        return out


def _agent0_messages(
    honest: dict[str, Any], neighbour: type, **kw: Any
) -> tuple[np.ndarray, DecFedLinUCB]:
    """Agent 0's messages ``(T, message_dim)`` beside two ``neighbour``s, and agent 0."""
    problem = dubey_synthetic(3, dim=2, seed=0)
    env = _local_env(problem, 60, gamma=2)
    agent0 = DecFedLinUCB(gamma=2, **honest)
    team = IndependentTeam([agent0] + [
        neighbour(gamma=2, **DEC_PRIVATE, **kw) for _ in range(2)
    ])  # fmt: skip
    obs, _ = env.reset(seed=2)
    team.reset(env, seed=2)
    sent = []
    while env.agents:
        actions = team.act(obs)
        sent.append(actions["agent_0"]["message"].copy())
        obs, *_ = env.step(actions)
    return np.array(sent), agent0


@pytest.mark.parametrize(
    ("honest", "changed"),
    [(DEC_PRIVATE, False), ({"epsilon": CLAIM, "threshold": 15.0}, True)],
    ids=["fixed_schedule", "published_requests"],
)
def test_a_colluders_requests_change_nothing_the_private_variant_sends(
    honest: dict[str, Any], changed: bool
) -> None:
    """Agent 0's whole message stream, with honest neighbours and with neighbours that
    request every step: identical for the fixed schedule (the neighbours' statistics
    are the same either way; only their request bit differs); the published request
    rule answers the requests and releases more (the power check)."""
    a, _ = _agent0_messages(honest, DecFedLinUCB)
    b, _ = _agent0_messages(honest, Requester)
    assert bool(a[:, 1].sum() < b[:, 1].sum()) is changed, (a[:, 1].sum(), b[:, 1].sum())
    assert (not np.array_equal(a, b)) is changed


def test_a_forged_statistic_is_kept_out_of_the_estimator() -> None:
    """A neighbour that sends a statistic with a hugely negative Gram block: the rebuild
    is not positive definite, so agent 0 keeps its estimators (finite log-determinants,
    positive definite inverses) and goes on sending on its schedule."""
    sent, agent0 = _agent0_messages(DEC_PRIVATE, Requester, forge=True)
    assert np.isfinite(sent).all() and sent[:, 1].sum() > 0
    assert agent0.heard[:, 1:].all()  # the forgeries arrived
    assert np.isfinite(agent0.log_dets).all(), agent0.log_dets
    assert (np.linalg.eigvalsh(agent0.invs) > 0).all()


# ------------------------------------- decentralized FedUCB at gamma = 2 (issue 49, item 4)
class TwoTrees(DecFedLinUCB):
    """The weakened twin: every record also enters the *next* estimator's tree (two
    trees, each calibrated with the whole budget: the parallel composition the claim rests
    on is broken, and an observer holding both trees' releases sees ``sqrt(2) mu``)."""

    def act(self, observation: Any) -> Any:
        if int(observation["step"][0]) > 0 and self.epsilon is not None:
            x, y = self._clip(self.last_x, float(observation["reward"][0]))
            z = np.append(x, y)
            self.leaf[(self.last_g + 1) % self.gamma] += np.outer(z, z)
        return super().act(observation)


# agent 0's actions whose releases hold its step-1 record: estimator 0's tree releases 1, 2
# and 4 (actions 2, 4, 8: estimator 0 plays the even actions) and, in the two-trees
# mutant, estimator 1's releases 1, 2 and 4 (actions 3, 5, 9)
TREE_0, TREE_1 = (2, 4, 8), (3, 5, 9)


def _gamma2_audit(
    policy: type, runs: int, actions: tuple[int, ...] = TREE_0 + TREE_1, noise_scale: float = 1.0
) -> AuditResult:
    """The neighbour's view of ``private_dec_fedlin_ucb`` at ``gamma = 2``: agent 0's
    reward at step 1 is -1 or +1 (``batch = 1``, ``T = 10``: 4 releases a tree, 3 levels, so
    the record's 3 nodes are all the calibration allows and the own-tree view is tight);
    agent 1 holds the releases of *both* estimators and sums the ``u`` entry ``(0, d)`` of
    those named by ``actions``, received one step after they were sent. The view of a
    Gaussian mechanism: audited by its shift (:func:`gaussian_audit_views`)."""
    horizon, entry = 10, HEADER + 2

    def make_env(secret: float) -> Any:
        return ReplaceReward(_local_env(PROBLEM, horizon, gamma=2), "agent_0", 1, secret)

    def observe(ep: Episode) -> list[float]:
        seen = [ep.observations[t + 1]["agent_1"]["messages"][0] for t in actions]
        assert all(m[1] == 1.0 and m[2] == t % 2 for t, m in zip(actions, seen, strict=True))
        return [sum(float(m[entry]) for m in seen)]

    team = IndependentTeam(lambda: policy(gamma=2, batch=1, noise_scale=noise_scale, **DEC_PRIVATE))
    return audit_env(
        make_env, -1.0, 1.0, team, observe, runs=runs, seed=11, delta=DELTA, method="gaussian"
    )


@pytest.mark.slow  # 6 s a row; the exact coupled check below stays in the quick subset
@pytest.mark.parametrize(
    ("policy", "actions", "noise_scale", "caught"),
    [
        (DecFedLinUCB, TREE_0 + TREE_1, 1.0, False),  # both estimators' releases held
        (DecFedLinUCB, TREE_0, 1.0, False),  # the record's own tree: the tight view
        (TwoTrees, TREE_0 + TREE_1, 1.0, True),  # a record in two trees
        (DecFedLinUCB, TREE_0, 0.5, True),  # half the noise
    ],
    ids=["both_trees", "own_tree", "two_trees_mutant", "half_noise"],
)
def test_decentralized_audit_at_gamma_2_with_power(
    policy: type, actions: tuple[int, ...], noise_scale: float, caught: bool
) -> None:
    r = _gamma2_audit(policy, 1000, actions, noise_scale)
    report(r, CLAIM)
    assert (r.epsilon_lb > CLAIM) is caught, r


def _coupled_releases(policy: type, secret: float) -> dict[int, list[np.ndarray]]:
    """Agent 0's releases as agent 1 received them, by estimator, with every seed fixed:
    two runs differing only in the secret differ exactly where the record entered."""
    env = ReplaceReward(_local_env(PROBLEM, 10, gamma=2), "agent_0", 1, secret)
    team = IndependentTeam(lambda: policy(gamma=2, batch=1, **DEC_PRIVATE))
    obs, _ = env.reset(seed=3)
    team.reset(env, seed=3)
    out: dict[int, list[np.ndarray]] = {0: [], 1: []}
    while env.agents:
        obs, *_ = env.step(team.act(obs))
        if obs and obs["agent_1"]["mask"][0] and obs["agent_1"]["messages"][0][1] == 1.0:
            message = obs["agent_1"]["messages"][0]
            out[int(message[2])].append(message[HEADER:].copy())
    return out


@pytest.mark.parametrize(("policy", "touched"), [(DecFedLinUCB, [0]), (TwoTrees, [0, 1])])
def test_a_record_reaches_exactly_one_estimators_releases(policy: type, touched: list[int]) -> None:
    """The parallel composition the decentralized claim rests on, checked exactly: with
    the noise coupled (same seeds), changing one record changes the releases of its own
    estimator only; the two-trees mutant changes both."""
    a, b = _coupled_releases(policy, -1.0), _coupled_releases(policy, 1.0)
    assert all(len(a[g]) >= 3 for g in (0, 1))
    changed = [
        g for g in (0, 1) if not all(np.array_equal(x, y) for x, y in zip(a[g], b[g], strict=True))
    ]
    assert changed == touched
