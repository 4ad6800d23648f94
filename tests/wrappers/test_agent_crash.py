"""AgentCrash: agents drop off the network (crash-stop) and come back (crash-recover)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.policies import FixedArm, IndependentTeam
from fedbandit_env.protocols import Flooding, RandomEdgeGossip
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import AgentCrash, Gossip, LocalStatistics, PrivateRewards
from fedbandit_env.wrappers.audit import play


def _env(**kw: Any) -> Any:
    kw = {"message_dim": 2, "horizon": 40, **kw}
    return federated_mab_v0.parallel_env(n_agents=6, n_arms=3, network="complete", **kw)


STACKS = {
    "recover": lambda: AgentCrash(_env(), 0.2, 0.3),
    "stop": lambda: AgentCrash(_env(), 0.05),
    "over_gossip_protocol": lambda: AgentCrash(
        _env(protocol=RandomEdgeGossip(public_dim=1)), 0.2, 0.2
    ),
    "over_gossip_wrapper": lambda: AgentCrash(Gossip(_env(), public_dim=1), 0.2, 0.2),
    "private_over": lambda: PrivateRewards(AgentCrash(_env(), 0.2, 0.2), 1.0),
    "statistics_over": lambda: LocalStatistics(AgentCrash(_env(), 0.2, 0.2)),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stacks_pass_api_and_full_episode_determinism(name: str) -> None:
    check_parallel_env(STACKS[name], num_cycles=40)
    check_determinism(STACKS[name], seed=1)


class _Chatty(FixedArm):
    def act(self, observation: Any) -> Any:
        return {"arm": 0, "message": np.ones(2, np.float32)}


def _episode(env: Any, seed: int = 0) -> Any:
    return play(env, IndependentTeam(lambda: _Chatty()), seed)


def test_crash_zero_is_exactly_the_unwrapped_run() -> None:
    plain, wrapped = _episode(_env()), _episode(AgentCrash(_env(), 0.0))
    for a, b in zip(plain.observations, wrapped.observations, strict=True):
        for agent in a:
            for key in a[agent]:
                np.testing.assert_array_equal(a[agent][key], b[agent][key])


def test_a_crashed_agent_neither_sends_nor_hears_and_crash_stop_is_final() -> None:
    episode = _episode(AgentCrash(_env(), 0.1))
    agents = list(episode.observations[0])
    down_before: set[str] = set()
    for obs, info in zip(episode.observations[1:], episode.infos[1:], strict=True):
        down = {a for a in agents if info[a]["crashed"]}
        assert down_before <= down  # crash-stop: nobody returns
        down_before = down
        for a in agents:
            heard = {agents[s] for s in np.flatnonzero(obs[a]["mask"])}
            if a in down:
                assert not heard and not obs[a]["messages"].any()
            else:
                assert heard == set(agents) - down - {a}
        assert all(info[a]["agents_down"] == len(down) for a in agents)
    assert 0 < len(down_before) < 6  # the run exercised crashes (so the test can fail)


def test_only_the_chosen_agents_crash_and_regret_still_counts() -> None:
    wrapped = _episode(AgentCrash(_env(), 1.0, agents=[2]))
    plain = _episode(_env())
    last, last_plain = wrapped.infos[-1], plain.infos[-1]
    assert [a for a in last if last[a]["crashed"]] == ["agent_2"]
    for a in last:
        assert last[a]["cumulative_regret"] == last_plain[a]["cumulative_regret"]


def test_crash_recover_spends_the_stationary_share_down() -> None:
    """crash 0.2, recover 0.3: a share 0.4 of agent-steps down in the long run. 40 steps x
    6 agents x 30 episodes; the chain's autocorrelation (1 - 0.5 per step) inflates the
    variance by (1 + 0.5) / (1 - 0.5) = 3; allow 4 such sd plus the start-up bias."""
    env = AgentCrash(_env(), 0.2, 0.3)
    down, recovered = [], 0
    for seed in range(30):
        infos = _episode(env, seed).infos[1:]
        down += [info[a]["crashed"] for info in infos[10:] for a in info]
        recovered += sum(info[a]["recovered"] for info in infos for a in info)
    sd = np.sqrt(0.4 * 0.6 * 3 / len(down))
    assert abs(np.mean(down) - 0.4) < 4 * sd, np.mean(down)
    assert recovered > 0


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: AgentCrash(_env(), 1.5), ValueError, r"crash must lie in \[0, 1\]"),
        (lambda: AgentCrash(_env(), 0.1, -1), ValueError, r"recover must lie in \[0, 1\]"),
        (lambda: AgentCrash(_env(), 0.1, agents=["agent_9"]), ValueError, "unknown agent"),
        (lambda: AgentCrash(_env(), 0.1, agents=[]), ValueError, "at least one agent"),
        (lambda: AgentCrash(_env(message_dim=0), 0.1), TypeError, "carries messages"),
        (
            lambda: AgentCrash(_env(protocol=Flooding()), 0.1),
            ValueError,
            "needs one-hop delivery",
        ),
    ],
)
def test_bad_arguments_are_refused(make: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        make()
