"""ClipRewards: the range private policies calibrate to, declared and enforced."""

from __future__ import annotations

import numpy as np
import pytest

from baselines import CDPMAB
from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import AgentSpec, IndependentTeam
from fedbandit_env.problems import MABProblem
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import ClipRewards, LocalStatistics, PrivateRewards


def _gaussian(horizon: int = 30) -> ClipRewards:
    problem = MABProblem([[0.5, 0.2], [0.4, 0.9]], "gaussian", 3.0)
    return federated_mab_v0.parallel_env(problem=problem, horizon=horizon)


def test_passes_the_api_and_determinism_checks_and_stays_in_its_space() -> None:
    check_parallel_env(lambda: ClipRewards(_gaussian(), -0.5, 1.5))
    check_determinism(lambda: LocalStatistics(ClipRewards(_gaussian(), -0.5, 1.5)), seed=3)


def test_rewards_are_the_clipped_raw_rewards() -> None:
    raw, clipped = _gaussian(), ClipRewards(_gaussian(), 0.0, 1.0)
    raw.reset(seed=1)
    clipped.reset(seed=1)
    seen_outside = False
    for _ in range(30):
        actions = {"agent_0": 0, "agent_1": 1}
        _, r_raw, *_ = raw.step(actions)
        obs, r_clip, *_ = clipped.step(actions)
        for a in actions:
            assert r_clip[a] == min(max(r_raw[a], 0.0), 1.0)
            assert obs[a]["reward"][0] == np.float32(r_clip[a])
            seen_outside |= not 0.0 <= r_raw[a] <= 1.0
    assert seen_outside  # sigma = 3: the test exercised the clipping


def test_a_private_policy_reads_its_range_from_the_clipped_env() -> None:
    env = ClipRewards(_gaussian(), -1.0, 2.0)
    assert AgentSpec.from_env(env, "agent_0").reward_bounds == (-1.0, 2.0)
    with pytest.raises(ValueError, match="CDPMAB privatises rewards, so they need a finite"):
        CDPMAB().reset(AgentSpec(0, 2, 2, 30, 3, (-np.inf, np.inf)))


def test_scenarios_clip_for_self_privatising_policies_and_refuse_without_a_range() -> None:
    team = IndependentTeam(lambda: CDPMAB(epsilon=1.0))
    needs = team.requirements(3, 2)
    assert needs.bounded_rewards
    env = Scenario(n_agents=3, n_arms=2, noise="gaussian", clip=(0.0, 1.0)).make_env(needs)
    assert isinstance(env, ClipRewards) and (env.low, env.high) == (0.0, 1.0)
    env = Scenario(n_agents=3, n_arms=2, noise="gaussian").make_env(needs)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="give a clip range"):
        team.reset(env, seed=0)
    private = Scenario(n_agents=3, n_arms=2, noise="gaussian", clip=(-1, 2))
    assert private.make_env(needs.merge(needs).__class__(epsilon=1.0)).clip == (-1.0, 2.0)
    assert isinstance(private.make_env(needs.__class__(epsilon=1.0)), PrivateRewards)


@pytest.mark.parametrize(
    ("low", "high", "error", "match"),
    [
        (1.0, 0.0, ValueError, "finite low < high"),
        (0.0, np.inf, ValueError, "finite low < high"),
        ("0", 1.0, TypeError, "low must be a float"),
    ],
)
def test_rejects_bad_ranges(low: object, high: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ClipRewards(_gaussian(), low, high)  # type: ignore[arg-type]


def test_scenario_and_cli_validate_the_range() -> None:
    from fedbandit_env.cli import build_parser

    with pytest.raises(ValueError, match="Scenario: clip must be a pair"):
        Scenario(clip=(1.0,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Scenario privatises rewards"):
        Scenario(clip=(1.0, 0.0))
    assert build_parser().parse_args(["bench", "--clip=-1,2"]).clip == (-1.0, 2.0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--clip", "2,1"])


@pytest.mark.parametrize("interactive", [False, True], ids=["fast", "interactive"])
@pytest.mark.parametrize("policy", ["cdp_mab", "fed_ucb"])
def test_cli_refuses_unclipped_gaussian_rewards_on_both_paths(
    policy: str, interactive: bool, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from fedbandit_env.cli import main

    argv = ["bench", "--policies", policy, "--noise", "gaussian", "--horizon", "50"]
    argv += ["--trials", "1", "--no-plot", "--no-progress", "--out", str(tmp_path)]
    argv += ["--interactive"] if interactive else []
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code != 0
    assert "privatises rewards, so they need a finite range" in capsys.readouterr().err
    assert main([*argv, "--clip", "0,1"]) == 0  # with a range, it runs
