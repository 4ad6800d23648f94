"""Thompson sampling as vector policies (``baselines/thompson/vector.py``, issue 62): each
form plays, trial for trial, what the per-agent ``CooperativeTS``/``LocalTS`` team plays
on the PettingZoo env, on the vector env (rolled out in compiled code where the core can:
no messages, Broadcast's, either gossip's) and through ``VectorTeam`` on the PettingZoo
env with private rewards; the registered fast paths take the compiled rollout there and
the loop elsewhere."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from baselines.thompson import CooperativeTS
from baselines.thompson.vector import ThompsonVector
from fedbandit_env.core.mab import MABCore
from fedbandit_env.policies import IndependentTeam
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.runner.vector_trials import compiled_act, run_vector_trials
from fedbandit_env.scenario import Scenario
from fedbandit_env.testing import check_replay, stepped_then_rolled
from fedbandit_env.vector import make_vec
from fedbandit_env.vector.policy import VectorSpec, VectorTeam

CASES = [
    (None, {}), (None, {"posterior": "gaussian", "scale": 0.5}),
    ("hold", {}), ("hold", {"posterior": "beta"}), ("hold", {"posterior": "gaussian"}),
    ("relay", {}), ("relay", {"posterior": "moment"}),
]  # fmt: skip
KINDS = {
    "gossip ring": {"graph": "ring", "protocol": "random_edge_gossip"},
    "calls ER": {"graph": "erdos_renyi", "graph_p": 0.5, "protocol": "neighbour_gossip"},
    "broadcast ER": {"graph": "erdos_renyi", "graph_p": 0.5, "protocol": "broadcast"},
    "gaussian complete": {"instance": "zhu", "noise": "gaussian", "protocol": "broadcast"},
}


def _per_agent(share: str | None, options: dict[str, Any], scenario: Scenario) -> np.ndarray:
    template = CooperativeTS(share, **options)
    needs = template.requirements(scenario.n_agents, scenario.n_arms)
    curves = run_trials(functools.partial(scenario.make_env, needs),
                        lambda: IndependentTeam(lambda: CooperativeTS(share, **options)),
                        n_trials=4, seed=5, record_every=1, progress=False)  # fmt: skip
    return curves.regret


@pytest.mark.parametrize(
    ("share", "options", "kind"),
    [
        (share, options, kind)
        for share, options in CASES
        for kind in KINDS
        # a Beta posterior (and its moments) needs rewards in a finite range
        if "noise" not in KINDS[kind] or options.get("posterior", "auto") in ("auto", "gaussian")
    ],
)
def test_the_vector_policy_plays_the_per_agent_teams_trials(
    share: str | None, options: dict[str, Any], kind: str
) -> None:
    scenario = Scenario(n_agents=6, n_arms=4, horizon=90, **KINDS[kind])
    policy = ThompsonVector(share, **options)
    venv = make_vec(scenario, 2, policy.requirements(6, 4))
    venv.reset(seed=[0, 1])
    spec = VectorSpec.from_env(scenario.make_env(policy.requirements(6, 4)), 2)
    policy.reset(spec, [np.random.default_rng(b) for b in range(2)])
    assert compiled_act(venv, policy) is not None  # this is the compiled rollout's case
    vector = run_vector_trials(policy, scenario, None, 4, seed=5, batch=3)
    np.testing.assert_array_equal(vector.regret, _per_agent(share, options, scenario))


def test_the_comparison_can_fail() -> None:
    # the same policy with other draws (each env's agents spawned from its generator,
    # not the trial's team seed) is caught
    scenario = Scenario(n_agents=6, n_arms=4, horizon=90, **KINDS["gossip ring"])
    want = _per_agent("hold", {}, scenario)

    class OtherDraws(ThompsonVector):
        def reset(self, spec: VectorSpec, rngs: Any) -> None:
            super().reset(VectorSpec(spec.num_envs, spec.agents), rngs)

    vector = run_vector_trials(OtherDraws("hold"), scenario, None, 4, seed=5, batch=3)
    assert not np.array_equal(vector.regret, want)


@pytest.mark.parametrize("share", [None, "hold", "relay"])
def test_private_forms_play_the_per_agent_trials_on_the_vector_env(share: str | None) -> None:
    # PrivateRewards is a layer of the vector env (no compiled rollout): the policy's act
    options = {"epsilon": 1.0}
    setting = "local+private" if share is None else "gossip+private"
    scenario = Scenario(n_agents=5, n_arms=3, horizon=80, setting=setting, epsilon=1.0)
    vector = run_vector_trials(ThompsonVector(share, **options), scenario, None, 4, seed=5,
                               batch=3)  # fmt: skip
    np.testing.assert_array_equal(vector.regret, _per_agent(share, options, scenario))
    needs = ThompsonVector(share, **options).requirements(5, 3)
    team = run_trials(functools.partial(scenario.make_env, needs),
                      lambda: VectorTeam(ThompsonVector(share, **options)), n_trials=4,
                      seed=5, record_every=1, progress=False)  # fmt: skip
    np.testing.assert_array_equal(team.regret, vector.regret)


@pytest.mark.parametrize(
    ("policy", "params", "extra"),
    [
        ("local_ts", {}, {}),
        ("coop_ts", {}, {"protocol": "broadcast"}),
        ("coop_ts_relay", {}, {}),
        ("local_ts", {"epsilon": 1.0}, {}),
        ("private_coop_ts", {}, {}),
        ("private_coop_ts", {}, {"protocol": "neighbour_gossip"}),
        ("private_coop_ts", {}, {"estimator": "honaker"}),
        ("local_ts", {"epsilon": 1.0}, {"estimator": "honaker"}),
        ("coop_ts", {}, {"protocol": "neighbour_gossip"}),
        ("coop_ts_relay", {}, {"protocol": "neighbour_gossip", "graph": "star"}),
    ],
)
def test_the_fast_paths_are_the_rollout_and_replay_the_pettingzoo_path(
    policy: str, params: dict[str, Any], extra: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # every registered setting rolls out (private rewards too: the trees step inside the
    # rollout, either estimator), and replays the PettingZoo path
    scenario = Scenario(**{"n_agents": 5, "n_arms": 3, "horizon": 70, "graph": "ring", **extra})
    check_replay(policy, scenario, params, trials=3)
    rolled: list[int] = []
    rollout = MABCore.rollout

    def counted(core: MABCore, *args: Any, **kwargs: Any) -> None:
        rolled.append(core.t)
        rollout(core, *args, **kwargs)

    import fedbandit_env.core.mab as mab

    uncounted: list[bool] = []
    decide = mab.runs_uncounted

    def deciding(kernels: Any, values: Any) -> bool:
        uncounted.append(decide(kernels, values))
        return uncounted[-1]

    monkeypatch.setattr(MABCore, "rollout", counted)
    monkeypatch.setattr(mab, "runs_uncounted", deciding)
    run_fast(policy, scenario, 2, progress=False, **params)
    assert rolled == [0]  # one batch, rolled out from its first step
    # without numba's runtime: the agents' generators are a table, not a typed List,
    # and the step allocates nothing
    assert uncounted == [True]


def test_a_policy_reading_raw_rewards_in_a_private_stack_is_refused() -> None:
    # local_ts without epsilon under PrivateRewards reads the private increments on the
    # PettingZoo path; its compiled step reads rewards, so the fast path names the way
    # (the trial loop it replaced played the raw rewards here, other trials)
    scenario = Scenario(n_agents=3, n_arms=2, horizon=20, setting="local+private", epsilon=1.0)
    with pytest.raises(ValueError, match="run it through evaluate"):
        run_fast("local_ts", scenario, 1, progress=False)


def test_a_message_from_beyond_the_held_rows_is_refused() -> None:
    # holding keeps a row per graph neighbour: a sender outside them is named, not lost
    scenario = Scenario(n_agents=4, n_arms=2, horizon=10, graph="ring", protocol="broadcast")
    policy = ThompsonVector("hold")
    spec = VectorSpec.from_env(scenario.make_env(policy.requirements(4, 2)), 1)
    policy.reset(spec, [np.random.default_rng(0)])
    obs: dict[str, Any] = {
        "arm": np.zeros((1, 4), np.int64), "reward": np.zeros((1, 4, 1), np.float32),
        "step": np.ones((1, 4, 1), np.float32), "messages": np.zeros((1, 4, 4), np.float32),
        "mask": np.zeros((1, 4, 4), np.int8),
    }  # fmt: skip
    obs["mask"][0, 0, 1] = 1  # a neighbour on the ring: kept
    policy.act(obs)
    obs["step"][:] = 2
    obs["mask"][0, 0, 2] = 1  # agent 2 is not agent 0's neighbour
    with pytest.raises(ValueError, match="beyond them"):
        policy.act(obs)


def _hold_played(scenario: Scenario, stepped_for: int, policy: ThompsonVector) -> np.ndarray:
    """Cumulative regret of two envs: ``stepped_for`` steps through ``act``, the rest
    rolled out."""
    return np.array(stepped_then_rolled(policy, scenario, stepped_for).unwrapped.core.cum_regret)


PRIVATE = {"setting": "gossip+private", "graph": "ring", "epsilon": 1.0}


@pytest.mark.parametrize(
    ("kind", "options"),
    [(kind, options) for kind in ["gossip ring", "calls ER", "broadcast ER"]
     for options in [{}, {"posterior": "beta"}]] + [("private", {"epsilon": 1.0})],
)  # fmt: skip
def test_the_rolled_out_hold_step_sends_only_the_pulled_arms_entries(
    kind: str, options: dict[str, Any]
) -> None:
    # M = 16: an agent's message (2M numbers) moves in two entries a step, which the
    # rolled-out step writes and lists (WireChanges) and the rollout alone checks and
    # copies; the trials are the per-agent team's, rolled out from step 0 or after steps
    # through act (whose messages the rollout never held)
    scenario = Scenario(n_agents=6, n_arms=16, horizon=90, **KINDS.get(kind, PRIVATE))
    policy = ThompsonVector("hold", **options)
    vector = run_vector_trials(policy, scenario, None, 4, seed=5, batch=3)
    assert (policy._changes.listed == 2 * 6).all()  # the last step listed, not whole rows
    np.testing.assert_array_equal(vector.regret, _per_agent("hold", options, scenario))
    whole = _hold_played(scenario, scenario.horizon, ThompsonVector("hold", **options))
    for stepped_for in (0, 1, 30):
        played = _hold_played(scenario, stepped_for, ThompsonVector("hold", **options))
        np.testing.assert_array_equal(played, whole)
