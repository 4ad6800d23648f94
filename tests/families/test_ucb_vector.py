"""The plain baselines as vector policies (``baselines/ucb/vector.py``, issue 62): each
registered id plays, trial for trial, what its per-agent team (``LocalUCB1``,
``LocalKLUCB``, ``RandomPolicy`` as an ``IndependentTeam``; ``OracleUCB``) plays on the
PettingZoo env - on the vector env and through its ``VectorTeam`` on the PettingZoo env,
with raw and private rewards - and ``evaluate`` runs it on the vector env where the
compiled loop does not model the setting (privacy) instead of the PettingZoo path."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import fedbandit_env.runner.fast as fast_module
import fedbandit_env.runner.vector_trials as vector_trials
from baselines.ucb import LocalKLUCB, LocalUCB1, OracleUCB, RandomPolicy
from fedbandit_env import registry
from fedbandit_env.core.mab import MABCore
from fedbandit_env.policies import IndependentTeam, Team
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.runner.vector_trials import run_episodes, run_vector_trials
from fedbandit_env.scenario import Scenario
from fedbandit_env.seeding import spawn
from fedbandit_env.vector.policy import VectorTeam

PER_AGENT: dict[str, Any] = {
    "local_ucb": lambda **kw: IndependentTeam(lambda: LocalUCB1(**kw)),
    "kl_ucb": lambda **kw: IndependentTeam(lambda: LocalKLUCB(**kw)),
    "random": lambda **kw: IndependentTeam(lambda: RandomPolicy(**kw)),
    "oracle_ucb": lambda **kw: OracleUCB(**kw),
}
CASES = [
    ("local_ucb", {}), ("local_ucb", {"scale": 0.3}), ("kl_ucb", {}), ("kl_ucb", {"c": 3.0}),
    ("random", {}), ("oracle_ucb", {}), ("oracle_ucb", {"scale": 0.5}),
]  # fmt: skip


def _per_agent(policy: str, scenario: Scenario, options: dict[str, Any]) -> np.ndarray:
    def team() -> Team:
        made: Team = PER_AGENT[policy](**options)
        return made

    curves = run_trials(functools.partial(scenario.make_env, None), team, n_trials=4, seed=9,
                        record_every=1, progress=False)  # fmt: skip
    return curves.regret


@pytest.mark.parametrize(("policy", "options"), CASES)
@pytest.mark.parametrize("kind", ["bernoulli ring", "gaussian zhu", "private"])
def test_the_vector_policy_plays_the_per_agent_teams_trials(
    policy: str, options: dict[str, Any], kind: str
) -> None:
    extra: dict[str, Any] = {
        "bernoulli ring": {"graph": "ring", "instance": "biased"},
        "gaussian zhu": {"instance": "zhu", "noise": "gaussian"},
        "private": {"setting": "local+private", "epsilon": 1.0},
    }[kind]
    scenario = Scenario(n_agents=5, n_arms=4, horizon=150, **extra)
    want = _per_agent(policy, scenario, options)
    made = registry.make(policy, **options)
    assert isinstance(made, VectorTeam)
    vector = run_vector_trials(made.policy, scenario, None, 4, seed=9, batch=3)
    np.testing.assert_array_equal(vector.regret, want)
    pettingzoo = run_trials(functools.partial(scenario.make_env, None),
                            functools.partial(registry.make, policy, **options), n_trials=4,
                            seed=9, record_every=1, progress=False)  # fmt: skip
    np.testing.assert_array_equal(pettingzoo.regret, want)


def test_evaluate_takes_the_vector_env_where_the_loop_does_not_model_the_setting() -> None:
    """The compiled loop where it models the scenario; with private rewards (which it
    does not model) the vector env, no longer the PettingZoo path: the same trials."""
    plain = Scenario(n_agents=4, n_arms=3, horizon=60, setting="local")
    assert evaluate("local_ucb", plain, trials=2, progress=False).meta["path"] == "fast"
    private = Scenario(n_agents=4, n_arms=3, horizon=60, setting="local+private", epsilon=1.0)
    fast = evaluate("local_ucb", private, trials=3, progress=False)
    slow = evaluate("local_ucb", private, trials=3, progress=False, interactive=True)
    assert (fast.meta["path"], slow.meta["path"]) == ("vector", "interactive")
    np.testing.assert_array_equal(fast.regret, slow.regret)
    np.testing.assert_array_equal(fast.privacy_spent, slow.privacy_spent)


def test_a_vector_policy_without_trial_seeds_draws_its_own_agents_streams() -> None:
    """Reset outside a trial runner (no team seeds): each agent's generator is spawned
    from its env's, so two envs with one generator seed tie-break alike and two with
    different seeds do not."""
    from fedbandit_env.policies import AgentSpec
    from fedbandit_env.vector.policy import VectorSpec

    policy = registry.make("random").policy
    spec = VectorSpec(3, tuple(AgentSpec(i, 4, 50, 10) for i in range(4)))
    policy.reset(spec, [np.random.default_rng(s) for s in (1, 1, 2)])
    arms, _ = policy.act({"step": np.zeros((3, 4, 1), np.float32)})
    assert np.array_equal(arms[0], arms[1]) and not np.array_equal(arms[0], arms[2])


def test_the_vector_team_acts_for_the_others_beside_a_learner() -> None:
    """A ``SingleAgentEnv`` whose others are the registered (vector) local UCB1 sees the
    same episode as with the per-agent team (the team reward reads the others' pulls):
    the member for the learner stays idle and gets no action, the others play their own
    trials."""
    from fedbandit_env import federated_mab_v0
    from fedbandit_env.rl import SingleAgentEnv

    views = []
    for others in (registry.make("local_ucb"), PER_AGENT["local_ucb"]()):
        env = SingleAgentEnv(federated_mab_v0.parallel_env(n_agents=4, n_arms=3, horizon=40),
                             others, agent="agent_2", reward="team")  # fmt: skip
        obs, _ = env.reset(seed=5)
        seen = [obs]
        for t in range(39):
            obs, reward, *_ = env.step(t % 3)
            seen.append(np.append(obs, reward))
        views.append(np.concatenate(seen))
    np.testing.assert_array_equal(views[0], views[1])
    team = registry.make("random")
    env = federated_mab_v0.parallel_env(n_agents=3, n_arms=4, horizon=5)
    observations, _ = env.reset(seed=0)
    team.reset(env, seed=0)
    assert sorted(team.act({a: observations[a] for a in ("agent_0", "agent_2")})) == [
        "agent_0", "agent_2",
    ]  # fmt: skip


@pytest.mark.parametrize(("policy", "options"), CASES[::2])
def test_the_compiled_fast_path_is_the_vector_envs_trials(
    policy: str, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_fast`` (``CompiledTrials``: the core's compiled rollout, one batch a thread)
    and ``run_vector_trials`` with and without the compiled rollout give the same trials,
    however the trials are split."""
    scenario = Scenario(n_agents=5, n_arms=4, horizon=150, instance="zhu", noise="gaussian")
    made = registry.make(policy, **options)
    assert isinstance(made, VectorTeam)
    compiled = run_vector_trials(made.policy, scenario, None, 5, seed=9, batch=2).regret
    runs = [run_fast(policy, scenario, 5, seed=9, progress=False, workers=w, **options).regret
            for w in (1, 2, 3)]  # fmt: skip
    monkeypatch.setattr(fast_module, "BATCH", 2)
    runs.append(run_fast(policy, scenario, 5, seed=9, progress=False, **options).regret)
    monkeypatch.setattr(fast_module, "BATCH", 256)  # one batch, split by the state budget
    monkeypatch.setattr(vector_trials, "STATE_BUDGET", 1)
    played: list[int] = []
    rollout = MABCore.rollout

    def counted(core: MABCore, *args: Any, **kwargs: Any) -> None:
        played.append(int(core.means.shape[0]))
        rollout(core, *args, **kwargs)

    monkeypatch.setattr(MABCore, "rollout", counted)
    runs.append(run_fast(policy, scenario, 5, seed=9, progress=False, **options).regret)
    assert played == [1] * 5  # each env alone: its state is over the budget
    seeds = spawn(4, 3)
    episodes = run_episodes(made.policy, scenario, seeds)  # what tune scores
    monkeypatch.setattr(vector_trials, "compiled_act", lambda venv, policy: None)
    stepped = run_vector_trials(made.policy, scenario, None, 5, seed=9, batch=2).regret
    for regret in (compiled, *runs):
        np.testing.assert_array_equal(regret, stepped)
    np.testing.assert_array_equal(episodes, run_episodes(made.policy, scenario, seeds))


def test_the_compiled_fast_path_refuses_a_stack_it_does_not_play() -> None:
    """A layer over the env (private rewards) leaves no bare env to roll out: a one-line
    refusal that names the way, not trials without the layer."""
    private = Scenario(n_agents=3, n_arms=2, horizon=20, setting="local+private", epsilon=1.0)
    with pytest.raises(ValueError, match="bare env without messages"):
        run_fast("local_ucb", private, 1, progress=False)


@pytest.mark.parametrize("policy", ["local_ucb", "oracle_ucb"])
def test_the_compiled_fast_path_draws_each_trials_instance_as_the_pettingzoo_path(
    policy: str,
) -> None:
    """Held-out instances: every env of a batch draws its own instance from its seed, the
    one the PettingZoo env of that trial draws."""
    scenario = Scenario(n_agents=4, n_arms=3, horizon=60, instance="biased",
                        instances="held_out")  # fmt: skip
    fast = run_fast(policy, scenario, 3, seed=5, progress=False, workers=2, trace=True)
    pettingzoo = run_trials(functools.partial(scenario.make_env, None),
                            functools.partial(registry.make, policy), n_trials=3, seed=5,
                            record_every=1, progress=False)  # fmt: skip
    np.testing.assert_array_equal(fast.regret, pettingzoo.regret)
    assert len({float(r) for r in fast.regret[:, 0, -1]}) > 1  # the trials differ


def test_a_silent_compiled_step_in_an_env_with_messages_is_stepped() -> None:
    """An env asked to carry messages (Broadcast) which local UCB never reads (it sends
    zeros): its silent compiled step does not fit that rollout, so the batch is stepped,
    with the per-agent team's trials."""
    from fedbandit_env.policies import Requirements

    scenario = Scenario(n_agents=4, n_arms=3, horizon=40, graph="ring")
    needs = Requirements(message_dim=6, protocol="broadcast")
    made = registry.make("local_ucb")
    assert isinstance(made, VectorTeam)
    vector = run_vector_trials(made.policy, scenario, needs, 3, seed=2, batch=3)
    want = run_trials(functools.partial(scenario.make_env, needs),
                      functools.partial(registry.make, "local_ucb"), n_trials=3, seed=2,
                      record_every=1, progress=False)  # fmt: skip
    np.testing.assert_array_equal(vector.regret, want.regret)
    np.testing.assert_array_equal(vector.comm_cost, want.comm_cost)
