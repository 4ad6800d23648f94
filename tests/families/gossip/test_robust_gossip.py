"""RobustGossipUCB: trimmed aggregation holds up where Gossip_UCB follows the liars."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baselines.gossip.robust import RobustGossipUCB, trimmed_mean
from fedbandit_env.registry import make as make_team
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import Byzantine
from fedbandit_env.wrappers.audit import play


def test_the_trimmed_mean_stays_within_the_honest_values() -> None:
    """Whatever ``f`` rows of ``n >= 2f + 1`` say, each column's trimmed mean lies in
    the range of the honest rows (the property the variant rests on); the plain mean
    does not (so the check can fail)."""
    rng = np.random.default_rng(0)
    escaped = 0
    for _ in range(200):
        f = int(rng.integers(1, 4))
        honest = rng.random((int(rng.integers(f + 1, 8)), 3))
        lies = np.full((f, 3), rng.choice([-1e9, 1e9]))
        values = np.vstack([honest, lies])
        out = trimmed_mean(values, f)
        assert (out >= honest.min(axis=0)).all() and (out <= honest.max(axis=0)).all()
        escaped += int(((values.mean(axis=0) > 1) | (values.mean(axis=0) < 0)).any())
    assert escaped == 200


def _last_quarter(policy: str, liars: int, **kw: Any) -> tuple[np.ndarray, Any]:
    scenario = Scenario(n_agents=8, n_arms=4, horizon=1500, seed=0, setting="neighbours")
    team = make_team(policy, **kw)
    env = scenario.make_env(team.requirements(8, 4))
    env = Byzantine(env, liars, "boost") if liars else env
    episode = play(env, team, 3)
    honest = env.possible_agents[: 8 - liars]
    arms = np.array([[int(o[a]["arm"]) for a in honest] for o in episode.observations[1126:]])
    modal = np.array([np.bincount(col, minlength=4).argmax() for col in arms.T])
    return modal, scenario.problem()


def test_boosting_liars_capture_gossip_ucb_but_not_the_robust_variant() -> None:
    """Two of eight agents boost the worst arm: every honest Gossip_UCB agent ends on it;
    every honest RobustGossipUCB(trim=2) agent ends on the global best arm."""
    plain, problem = _last_quarter("gossip_ucb", 2)
    worst = int(np.argmax(problem.gaps))
    assert (plain == worst).all(), plain
    robust, _ = _last_quarter("robust_gossip_ucb", 2, trim=2)
    assert (robust == problem.best_arm).all(), robust


@pytest.mark.slow
def test_without_liars_the_robust_variant_still_finds_the_best_arm() -> None:
    robust, problem = _last_quarter("robust_gossip_ucb", 0, trim=1)
    assert (robust == problem.best_arm).all(), robust


@pytest.mark.parametrize("trim", [-1, 1.5, True])
def test_a_bad_trim_is_refused(trim: Any) -> None:
    with pytest.raises(ValueError, match="trim must be an int >= 0"):
        RobustGossipUCB(trim=trim)
