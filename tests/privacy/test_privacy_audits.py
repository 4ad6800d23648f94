"""Black-box privacy audits through the public API, each with a power check (issue 13).

Every audit runs a mechanism, or a whole env stack, on two neighbouring inputs (one
reward of one agent differs) and lower-bounds epsilon from what an *observer* sees
(:mod:`fedbandit_env.privacy.audit`). Each bound holds with probability >= 0.99, so a
correct mechanism passes (its bound stays at or under its claim) except with
probability <= 0.01; fixed seeds make every outcome deterministic. Each audit is paired
with a deliberately weakened variant (noise x0.9, sensitivity understated by 20%, the
tree one level short, rewards left unclipped, the noise drawn from the protocol's
generator) that the same audit, at the same number of runs, must catch. The large-sample
versions, which catch the smallest weakenings, carry the ``slow`` marker; CI runs them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baselines import CDPMAB, DDPMAB, HDPMAB, FedUCB
from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.network.graph import Network, make_components
from fedbandit_env.policies import AgentSpec, FixedArm, IndependentTeam
from fedbandit_env.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    PrivacyAccountant,
    TreeMechanism,
    audit,
    audit_mechanism,
    audit_views,
    tree_levels,
)
from fedbandit_env.privacy.audit_log import report
from fedbandit_env.problems import MABProblem
from fedbandit_env.protocols import make_protocol
from fedbandit_env.seeding import env_generators
from fedbandit_env.wrappers import PrivateRewards
from fedbandit_env.wrappers.audit import Episode, ReplaceReward, audit_env


# --------------------------------------------------------------------- weakened variants
class ScaledLaplace(LaplaceMechanism):
    """Laplace noise ``factor`` times the calibrated scale (0.9: 10% too little)."""

    factor = 0.9

    @property
    def scale(self) -> float:
        return self.sensitivity / self.epsilon * self.factor


class ScaledGaussian(GaussianMechanism):
    """Gaussian noise with 0.9 times the calibrated sigma."""

    @property
    def sigma(self) -> float:
        return 0.9 * float(self.sensitivity * np.sqrt(2 * np.log(1.25 / self.delta)) / self.epsilon)


# --------------------------------------------------------------------- Laplace, Gaussian
@pytest.mark.parametrize(
    ("mechanism", "caught"),
    [
        (LaplaceMechanism(epsilon=1.0), False),
        (ScaledLaplace(epsilon=1.0), True),  # noise x0.9: true epsilon 1.11
        (LaplaceMechanism(epsilon=1.0, sensitivity=0.8), True),  # sensitivity understated
    ],
    ids=["correct", "noise_x0.9", "sensitivity_x0.8"],
)
def test_laplace_release_audit(mechanism: LaplaceMechanism, caught: bool) -> None:
    # neighbours differ by 1 = the claimed sensitivity, in one coordinate of three
    r = audit_mechanism(mechanism, [0.0, 0.4, 0.7], [1.0, 0.4, 0.7], runs=200_000, seed=1)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r
    if not caught:
        assert r.epsilon_lb > 0.9, r  # tight enough to mean something


@pytest.mark.parametrize(
    ("mechanism", "caught"),
    [
        (GaussianMechanism(epsilon=0.9, delta=0.1), False),
        (ScaledGaussian(epsilon=0.9, delta=0.1), True),
        (GaussianMechanism(epsilon=0.9, delta=0.1, sensitivity=0.8), True),
    ],
    ids=["correct", "sigma_x0.9", "sensitivity_x0.8"],
)
def test_gaussian_release_audit(mechanism: GaussianMechanism, caught: bool) -> None:
    # The classical calibration over-provides (epsilon_at(0.1) = 0.16 < 0.9), so the
    # audit checks the mechanism's exact curve at delta = 0.05, which a sigma 10% short
    # violates: claimed sigma, hence claimed curve, of the correct mechanism.
    claim = GaussianMechanism(epsilon=0.9, delta=0.1).epsilon_at(0.05)
    r = audit_mechanism(mechanism, [0.0], [1.0], runs=1_000_000, seed=2, delta=0.05)
    report(r, claim)
    assert (r.epsilon_lb > claim) is caught, (r, claim)
    if not caught:
        assert r.epsilon_lb > 0.85 * claim, (r, claim)


# --------------------------------------------------------------------- tree mechanism
def _tree_sampler(
    horizon: int, estimator: str, levels: int | None, view: str, epsilon: float = 1.0
) -> Any:
    """Streams that differ only in their first item (1 vs 0, the rest 0.5), released by
    the public ``TreeMechanism.step``. ``view="cover"``: the releases at ``t = 2^l``,
    each the one block at level ``l`` holding item 1, minus their known rest, reduced to
    the likelihood-ratio statistic of a Laplace shift, ``sum_l clip(z_l, 0, 1)``;
    ``view="first"``: the release at ``t = 1``."""

    def sample(first: float, seed: np.random.SeedSequence, runs: int) -> np.ndarray:
        tree = TreeMechanism(
            runs, horizon, epsilon, np.random.default_rng(seed), estimator=estimator, levels=levels
        )  # type: ignore[arg-type]
        outs = np.array(
            [tree.step(np.full(runs, first if t == 1 else 0.5)) for t in range(1, horizon + 1)]
        )
        if view == "first":
            return outs[0]
        depth = tree_levels(horizon)
        z = np.stack([outs[2**lv - 1] - 0.5 * (2**lv - 1) for lv in range(depth)], axis=1)
        return np.clip(z, 0.0, 1.0).sum(axis=1)

    return sample


@pytest.mark.parametrize("horizon", [4, 8])
@pytest.mark.parametrize("short", [False, True], ids=["correct", "one_level_short"])
def test_dyadic_tree_audit_of_the_whole_stream(horizon: int, short: bool) -> None:
    levels = tree_levels(horizon) - 1 if short else None
    r = audit(_tree_sampler(horizon, "dyadic", levels, "cover"), 0.0, 1.0, runs=300_000, seed=3)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is short, r
    if not short:
        assert r.epsilon_lb > 0.85, r


@pytest.mark.parametrize("half", [False, True], ids=["correct", "half_noise"])
def test_honaker_tree_stays_within_the_whole_stream_claim(half: bool) -> None:
    # The weakened twin (issue 49): half the noise (a tree calibrated for epsilon 2),
    # caught at 1.21. Honaker's releases average nodes, so the releases do not expose
    # each node and this view is loose (0.55 for the correct tree): a tree one level
    # short (noise x 3/4) stays below the claim here (0.77) and is caught by the dyadic
    # audit above, which is tight.
    sample = _tree_sampler(8, "honaker", None, "cover", epsilon=2.0 if half else 1.0)
    r = audit(sample, 0.0, 1.0, runs=300_000, seed=4)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is half, r


@pytest.mark.parametrize("short", [False, True], ids=["correct", "one_level_short"])
def test_honaker_first_release_matches_the_epsilon_it_reports(short: bool) -> None:
    # After one step an item lies in one completed node: the tree reports epsilon / L
    # spent, and Honaker's leaf estimate is that node itself, so the claim is tight.
    horizon = 4
    claim = TreeMechanism(1, horizon, 1.0, np.random.default_rng(0))
    claim.step(np.zeros(1))
    levels = tree_levels(horizon) - 1 if short else None
    r = audit(_tree_sampler(horizon, "honaker", levels, "first"), 0.0, 1.0, runs=300_000, seed=5)
    report(r, claim.epsilon_spent())
    assert (r.epsilon_lb > claim.epsilon_spent()) is short, (r, claim.epsilon_spent())


# --------------------------------------------------------------------- PrivateRewards
class UnderstatedPrivateRewards(PrivateRewards):
    """Calibrates the tree for a reward range 20% narrower than it clips to."""

    def _new_tree(self, rng: np.random.Generator, *_: Any) -> TreeMechanism:
        return super()._new_tree(rng, sensitivity=0.8 * (self.clip[1] - self.clip[0]))


class ShortPrivateRewards(PrivateRewards):
    """A tree one level short of covering every item (its accountant would object)."""

    def __init__(self, env: Any, epsilon: float) -> None:
        super().__init__(env, epsilon)
        self.accountant = PrivacyAccountant(budget=None)

    def _new_tree(self, rng: np.random.Generator, *_: Any) -> TreeMechanism:
        return super()._new_tree(rng, levels=tree_levels(self.horizon) - 1)


class UnclippedPrivateRewards(PrivateRewards):
    """Calibrated for rewards in [0, 1] but passing larger ones through unclipped."""

    def __init__(self, env: Any, epsilon: float) -> None:
        super().__init__(env, epsilon)
        self.clip = (-np.inf, np.inf)

    def _new_tree(self, rng: np.random.Generator, *_: Any) -> TreeMechanism:
        return super()._new_tree(rng, sensitivity=1.0)


def _private_rewards_audit(wrapper: type[PrivateRewards], secret: float, runs: int) -> Any:
    """Agent 0's reward at step 1 is 0 or ``secret`` (all others are 0); the observer is
    agent 0's own view, everything it could ever send: its private sums at t = 1, 2,
    reduced to the likelihood-ratio statistic of a shift."""
    horizon = 2

    def make_env(value: float) -> Any:
        base = FederatedMABEnv(MABProblem(np.zeros((2, 1))), Network.complete(2), horizon=horizon)
        return wrapper(ReplaceReward(base, "agent_0", 1, value), epsilon=1.0)

    def observe(ep: Episode) -> list[float]:
        sums = [
            float(o["agent_0"]["private_means"][0] * o["agent_0"]["counts"][0])
            for o in ep.observations[1:]
        ]
        return [float(np.clip(sums, 0.0, 1.0).sum())]

    return audit_env(make_env, 0.0, secret, IndependentTeam(FixedArm), observe, runs=runs, seed=6)


@pytest.mark.parametrize(
    ("wrapper", "secret", "caught"),
    [
        (PrivateRewards, 1.0, False),
        (PrivateRewards, 4.0, False),  # out of range: clipped to [0, 1]
        (ShortPrivateRewards, 1.0, True),
        (UnclippedPrivateRewards, 4.0, True),
    ],
    ids=["correct", "correct_clips", "one_level_short", "unclipped"],
)
@pytest.mark.parametrize("runs", [1500, pytest.param(6000, marks=pytest.mark.slow)])
def test_private_rewards_end_to_end(wrapper: type, secret: float, caught: bool, runs: int) -> None:
    env = wrapper(
        FederatedMABEnv(MABProblem(np.zeros((2, 1))), Network.complete(2), horizon=2), 1.0
    )
    env.reset(seed=0)
    for _ in range(2):
        _, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 0})
    if not caught:
        assert infos["agent_0"]["epsilon"] == 1.0  # the claim it reports at the horizon
    r = _private_rewards_audit(wrapper, secret, runs=runs)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrapper", "caught"),
    [(PrivateRewards, False), (UnderstatedPrivateRewards, True)],
    ids=["correct", "sensitivity_x0.8"],
)
def test_private_rewards_end_to_end_large_sample(wrapper: type, caught: bool) -> None:
    r = _private_rewards_audit(wrapper, 1.0, runs=20_000)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r
    if not caught:
        assert r.epsilon_lb > 0.75, r


# --------------------------------------------------------------------- Li & Song
def _unclipped(cls: type) -> type:
    """The pre-fix behaviour: noise calibrated for [0, 1], rewards taken as they come."""

    class Unclipped(cls):  # type: ignore[misc,valid-type]
        def reset(self, spec: Any, seed: Any = None) -> None:
            super().reset(spec, seed)
            self._lo, self._hi = -np.inf, np.inf

    return Unclipped


ELIMINATION = {"cdp": CDPMAB, "ddp": DDPMAB, "hdp": HDPMAB}
N_AGENTS, EPS = 4, 0.25  # the claim n eps = 1 for the n = 4 agents aggregated


def _elimination_audit(cls: type, secret: float, runs: int) -> Any:
    """Gaussian rewards (unbounded) with the policy's clip range [0, 1]; agent 0's
    reward at step 1 (arm 0, explored first) is 0 or ``secret``. The observer sees the
    first message agent 0 sends, ``[1, ybar]`` (the server under CDP, its neighbours
    under DDP, the sink under HDP): the private mean of arm 0."""

    def policy() -> Any:
        return cls(epsilon=EPS, rounds=1, min_gap=0.95, clip=(0.0, 1.0))

    needs = policy().requirements(N_AGENTS, 2)
    network = make_components((2, 2), "complete") if needs.protocol == "hybrid" else Network.path(4)
    problem = MABProblem(np.zeros((N_AGENTS, 2)), "gaussian", 0.01)
    upload = _horizon_of_first_upload(policy, needs.message_dim)

    def make_env(value: float) -> Any:
        protocol = make_protocol(needs.protocol, needs.public_dim, needs.participation)
        base = FederatedMABEnv(
            problem, network, protocol, horizon=upload, message_dim=needs.message_dim
        )
        return ReplaceReward(base, "agent_0", 1, value)

    def observe(ep: Episode) -> list[float]:
        sent = [a["agent_0"]["message"] for a in ep.actions if a["agent_0"]["message"][0]]
        return [float(sent[0][1])]  # IndexError if agent 0 never uploaded

    team = IndependentTeam(policy)
    assert team.privacy_spent(np.array([upload]), upload, N_AGENTS, 2)[0] == 1.0
    return audit_env(make_env, 0.0, secret, team, observe, runs=runs, seed=7)


def _horizon_of_first_upload(policy: Any, message_dim: int) -> int:
    """The shortest horizon ``T`` in which the first upload happens (its epoch length
    depends on ``T``): the first epoch's ``2 S(1)`` pulls, then the upload step."""
    for horizon in range(3, 5000):
        p = policy()
        p.reset(AgentSpec(0, N_AGENTS, 2, horizon, message_dim, (0.0, 1.0)), seed=0)
        if 2 * int(p._total) + 1 <= horizon:
            return horizon
    raise AssertionError("no horizon fits the first epoch")


@pytest.mark.parametrize(
    ("kind", "runs"),
    [
        ("cdp", 150),  # quick: the server's view of CDP-MAB
        *(pytest.param(k, 400, marks=pytest.mark.slow) for k in sorted(ELIMINATION)),
    ],
)
@pytest.mark.parametrize("unclipped", [False, True], ids=["correct", "unclipped"])
def test_elimination_messages_through_the_env(kind: str, runs: int, unclipped: bool) -> None:
    cls = ELIMINATION[kind]
    r = _elimination_audit(_unclipped(cls) if unclipped else cls, secret=4.0, runs=runs)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is unclipped, r


# --------------------------------------------------------------------- Fed_UCB, joint view
class SharedGeneratorPrivateRewards(PrivateRewards):
    """The bug this issue fixed: the noise drawn from a copy of the protocol's generator."""

    def stream(self, seed: int) -> np.random.Generator:
        return env_generators(seed)[1]


def _fed_ucb_joint_audit(wrapper: type[PrivateRewards], runs: int) -> Any:
    """Fed_UCB's full stack (random-edge gossip on a triangle, private rewards, one arm,
    T = 2). Agent 0's reward at step 1 is 0 or 1. The observer is every other agent
    together with the network: every message agent 0 sends (its private estimate after
    step 1) and which edge gossips at step 2, seen jointly."""
    n, horizon = 3, 2
    team_needs = FedUCB(epsilon=1.0).requirements(n, 1)

    def make_env(value: float) -> Any:
        protocol = make_protocol("random_edge_gossip", team_needs.public_dim)
        base = FederatedMABEnv(
            MABProblem(np.zeros((n, 1))),
            Network.complete(n),
            protocol,
            horizon=horizon,
            message_dim=team_needs.message_dim,
        )
        return wrapper(ReplaceReward(base, "agent_0", 1, value), epsilon=1.0)

    def observe(ep: Episode) -> list[float]:
        estimate = float(ep.actions[1]["agent_0"]["message"][1])  # theta, sent at step 2
        masks = ep.observations[2]
        edge = sum(2**i * int(masks[f"agent_{i}"]["mask"].any()) for i in range(n))
        return [estimate, float(edge)]

    team = IndependentTeam(lambda: FedUCB(epsilon=1.0))
    return audit_env(make_env, 0.0, 1.0, team, observe, runs=runs, seed=8)


@pytest.mark.parametrize(
    ("wrapper", "caught"),
    [(PrivateRewards, False), (SharedGeneratorPrivateRewards, True)],
    ids=["correct", "shared_generator"],
)
@pytest.mark.parametrize("runs", [600, pytest.param(3000, marks=pytest.mark.slow)])
def test_fed_ucb_joint_view_of_another_agent(wrapper: type, caught: bool, runs: int) -> None:
    r = _fed_ucb_joint_audit(wrapper, runs=runs)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r


# --------------------------------------------------------------------- the audit API itself
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: audit_views(np.zeros(10), np.zeros(10), alpha=0.0), "alpha must lie in"),
        (lambda: audit_views(np.zeros(10), np.zeros(10), delta=1.0), "delta must lie in"),
        (lambda: audit_views(np.zeros(10), np.zeros(10), select=1.0), "select must lie in"),
        (lambda: audit_views(np.zeros((10, 2)), np.zeros((10, 3))), "coordinates"),
        (lambda: audit_views([np.nan, 1.0, 2.0], [0.0, 1.0, 2.0]), "must be finite"),
        (lambda: audit_views(np.zeros(2), np.zeros(2)), "too few runs"),
        (lambda: audit_mechanism(LaplaceMechanism(1.0), [0.0], [0.0]), "nothing to audit"),
        (lambda: audit_mechanism(LaplaceMechanism(1.0), [0.0], [0.0, 1.0]), "one shape"),
        (lambda: audit(lambda d, s, n: np.zeros(n), 0, 1, runs=2), "runs must be >= 4"),
    ],
)
def test_audit_api_rejects_bad_input(call: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_identical_inputs_give_no_evidence_and_delta_only_lowers_the_bound() -> None:
    rng = np.random.default_rng(9)
    same = audit_views(rng.laplace(0, 1, 50_000), rng.laplace(0, 1, 50_000))
    assert same.epsilon_lb < 0.1, same
    y1, y0 = 1.0 + rng.laplace(0, 1, 100_000), rng.laplace(0, 1, 100_000)
    pure, approx = audit_views(y1, y0), audit_views(y1, y0, delta=0.05)
    assert approx.epsilon_lb < pure.epsilon_lb


def test_replace_reward_rejects_bad_arguments() -> None:
    base = FederatedMABEnv(MABProblem(np.zeros((2, 1))), Network.complete(2), horizon=2)
    with pytest.raises(ValueError, match="agent must be one of"):
        ReplaceReward(base, "agent_9", 1, 0.0)
    with pytest.raises(ValueError, match="step must be an int >= 1"):
        ReplaceReward(base, "agent_0", 0, 0.0)


# ------------------------------------------------- the Gaussian-shift audit (issue 49)
@pytest.mark.parametrize(("sigma_factor", "caught"), [(1.0, False), (0.8, True)])
def test_the_gaussian_shift_audit_is_tight_and_catches_a_short_sigma(
    sigma_factor: float, caught: bool
) -> None:
    """A Gaussian mechanism calibrated exactly for (1, 0.1)-DP (``sigma = 1 / gdp_mu``):
    the audit's bound lies close below the claim (its expected value at 20,000 runs is
    0.90: ``mu`` less 2.8 standard errors; 0.8 is ``mu`` less 6); with 80% of the noise it
    exceeds it (the event search needs a million runs for the first, this one 20,000)."""
    from fedbandit_env.privacy import gaussian_audit_views
    from fedbandit_env.privacy.gaussian import gdp_mu

    sigma = sigma_factor / gdp_mu(1.0, 0.1)
    rng = np.random.default_rng(49)
    r = gaussian_audit_views(
        1.0 + rng.normal(0, sigma, 20_000), rng.normal(0, sigma, 20_000), delta=0.1
    )
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r
    if not caught:
        assert r.epsilon_lb > 0.8, r


def test_the_gaussian_shift_audit_refuses_views_of_two_variances() -> None:
    from fedbandit_env.privacy import gaussian_audit_views

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="variances differ"):
        gaussian_audit_views(rng.normal(0, 2, 5000), rng.normal(0, 1, 5000), delta=0.1)
    with pytest.raises(ValueError, match="one number a run"):
        gaussian_audit_views(np.zeros((50, 2)), np.zeros((50, 2)), delta=0.1)
