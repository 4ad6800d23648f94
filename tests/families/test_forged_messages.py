"""Receivers that survive any message (issue 49, item 3).

Every receiver validates what it hears against what an honest sender can send (counts
non-negative integers no larger than the step, stamps no newer than the clock, indices
in range, finite values, synchronised sums that a Gram matrix can be); a message that
fails is dropped and counted (``Policy.rejected``, ``Team.rejected_messages()``, and
``meta["rejected_messages"]`` per trial of the PettingZoo path), never a crash or a hang.

Checked for every registered policy that talks, under each attack of the Byzantine
wrapper and under forged messages of each field of the env's message, and the honest
agents' privacy schedule (when the fixed-schedule private variants release) is the same
beside a forger as without one. On ``d3a7325`` coop_ts died of ``ZeroDivisionError``
under ``sign_flip``, hung (a Beta draw with negative parameters) on a forged negative
count, ``private_dec_fedlin_ucb`` raised ``IndexError`` on an estimator index of gamma,
and every centralized FedUCB variant raised ``FloatingPointError`` on a forged upload.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, ClassVar

import numpy as np
import pytest

from baselines.thompson.kernels import BETA, Posterior, merge_held, merge_relayed
from fedbandit_env import registry
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.rollout import run_trials
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.wrappers import Byzantine
from fedbandit_env.wrappers.base import ParallelWrapper
from fedbandit_env.wrappers.byzantine import BEHAVIOURS


def _scenario(policy: str, horizon: int = 30, **kw: Any) -> Scenario:
    if registry.spec(policy).bandit == "linear":
        return Scenario(n_agents=4, n_arms=6, horizon=horizon, instance="dubey", dim=3, **kw)
    return Scenario(n_agents=4, n_arms=3, horizon=horizon, **kw)


def _talkers() -> list[str]:
    """Every registered policy that sends messages (plugins' included)."""
    out = []
    for pid in registry.policy_ids():
        spec = registry.spec(pid)
        if spec.privileged:
            continue
        if spec.make().requirements(4, 6 if spec.bandit == "linear" else 3).message_dim > 0:
            out.append(pid)
    return out


TALKERS = _talkers()


def test_the_catalogue_covers_every_family_that_talks() -> None:
    families = {registry.spec(p).family for p in TALKERS}
    assert {"gossip", "consensus", "elimination", "thompson", "linear"} <= families


@pytest.mark.parametrize("attack", BEHAVIOURS)
@pytest.mark.parametrize("policy", TALKERS)
def test_every_receiver_survives_every_attack(policy: str, attack: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a fast path that falls back
        c = evaluate(policy, _scenario(policy, 60, byzantine=1, attack=attack), trials=2)
    assert np.isfinite(c.regret).all()


# values no honest sender writes into any field: negative, fractional, beyond any count
# or stamp the clock allows, and huge
FORGED = (-1.0, 0.6, 2.5, 1e9, -1e9)


def _forging_run(policy: str, field: int, value: float, horizon: int = 30) -> Any:
    s = _scenario(policy, horizon)
    spec = registry.spec(policy)
    needs = spec.make().requirements(s.n_agents, s.n_arms)

    def forge(message: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
        out = np.array(message, dtype=np.float64)
        out[field] = value
        return out

    return run_trials(
        lambda: Byzantine(s.make_env(needs), 1, forge), spec.make, 1, progress=False
    )  # fmt: skip


def _fields(policy: str) -> int:
    s = _scenario(policy)
    env = s.make_env(registry.spec(policy).make().requirements(s.n_agents, s.n_arms))
    dim = int(env.unwrapped.message_dim)
    env.close()
    return dim


@pytest.mark.parametrize("policy", TALKERS)
def test_every_receiver_survives_a_forged_value_in_every_field(policy: str) -> None:
    for field in range(_fields(policy)):
        for value in FORGED:
            c = _forging_run(policy, field, value)
            assert np.isfinite(c.regret).all(), (field, value)


VALIDATING = ["coop_ts", "coop_ts_relay", "private_coop_ts", "dec_fedlin_ucb",
              "private_dec_fedlin_ucb", "fedlin_ucb", "private_fedlin_ucb"]  # fmt: skip


@pytest.mark.parametrize("policy", VALIDATING)
def test_honest_messages_are_never_dropped(policy: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setting = (
            {"setting": "gossip+private", "epsilon": 1.0} if policy == "private_coop_ts" else {}
        )
        c = evaluate(policy, _scenario(policy, 300, **setting), trials=2, interactive=True)
    assert c.meta["rejected_messages"].tolist() == [0, 0]


def test_a_negative_count_is_dropped_not_drawn_from() -> None:
    # the d3a7325 crash: sign_flip sends negative counts, which reached the Beta draw
    c = evaluate("coop_ts", _scenario("coop_ts", 60, byzantine=1, attack="sign_flip"), trials=2)
    assert (c.meta["rejected_messages"] > 0).all()


def test_a_forged_stamp_cannot_pin_a_relayed_row() -> None:
    post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
    counts, sums, stamps = np.zeros((3, 1)), np.zeros((3, 1)), np.zeros(3)
    forged = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1e9], [0.0, 0.0, 0.0]])
    assert merge_relayed(counts, sums, stamps, forged, 0, 10, post) == 1
    honest = np.array([[0.0, 0.0, 0.0], [4.0, 3.0, 5.0], [0.0, 0.0, 0.0]])
    assert merge_relayed(counts, sums, stamps, honest, 0, 10, post) == 0
    assert stamps.tolist() == [0.0, 5.0, 0.0] and counts[1, 0] == 4.0  # the honest row won
    # end to end: a relay that stamps every row with 1e9 is dropped at every receiver
    c = _forging_run("coop_ts_relay", 2 * 3, 1e9, horizon=40)  # row 0's stamp
    assert c.meta["rejected_messages"][0] > 0


@pytest.mark.parametrize(("counts", "sums"), [([3.0], [4.0]), ([2.0], [-0.5]), ([1.5], [1.0]),
                                              ([np.nan], [0.0]), ([9.0], [1.0])])  # fmt: skip
def test_a_held_row_no_honest_agent_can_send_is_dropped(
    counts: list[float], sums: list[float]
) -> None:
    post = Posterior(BETA, 0.0, 1.0, 1.0, 0.0)
    c, s, st = np.zeros((2, 1)), np.zeros((2, 1)), np.zeros(2)
    assert merge_held(c, s, st, 1, np.array(counts + sums), 8, post) == 1
    assert c.tolist() == [[0.0], [0.0]] and st.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("index", [2.0, -1.0, 0.6, 7.0])
def test_an_estimator_index_out_of_range_is_dropped(index: float) -> None:
    # private_dec_fedlin_ucb(gamma=2): index 2 raised IndexError, -1 and 0.6 were filed
    # under another estimator
    c = _forging_run("private_dec_fedlin_ucb", 2, index, horizon=40)
    assert np.isfinite(c.regret).all() and c.meta["rejected_messages"][0] > 0


class _Sent(ParallelWrapper):
    """What every agent's policy wrote (outside the Byzantine layer: before its lies)."""

    log: ClassVar[list[dict[str, np.ndarray]]] = []

    def step(self, actions: dict[str, Any]) -> Any:
        _Sent.log.append(
            {a: np.asarray(x["message"], dtype=np.float64) for a, x in actions.items()}
        )
        return super().step(actions)


@pytest.mark.parametrize(
    ("policy", "flag"), [("private_fedlin_ucb", 0), ("private_dec_fedlin_ucb", 1)]
)
def test_the_honest_agents_privacy_schedule_is_the_same_beside_a_forger(
    policy: str, flag: int
) -> None:
    s = _scenario(policy, 200)
    spec = registry.spec(policy)
    needs = spec.make().requirements(s.n_agents, s.n_arms)
    honest = [f"agent_{i}" for i in range(s.n_agents - 1)]

    def schedule(liar: Any) -> np.ndarray:
        _Sent.log.clear()
        build = functools.partial(Byzantine, s.make_env(needs), 1, liar) if liar else None
        run_trials(
            lambda: _Sent(build() if build else s.make_env(needs)), spec.make, 1, progress=False
        )
        return np.array([[step[a][flag] for a in honest] for step in _Sent.log])

    def forge(message: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
        out = np.asarray(message, dtype=np.float64) * -50.0  # a statistic no Gram matrix has
        out[:3] = 1.0  # and a request (or a round's flag) at every step
        return out

    clean = schedule(None)
    assert clean.sum() > 0  # the honest agents do release
    np.testing.assert_array_equal(schedule(forge), clean)
