"""The vector env against the PettingZoo env, and its wrappers against it, in one run.

Both step the same scenario with random actions: ``make_vec(scenario, num_envs)`` and
``scenario.make_env(needs)`` (the PettingZoo env, ``num_envs`` times fewer agent-steps per
call). Printed: agent-steps a second of each and their ratio (the issue's target: >= 30x
in ``neighbours``, N = 10, M = 5, messages of 2M numbers, num_envs = 1024), then every
vector wrapper a wrapper names (``vector_form``) as a multiple of the bare vector step
(target: <= 2x), measured interleaved with the bare step: each time is the best of
``--repeats`` rounds (the least disturbed on a shared machine;
:func:`fedbandit_env.runner.vector_speed.wrapper_lines`, which ``fedbandit speed``
prints too).
A vector form with no sample arguments is printed as not measured, so none is left out
silently. Beside them, what the exact draws of each drawing vector form cost alone (counted
from its streams, drawn by the same kernels;
:func:`fedbandit_env.runner.vector_speed.floor_lines`): a floor under its ratio that no
faster bookkeeping removes.
Then the bare vector step against a hand-written NumPy step doing the same work
(:func:`hand_written_rate`; the issue's target: within 1.5x). Last, a vector policy with
a compiled step (``local_ucb``, in ``local``: no messages) stepped through the vector
env against the same trials rolled out by the core with no Python between steps
(``MABCore.rollout``, what its fast path runs; :func:`rollout_rates`).

    python examples/vector_speed.py
    python examples/vector_speed.py --setting gossip --envs 256 --steps 200
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from fedbandit_env.policies import Requirements
from fedbandit_env.runner.vector_speed import floor_lines, wrapper_lines
from fedbandit_env.scenario import Scenario
from fedbandit_env.vector import make_vec


def pettingzoo_rate(scenario: Scenario, needs: Requirements, steps: int, repeats: int) -> float:
    """Agent-steps a second of ``scenario.make_env(needs)`` under random actions."""
    env = scenario.make_env(needs)
    agents = env.possible_agents
    n, m, d = len(agents), scenario.n_arms, needs.message_dim
    rng = np.random.default_rng(0)
    arms = rng.integers(m, size=(steps, n)).tolist()
    msgs = rng.random((steps, n, d))
    best = np.inf
    for r in range(repeats):
        env.reset(seed=r)
        begin = time.perf_counter()
        for t in range(steps):
            env.step({a: {"arm": arms[t][i], "message": msgs[t, i]} for i, a in enumerate(agents)})
        best = min(best, time.perf_counter() - begin)
    return steps * n / best


def vector_rate(
    scenario: Scenario,
    needs: Requirements,
    envs: int,
    steps: int,
    repeats: int,
    wrap: Any = None,
) -> float:
    """Agent-steps a second of ``make_vec(scenario, envs, needs)`` (in ``wrap``) under
    random actions."""
    venv = make_vec(scenario, envs, needs)
    if wrap is not None:
        venv = wrap(venv)
    n, m, d = venv.n_agents, venv.n_arms, venv.message_dim
    rng = np.random.default_rng(0)
    arms = rng.integers(m, size=(8, envs, n))
    msgs = rng.random((8, envs, n, d))
    best = np.inf
    for r in range(repeats):
        venv.reset(seed=r)
        begin = time.perf_counter()
        for t in range(steps):
            venv.step(arms[t % 8], msgs[t % 8])
        best = min(best, time.perf_counter() - begin)
    return steps * envs * n / best


def hand_written_rate(
    scenario: Scenario, needs: Requirements, envs: int, steps: int, repeats: int
) -> float:
    """Agent-steps a second of the bare vector step's work written out in NumPy, with
    nothing else: the arms and messages read once to check them, each env's reward
    noise drawn from its own generator a block of steps at a time, one gather of the
    pulled means, Bernoulli rewards, one gather of the gaps into the regret, the
    broadcast's rows as float32 with the graph as the mask, and the observation dict.
    The scenario's instances and graph come from ``make_vec``; Bernoulli rewards only.

    Examples:
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=8, setting="neighbours")
        >>> hand_written_rate(s, Requirements(message_dim=4), 4, 8, 1) > 0
        True
    """
    venv = make_vec(scenario, envs, needs)
    venv.reset(seed=0)
    core = venv.core
    b, n, m = envs, venv.n_agents, venv.n_arms
    flat_means = np.asarray(core.means).reshape(-1)
    flat_gaps = np.asarray(core.gaps).reshape(-1)
    row_of = (np.arange(b)[:, None] * n + np.arange(n)[None, :]) * m
    env_of = np.arange(b)[:, None] * m
    mask = np.broadcast_to(core.network.adjacency.astype(np.int8), (b, n, n))
    rng = np.random.default_rng(0)
    arms = rng.integers(m, size=(8, envs, n))
    msgs = rng.random((8, envs, n, needs.message_dim))
    block = 64
    best = np.inf
    for r in range(repeats):
        gens = [np.random.default_rng([r, k]) for k in range(b)]
        cum = np.zeros((b, n))
        draws = np.zeros((b, 0, n))
        begin = time.perf_counter()
        for t in range(steps):
            a, msg = arms[t % 8], msgs[t % 8]
            if (a.astype(np.uint64) >= m).any() or not np.isfinite(msg).all():
                raise ValueError("bad actions")
            if t % block == 0:
                draws = np.stack([g.random((block, n)) for g in gens])
            rewards = (draws[:, t % block] < flat_means[row_of + a]).astype(np.float64)
            cum += flat_gaps[env_of + a]
            _ = {
                "arm": a.copy(),
                "reward": rewards.astype(np.float32)[..., None],
                "step": np.full((b, n, 1), t + 1, np.float32),
                "messages": msg.astype(np.float32),
                "mask": mask,
            }
        best = min(best, time.perf_counter() - begin)
    return steps * envs * n / best


def rollout_rates(
    agents: int, arms: int, envs: int, steps: int, repeats: int
) -> tuple[float, float]:
    """Agent-steps a second of ``local_ucb`` (its vector policy) on ``envs`` envs of
    ``local``, stepped through ``act`` and the vector env's ``step``, and rolled out by
    ``MABCore.rollout`` (the same trials: ``tests/families/test_ucb_vector.py``); each the
    best of ``repeats``, interleaved.

    Examples:
        >>> stepped, rolled = rollout_rates(3, 2, 4, 8, 1)
        >>> stepped > 0 and rolled > 0
        True
    """
    from baselines.ucb.vector import local_ucb
    from fedbandit_env.vector.policy import VectorSpec

    scenario = Scenario(n_agents=agents, n_arms=arms, horizon=steps, setting="local")
    venv = make_vec(scenario, envs)
    probe = scenario.make_env(Requirements())
    spec = VectorSpec.from_env(probe, envs)
    probe.close()
    best = {"stepped": np.inf, "rolled": np.inf}
    for r in range(repeats):
        for way in best:
            policy = local_ucb()
            obs, _ = venv.reset(seed=r)
            policy.reset(spec, [np.random.default_rng([r, b]) for b in range(envs)])
            begin = time.perf_counter()
            if way == "stepped":
                for _ in range(steps):
                    obs = venv.step(policy.act(obs)[0])[0]
            else:
                kernel = policy.kernel()
                venv.rollout(*kernel, np.array([steps]), np.zeros((envs, agents, 1)))
            best[way] = min(best[way], time.perf_counter() - begin)
    return steps * envs * agents / best["stepped"], steps * envs * agents / best["rolled"]


def main() -> None:
    """Print the two speeds and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setting", default="neighbours")
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--arms", type=int, default=5)
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scenario = Scenario(
        n_agents=args.agents, n_arms=args.arms, horizon=max(args.steps, 1), setting=args.setting
    )
    needs = Requirements(message_dim=2 * args.arms)
    pz = pettingzoo_rate(scenario, needs, args.steps, args.repeats)
    vec = vector_rate(scenario, needs, args.envs, args.steps, args.repeats)
    print(
        f"setting {args.setting}, N={args.agents}, M={args.arms}, messages of "
        f"{2 * args.arms} numbers, {args.steps} steps, best of {args.repeats}"
    )
    print(f"PettingZoo env:            {pz:12,.0f} agent-steps/s")
    print(f"vector env ({args.envs:5d} envs):  {vec:12,.0f} agent-steps/s")
    print(f"ratio:                     {vec / pz:12.1f}x")
    for line in wrapper_lines(args.agents, args.arms, args.envs, args.steps, args.repeats,
                              args.setting):  # fmt: skip
        print(line)
    for line in floor_lines(args.agents, args.arms, args.envs, args.steps, args.repeats,
                            args.setting):  # fmt: skip
        print(line)
    if args.setting == "neighbours":
        hand = hand_written_rate(scenario, needs, args.envs, args.steps, args.repeats)
        bare = vector_rate(scenario, needs, args.envs, args.steps, args.repeats)
        print(f"bare vector step:          {hand / bare:12.2f}x a hand-written NumPy step "
              "(the same work, nothing else)")  # fmt: skip
    for envs in sorted({4, args.envs}):
        stepped, rolled = rollout_rates(args.agents, args.arms, envs, args.steps, args.repeats)
        print(
            f"local_ucb, local, {envs:5d} envs: stepped {stepped:12,.0f} agent-steps/s, "
            f"compiled rollout {rolled:12,.0f} ({rolled / stepped:.1f}x)"
        )


if __name__ == "__main__":
    main()
