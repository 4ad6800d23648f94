"""DDUCB and coop-UCB2: their fast paths replay their PettingZoo paths, and their
mathematics (Chebyshev mixing, stage lengths, the graph constants) does what it says."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from baselines.consensus.kernels import (
    accelerated_stage,
    chebyshev_coefficients,
    chebyshev_step,
    mix_row,
    plain_stage,
)
from fedbandit_env.network import Network
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_replay

REPLAYS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("dducb", {"graph": "ring"}, {}),
    ("dducb", {"graph": "ring", "protocol": "random_edge_gossip"}, {}),  # Broadcast named
    ("dducb", {"graph": "ring", "instance": "dducb", "noise": "gaussian"}, {"stage": 3}),
    ("dducb", {"graph": "star", "noise": "gaussian", "sigma": 0.5}, {"eta": 1.0}),
    ("dducb", {"graph": "ring", "noise": "gaussian"}, {"stage": 4, "code_alias": True}),
    ("dducb_accelerated", {"graph": "ring"}, {}),
    ("dducb_accelerated", {"graph": "ring", "noise": "gaussian"}, {"stage": 4, "code_alias": True}),
    ("dducb", {"graph": "ring"}, {"stage": "plain"}),
    ("dducb_plain", {"graph": "path"}, {}),
    ("dducb_plain", {"graph": "ring"}, {"stage": 5, "code_alias": True}),
    ("dducb_plain", {"graph": "ring", "noise": "gaussian"}, {"stage": 4}),
    ("coop_ucb2", {"graph": "ring"}, {}),
    ("coop_ucb2", {"graph": "path", "noise": "gaussian", "sigma": 0.7}, {"gamma": 2.0}),
    ("coop_ucb2", {"graph": "complete"}, {}),
    ("coop_ucb2", {"graph": "ring"}, {"graph_constants": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]}),
]


@pytest.mark.parametrize(
    ("policy", "setting", "params"),
    REPLAYS,
    ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(REPLAYS)],
)
def test_fast_path_replays_the_pettingzoo_path(
    policy: str, setting: dict[str, Any], params: dict[str, Any]
) -> None:
    scenario = Scenario(
        n_agents=6, n_arms=3, horizon=90, seed=3, **{"protocol": "broadcast", **setting}
    )
    check_replay(policy, scenario, params, seed=7, trials=2)


def _rounds(net: Network, y0: np.ndarray, rounds: int, lam: float) -> np.ndarray:
    """Every agent runs ``rounds`` Chebyshev rounds through the shared kernels."""
    a, b = chebyshev_coefficients(lam, rounds)
    y, prev = y0.copy(), np.zeros_like(y0)
    weight = 1.0 / (net.degrees.max() + 1.0)
    for r in range(rounds):
        wire = y.astype(np.float32)
        new = np.zeros_like(y)
        for i in range(net.n_agents):
            mixed = mix_row(y[i], wire, net.neighbors[i], int(net.degrees[i]), weight,
                            np.zeros(y.shape[1]))  # fmt: skip
            chebyshev_step(mixed, prev[i], a[r], b[r], new[i])
        prev, y = y, new
    return y


def test_chebyshev_rounds_are_the_normalised_chebyshev_polynomial_of_p() -> None:
    """After ``C`` rounds every agent holds ``T_C(P / lam) y_0 / T_C(1 / lam)`` (up to the
    float32 wire), the mean is kept, and the consensus error is far below ``C`` plain
    rounds' (the acceleration the stage length counts on)."""
    net = Network.ring(30)
    lam = net.consensus_lambda
    rng = np.random.default_rng(0)
    y0 = rng.normal(size=(30, 4)) * 10
    c = accelerated_stage(30, lam, 1 / 22)
    got = _rounds(net, y0, c, lam)
    values, vectors = np.linalg.eigh(net.consensus_matrix)
    coef = np.zeros(c + 1)
    coef[c] = 1.0  # T_C
    cheb = np.polynomial.chebyshev.chebval(values / lam, coef)
    expected = vectors @ np.diag(cheb / np.polynomial.chebyshev.chebval(1 / lam, coef))
    expected = expected @ vectors.T @ y0
    assert np.allclose(got, expected, atol=1e-4)
    assert np.allclose(got.mean(axis=0), y0.mean(axis=0), atol=1e-4)
    plain = np.linalg.matrix_power(net.consensus_matrix, c) @ y0
    err = np.abs(got - y0.mean(axis=0)).max()
    assert err < 0.1 * np.abs(plain - y0.mean(axis=0)).max()
    # the stage's promise: every agent within eps / (2N)-ish of the average, relative
    assert err <= (1 / 22) * np.abs(y0 - y0.mean(axis=0)).max()


def test_stage_lengths_on_ddducb_cycle_of_100() -> None:
    """The authors' code prints C = 164 for its accelerated run on the cycle of 100
    (eps = 1/22); the plain form needs ``ln(N / eps) / ln(1 / lam)`` rounds."""
    lam = Network.ring(100).consensus_lambda
    assert lam == pytest.approx(1 / 3 + 2 / 3 * math.cos(2 * math.pi / 100), abs=1e-12)
    assert accelerated_stage(100, lam, 1 / 22) == 164
    assert plain_stage(100, lam, 1 / 22) == math.ceil(math.log(2200) / -math.log(lam))
    assert accelerated_stage(3, Network.complete(3).consensus_lambda, 1 / 22) == 1


def test_landgren_constant_is_the_definition() -> None:
    """On a vertex-transitive graph every agent's ``eps_c`` is ``sum_p lam_p^2 / (1 -
    lam_p^2)`` (the eigenvectors' squares average ``1 / N`` per eigenspace); on a star
    the centre's is smallest; a disconnected graph's is infinite."""
    ring = Network.ring(12)
    values = np.sort(np.linalg.eigvalsh(ring.consensus_matrix))[::-1][1:]
    expected = float(np.sum(values**2 / (1 - values**2)))
    assert np.allclose(ring.consensus_epsilon, expected, rtol=1e-9)
    star = Network.star(6).consensus_epsilon
    assert star[0] < star[1:].min()
    split = Network.disjoint_union([Network.path(2), Network.path(2)])
    assert np.isinf(split.consensus_epsilon).all()


def test_agents_learn_their_graph_facts_from_the_env() -> None:
    from fedbandit_env.policies import AgentSpec

    env = Scenario(n_agents=8, n_arms=2, graph="ring", protocol="broadcast").make_env()
    net = env.unwrapped.network
    spec = AgentSpec.from_env(env, "agent_3")
    assert spec.consensus_lambda == net.consensus_lambda
    assert spec.consensus_epsilon == net.consensus_epsilon[3]
    row = np.zeros(8)
    row[list(spec.neighbors)] = 1 / (spec.max_degree + 1)
    row[3] = 1 - spec.degree / (spec.max_degree + 1)
    assert np.allclose(row, net.consensus_matrix[3])


def test_bad_inputs_are_refused() -> None:
    from baselines.consensus import DDUCB, CoopUCB2

    with pytest.raises(ValueError, match="precision"):
        DDUCB(precision=0.0)
    with pytest.raises(ValueError, match="stage"):
        DDUCB(stage=0)
    with pytest.raises(ValueError, match="gamma"):
        CoopUCB2(gamma=float("nan"))
    with pytest.raises(ValueError, match="graph_constants"):
        CoopUCB2(graph_constants=[1.0, -1.0])


@pytest.mark.slow  # 100 agents x 1e4 steps x 10 trials, twice
def test_the_registered_dducb_is_the_authors_best_on_their_instance() -> None:
    """Issue 52: ``dducb`` with its registered defaults (plain rounds with the accelerated
    ``C``, their ``C_small``, alpha as their code leaves it) on the cycle of 100 at T =
    1e4, 10 seeds: its per-agent regret agrees with the authors' code's 10 seeds (the
    report's criterion: the bootstrap interval of the difference of means holds 0), and
    the accelerated form, the old default, does not do as well (161.9 here)."""
    from baselines.papers.martinez_rubio import AUTHORS, _agrees, scenario

    ours = run_fast("dducb", scenario(10_000), 10, seed=0, record_every=10_000, progress=False)
    agree, why = _agrees(ours.final_per_agent, AUTHORS["dducb_plain_small"])
    assert agree, why
    assert 65 < ours.final_per_agent.mean() < 95  # the authors' spread: 50.5 to 99.1
    old = run_fast("dducb_accelerated", scenario(10_000), 10, seed=0, record_every=10_000,
                   progress=False)  # fmt: skip
    assert old.final_per_agent.mean() > 1.5 * ours.final_per_agent.mean()
