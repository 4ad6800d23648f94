"""MessageLoss: each delivered peer message is dropped with probability p."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import FixedArm, IndependentTeam
from fedbandit_env.protocols import RandomEdgeGossip
from fedbandit_env.registry import make as make_team
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import GilbertElliottLoss, LocalStatistics, MessageLoss, PrivateRewards
from fedbandit_env.wrappers.audit import play


def _talking_env(**kw: Any) -> Any:
    return federated_mab_v0.parallel_env(horizon=30, message_dim=2, network="ring", **kw)


STACKS = {
    "loss": lambda: MessageLoss(_talking_env(), 0.3),
    "loss_over_private": lambda: MessageLoss(PrivateRewards(_talking_env(), 1.0), 0.3),
    "private_over_loss": lambda: PrivateRewards(MessageLoss(_talking_env(), 0.3), 1.0),
    "statistics_over_loss": lambda: LocalStatistics(MessageLoss(_talking_env(), 0.5)),
    "loss_over_gossip": lambda: MessageLoss(
        _talking_env(protocol=RandomEdgeGossip(public_dim=1)), 0.5
    ),
    "twice": lambda: MessageLoss(MessageLoss(_talking_env(), 0.2), 0.2),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stacks_pass_api_and_full_episode_determinism(name: str) -> None:
    check_parallel_env(STACKS[name], num_cycles=30)
    check_determinism(STACKS[name], seed=4)


def _episode(env: Any, seed: int = 3) -> Any:
    team = IndependentTeam(lambda: _Chatty())
    return play(env, team, seed)


class _Chatty(FixedArm):
    """Pulls arm 0 and sends its step count: every message tells where it came from."""

    def act(self, observation: Any) -> Any:
        return {"arm": 0, "message": np.full(2, float(observation["step"][0]) + 1.0, np.float32)}


def test_p_zero_is_exactly_the_unwrapped_run() -> None:
    plain, lossless = _episode(_talking_env()), _episode(MessageLoss(_talking_env(), 0.0))
    for a, b in zip(plain.observations, lossless.observations, strict=True):
        for agent in a:
            for key in a[agent]:
                np.testing.assert_array_equal(a[agent][key], b[agent][key])
    assert all(i["messages_lost_total"] == 0 for i in lossless.infos[-1].values())


def test_p_one_loses_every_message_and_keeps_the_cost() -> None:
    plain, deaf = _episode(_talking_env()), _episode(MessageLoss(_talking_env(), 1.0))
    for obs in deaf.observations[1:]:
        assert all(not o["mask"].any() and not o["messages"].any() for o in obs.values())
    costs = [i["agent_0"]["cumulative_comm_cost"] for i in (plain.infos[-1], deaf.infos[-1])]
    assert costs[0] == costs[1] > 0  # a lost message used its link
    assert deaf.infos[-1]["agent_0"]["messages_lost_total"] == 4 * 2  # a ring of 4


def test_the_loss_rate_is_p() -> None:
    """30 steps x 8 deliveries on a ring of 4, 20 episodes: 4800 Bernoulli(0.3) draws;
    the dropped share lies within 4 standard deviations of 0.3 (sd 0.0066)."""
    env = MessageLoss(_talking_env(), 0.3)
    lost = sum(
        sum(info["agent_0"]["messages_lost_total"] for info in _episode(env, s).infos[1:])
        for s in range(20)
    )
    share = lost / (20 * 30 * 8)
    assert abs(share - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 4800), share


def _last_quarter_arms(policy: str, loss: float | None, seed: int = 0) -> np.ndarray:
    scenario = Scenario(n_agents=6, n_arms=3, horizon=2000, seed=2)
    team = make_team(policy)
    env = scenario.make_env(team.requirements(6, 3))
    env = MessageLoss(env, loss) if loss is not None else env
    episode = play(env, team, seed)
    arms = np.array(
        [[int(o[a]["arm"]) for a in env.possible_agents] for o in episode.observations[1501:]]
    )
    return np.array([np.bincount(col, minlength=3).argmax() for col in arms.T])


def test_total_loss_turns_gossip_ucb_into_local_learners() -> None:
    """With every message lost, each Gossip_UCB agent ends on its locally best arm, as
    local UCB1 does; with none lost they agree on the global best (so the test can fail)."""
    problem = Scenario(n_agents=6, n_arms=3, horizon=2000, seed=2).problem()
    assert set(problem.local_best_arms) != {problem.best_arm}  # some agents are misled
    np.testing.assert_array_equal(_last_quarter_arms("local_ucb", None), problem.local_best_arms)
    np.testing.assert_array_equal(_last_quarter_arms("gossip_ucb", 1.0), problem.local_best_arms)
    assert (_last_quarter_arms("gossip_ucb", None) == problem.best_arm).all()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"p": -0.1}, ValueError, r"p must lie in \[0, 1\]"),
        ({"p": 1.5}, ValueError, r"p must lie in \[0, 1\]"),
        ({"p": "0.3"}, TypeError, "p must be a number"),
        ({"p": True}, TypeError, "p must be a number"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        MessageLoss(_talking_env(), **kwargs)


def test_an_env_without_messages_is_refused() -> None:
    with pytest.raises(TypeError, match="MessageLoss needs an env that carries messages"):
        MessageLoss(federated_mab_v0.parallel_env(horizon=3), 0.1)


def test_scenarios_put_faults_on_top_and_choose_the_path_that_models_them() -> None:
    from fedbandit_env.policies import Requirements
    from fedbandit_env.runner.evaluate import evaluate
    from fedbandit_env.runner.fast import run_fast
    from fedbandit_env.wrappers import MessageDelay

    scenario = Scenario(n_agents=3, n_arms=2, horizon=20, loss=0.5, delay=1)
    env = scenario.make_env(Requirements(message_dim=2, epsilon=1.0))
    assert type(env).__name__ == "MessageLoss" and isinstance(env.env, MessageDelay)
    assert type(env.env.env).__name__ == "PrivateRewards" and env.env.env.depth == 0
    silent = scenario.make_env(Requirements())  # nothing to lose without messages
    assert type(silent).__name__ == "FederatedMABEnv"
    # Gossip_UCB's compiled loop models loss and delay; Fed_UCB's and DDP-MAB's do not
    assert evaluate("gossip_ucb", scenario, trials=1).meta["path"] == "fast"
    assert evaluate("fed_ucb", scenario, trials=1).meta["path"] == "interactive"
    with pytest.raises(ValueError, match="fast path of fed_ucb does not model loss=0.5"):
        run_fast("fed_ucb", scenario, 1, progress=False)
    liars = Scenario(n_agents=3, n_arms=2, horizon=20, loss=0.5, byzantine=1)
    assert evaluate("gossip_ucb", liars, trials=1).meta["path"] == "interactive"
    with pytest.raises(ValueError, match="does not model byzantine=1"):
        run_fast("gossip_ucb", liars, 1, progress=False)
    assert "loss" not in Scenario().to_dict() and scenario.to_dict()["delay"] == 1
    with pytest.raises(ValueError, match=r"loss must lie in \[0, 1\]"):
        Scenario(loss=2.0)
    with pytest.raises(ValueError, match="delay must be >= 0"):
        Scenario(delay=-1)


def test_gilbert_elliott_stacks_pass_api_and_full_episode_determinism() -> None:
    def make() -> Any:
        return GilbertElliottLoss(_talking_env(), 0.2, 0.3, loss_bad=0.9, loss_good=0.05)

    check_parallel_env(make, num_cycles=30)
    check_determinism(make, seed=2)


def _link_losses(env: Any, seeds: int) -> np.ndarray:
    """(episodes, steps, receiver, sender) 1 where a delivered message was lost: every
    agent of the ring hears both neighbours every step, so a cleared mask is a loss."""
    out = []
    for s in range(seeds):
        obs = _episode(env, s).observations[1:]
        out.append([[~o[a]["mask"].astype(bool) for a in o] for o in obs])
    return np.array(out)


def test_gilbert_elliott_loses_the_stationary_share_in_bursts() -> None:
    """to_bad 0.1, to_good 0.3, all lost when bad: a long-run loss rate of 0.25, and a
    loss follows a loss on the same link with probability 1 - to_good = 0.7 (a
    memoryless channel: 0.25). 30 steps x 8 links x 40 episodes; the chain's
    autocorrelation 0.6 inflates the variance by (1 + 0.6) / (1 - 0.6) = 4; 4 sd each."""
    env = GilbertElliottLoss(_talking_env(), 0.1, 0.3)
    assert env.mean_loss == 0.25
    ring = np.array([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]], bool)
    lost = _link_losses(env, 40)[:, :, ring]  # (episodes, steps, 8 links)
    late = lost[:, 10:]  # past the start (every link starts good)
    sd = np.sqrt(0.25 * 0.75 * 4 / late.size)
    assert abs(late.mean() - 0.25) < 4 * sd, late.mean()
    after = lost[:, 1:][lost[:, :-1]]
    assert abs(after.mean() - 0.7) < 4 * np.sqrt(0.7 * 0.3 / after.size), after.mean()
    plain = _link_losses(MessageLoss(_talking_env(), 0.25), 40)[:, :, ring]
    assert plain[:, 1:][plain[:, :-1]].mean() < 0.4  # the power check: no bursts


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"to_bad": 1.5, "to_good": 0.1}, ValueError, r"to_bad must lie in \[0, 1\]"),
        ({"to_bad": 0.1, "to_good": -1}, ValueError, r"to_good must lie in \[0, 1\]"),
        ({"to_bad": 0.0, "to_good": 0.0}, ValueError, "cannot both be 0"),
        ({"to_bad": 0.1, "to_good": 0.1, "loss_bad": 2}, ValueError, "loss_bad must lie"),
        ({"to_bad": 0.1, "to_good": 0.1, "loss_good": "x"}, TypeError, "loss_good must be"),
    ],
)
def test_bad_gilbert_elliott_arguments_are_refused(
    kwargs: dict[str, Any], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        GilbertElliottLoss(_talking_env(), **kwargs)
