"""CDP-, DDP- and HDP-MAB as a vector policy (``baselines/elimination/vector.py``): every
trial is the per-agent team's on the PettingZoo path, to the bit (regret, the network's
cost, each agent's rounds, every message on the wire), stepped through the vector env's
layers, faults included; and a form with less noise, other draws or a wrong average is
caught.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from numba import njit

import fedbandit_env.runner.vector_trials as vector_trials
from baselines.elimination import CDPMAB, DDPMAB, HDPMAB, EliminationPolicy
from baselines.elimination.kernels import KIND_SERVER, elimination_step, flooding_step
from baselines.elimination.vector import (
    QUIET_STEPS,
    EliminationVector,
    cdp_mab,
    ddp_mab,
    hdp_mab,
)
from fedbandit_env.core.kernels import UNCOUNTED
from fedbandit_env.core.rounds import QuietSteps
from fedbandit_env.policies import AgentSpec, IndependentTeam
from fedbandit_env.rng_kernels import generator_table
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.runner.vector_trials import (
    _start_split,
    agent_specs,
    compiled_act,
    run_vector_trials,
)
from fedbandit_env.scenario import Scenario
from fedbandit_env.seeding import trial_seeds
from fedbandit_env.testing import stepped_then_rolled
from fedbandit_env.vector import make_vec
from fedbandit_env.vector.policy import VectorSpec

TRIALS, SEED = 2, 7
VARIANTS = {"cdp": CDPMAB, "ddp": DDPMAB, "hdp": HDPMAB}
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("cdp", {"graph": "complete"}, {"epsilon": 1.0}),
    ("cdp", {"instance": "homogeneous"}, {"epsilon": 0.5, "participation": 0.6}),
    ("cdp", {"instance": "zhu"}, {"epsilon": None, "rounds": 2, "min_gap": 0.05}),
    ("ddp", {"graph": "ring"}, {"epsilon": 1.0}),
    ("ddp", {"graph": "star", "instance": "homogeneous"}, {"epsilon": None}),
    ("hdp", {"graph": "star", "components": (2, 1, 3)}, {"epsilon": 1.0}),
    ("hdp", {"components": (1,) * 6}, {"epsilon": 1.0, "rounds": 3, "min_gap": 0.1}),
    # unbounded rewards: clipped by the scenario's range, then the policy's
    ("ddp", {"graph": "ring", "noise": "gaussian", "sigma": 0.5, "clip": (-1.0, 2.0)},
     {"epsilon": 1.0, "clip": (0.1, 0.9)}),
    # the vector env's fault layers
    ("ddp", {"graph": "ring", "loss": 0.3}, {"epsilon": 1.0}),
    ("ddp", {"graph": "ring", "delay": 2}, {"epsilon": 1.0}),
    ("hdp", {"graph": "star", "components": (2, 1, 3), "loss": 0.2}, {"epsilon": 1.0}),
    ("cdp", {"byzantine": 1}, {"epsilon": 1.0}),
]  # fmt: skip


def _scenario(setting: dict[str, Any]) -> Scenario:
    return Scenario(n_agents=6, n_arms=4, horizon=2500, gap=0.15, seed=5, **setting)


def _per_agent(variant: str, setting: dict[str, Any], params: dict[str, Any]) -> tuple[Any, list]:
    """The per-agent teams' curves, and the teams made (the last played the last trial)."""
    kind, scenario, teams = VARIANTS[variant], _scenario(setting), []

    def team() -> IndependentTeam:
        teams.append(IndependentTeam(lambda: kind(**params)))
        return teams[-1]

    needs = kind(**params).requirements(scenario.n_agents, scenario.n_arms)
    curves = run_trials(functools.partial(scenario.make_env, needs), team, n_trials=TRIALS,
                        seed=SEED, record_every=1, progress=False)  # fmt: skip
    return curves, teams


def _vector(policy: EliminationVector, setting: dict[str, Any]) -> Any:
    return run_vector_trials(policy, _scenario(setting), None, TRIALS, seed=SEED, batch=TRIALS)


@pytest.mark.parametrize(
    ("variant", "setting", "params"), CASES, ids=[f"{v}-{i}" for i, (v, _, _) in enumerate(CASES)]
)
def test_the_vector_policy_plays_the_per_agent_teams_trials(
    variant: str, setting: dict[str, Any], params: dict[str, Any]
) -> None:
    want, teams = _per_agent(variant, setting, params)
    policy = EliminationVector(VARIANTS[variant](**params))
    got = _vector(policy, setting)
    np.testing.assert_array_equal(got.regret, want.regret)
    np.testing.assert_array_equal(got.comm_cost, want.comm_cost)
    assert want.comm_cost[0, -1] > 0  # rounds happened: the replay covered communication
    last = [agent.rounds_done for agent in teams[-1].policies]  # the last trial's team
    np.testing.assert_array_equal(policy.rounds_done[-1], last)
    assert policy.rounds_done.min() >= 1


def _sent_on_both_paths(
    variant: str, setting: dict[str, Any], params: dict[str, Any], form: type[EliminationVector]
) -> tuple[np.ndarray, np.ndarray]:
    """One trial played by the per-agent team on the PettingZoo env and by ``form`` on the
    vector env (the runners' seeds): every step's arms and messages ``(T, N, 1 + M)`` as
    each path sent them."""
    kind, scenario = VARIANTS[variant], _scenario(setting)
    ((env_seed, team_seed),) = trial_seeds(SEED, 1)
    team = IndependentTeam(lambda: kind(**params))
    env = scenario.make_env(team.requirements(scenario.n_agents, scenario.n_arms))
    obs, _ = env.reset(seed=env_seed)
    team.reset(env, seed=team_seed)
    slow = []
    while env.agents:
        actions = team.act(obs)
        slow.append([np.r_[a["arm"], a["message"]] for a in actions.values()])
        obs, *_ = env.step(actions)
    policy = form(kind(**params))
    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, 1, needs)
    obs = _start_split(venv, policy, [(env_seed, team_seed)], agent_specs(scenario, needs))
    fast = []
    for _ in range(scenario.horizon):
        arms, messages = policy.act(obs)
        fast.append(np.concatenate([arms[0, :, None], np.float32(messages[0])], axis=1))
        obs, *_ = venv.step(arms, messages)
    return np.array(slow), np.array(fast)


class _HalfNoise(EliminationVector):
    """The noise's width halved after reset: half the Laplace scale, the schedule kept."""

    def reset(self, spec: VectorSpec, rngs: Any) -> None:
        super().reset(spec, rngs)
        self.setup = self.setup._replace(width=self.setup.width / 2)


class _EnvDraws(EliminationVector):
    """Every agent's noise from generators spawned off the env's, not the team's."""

    def reset(self, spec: VectorSpec, rngs: Any) -> None:
        super().reset(VectorSpec(spec.num_envs, spec.agents), rngs)


class _WithoutOwnUpload(EliminationVector):
    """DDP's aggregate without the agent's own upload (a plausible slip: the inbox holds
    the others' rows only), handed in as if a server had sent it."""

    def act(self, observations: Any) -> Any:
        obs = dict(observations)
        mask = np.asarray(obs["mask"]).astype(bool)
        heard = np.asarray(obs["messages"], dtype=np.float64)
        server = np.zeros_like(heard)
        for e, i in zip(*np.nonzero(mask.any(axis=2)), strict=True):
            server[e, i, 1:] = heard[e, mask[e, i], 1:].mean(axis=0)
        obs["server"] = server.astype(np.float32)
        obs["server_mask"] = mask.any(axis=2)[..., None].astype(np.int8)
        self.setup = self.setup._replace(kind=KIND_SERVER)
        return super().act(obs)


@pytest.mark.parametrize(
    ("variant", "setting", "params"),
    [("cdp", {"graph": "complete"}, {"epsilon": 1.0}),
     ("ddp", {"graph": "ring", "loss": 0.3}, {"epsilon": 0.5, "rounds": 3, "min_gap": 0.1}),
     ("hdp", {"graph": "star", "components": (2, 1, 3)}, {"epsilon": 1.0})],
)  # fmt: skip
def test_every_message_is_the_per_agent_teams(
    variant: str, setting: dict[str, Any], params: dict[str, Any]
) -> None:
    """What an observer of the wire sees: every step's arm and message of every agent,
    the private uploads included, is the per-agent team's to the bit."""
    slow, fast = _sent_on_both_paths(variant, setting, params, EliminationVector)
    np.testing.assert_array_equal(fast, slow)
    assert (slow[:, :, 1] == 1).sum() > 6  # more than one round of uploads


@pytest.mark.parametrize(
    ("weakened", "variant", "setting"),
    [(_HalfNoise, "cdp", {"graph": "star"}), (_EnvDraws, "hdp", {"graph": "star"}),
     (_WithoutOwnUpload, "ddp", {"graph": "ring", "instance": "zhu"})],
)  # fmt: skip
def test_a_weakened_vector_form_is_caught(
    weakened: type[EliminationVector], variant: str, setting: dict[str, Any]
) -> None:
    """Power: half the noise, the env's generators in place of the team's, or DDP's
    average without the agent's own upload each send other messages (the DDP slip on
    agents whose local means differ, where the own row moves the average)."""
    slow, fast = _sent_on_both_paths(variant, setting, {"epsilon": 1.0}, weakened)
    assert not np.array_equal(fast, slow)
    _, right = _sent_on_both_paths(variant, setting, {"epsilon": 1.0}, EliminationVector)
    np.testing.assert_array_equal(right, slow)  # the form itself sends the same there


def test_secure_noise_is_not_the_seeds() -> None:
    """``noise="secure"`` draws from fresh entropy: two runs on one seed upload other
    means, and neither run's are the seeded run's."""
    setting, params = {"graph": "complete"}, {"epsilon": 1.0, "noise": "secure"}
    _, first = _sent_on_both_paths("cdp", setting, params, EliminationVector)
    _, second = _sent_on_both_paths("cdp", setting, params, EliminationVector)
    uploads = first[:, :, 1] == 1
    assert uploads.any()
    assert not np.array_equal(first[uploads], second[uploads])
    seeded, _ = _sent_on_both_paths("cdp", setting, {"epsilon": 1.0}, EliminationVector)
    assert not np.array_equal(first[uploads], seeded[uploads])


def test_the_factories_and_bad_input() -> None:
    assert ddp_mab(epsilon=None).name == "ddp_mab"
    assert hdp_mab().requirements(4, 3).protocol == "hybrid"
    assert cdp_mab(epsilon=2.0).privacy_epsilon(4, 3) == 8.0
    assert cdp_mab(epsilon=None).noise_source() is None
    with pytest.raises(TypeError, match="CDPMAB, DDPMAB or HDPMAB"):
        EliminationVector(EliminationPolicy())
    agents = tuple(AgentSpec(i, 2, 3, 100, message_dim=5) for i in range(2))
    with pytest.raises(ValueError, match="message_dim = 1 \\+ n_arms = 4"):
        cdp_mab().reset(VectorSpec(1, agents), [np.random.default_rng(0)])


@pytest.mark.parametrize("variant", ["cdp", "ddp"])
def test_any_observation_is_read_as_the_per_agent_policy_reads_it(variant: str) -> None:
    """Fed the same observations, arbitrary ones (results at random steps, flooded rows
    from random senders, rounds the inbox screen dropped), the vector form acts as the
    per-agent policies do, agent by agent: arms and messages, every step."""
    kind, n, m, horizon = VARIANTS[variant], 3, 4, 600
    rng = np.random.default_rng(3)
    agents = tuple(AgentSpec(i, n, m, horizon, message_dim=1 + m, reward_bounds=(0.0, 1.0))
                   for i in range(n))  # fmt: skip
    options = {"epsilon": 50.0, "rounds": 6, "min_gap": 0.9}  # short epochs: many rounds
    per_agent = [kind(**options) for _ in range(n)]
    seeds = [np.random.default_rng(10 + i) for i in range(n)]
    for policy, spec in zip(per_agent, agents, strict=True):  # the same streams as `seeds`
        policy.reset(spec, seed=np.random.default_rng(10 + spec.index))
    vector = EliminationVector(kind(**options))
    vector.reset(VectorSpec(1, agents), [np.random.default_rng(0)])
    vector._table = generator_table(seeds)  # the per-agent policies' streams, copied
    vector._generators = seeds
    for _ in range(horizon):
        obs = {
            "reward": rng.random((1, n, 1)).astype(np.float32),
            "messages": rng.random((1, n, 1 + m)).astype(np.float32),
            "mask": (rng.random((1, n, n)) < 0.05).astype(np.int8),
            "server": rng.random((1, n, 1 + m)).astype(np.float32),
            "server_mask": (rng.random((1, n, 1)) < 0.05).astype(np.int8),
            "server_dropped": (rng.random((1, n, 1)) < 0.05).astype(np.int8),
        }
        arms, sent = vector.act(obs)
        for i, policy in enumerate(per_agent):
            mine = {key: value[0, i] for key, value in obs.items()}
            mine["messages"] = obs["messages"][0]  # its inbox: every sender's row
            action = policy.act(mine)
            assert arms[0, i] == action["arm"]
            np.testing.assert_array_equal(np.float32(sent[0, i]), action["message"])
    rounds = [policy.rounds_done for policy in per_agent]
    np.testing.assert_array_equal(vector.rounds_done[0], rounds)
    assert min(rounds) >= 2


def _first_in_flight(policy: EliminationVector, scenario: Scenario) -> int:
    """The first step after which a round is in flight in env 0 (0: none), with the
    policy stepped through its ``act`` as ``stepped_then_rolled`` steps it."""
    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, 2, needs)
    observations, _ = venv.reset(seed=[3, 4])
    policy.reset(VectorSpec.from_env(scenario.make_env(needs), 2),
                 [np.random.default_rng(b) for b in range(2)])  # fmt: skip
    protocol = venv.unwrapped.core.router.protocols[0]
    for t in range(1, scenario.horizon + 1):
        arms, messages = policy.act(observations)
        observations, *_ = venv.step(arms, messages)
        if getattr(protocol, "in_flight", lambda: None)():
            return t
    return 0


@pytest.mark.parametrize(
    ("variant", "setting", "params"),
    [("cdp", {"graph": "complete"}, {"epsilon": 1.0}),
     ("cdp", {"graph": "complete"}, {"epsilon": None, "participation": 0.5}),
     ("cdp", {"graph": "complete"}, {"epsilon": 0.5, "rounds": 3, "min_gap": 0.1}),
     ("ddp", {"graph": "path"}, {"epsilon": 1.0}),
     ("ddp", {"graph": "path"}, {"epsilon": None, "rounds": 3, "min_gap": 0.1}),
     ("hdp", {"graph": "path", "components": (2, 4)}, {"epsilon": 1.0}),
     ("hdp", {"graph": "star", "components": (1, 5)},
      {"epsilon": None, "rounds": 3, "min_gap": 0.1})],
)  # fmt: skip
def test_every_variant_is_rolled_out_by_the_core_as_it_steps(
    variant: str, setting: dict[str, Any], params: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """CDP-MAB's step rolls out over ServerRounds in compiled code
    (``core.rounds.rollout_rounds``), DDP-MAB's over GIS flooding on a path, whose rounds
    take several steps (``core.rounds.rollout_flooding``), HDP-MAB's over the hybrid
    structure (``core.rounds.rollout_hybrid``); their trials are the stepped ones and the
    per-agent team's; handed over mid-episode (the server's last broadcast and its
    uploads, or a round in flight, read from the env), the episode is the same."""
    scenario = _scenario(setting)
    factory = {"cdp": cdp_mab, "ddp": ddp_mab, "hdp": hdp_mab}[variant]
    policy = factory(**params)
    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, 2, needs)
    _start_split(venv, policy, trial_seeds(SEED, 2), agent_specs(scenario, needs))
    assert compiled_act(venv, policy) is not None
    want, _ = _per_agent(variant, setting, params)
    rolled = _vector(policy, setting)
    monkeypatch.setattr(vector_trials, "compiled_act", lambda venv, policy: None)
    stepped = _vector(factory(**params), setting)
    for curves in (rolled, stepped):
        np.testing.assert_array_equal(curves.regret, want.regret)
        np.testing.assert_array_equal(curves.comm_cost, want.comm_cost)
    monkeypatch.undo()
    handover = [0, 1, 600, scenario.horizon]
    if variant != "cdp" and setting["graph"] == "path":  # rounds that take steps
        handover.append(_first_in_flight(factory(**params), scenario))
        assert handover[-1] > 0
    ends = []
    for stepped_for in handover:
        core = stepped_then_rolled(factory(**params), scenario, stepped_for).unwrapped.core
        ends.append((core.cum_regret.copy(), core.cum_cost.copy()))
    for regret, cost in ends[1:]:
        np.testing.assert_array_equal(regret, ends[0][0])
        np.testing.assert_array_equal(cost, ends[0][1])
    assert ends[0][1].min() > 0


@njit(nogil=True, **UNCOUNTED)
def _counting_server_step(last: Any, seen: Any, t: int, server: Any, server_mask: Any,
                          calls: Any, *rest: Any) -> None:  # fmt: skip
    calls[0] += 1
    elimination_step(last, seen, t, server, server_mask, *rest)


@njit(nogil=True, **UNCOUNTED)
def _counting_flooding_step(last: Any, seen: Any, t: int, heard: Any, mask: Any, calls: Any,
                            *rest: Any) -> None:  # fmt: skip
    calls[0] += 1
    flooding_step(last, seen, t, heard, mask, *rest)


@pytest.mark.parametrize(
    ("variant", "setting", "params"),
    [("cdp", {"graph": "complete"}, {"epsilon": 1.0, "participation": 0.5}),
     pytest.param("ddp", {"graph": "path"}, {"epsilon": 1.0}, marks=pytest.mark.slow),
     pytest.param("hdp", {"graph": "star", "components": (2, 1, 3)},
                  {"epsilon": None, "rounds": 3, "min_gap": 0.1}, marks=pytest.mark.slow)],
)  # fmt: skip
def test_the_round_rollouts_play_the_planned_quiet_steps_without_the_step(
    variant: str, setting: dict[str, Any], params: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The core plays the steps the elimination step plans quiet (an exploring agent's
    pulls to its epoch's end, a committed one's) without calling it
    (``core.rounds.play_quiet``, ``core.rounds.QuietSteps``), and the step takes them
    in when next called: the step is called on a small share of the steps, and every
    trial is still the per-agent team's, regret and the network's cost to the bit, and
    every agent's statistics and books those of the policy with no room to plan (a plan
    of one step), whose step is called on every step."""
    scenario = _scenario(setting)
    factory = {"cdp": cdp_mab, "ddp": ddp_mab, "hdp": hdp_mab}[variant]
    counting = _counting_flooding_step if variant == "ddp" else _counting_server_step
    want, _ = _per_agent(variant, setting, params)
    kernel, reset = EliminationVector.kernel, EliminationVector.reset
    books = []
    for room, most in ((QUIET_STEPS, 0.2), (1, 1.0)):
        calls = np.zeros(1, np.int64)

        def counted(self: EliminationVector, calls: Any = calls) -> Any:
            _, state = kernel(self)
            return counting, (calls, *state)

        def planning(
            self: EliminationVector, spec: VectorSpec, rngs: Any, room: int = room
        ) -> None:
            reset(self, spec, rngs)
            self._quiet = QuietSteps.of(room, spec.num_envs, spec.n_agents)

        monkeypatch.setattr(EliminationVector, "kernel", counted)
        monkeypatch.setattr(EliminationVector, "reset", planning)
        policy = factory(**params)
        curves = _vector(policy, setting)
        monkeypatch.undo()
        books.append([policy._counts, policy._sums, policy._epoch_sums, policy._ybar,
                      policy._books])  # fmt: skip
        np.testing.assert_array_equal(curves.regret, want.regret)
        np.testing.assert_array_equal(curves.comm_cost, want.comm_cost)
        steps = scenario.horizon  # the trials' envs in one batch: one call a step
        assert 0 < calls[0] <= most * steps, (room, int(calls[0]))
        if room == 1:  # every step through the step, none played unasked
            assert calls[0] == steps
    for planned, stepped in zip(*books, strict=True):  # every agent's statistics, to the bit
        np.testing.assert_array_equal(planned, stepped)


def test_a_plan_that_does_not_fit_the_envs_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A QuietSteps of other envs than the rollout's is refused before any step (the
    compiled rollout reads and writes it unchecked)."""
    reset = EliminationVector.reset

    def misfit(self: EliminationVector, spec: VectorSpec, rngs: Any) -> None:
        reset(self, spec, rngs)
        self._quiet = QuietSteps.of(4, spec.num_envs + 1, spec.n_agents)

    monkeypatch.setattr(EliminationVector, "reset", misfit)
    with pytest.raises(ValueError, match=r"QuietSteps needs .* \(Q, 2, 6\)"):
        _vector(cdp_mab(epsilon=1.0), {"graph": "complete"})
