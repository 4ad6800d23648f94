"""The linear core's compiled rollout under GammaHops (``core.hops``): the episode its
``step`` plays, message for message, with the protocol handed back so that ``step``
plays on after it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit

from fedbandit_env.core.linear import LinearCore
from fedbandit_env.core.mab import RolloutStopped
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.linear import dubey_synthetic
from fedbandit_env.protocols import Broadcast, GammaHops


@njit
def _listen(last, seen, t, pools, pool_of, sets, heard, slot, mask, arms, sent):  # type: ignore[no-untyped-def]
    """A toy step whose arms and messages depend on what each receiver got, from whom,
    and on its own reward (``_listen_py`` plays it on an inbox)."""
    n_envs, n, k = sets.shape
    for b in range(n_envs):
        for i in range(n):
            total, count = 0.0, 0
            for v in range(n):
                if mask[b, i, v]:
                    count += 1
                    msg = heard[b, slot[i, v], v]
                    total += msg[0] * (v + 1) + msg[1]
            arms[b, i] = (t + i + count + int(abs(total) * 7.0)) % k
            sent[b, i, 0] = np.float32(np.sin(total + t + b))
            sent[b, i, 1] = np.float32(seen[b, i] * 0.5 + 0.01 * i)


def _listen_py(
    t: int, seen: np.ndarray, inbox: np.ndarray, mask: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    arms = np.zeros(mask.shape[:2], np.int64)
    sent = np.zeros((*mask.shape[:2], 2))
    n = mask.shape[1]
    receivers = np.repeat(np.arange(n)[:, None], n, axis=1)  # the inbox: slot[r, v] = r
    _listen(arms.copy(), seen, t, None, None, np.zeros((*mask.shape[:2], k), np.int64), inbox,
            receivers, mask, arms, sent)  # fmt: skip
    return arms, sent


def _core(protocol: Any, b: int, horizon: int) -> LinearCore:
    problem = dubey_synthetic(5, set_size=4, dim=3, seed=3)
    core = LinearCore(problem, Network.path(5), [protocol() for _ in range(b)], horizon,
                      message_dim=2, message_bounds=(-2.0, 2.0))  # fmt: skip
    core.reset(list(range(10, 10 + b)))
    return core


def _steps(core: LinearCore, until: int) -> None:
    """Step ``core`` in Python with ``_listen_py`` up to step ``until``."""
    b, n, d = core.n_envs, core.n_agents, core.message_dim
    routed = core.last_routed
    while core.t < until:
        if routed is None:
            inbox, mask = np.zeros((b, n, n, d), np.float32), np.zeros((b, n, n), np.int8)
        else:
            inbox, mask = routed.inbox, routed.mask
        seen = np.asarray(core.last_rewards, np.float32)
        arms, sent = _listen_py(core.t, seen, inbox, mask, core.set_size)
        routed = core.step(arms, sent).routed


@pytest.mark.parametrize("gamma", [1, 3])
def test_a_rollout_under_gamma_hops_plays_the_steps_episode(
    gamma: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python steps to 4, a rollout to the end, against Python steps all the way: the
    same regret, costs and recorded curve; then a rollout from step 0 of a fresh core,
    and Python steps after a rollout stopped midway (the protocol handed back)."""
    horizon, b = 12, 2

    def hops() -> GammaHops:
        return GammaHops(gamma=gamma)

    reference = _core(hops, b, horizon)
    _steps(reference, horizon)
    assert reference.gamma == gamma and reference.rolls_out

    for start in (0, 4):
        core = _core(hops, b, horizon)
        _steps(core, start)
        out, cost = np.zeros((b, 5, 2)), np.zeros((b, 2))
        core.rollout(_listen, (), np.array([6, horizon]), out, cost_out=cost)
        assert core.t == horizon
        assert np.array_equal(core.cum_regret, reference.cum_regret), start
        assert np.array_equal(core.cum_cost, reference.cum_cost)
        assert np.array_equal(out[..., 1], reference.cum_regret)
        assert cost[:, 1].tolist() == reference.cum_cost.tolist()
        assert cost[0, 1] == horizon * Network.path(5).n_edges  # c2 = 1, every edge a step

    # a rollout that stops at step 7 (stop asked before each block of one step), then Python
    monkeypatch.setattr("fedbandit_env.core.linear.ROLLOUT_NUMBERS", 1)
    stopped = _core(hops, b, horizon)
    asked = iter(range(100))

    def stop() -> bool:
        return next(asked) >= 7

    with pytest.raises(RolloutStopped, match="stopped after 7"):
        stopped.rollout(_listen, (), np.array([horizon]), np.zeros((b, 5, 1)), stop=stop)
    assert stopped.t == 7
    _steps_after_rollout(stopped, horizon)
    assert np.array_equal(stopped.cum_regret, reference.cum_regret)


def _steps_after_rollout(core: LinearCore, until: int) -> None:
    """Python steps from a rolled-out core: the first observation (what arrived after
    the rollout's last step) from the core's ring (``hops_inbox``), every later one from
    the protocols, which the rollout handed back (``GammaHops.resume``)."""
    from fedbandit_env.core.hops import hops_inbox

    assert core._hops is not None
    inbox, mask = hops_inbox(core._ring, core._hops, core.t)
    while core.t < until:
        seen = np.asarray(core.last_rewards, np.float32)
        arms, sent = _listen_py(core.t, seen, inbox, mask, core.set_size)
        routed = core.step(arms, sent).routed
        assert routed is not None
        inbox, mask = routed.inbox, routed.mask


def test_only_one_gamma_rolls_out() -> None:
    """Envs of different gammas, or GammaHops beside another protocol, have no compiled
    rollout (the core says so rather than routing them wrongly)."""
    problem = dubey_synthetic(5, set_size=4, dim=3, seed=3)
    mixed = LinearCore(problem, Network.path(5), [GammaHops(1), GammaHops(2)], 5, message_dim=2)
    other = LinearCore(problem, Network.path(5), [GammaHops(1), Broadcast()], 5, message_dim=2)
    for core in (mixed, other):
        assert core.gamma == 0 and not core.rolls_out
        with pytest.raises(ValueError, match="GammaHops"):
            core.rollout(_listen, (), np.array([5]), np.zeros((2, 5, 1)))
