"""Receivers that survive any message, as the wire carries it (issue 63, item 1).

A Byzantine agent's message reaches its receivers as float32 would carry it: NaN,
infinities, ``1e300`` (an ``inf`` on the wire) and float32's finite extremes. The env
lets the liars' messages through (``admit_forgers``); an honest agent's malformed message
still raises. Every registered talker, on the PettingZoo path and (vector policies) on the
vector path, with each of these values forged into each field of its message: the run
completes, regret stays finite, and every receiver that heard a message it cannot use (a
non-finite value in what it heard, from a peer or from the server) dropped it and counted
it, so ``rejected_messages`` is at least the number of such deliveries. On ``ce066ca``
every one of these runs ended with the env's ``ValueError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_forged_messages import TALKERS  # every registered talker, plugins' included

from fedbandit_env import registry
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.runner.vector_trials import run_vector_trials
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.vector import FederatedMABVecEnv, make_vec
from fedbandit_env.vector.policy import VectorSpec, VectorTeam
from fedbandit_env.vector.wrappers import VecByzantine
from fedbandit_env.wrappers import Byzantine
from fedbandit_env.wrappers.base import ParallelWrapper

F32_MAX = float(np.finfo(np.float32).max)
WIRE = (np.nan, np.inf, -np.inf, 1e300, -1e300, F32_MAX, -F32_MAX)
"""What a liar can put on a float32 wire beyond the finite values of
``test_forged_messages.FORGED``: the last two arrive finite, the rest do not."""


HORIZONS = {"fed1_ucb": 200, "cdp_mab": 400, "ddp_mab": 400, "hdp_mab": 400}
"""Longer runs where the first round's result would arrive after step 30 (at N = 4,
M = 3: fed1_ucb's first phase ends at step 157, Li & Song's first epoch after 200)."""


def _scenario(policy: str, setting: str | None) -> Scenario:
    horizon = HORIZONS.get(policy, 30)
    kw: dict[str, Any] = {} if setting is None else {"setting": setting}
    if setting is not None and setting.endswith("+private"):
        kw["epsilon"] = 1.0
    if registry.spec(policy).bandit == "linear":
        return Scenario(n_agents=4, n_arms=6, horizon=horizon, instance="dubey", dim=3, **kw)
    return Scenario(n_agents=4, n_arms=3, horizon=horizon, **kw)


CASES = [
    pytest.param(p, setting, id=f"{p}-{setting}", marks=[pytest.mark.slow] if p in HORIZONS else [])
    for p in TALKERS
    for setting in registry.spec(p).settings or (None,)
]
"""Every talker in every setting it is registered for (its default where it names none)."""
VECTOR_CASES = [c for c in CASES if isinstance(registry.spec(c.values[0]).make(), VectorTeam)]


def _shipped(policy: str) -> bool:
    """A policy the package ships (a plugin, e.g. an example's, must survive too, but
    counting what it drops is its own business)."""
    entry = registry.spec(policy).entry_point
    return isinstance(entry, str) and entry.startswith(("baselines.", "fedbandit_env."))


def _forger(field: int, value: float) -> Any:
    def forge(message: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
        out = np.array(message, dtype=np.float64)
        out[field] = value
        return out

    return forge


def _unusable(obs: dict[str, Any]) -> int:
    """Deliveries of a non-finite value in one agent's (or, batched, every agent's)
    observation: a heard sender's row (its public prefix where only that arrived), and
    the server's message."""
    messages = np.asarray(obs["messages"], dtype=np.float64)
    full = np.asarray(obs["mask"], dtype=bool)
    bad_row = ~np.isfinite(messages).all(axis=-1)  # per sender
    batched = full.ndim > bad_row.ndim  # mask (B, receivers, senders), rows (B, senders)
    if batched:
        bad_row = bad_row[..., None, :]
    count = int((full & bad_row).sum())
    if "public_mask" in obs:
        width = _PUBLIC[0]
        bad_prefix = ~np.isfinite(messages[..., :width]).all(axis=-1)
        if batched:
            bad_prefix = bad_prefix[..., None, :]
        only = np.asarray(obs["public_mask"], dtype=bool) & ~full
        count += int((only & bad_prefix).sum())
    if "server" in obs:
        sent = np.asarray(obs["server_mask"], dtype=bool)[..., 0]
        count += int((sent & ~np.isfinite(np.asarray(obs["server"])).all(axis=-1)).sum())
    return count


_PUBLIC = [0]  # the public prefix's width in the run at hand


class _Heard(ParallelWrapper):
    """Counts the unusable deliveries in what the agents observe and act on."""

    def reset(self, seed: Any = None, options: Any = None) -> Any:
        obs, infos = super().reset(seed=seed, options=options)
        self.unusable = 0
        return obs, infos

    def step(self, actions: dict[str, Any]) -> Any:
        obs, rewards, terms, truncs, infos = super().step(actions)
        if not all(terms[a] or truncs[a] for a in obs):  # the last: no policy reads it
            self.unusable += sum(_unusable(o) for o in obs.values())
        return obs, rewards, terms, truncs, infos


def _dim(s: Scenario, policy: str) -> tuple[int, int]:
    env = s.make_env(registry.spec(policy).make().requirements(s.n_agents, s.n_arms))
    base = env.unwrapped
    dims = int(base.message_dim), int(getattr(base.protocol, "public_dim", 0))
    env.close()
    return dims


@pytest.mark.parametrize(("policy", "setting"), CASES)
def test_every_receiver_survives_the_wire_in_every_field_pettingzoo(
    policy: str, setting: str | None
) -> None:
    s = _scenario(policy, setting)
    spec = registry.spec(policy)
    needs = spec.make().requirements(s.n_agents, s.n_arms)
    dim, _PUBLIC[0] = _dim(s, policy)
    delivered = 0
    for field in range(dim):
        for value in WIRE:
            env = _Heard(Byzantine(s.make_env(needs), 1, _forger(field, value)))
            c = run_trials(lambda env=env: env, spec.make, 1, progress=False)
            assert np.isfinite(c.regret).all(), (field, value)
            unusable = env.unusable
            delivered += unusable
            if _shipped(policy):
                assert c.meta["rejected_messages"][0] >= unusable, (field, value, unusable)
    assert delivered > 0  # the forgeries did reach receivers


def test_an_honest_agents_non_finite_message_still_raises() -> None:
    s = _scenario("coop_ts", None)
    env = Byzantine(s.make_env(registry.spec("coop_ts").make().requirements(4, 3)), 1, "constant")
    env.reset(seed=0)
    dim = int(env.unwrapped.message_dim)
    actions = {a: {"arm": 0, "message": np.zeros(dim, np.float32)} for a in env.agents}
    actions["agent_3"]["message"] = np.full(dim, np.nan, np.float32)  # the liar: carried
    env.step(actions)
    actions["agent_0"]["message"] = np.full(dim, np.nan, np.float32)  # honest: a bug
    with pytest.raises(ValueError, match="message of agent_0 must be finite"):
        env.step(actions)


def test_the_vector_env_checks_every_row_but_the_liars() -> None:
    from fedbandit_env.problems import conflicting

    venv = FederatedMABVecEnv(conflicting(4, 3, seed=0), horizon=5, message_dim=2, num_envs=2)
    venv.reset(seed=0)
    sent = np.zeros((2, 4, 2))
    sent[1, 3, 0] = np.inf
    with pytest.raises(ValueError, match=r"messages\[\(1, 3, 0\)\] = inf"):
        venv.step(np.zeros((2, 4), int), sent)
    liar = VecByzantine(venv, [3], lambda m, t, rng: m)  # lets agent 3's row through
    liar.reset(seed=0)
    liar.step(np.zeros((2, 4), int), sent)
    sent[0, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r"messages\[\(0, 1, 1\)\] = nan"):
        liar.step(np.zeros((2, 4), int), sent)


def vector_rollout(venv: Any, policy: Any, s: Scenario, needs: Any, trials: int) -> Any:
    """Play ``policy`` (a vector policy, or a probe around one) for ``s.horizon`` steps
    of ``venv``, env ``b`` seeded ``b`` and its policy stream ``default_rng(100 + b)``;
    return the last step's infos."""
    obs, _ = venv.reset(seed=list(range(trials)))
    rngs = [np.random.default_rng(100 + k) for k in range(trials)]
    policy.reset(VectorSpec.from_env(s.make_env(needs), trials), rngs)
    infos: Any = {}
    for _ in range(s.horizon):
        arms, messages = policy.act(obs)
        obs, _, _, _, infos = venv.step(arms, messages)
    return infos


class _Counting:
    """A vector policy's steps, with the unusable deliveries in what it observed."""

    def __init__(self, policy: Any) -> None:
        self.policy, self.unusable = policy, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def act(self, obs: dict[str, Any]) -> Any:
        self.unusable += _unusable(obs)
        return self.policy.act(obs)


@pytest.mark.parametrize(("policy", "setting"), VECTOR_CASES)
def test_every_receiver_survives_the_wire_in_every_field_vector(
    policy: str, setting: str | None
) -> None:
    s = _scenario(policy, setting)
    spec = registry.spec(policy)
    team = spec.make()
    needs = team.requirements(s.n_agents, s.n_arms)
    dim, _PUBLIC[0] = _dim(s, policy)
    delivered = 0
    for field in range(dim):
        for value in WIRE:
            venv = VecByzantine(make_vec(s, 2, needs), 1, _forger(field, value))
            inner = spec.make().policy
            probe = _Counting(inner)
            infos = vector_rollout(venv, probe, s, needs, 2)
            assert np.isfinite(infos["cumulative_regret"]).all(), (field, value)
            rejected = int(np.sum(getattr(inner, "rejected", 0)))
            if _shipped(policy):
                assert rejected >= probe.unusable, (field, value, probe.unusable)
            delivered += probe.unusable
    assert delivered > 0


def test_the_vector_path_records_rejected_messages() -> None:
    s = Scenario(n_agents=4, n_arms=3, horizon=30, byzantine=1, attack="sign_flip")
    c = run_vector_trials(registry.spec("tuned_ts").make().policy, s, None, n_trials=3, batch=2)
    rejected = c.meta["rejected_messages"]
    assert rejected.shape == (3,) and (rejected > 0).all()


def _private_sums_run(value: float | None, trials: int = 8) -> Any:
    """tuned_private_ts in neighbours+private (N = 6, M = 3, T = 300), the last agent
    forging its private sums (its counts kept honest) to ``value``."""
    s = Scenario(n_agents=6, n_arms=3, horizon=300, setting="neighbours+private", epsilon=1.0)
    team = registry.spec("tuned_private_ts").make()
    needs = team.requirements(6, 3)
    inner = team.policy
    venv: Any = make_vec(s, trials, needs)
    if value is not None:

        def forge(message: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
            out = np.array(message, dtype=np.float64)
            out[3:6] = value
            return out

        venv = VecByzantine(venv, 1, forge)
    vector_rollout(venv, inner, s, needs, trials)
    return inner.rejected


def test_private_receivers_keep_every_honest_release() -> None:
    # 8 trials x 300 steps x 6 receivers x 2 neighbours: every tree-noised sum kept
    assert int(_private_sums_run(None).sum()) == 0


@pytest.mark.parametrize("value", [1e6, -1e6, 2000.0])
def test_private_receivers_drop_sums_the_tree_cannot_release(value: float) -> None:
    # Issue 63: the tree-noise receivers took any finite sum (1e6: regret 39.8 -> 110.4,
    # 0 rejected). 2000 lies beyond the clip range [0, n] for n <= 300 by more than
    # tree_sum_slack(300, 1, 1), about 336
    rejected = _private_sums_run(value)
    assert (rejected[:, :5].sum(axis=1) > 0).all()  # every trial's honest agents drop it


def _coop_sums_run(value: float | None, trials: int) -> np.ndarray:
    """private_coop_ts in neighbours+private (N = 6, M = 3, T = 300) on the PettingZoo
    path, the last agent forging its sum of arm 0 to ``value`` (``None``: honest); the
    rejected rows per trial."""
    s = Scenario(n_agents=6, n_arms=3, horizon=300, setting="neighbours+private", epsilon=1.0)
    spec = registry.spec("private_coop_ts")
    needs = spec.make().requirements(6, 3)

    def forge(message: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
        out = np.array(message, dtype=np.float64)
        out[3] = value
        return out

    make = (lambda: Byzantine(s.make_env(needs), 1, forge)) if value is not None else None
    c = run_trials(make or (lambda: s.make_env(needs)), spec.make, trials, progress=False)
    return np.asarray(c.meta["rejected_messages"])


def test_private_coop_ts_keeps_every_honest_release() -> None:
    assert int(_coop_sums_run(None, 4).sum()) == 0


@pytest.mark.parametrize("value", [1e6, -1e6, 2000.0])
def test_private_coop_ts_drops_sums_the_tree_cannot_release(value: float) -> None:
    # Issue 63: private_coop_ts's receivers took any finite sum (one liar's 1e6 at N = 10,
    # M = 5, T = 1000: honest regret 114.5 -> 431.9, 0 rejected; now 118.1)
    assert (_coop_sums_run(value, 2) > 0).all()
