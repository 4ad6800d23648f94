"""Privacy, third round (issue 27): no layer, view or colluder may weaken a mechanism.

Black-box audits through the public API, each from one observer's seat, each paired
with the weakened variant it must catch at the same sample size:

1. a user's delegating ``ParallelEnv`` between ``PrivateRewards`` and ``MessageLoss``
   (another agent sees agent 0's private mean and which of its messages were lost);
   weakened: the two layers on one stream, as the depth count gave them before;
2. ``PrivateRewards`` over ``LocalStatistics`` (refused), ``state()`` and ``render()``
   of a private stack; weakened: raw ``means`` declared public, the env's raw state;
3. a colluding member that asks for a round every step, next to the corrected linear
   variant (its view: every server sum, less its own uploads); weakened: the pending
   node uploaded between rounds;
4. an observer who knows the run's published seed and regenerates the noise;
   ``noise="secure"`` is the mechanism that survives it;
5. the binary tree on a view built to catch reused noise.

``pytest tests/privacy/test_privacy_observers.py -s | grep AUDIT`` prints every bound.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from pettingzoo import ParallelEnv

from baselines.linear import FedLinUCB, linear_env
from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.network.graph import Network
from fedbandit_env.policies import AgentSpec, FixedArm, IndependentTeam, Policy
from fedbandit_env.privacy import TreeMechanism, audit, mechanisms
from fedbandit_env.privacy.audit import AuditResult
from fedbandit_env.privacy.audit_log import report
from fedbandit_env.problems import MABProblem
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
from fedbandit_env.seeding import spawn, split_trial_seed, wrapper_generator
from fedbandit_env.wrappers import LocalStatistics, MessageLoss, PrivateRewards
from fedbandit_env.wrappers.audit import Episode, ReplaceReward, audit_env
from fedbandit_env.wrappers.base import ParallelWrapper


def _base(value: float, message_dim: int = 0) -> Any:
    """Two agents, one arm of mean 0, T = 2; agent 0's reward at step 1 is the secret."""
    base = FederatedMABEnv(
        MABProblem(np.zeros((2, 1))), Network.complete(2), horizon=2, message_dim=message_dim
    )
    return ReplaceReward(base, "agent_0", 1, value)


# ------------------------------------------------------------ 1. a delegating layer
class Delegate(ParallelEnv):  # type: ignore[misc]
    """A user's plain delegating env (not a PettingZoo wrapper) that shows what it holds
    as ``env``, as most delegating code does."""

    def __init__(self, env: Any) -> None:
        self._inner = env
        self.possible_agents = env.possible_agents
        self.metadata = env.metadata

    @property
    def env(self) -> Any:
        return self._inner

    @property
    def agents(self) -> list[str]:
        return list(self._inner.agents)

    def observation_space(self, agent: str) -> Any:
        return self._inner.observation_space(agent)

    def action_space(self, agent: str) -> Any:
        return self._inner.action_space(agent)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        return self._inner.reset(seed=seed, options=options)

    def step(self, actions: dict[str, Any]) -> Any:
        return self._inner.step(actions)


class HiddenDelegate(Delegate):
    """The same, showing nothing of what it holds: nothing can count through it."""

    @property
    def env(self) -> Any:
        raise AttributeError("this layer does not show the env it holds")


class SameStreamPrivateRewards(PrivateRewards):
    """The hole: the noise on the stream of the layer at depth 0 (MessageLoss's), as
    counting only PettingZoo wrappers gave it under a delegating env."""

    def stream(self, seed: int) -> np.random.Generator:
        return wrapper_generator(seed, 0)


class SendPrivateMean(Policy):
    """Pulls arm 0 and sends its private mean: post-processing of its private view."""

    def reset(self, spec: AgentSpec, seed: Any = None) -> None:
        self.dim = spec.message_dim

    def act(self, observation: Any) -> Any:
        message = np.zeros(self.dim, dtype=np.float32)
        message[0] = float(observation["private_means"][0])
        return {"arm": 0, "message": message}


def _delegate_audit(wrapper: type[PrivateRewards], runs: int) -> AuditResult:
    """The channel's view (which messages were lost, as a network operator or the agents'
    masks see it) with agent 0's messages: its private mean after step 1 (sent at step
    2), and whether agent 1's message of step 1 reached agent 0 (``MessageLoss(p =
    0.5)``, the layer at depth 0, under the user's delegating env). The first loss draw
    and agent 0's first noise draw are the same uniform when the streams coincide."""

    def make_env(value: float) -> Any:
        loss = MessageLoss(_talking(), 0.5)
        return wrapper(Delegate(ReplaceReward(loss, "agent_0", 1, value)), epsilon=1.0)

    def observe(ep: Episode) -> list[float]:
        mean = float(ep.actions[1]["agent_0"]["message"][0])
        lost = 1.0 - float(ep.observations[1]["agent_0"]["mask"][1])
        return [mean, lost]

    team = IndependentTeam(SendPrivateMean)
    return audit_env(make_env, 0.0, 1.0, team, observe, runs=runs, seed=11)


def _talking() -> FederatedMABEnv:
    """Two agents, one arm of mean 0, T = 2, one-number messages."""
    return FederatedMABEnv(
        MABProblem(np.zeros((2, 1))), Network.complete(2), horizon=2, message_dim=1
    )


def test_a_delegating_layer_keeps_the_two_streams_apart() -> None:
    loss = MessageLoss(_talking(), 0.5)
    private = PrivateRewards(Delegate(loss), epsilon=1.0)
    assert (loss.depth, private.depth) == (0, 2)  # the delegate counts as a layer
    private.reset(seed=3)
    noise, losses = private._rng.random(), loss._rng.random()
    assert noise == wrapper_generator(3, 2).random() != losses == wrapper_generator(3, 0).random()


def test_a_layer_that_hides_the_env_it_holds_cannot_merge_two_streams() -> None:
    private = PrivateRewards(HiddenDelegate(MessageLoss(_talking(), 0.5)), epsilon=1.0)
    assert private.depth == 0  # nothing to count through: the reset refuses
    with pytest.raises(ValueError, match="would draw from one random stream"):
        private.reset(seed=0)
    private.reset()  # unseeded: no stream claimed, nothing to refuse


@pytest.mark.parametrize(
    ("wrapper", "caught"),
    [(PrivateRewards, False), (SameStreamPrivateRewards, True)],
    ids=["own_stream", "shared_stream"],
)
def test_delegating_layer_audit(wrapper: type[PrivateRewards], caught: bool) -> None:
    r = _delegate_audit(wrapper, runs=2000)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r


# ------------------------------------------------------------ 2. views of a private stack
class RawMeansPrivateRewards(PrivateRewards):
    """The hole: LocalStatistics' raw ``means`` let through (declared public)."""

    def __init__(self, env: Any, epsilon: float) -> None:
        super().__init__(env, epsilon, public_keys=("means",))


class RawStatePrivateRewards(PrivateRewards):
    """The hole: ``state()`` forwarded to the env below (raw rewards)."""

    def state(self) -> np.ndarray:
        return self.env.state()


class RawRenderPrivateRewards(PrivateRewards):
    """The hole: ``render()`` forwarded to the env below (its raw rewards printed)."""

    def render(self) -> Any:
        return self.env.render()


class Views(ParallelWrapper):
    """Records the stack's ``state()`` and ``render()`` in agent 0's infos each step."""

    def step(self, actions: dict[str, Any]) -> Any:
        obs, rew, term, trunc, infos = self.env.step(actions)
        infos["agent_0"] = {**infos["agent_0"], "state": self.state(), "render": self.render()}
        return obs, rew, term, trunc, infos


def test_private_rewards_refuses_raw_statistics_below_it() -> None:
    with pytest.raises(ValueError, match=r"\['means'\] of the env below it"):
        PrivateRewards(LocalStatistics(_base(0.0)), epsilon=1.0)
    env = LocalStatistics(PrivateRewards(_base(0.0), epsilon=1.0))  # outside: allowed
    assert "means" in env.observation_space("agent_0").spaces
    with pytest.raises(ValueError, match="render_mode='human'"):
        PrivateRewards(FederatedMABEnv(MABProblem(np.zeros((2, 1))), render_mode="human"), 1.0)


def _float_after(text: str, agent: str) -> float:
    return float(re.search(rf"{agent}: arm \d+ reward ([-+0-9.e]+)", text).group(1))  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("wrapper", "view", "caught"),
    [
        (PrivateRewards, "means", False),  # LocalStatistics outside: private means
        (RawMeansPrivateRewards, "means", True),
        (PrivateRewards, "state", False),
        (RawStatePrivateRewards, "state", True),
        (PrivateRewards, "render", False),
        (RawRenderPrivateRewards, "render", True),
    ],
    ids=["means_outside", "raw_means", "state", "raw_state", "render", "raw_render"],
)
def test_views_of_a_private_stack_audit(wrapper: type, view: str, caught: bool) -> None:
    """Agent 0's one reward (T = 1, a Bernoulli arm of mean 0 or 1: the env itself draws
    the secret) is 0 or 1; the observer reads agent 0's ``means`` (its own view), or the
    stack's ``state()`` / ``render()`` (a centralized critic, a log), after the step."""

    def make_env(value: float) -> Any:
        problem = MABProblem([[value], [0.0]])
        base = FederatedMABEnv(problem, horizon=1, render_mode="ansi")
        if wrapper is RawMeansPrivateRewards:
            return Views(wrapper(LocalStatistics(base), 1.0))
        if view == "means":
            return Views(LocalStatistics(wrapper(base, 1.0)))
        return Views(wrapper(base, 1.0))

    def observe(ep: Episode) -> list[float]:
        info = ep.infos[1]["agent_0"]
        if view == "means":
            return [float(ep.observations[1]["agent_0"]["means"][0])]
        if view == "state":
            return [float(info["state"][1])]  # agent 0's reward entry (one arm: index 1)
        return [_float_after(info["render"], "agent_0")]

    r = audit_env(make_env, 0.0, 1.0, IndependentTeam(FixedArm), observe, runs=1500, seed=12)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r


def test_state_and_render_show_the_private_rewards() -> None:
    env = PrivateRewards(
        FederatedMABEnv(MABProblem([[0.5], [0.5]]), horizon=3, render_mode="ansi"), 1.0
    )
    env.reset(seed=0)
    _, rewards, *_ = env.step({"agent_0": 0, "agent_1": 0})
    state = env.state()
    assert env.state_space.contains(state)
    assert state[[1, 3]].tolist() == pytest.approx([rewards["agent_0"], rewards["agent_1"]])
    assert _float_after(env.render(), "agent_1") == pytest.approx(rewards["agent_1"], abs=1e-3)
    raw = env.unwrapped.state()[[1, 3]]  # the simulator itself: privileged
    assert set(raw.tolist()) <= {0.0, 1.0} and not np.allclose(raw, state[[1, 3]])


# ------------------------------------------------------------ 3. a colluding member
class Colluder(FedLinUCB):
    """A member that asks for a round at every step."""

    def act(self, observation: Any) -> Any:
        out = super().act(observation)
        out["message"][0] = 1.0
        return out


class PendingUploader(FedLinUCB):
    """The hole: between its rounds it uploads the pending node (noise and all), so two
    uploads differ by the data alone."""

    def upload(self) -> Any:
        return self.release()


CORRECTED = {"sync": "fixed", "epsilon": 1.0, "calibration": "gdp"}


def _colluding_team(honest: type = FedLinUCB, n: int = 3) -> tuple[list[Any], Any]:
    members = [honest(**CORRECTED)] + [Colluder(**CORRECTED) for _ in range(n - 1)]
    return members, IndependentTeam(members)


@pytest.mark.parametrize("horizon", [4, 5, 7, 40, 300])
def test_a_colluder_neither_crashes_nor_stretches_the_corrected_schedule(horizon: int) -> None:
    problem = dubey_synthetic(3, dim=3, seed=0)
    members, team = _colluding_team()
    env = linear_env(problem, horizon)
    honest_members, honest_team = [FedLinUCB(**CORRECTED) for _ in range(3)], None
    honest_team = IndependentTeam(honest_members)
    for t in (team, honest_team):
        obs, _ = env.reset(seed=1)
        t.reset(env, seed=1)
        while env.agents:
            actions = t.act(obs)
            assert np.isfinite(actions["agent_0"]["message"]).all()
            obs, *_ = env.step(actions)
    agent0, alone = members[0], honest_members[0]
    assert agent0.round == alone.round <= agent0.rounds <= 2**agent0.levels - 1
    assert agent0.ignored_rounds == horizon - 1 - agent0.round  # every other request


def test_the_unguarded_schedule_fails_cleanly_at_the_trees_capacity() -> None:
    """Without the guard, the kernels' capacity check stops the run (an IndexError, not
    the heap corruption the issue saw at T = 4)."""

    class Unguarded(FedLinUCB):
        def reset(self, spec: AgentSpec, seed: Any = None) -> None:
            super().reset(spec, seed)
            self.guarded = False

    problem = dubey_synthetic(2, dim=2, seed=0)
    env = linear_env(problem, 40)
    team = IndependentTeam([Unguarded(**CORRECTED), Colluder(**CORRECTED)])
    obs, _ = env.reset(seed=0)
    team.reset(env, seed=0)
    with pytest.raises(IndexError, match="capacity"):
        while env.agents:
            obs, *_ = env.step(team.act(obs))


# one vector, zero mean, no noise: the only difference between two runs is the secret
E0_PROBLEM = LinearProblem([[1.0, 0.0]], [0.0, 0.0], set_size=1, n_agents=2, sigma=0.0)


def _colluder_audit(honest: type, runs: int) -> AuditResult:
    """Agent 0's reward at step 1 is 0 or 1 (``y`` enters its Gram entry ``(0, d)``).
    The colluder asks for a round every step; its view is agent 0's uploads at steps 1
    and 2, each the server's sum less its own upload, and their difference."""
    horizon, d = 10, 2  # batch 4: agent 0's first own round is at step 4

    def make_env(value: float) -> Any:
        return ReplaceReward(linear_env(E0_PROBLEM, horizon), "agent_0", 1, value)

    def observe(ep: Episode) -> list[float]:
        ups = [
            ep.observations[s]["agent_1"]["server"][1:]
            - ep.actions[s - 1]["agent_1"]["message"][1:]
            for s in (1, 2)
        ]
        return [float(ups[1][d] - ups[0][d])]

    def team() -> Any:
        return IndependentTeam([honest(**CORRECTED), Colluder(**CORRECTED)])

    return audit_env(make_env, 0.0, 1.0, team, observe, runs=runs, seed=13)


@pytest.mark.parametrize(
    ("honest", "caught"),
    [(FedLinUCB, False), (PendingUploader, True)],
    ids=["corrected", "pending_uploaded"],
)
def test_colluder_audit(honest: type, caught: bool) -> None:
    r = _colluder_audit(honest, runs=300)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r


# ------------------------------------------------------------ 4. the published seed
def _seed_replay_audit(noise: str, runs: int) -> AuditResult:
    """The observer knows each run's seed (``config.json`` publishes the sweep's, and
    trial seeds follow from it): it replays the stack on the same seed with a reward of
    0 and subtracts agent 0's private sum after step 1 from the one it saw."""

    def private_sum(value: float, env_seed: int) -> float:
        env = PrivateRewards(_base(value), epsilon=1.0, noise=noise)  # type: ignore[arg-type]
        env.reset(seed=env_seed)
        obs, *_ = env.step({"agent_0": 0, "agent_1": 0})
        return float(obs["agent_0"]["private_means"][0])

    def sample(value: float, seed: np.random.SeedSequence, n: int) -> np.ndarray:
        out = np.empty(n)
        for j, child in enumerate(spawn(seed, n)):
            env_seed, _ = split_trial_seed(child)
            out[j] = private_sum(value, env_seed) - private_sum(0.0, env_seed)
        return np.clip(out, -3.0, 4.0)

    return audit(sample, 0.0, 1.0, runs=runs, seed=14)


@pytest.mark.parametrize(("noise", "caught"), [("secure", False), ("seeded", True)])
@pytest.mark.parametrize("runs", [600, pytest.param(3000, marks=pytest.mark.slow)])
def test_seed_replay_audit(
    noise: str, caught: bool, runs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # secure noise's OS entropy, made reproducible by a source unrelated to any run seed
    source = np.random.SeedSequence(2027)
    monkeypatch.setattr(
        mechanisms, "fresh_generator", lambda: np.random.default_rng(source.spawn(1)[0])
    )
    r = _seed_replay_audit(noise, runs=runs)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r


def test_secure_noise_is_fresh_at_every_reset_whatever_the_seed() -> None:
    env = PrivateRewards(_base(0.5), epsilon=1.0, noise="secure")
    draws = []
    for _ in range(2):
        env.reset(seed=0)
        obs, *_ = env.step({"agent_0": 0, "agent_1": 0})
        draws.append(float(obs["agent_0"]["private_means"][0]))
    assert draws[0] != draws[1]
    with pytest.raises(ValueError, match="noise must be 'seeded' or 'secure'"):
        PrivateRewards(_base(0.5), epsilon=1.0, noise="os")  # type: ignore[arg-type]


# ------------------------------------------------------------ 5. reused tree noise
class ReusedNoiseTree(TreeMechanism):
    """The hole: one noise draw per (stream, level), reused by every node of the level."""

    def step(self, values: Any, present: Any = None) -> Any:
        level = (self.t + 1 & -(self.t + 1)).bit_length() - 1  # the node completed now
        self.rng = np.random.default_rng([self.seed, level])
        return super().step(values, present)


def _tree_reuse_sampler(tree: type[TreeMechanism]) -> Any:
    """Streams that differ in item 1 (the rest 0); the view ``S(1) - (S(3) - S(2))``:
    items 1 and 3 under two level-0 nodes, whose noises cancel only if reused."""

    def sample(first: float, seed: np.random.SeedSequence, runs: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        out = np.empty(runs)
        for j in range(runs):
            mech = tree(1, horizon=4, epsilon=1.0, rng=rng)
            mech.seed = int(rng.integers(2**31))  # type: ignore[attr-defined]
            s1, s2, s3 = (float(mech.step(np.array([v]))[0]) for v in (first, 0.0, 0.0))
            out[j] = s1 - (s3 - s2)
        return out

    return sample


@pytest.mark.parametrize(
    ("tree", "caught"), [(TreeMechanism, False), (ReusedNoiseTree, True)], ids=["fresh", "reused"]
)
@pytest.mark.parametrize("runs", [4000, pytest.param(20_000, marks=pytest.mark.slow)])
def test_tree_audit_catches_reused_noise(
    tree: type[TreeMechanism], caught: bool, runs: int
) -> None:
    r = audit(_tree_reuse_sampler(tree), 0.0, 1.0, runs=runs, seed=15)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r


# ------------------------------------------------------------ accounting: delta
def test_delta_is_recorded_beside_epsilon(tmp_path: Any) -> None:
    """The corrected linear variant's Gaussian delta reaches the results table and
    config.json; Fed_UCB's tree is pure (delta 0); a table without the column reads as
    unknown (nan)."""
    import csv
    import json

    from fedbandit_env.cli import main
    from fedbandit_env.runner.results import read_csv

    out = tmp_path / "bench"
    argv = ["bench", "--instance", "dubey", "--dim", "2", "--arms", "4", "--agents", "2"]
    argv += ["--policies", "private_fedlin_ucb,lin_ucb", "--horizon", "30", "--trials", "2"]
    assert main([*argv, "--no-plot", "--no-progress", "--out", str(out)]) == 0
    with (out / "regret.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    deltas = {r["policy"]: float(r["privacy_delta"]) for r in rows}
    assert deltas["private_fedlin_ucb"] == 0.1 and deltas["lin_ucb"] == 0.0
    config = json.loads((out / "config.json").read_text())
    assert "privacy_delta" in json.dumps(config)
    old = tmp_path / "old.csv"  # a table written before the column existed
    old.write_text("policy,seed,agent,t,regret\np,0,0,1,0.5\n")
    assert np.isnan(read_csv(old)[0].privacy_delta)


# ------------------------------------------------------------- TeamPosterior's neighbour
class HalfNoisePrivateRewards(PrivateRewards):
    """The tree calibrated for half the clip width: half the noise, twice the epsilon."""

    def _new_tree(self, rng: np.random.Generator, *_: Any) -> TreeMechanism:
        return super()._new_tree(rng, sensitivity=0.5 * (self.clip[1] - self.clip[0]))


@pytest.mark.parametrize(
    ("private", "caught"),
    [(PrivateRewards, False), (HalfNoisePrivateRewards, True)],
    ids=["correct", "half_noise"],
)
@pytest.mark.parametrize("runs", [1500, pytest.param(6000, marks=pytest.mark.slow)])
def test_team_posterior_neighbour_audit(private: type, caught: bool, runs: int) -> None:
    """What a neighbour of agent 0 observes through ``TeamPosterior`` (the learned
    references' stack in ``gossip+private``): agent 0's reward at step 1 is 0 or 1, all
    others 0, T = 3. Agent 1 reads its posterior features; twice the team mean less its
    own local mean is agent 0's local posterior mean ``(S + a mu0) / (n + a)``, from
    which it recovers agent 0's private prefix sums S(1) and S(2) (its rows arrive one
    step late), clipped and added: the likelihood-ratio statistic of a shift. The claim is
    epsilon = 1 over the stream; half the noise is caught."""
    from fedbandit_env.wrappers import TeamPosterior
    from fedbandit_env.wrappers.team_posterior import POSTERIOR_FEATURES

    mean, own = POSTERIOR_FEATURES.index("mean"), POSTERIOR_FEATURES.index("own_mean")

    def make_env(value: float) -> Any:
        base = FederatedMABEnv(
            MABProblem(np.zeros((2, 1))), Network.complete(2), horizon=3, message_dim=2
        )
        return TeamPosterior(private(ReplaceReward(base, "agent_0", 1, value), 1.0))

    def observe(ep: Episode) -> list[float]:
        held = [o["agent_1"]["posterior"][0] for o in ep.observations[2:]]
        local = [2.0 * float(f[mean]) - float(f[own]) for f in held]
        sums = [x * (n + 1) - 0.5 for n, x in enumerate(local, start=1)]  # a = 1, mu0 = 0.5
        return [float(np.clip(sums, 0.0, 1.0).sum())]

    r = audit_env(make_env, 0.0, 1.0, IndependentTeam(FixedArm), observe, runs=runs, seed=13)
    report(r, 1.0)
    assert (r.epsilon_lb > 1.0) is caught, r
