"""The vector core on a torch device (the CPU here; a GPU where one is present): the same
array code as NumPy, the same instances, its own reward noise and gossip edges.

Three kinds of check:

- *exact*: where nothing is random (Bernoulli means of 0 and 1, broadcast routing), the
  torch path and the NumPy path give the same observations, rewards and infos, every
  wrapper of the learner's stack included: the code is one statement;
- *same draws*: the instances (drawn on the host) are the same on both;
- *same distribution*: where the device draws its own noise, fixed policies' regret
  (and the private rewards' noise) agree with the NumPy path's within their sampling
  error, and a weakened twin (biased reward noise, half the privacy noise) is caught.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fedbandit_env.backend import backend  # noqa: E402
from fedbandit_env.policies import Requirements  # noqa: E402
from fedbandit_env.problems import MABProblem  # noqa: E402
from fedbandit_env.scenario.scenario import Scenario  # noqa: E402
from fedbandit_env.vector import FederatedMABVecEnv, make_vec  # noqa: E402
from fedbandit_env.vector.wrappers import (  # noqa: E402
    VecHeldMessages,
    VecHorizonFree,
    VecLocalStatistics,
    VecPrivateRewards,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _host(x: Any) -> np.ndarray:
    return backend(None).to_numpy(x)


def _stack(venv: Any) -> Any:
    return VecHorizonFree(VecHeldMessages(VecLocalStatistics(venv)))


def test_a_deterministic_episode_is_the_same_on_both_backends() -> None:
    """Means of 0 and 1 make every reward certain: the torch path must give NumPy's every
    observation, reward and info, through the learner's wrappers."""
    means = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    outs = []
    for device in (None, DEVICE):
        venv = _stack(FederatedMABVecEnv(MABProblem(means), horizon=7, message_dim=6,
                                         num_envs=3, device=device))  # fmt: skip
        be = venv.unwrapped.backend
        obs, _ = venv.reset(seed=0)
        trace = [{k: _host(v) for k, v in obs.items()}]
        rng = np.random.default_rng(5)
        for _ in range(7):
            arms = rng.integers(3, size=(3, 4))
            messages = rng.random((3, 4, 6))
            obs, rewards, _, truncs, infos = venv.step(be.asarray(arms), be.asarray(messages))
            row = {k: _host(v) for k, v in obs.items()}
            row.update(rewards=_host(rewards), truncs=_host(truncs),
                       **{f"info_{k}": _host(v) for k, v in infos.items()})  # fmt: skip
            trace.append(row)
        outs.append(trace)
    for step, (a, b) in enumerate(zip(*outs, strict=True)):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].dtype == b[key].dtype, (step, key)
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"step {step} {key}")


def test_the_device_keeps_every_array_there() -> None:
    s = Scenario(n_agents=4, n_arms=3, horizon=5, setting="gossip+private", epsilon=1.0,
                 instances="train")  # fmt: skip
    venv = make_vec(s, 8, Requirements(message_dim=6), device=DEVICE)
    obs, infos = venv.reset(seed=0)
    arms = torch.zeros((8, 4), dtype=torch.int64, device=DEVICE)
    msg = torch.zeros((8, 4, 6), device=DEVICE)
    obs, rewards, terms, truncs, infos = venv.step(arms, msg)
    for value in [*obs.values(), rewards, terms, truncs]:
        assert isinstance(value, torch.Tensor) and value.device.type == DEVICE
    for key, value in infos.items():
        if key != "instance":  # an id drawn on the host
            assert isinstance(value, torch.Tensor), key


def test_the_instances_are_the_same_draws() -> None:
    s = Scenario(n_agents=5, n_arms=4, horizon=3, instances="held_out", instance="biased")
    a, b = make_vec(s, 6), make_vec(s, 6, device=DEVICE)
    _, ia = a.reset(seed=11)
    _, ib = b.reset(seed=11)
    np.testing.assert_array_equal(ia["instance"], ib["instance"])
    np.testing.assert_array_equal(a.unwrapped.core.means, _host(b.unwrapped.core.means))


def test_a_device_refuses_what_it_cannot_run() -> None:
    s = Scenario(n_agents=4, n_arms=3, horizon=5, setting="server")
    with pytest.raises(ValueError, match="routes through its own object"):
        make_vec(s, 2, Requirements(message_dim=4), device=DEVICE)
    s = Scenario(n_agents=4, n_arms=3, horizon=5, setting="neighbours", byzantine=1)
    with pytest.raises(ValueError, match="NumPy arrays only"):
        make_vec(s, 2, Requirements(message_dim=3), device=DEVICE)


def _greedy_regret(device: Any, setting: str, runs: int, epsilon: float | None = None,
                   bias: float = 0.0) -> np.ndarray:  # fmt: skip
    """Per-env mean regret of an optimistic team on pooled means (its choices depend on
    every reward and, in gossip, on the edges drawn) over ``runs`` envs at T = 40."""
    s = Scenario(n_agents=4, n_arms=3, horizon=40, setting=setting, epsilon=epsilon,
                 instances="train", instance="biased")  # fmt: skip
    venv = make_vec(s, runs, Requirements(message_dim=3), device=device)
    if epsilon is None:
        venv = VecLocalStatistics(venv)
    be = venv.unwrapped.backend
    xp = be.xp
    key = "private_means" if epsilon is not None else "means"
    obs, _ = venv.reset(seed=3)
    core = venv.unwrapped.core
    if bias:  # a weakened twin: every reward draw shifted (a biased noise source)
        original = core._refill

        def biased() -> None:
            original()
            core._draws = core._draws - bias

        core._refill = biased
    total = 0.0
    for _ in range(40):
        means = xp.astype(obs[key], be.float64)
        heard = obs.get("messages", means)
        pooled = means + xp.mean(xp.astype(heard, be.float64), axis=1, keepdims=True)
        width = 1.0 / xp.sqrt(1.0 + xp.astype(obs["counts"], be.float64))
        arms = xp.argmax(pooled + width, axis=2)
        obs, _, _, _, infos = venv.step(arms, xp.astype(means, be.float32))
        total = total + infos["regret"]
    return _host(total).mean(axis=1)


@pytest.mark.parametrize("setting", ["neighbours", "gossip"])
def test_fixed_policies_regret_agrees_with_numpy(setting: str) -> None:
    """Two-sample z-test at 4.5 standard errors (p < 1e-5 under equal distributions);
    the power twin shifts every uniform by 0.15 (rewards 15 points likelier; measured
    7.6-9.9 standard errors away)."""
    runs = 3000
    a = _greedy_regret(None, setting, runs)
    b = _greedy_regret(DEVICE, setting, runs)
    se = math.sqrt(a.var() / runs + b.var() / runs)
    assert abs(a.mean() - b.mean()) < 4.5 * se, (a.mean(), b.mean(), se)
    weak = _greedy_regret(DEVICE, setting, runs, bias=0.15)
    se = math.sqrt(a.var() / runs + weak.var() / runs)
    assert abs(a.mean() - weak.mean()) > 4.5 * se, (a.mean(), weak.mean(), se)


def _private_noise(device: Any, scale: float = 1.0) -> np.ndarray:
    """Agent 0's private sum of arm 0 after one pull of reward 0: pure tree noise."""
    problem = MABProblem(np.zeros((2, 2)))
    venv = VecPrivateRewards(FederatedMABVecEnv(problem, horizon=4, num_envs=20_000,
                                                device=device), 1.0)  # fmt: skip
    venv.scale = venv.scale * scale
    be = venv.unwrapped.backend
    venv.reset(seed=0)
    obs = venv.step(be.asarray(np.zeros((20_000, 2), dtype=np.int64)))[0]
    return _host(obs["private_means"][:, 0, 0]).astype(np.float64)


@pytest.mark.slow
def test_device_privacy_noise_has_the_calibrated_scale() -> None:
    """Laplace(b): E|X| = b; the sample mean of |X| over 20,000 draws has standard error
    b / sqrt(20000) (Var|X| = b^2): within 5 of them of NumPy's, and half the scale is
    caught."""
    a, b = np.abs(_private_noise(None)), np.abs(_private_noise(DEVICE))
    scale = VecPrivateRewards(FederatedMABVecEnv(MABProblem(np.zeros((2, 2))), horizon=4),
                              1.0).scale  # fmt: skip
    se = scale / math.sqrt(a.size)
    assert abs(a.mean() - scale) < 5 * se and abs(b.mean() - scale) < 5 * se, (a.mean(), b.mean())
    half = np.abs(_private_noise(DEVICE, 0.5))
    assert abs(half.mean() - scale) > 5 * se
