"""The linear bandit's vector env (issue 62 item 2): env ``b`` replays the PettingZoo
linear env reset with ``seed + b``; Gymnasium's vector conventions hold."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from fedbandit_env import federated_linear_v0
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.linear import LinearProblem, dubey_synthetic
from fedbandit_env.protocols import Broadcast, GammaHops, RandomEdgeGossip, Synchronize
from fedbandit_env.vector import FederatedLinearVecEnv, inbox


def _sampler(rng: np.random.Generator) -> LinearProblem:
    return dubey_synthetic(4, set_size=5, dim=3, seed=int(rng.integers(1000)))


def _two_hops() -> GammaHops:
    return GammaHops(gamma=2)


@pytest.mark.parametrize("protocol", [RandomEdgeGossip, Broadcast, Synchronize, _two_hops, None])
@pytest.mark.parametrize("sampled", [False, True])
def test_env_b_replays_the_pettingzoo_linear_env_seeded_s_plus_b(
    protocol: type | None, sampled: bool
) -> None:
    """Contexts, rewards, regret, what each receiver heard, link costs and the instance
    id, to the bit, over two episodes (the second begun by the autoreset, each env then
    continuing its own generators, as ``reset()`` without a seed)."""
    n, horizon, b = 4, 6, 3
    d = 3 if protocol else 0
    problem = _sampler if sampled else dubey_synthetic(n, set_size=5, dim=3, seed=2)
    wiring = {"network": Network.ring(n), "horizon": horizon, "message_dim": d,
              "message_bounds": (-1.0, 1.0)}  # fmt: skip

    def fresh() -> dict[str, object]:  # each env its own protocol object
        return {**wiring, "protocol": protocol()} if protocol else wiring

    venv = FederatedLinearVecEnv(problem, num_envs=b, **fresh())  # type: ignore[arg-type]
    envs = [federated_linear_v0.parallel_env(problem=problem, **fresh()) for _ in range(b)]
    obs, infos = venv.reset(seed=20)
    assert venv.observation_space.contains(obs)
    pz = [env.reset(seed=20 + k)[0] for k, env in enumerate(envs)]
    rng = np.random.default_rng(1)
    for t in range(2 * horizon + 1):
        for k, env in enumerate(envs):
            got = np.stack([pz[k][a]["contexts"] for a in env.possible_agents])
            assert np.array_equal(obs["contexts"][k], got), (t, k)
        if t == horizon:  # the autoreset step: every env continues its generators
            silent = np.zeros((b, n, d)) if d else None
            obs, rewards, _, truncs, infos = venv.step(np.zeros((b, n), int), silent)
            assert not rewards.any() and not truncs.any()
            pz = [env.reset()[0] for env in envs]
            continue
        arms = rng.integers(5, size=(b, n))
        sent = rng.uniform(-1, 1, (b, n, d))
        obs, rewards, _, truncs, infos = venv.step(arms, sent if d else None)
        for k, env in enumerate(envs):
            acts = {a: ({"arm": int(arms[k, i]), "message": sent[k, i]} if d else int(arms[k, i]))
                    for i, a in enumerate(env.possible_agents)}  # fmt: skip
            pz_obs, pz_rew, _, pz_trunc, pz_infos = env.step(acts)
            pz[k] = pz_obs
            assert rewards[k].tolist() == list(pz_rew.values())
            assert infos["regret"][k].tolist() == [pz_infos[a]["regret"] for a in pz_infos]
            assert float(infos["comm_cost"][k]) == pz_infos["agent_0"]["comm_cost"]
            assert bool(truncs[k].all()) == all(pz_trunc.values())
            if sampled:
                assert int(infos["instance"][k]) == pz_infos["agent_0"]["instance"]
            if d and protocol is _two_hops:  # by receiver and origin already
                heard = obs["messages"][k]
            elif d:
                heard = inbox(obs["messages"][k : k + 1], obs["mask"][k : k + 1])[0]
                expected = np.stack([pz_obs[a]["messages"] for a in env.possible_agents])
                if protocol is not Synchronize:  # a server protocol: no peer inbox
                    assert np.array_equal(heard, expected), (t, k)
                    mask = np.stack([pz_obs[a]["mask"] for a in env.possible_agents])
                    assert np.array_equal(obs["mask"][k], mask), (t, k)
                if protocol is Synchronize:
                    server = np.stack([pz_obs[a]["server"] for a in env.possible_agents])
                    assert np.array_equal(obs["server"][k], server)
        if t < horizon:
            assert venv.observation_space.contains(obs)


def test_the_linear_vector_env_refuses_what_it_cannot_carry() -> None:
    """Choices out of the set, a pinned problem of another shape, and a step before
    reset."""
    problem = dubey_synthetic(4, set_size=5, dim=3, seed=0)
    venv = FederatedLinearVecEnv(problem, horizon=3, num_envs=2)
    with pytest.raises(RuntimeError, match="before reset"):
        venv.step(np.zeros((2, 4), int))
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"arms must lie in \[0, 5\)"):
        venv.step(np.full((2, 4), 5))
    with pytest.raises(ValueError, match="must be a LinearProblem with 4 agents"):
        venv.reset(seed=0, options={"problem": dubey_synthetic(3, set_size=5, dim=3, seed=0)})
    with pytest.raises(TypeError, match="LinearProblem or a sampler"):
        FederatedLinearVecEnv(3)  # type: ignore[arg-type]
    disabled = FederatedLinearVecEnv(problem, horizon=1, num_envs=2,
                                     autoreset_mode=AutoresetMode.DISABLED)  # fmt: skip
    disabled.reset(seed=0)
    disabled.step(np.zeros((2, 4), int))
    with pytest.raises(RuntimeError, match="after the last step"):
        disabled.step(np.zeros((2, 4), int))


@pytest.mark.parametrize("instances", ["fixed", "train"])
def test_make_vec_of_a_linear_scenario_is_make_env_b_times(instances: str) -> None:
    """``make_vec`` of a linear scenario (``sync``: Dubey & Pentland's server rounds with
    the policy's messages plus one ``(d + 1)^2`` statistic) replays
    ``scenario.make_env(needs)`` reset with ``s + b``: contexts, rewards, regret, the
    server's message; a stack with layers (message loss) is refused by name."""
    from fedbandit_env.policies import Requirements
    from fedbandit_env.scenario.scenario import Scenario
    from fedbandit_env.vector import make_vec

    s = Scenario(n_agents=3, horizon=4, instance="dubey", dim=2, setting="sync",
                 instances=instances)  # fmt: skip
    needs = Requirements(message_dim=2)
    venv = make_vec(s, 2, needs)
    envs = [s.make_env(needs) for _ in range(2)]
    obs, _ = venv.reset(seed=5)
    pz = [env.reset(seed=5 + b)[0] for b, env in enumerate(envs)]
    d = venv.message_dim
    assert d == envs[0].unwrapped.message_dim == 2 + 9
    rng = np.random.default_rng(3)
    for _ in range(4):
        for b, env in enumerate(envs):
            got = np.stack([pz[b][a]["contexts"] for a in env.possible_agents])
            assert np.array_equal(obs["contexts"][b], got)
        arms = rng.integers(s.n_arms, size=(2, 3))
        sent = rng.uniform(-1, 1, (2, 3, d))
        obs, rewards, _, _, infos = venv.step(arms, sent)
        for b, env in enumerate(envs):
            acts = {a: {"arm": int(arms[b, i]), "message": sent[b, i]}
                    for i, a in enumerate(env.possible_agents)}  # fmt: skip
            pz[b], rew, _, _, pz_infos = env.step(acts)
            assert rewards[b].tolist() == list(rew.values())
            assert infos["regret"][b].tolist() == [pz_infos[a]["regret"] for a in pz_infos]
            server = np.stack([pz[b][a]["server"] for a in env.possible_agents])
            assert np.array_equal(obs["server"][b], server)
    lossy = Scenario(n_agents=3, horizon=4, instance="dubey", dim=2, setting="sync", loss=0.1)
    with pytest.raises(ValueError, match="takes no layers yet"):
        make_vec(lossy, 2, needs)
