"""Checkers users can run on their own envs and wrappers (PettingZoo ships its own too).

PettingZoo's ``parallel_api_test`` does not check that observations lie in their
spaces, and ``parallel_seed_test`` compares a single step; these checkers close both
gaps. :func:`check_replay` is the two speeds' check: a registered policy's fast path
replays its PettingZoo path step for step (a family proves its fast path in one call).

Examples:
    >>> from fedbandit_env import federated_mab_v0
    >>> make = lambda: federated_mab_v0.parallel_env(horizon=30, message_dim=2)
    >>> check_parallel_env(make)
    >>> check_determinism(make, seed=3)
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec

EnvFactory = Callable[[], ParallelEnv[Any, Any, Any]]


def _episode(env: ParallelEnv[Any, Any, Any], seed: int, check_spaces: bool) -> list[Any]:
    """Play one full episode with seeded random actions; return everything seen."""
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + i)
    obs, infos = env.reset(seed=seed)
    trace: list[Any] = [obs, infos]
    steps = 0
    while env.agents:
        if check_spaces:
            for agent, o in obs.items():
                space = env.observation_space(agent)
                if not space.contains(o):
                    raise AssertionError(
                        f"step {steps}: observation of {agent} not in {space}: {o}"
                    )
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rew, term, trunc, infos = env.step(actions)
        trace.extend([actions, obs, rew, term, trunc, infos])
        steps += 1
        if steps > 10_000_000:  # pragma: no cover - guards a broken truncation
            raise AssertionError("episode did not end")
    return trace


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray | np.generic) or isinstance(b, np.ndarray | np.generic):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


def check_spaces(make_env: EnvFactory, episodes: int = 3, seed: int = 0) -> None:
    """Play ``episodes`` full episodes with seeded random actions (seeds ``seed``,
    ``seed + 1``, ...: an env that draws its instance at reset shows another one each
    time) and check that every observation of every step lies in its space.

    Raises:
        AssertionError: On the first observation outside its space, naming the step and
            the agent.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> check_spaces(lambda: federated_mab_v0.parallel_env(horizon=5), episodes=2)
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    env = make_env()
    for k in range(episodes):
        _episode(env, seed + k, check_spaces=True)


def check_parallel_env(make_env: EnvFactory, num_cycles: int = 1000, seed: int = 0) -> None:
    """Run PettingZoo's parallel and AEC API tests and check observations lie in their
    spaces over three full episodes (:func:`check_spaces`).

    Raises:
        AssertionError: On the first violation.


    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> check_parallel_env(lambda: federated_mab_v0.parallel_env(horizon=5), num_cycles=10)
    """
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore", UserWarning)
        parallel_api_test(make_env(), num_cycles=num_cycles)
        api_test(parallel_to_aec(make_env()), num_cycles=num_cycles)
    check_spaces(make_env, episodes=3, seed=seed)


def check_determinism(make_env: EnvFactory, seed: int = 0, other_seed: int | None = None) -> None:
    """Two envs reset with one seed agree on every observation, reward and info of a whole
    episode (random actions seeded alike); a different seed gives a different episode.

    Raises:
        AssertionError: If the same seed diverges, or another seed replays the same episode.


    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> check_determinism(lambda: federated_mab_v0.parallel_env(horizon=5), seed=1)
    """
    first = _episode(make_env(), seed, check_spaces=False)
    second = _episode(make_env(), seed, check_spaces=False)
    if len(first) != len(second):
        raise AssertionError("episodes with the same seed have different lengths")
    for k, (a, b) in enumerate(zip(first, second, strict=True)):
        if not _equal(a, b):
            raise AssertionError(f"same seed {seed} diverged at record {k}: {a!r} != {b!r}")
    other = _episode(make_env(), seed + 1 if other_seed is None else other_seed, False)
    if len(other) == len(first) and all(_equal(a, b) for a, b in zip(first, other, strict=True)):
        raise AssertionError("a different seed replayed exactly the same episode")


@dataclass
class Replay:
    """What :func:`check_replay` compared: both paths' arms, rewards, regret and cost.

    Attributes:
        arms: ``(trials, T, N)`` arms of the PettingZoo path (the fast path's are equal).
        rewards: ``(trials, T, N)`` rewards each agent observed (float32).
        regret: ``(trials, N, T)`` per-agent cumulative pseudo-regret.
        comm_cost: ``(trials, T)`` the network's cumulative communication cost.

    Examples:
        >>> z = np.zeros((1, 2, 3))
        >>> Replay(z, z, z.transpose(0, 2, 1), np.zeros((1, 2))).comm_cost.shape
        (1, 2)
    """

    arms: np.ndarray
    rewards: np.ndarray
    regret: np.ndarray
    comm_cost: np.ndarray


def check_replay(
    policy: str,
    scenario: Any,
    params: dict[str, Any] | None = None,
    seed: int = 0,
    trials: int = 2,
) -> Replay:
    """The two speeds' check: a registered policy's fast path replays its PettingZoo path
    on the same seeds, step for step (arms, observed rewards, per-agent regret and the
    network's cost, bit for bit), traced and untraced. A family proves its fast path in
    one call.

    Args:
        policy: A registered id with a fast entry point.
        scenario: A :class:`~fedbandit_env.scenario.scenario.Scenario`.
        params: The policy's constructor options (both paths get them).
        seed: The experiment seed (trials split from it as the runners split them).
        trials: How many trials to compare.

    Raises:
        AssertionError: Naming the first quantity that differs.

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> r = check_replay("local_ucb", Scenario(n_agents=3, n_arms=2, horizon=30))
        >>> r.arms.shape
        (2, 30, 3)
    """
    from fedbandit_env.registry import make
    from fedbandit_env.runner.fast import run_fast
    from fedbandit_env.seeding import trial_seeds

    params = dict(params or {})
    arms_all, rewards_all, regret_all, cost_all = [], [], [], []
    for env_seed, team_seed in trial_seeds(seed, trials):
        team = make(policy, **params)
        env = scenario.make_env(team.requirements(scenario.n_agents, scenario.n_arms))
        obs, _ = env.reset(seed=env_seed)
        team.reset(env, seed=team_seed)
        agents = env.possible_agents
        arms, rewards, regret, cost = [], [], [], []
        while env.agents:
            obs, _, _, _, infos = env.step(team.act(obs))
            arms.append([int(obs[a]["arm"]) for a in agents])
            rewards.append([obs[a]["reward"][0] for a in agents])
            regret.append([infos[a]["cumulative_regret"] for a in agents])
            cost.append(infos[agents[0]]["cumulative_comm_cost"])
        arms_all.append(arms)
        rewards_all.append(np.array(rewards, dtype=np.float32))
        regret_all.append(np.array(regret).T)
        cost_all.append(cost)
    slow = Replay(
        np.array(arms_all), np.stack(rewards_all), np.stack(regret_all), np.array(cost_all)
    )
    kw: dict[str, Any] = {"seed": seed, "record_every": 1, "progress": False, **params}
    fast = run_fast(policy, scenario, trials, trace=True, **kw)
    for name, mine, theirs in (
        ("arms", fast.meta["arms"], slow.arms),
        ("rewards", fast.meta["rewards"], slow.rewards),
        ("regret", fast.regret, slow.regret),
        ("comm_cost", fast.comm_cost, slow.comm_cost),
    ):
        np.testing.assert_array_equal(mine, theirs, err_msg=f"{policy}: {name} differ")
    untraced = run_fast(policy, scenario, trials, **kw)  # the kernels skip trace-only work
    np.testing.assert_array_equal(untraced.regret, slow.regret, err_msg=f"{policy}: untraced")
    np.testing.assert_array_equal(untraced.comm_cost, slow.comm_cost, err_msg=f"{policy}: cost")
    return slow


def vector_actions(
    rng: np.random.Generator, t: int, num_envs: int, n_agents: int, n_arms: int, message_dim: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """The default actions of :func:`check_vector_replay` at step ``t``: uniform arms and
    uniform messages in ``[0, 1)``, entry 0 (the round protocols' send flag) set on
    steps ``1, 9, 17, ...`` only, so a hybrid round ends before the next starts.

    Examples:
        >>> arms, msgs = vector_actions(np.random.default_rng(0), 1, 2, 3, 4, 5)
        >>> arms.shape, msgs.shape, float(msgs[..., 0].min())
        ((2, 3), (2, 3, 5), 1.0)
    """
    arms = rng.integers(n_arms, size=(num_envs, n_agents))
    if not message_dim:
        return arms, None
    messages = rng.random((num_envs, n_agents, message_dim))
    messages[..., 0] = 1.0 if t % 8 == 1 else 0.0
    return arms, messages


_PER_AGENT_INFO = (
    "messages_lost",
    "messages_in_flight",
    "messages_superseded",
    "byzantine",
    "own_regret",
    "own_cumulative_regret",
    "crashed",
    "recovered",
)
"""Fault infos the vector env keeps per agent ``(B, N)``."""

_PER_ENV_INFO = ("corrupted", "agents_down")
"""Fault infos every agent of a PettingZoo env shares, ``(B,)`` in the vector env."""


def check_vector_replay(
    scenario: Any,
    needs: Any = None,
    num_envs: int = 3,
    seed: int = 0,
    steps: int | None = None,
    episodes: int = 2,
    wrap_env: Callable[[Any], Any] | None = None,
    wrap_vec: Callable[[Any], Any] | None = None,
) -> None:
    """Check that env ``b`` of ``make_vec(scenario, num_envs, needs)`` reset with seed
    ``s`` replays ``scenario.make_env(needs)`` reset with seed ``s + b``: the same
    instance, rewards, delivered messages, regret and costs, step by step, under the same
    actions (:func:`vector_actions`), for ``episodes`` episodes (the later ones reset
    without a seed, each env continuing its own generator; the vector env autoresets).
    ``wrap_env`` and ``wrap_vec`` put a further layer over each side (a wrapper and its
    vector form, e.g. ``LocalStatistics`` and ``VecLocalStatistics``).

    Raises:
        AssertionError: Naming the episode, step, env and entry that differ.

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> from fedbandit_env.policies import Requirements
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=6, setting="gossip")
        >>> check_vector_replay(s, Requirements(message_dim=2, public_dim=1), num_envs=2)
    """
    from fedbandit_env.vector import inbox, make_vec

    venv = make_vec(scenario, num_envs, needs)
    envs = [scenario.make_env(needs) for _ in range(num_envs)]
    if wrap_env is not None:
        envs = [wrap_env(env) for env in envs]
    if wrap_vec is not None:
        venv = wrap_vec(venv)
    agents = envs[0].possible_agents
    n, m, d = venv.n_agents, venv.n_arms, venv.message_dim
    public = int(venv.protocol.public_dim)
    horizon = venv.horizon if steps is None else min(steps, venv.horizon)
    rng = np.random.default_rng(seed)

    def same(where: str, ours: Any, theirs: Any) -> None:
        if not np.array_equal(np.asarray(ours), np.asarray(theirs)):
            raise AssertionError(f"{where}: vector {ours!r} != PettingZoo {theirs!r}")

    def compare(where: str, obs: dict[str, Any], pz_obs: list[dict[str, Any]]) -> None:
        got = inbox(obs["messages"], obs["mask"], obs.get("public_mask"), public) if d else None
        for b, per_agent in enumerate(pz_obs):
            for i, agent in enumerate(agents):
                theirs = per_agent[agent]
                for key in theirs:
                    if key == "messages":
                        assert got is not None
                        ours = got[b, i]
                    elif key == "arm":
                        ours = obs["arm"][b, i]
                    else:
                        ours = obs[key][b, i]
                    same(f"{where}, env {b}, {agent}, {key!r}", ours, theirs[key])

    for episode in range(episodes):
        first = seed if episode == 0 else None
        if episode == 0:
            obs, infos = venv.reset(seed=seed)
        pz = [env.reset(seed=None if first is None else first + b) for b, env in enumerate(envs)]
        compare(f"episode {episode}, reset", obs, [p[0] for p in pz])
        if "instance" in infos:
            for b, (_, pz_infos) in enumerate(pz):
                same(f"episode {episode}, env {b}, instance", infos["instance"][b],
                     pz_infos[agents[0]]["instance"])  # fmt: skip
        for t in range(1, horizon + 1):
            arms, messages = vector_actions(rng, t, num_envs, n, m, d)
            obs, rewards, _, truncs, infos = venv.step(arms, messages)
            results = []
            for b, env in enumerate(envs):
                actions: dict[str, Any]
                if d:
                    assert messages is not None
                    actions = {
                        a: {"arm": int(arms[b, i]), "message": messages[b, i]}
                        for i, a in enumerate(agents)
                    }
                else:
                    actions = {a: int(arms[b, i]) for i, a in enumerate(agents)}
                results.append(env.step(actions))
            where = f"episode {episode}, step {t}"
            compare(where, obs, [r[0] for r in results])
            for b, (_, pz_rew, _, pz_trunc, pz_infos) in enumerate(results):
                same(f"{where}, env {b}, rewards", rewards[b], [pz_rew[a] for a in agents])
                same(f"{where}, env {b}, truncations", truncs[b], [pz_trunc[a] for a in agents])
                for key in ("regret", "cumulative_regret"):
                    theirs = [pz_infos[a][key] for a in agents]
                    same(f"{where}, env {b}, {key}", infos[key][b], theirs)
                for key in ("peer_links", "server_links", "comm_cost", "cumulative_comm_cost"):
                    same(f"{where}, env {b}, {key}", infos[key][b], pz_infos[agents[0]][key])
                for key in _PER_AGENT_INFO:
                    if key in pz_infos[agents[0]]:
                        theirs = [pz_infos[a][key] for a in agents]
                        same(f"{where}, env {b}, {key}", infos[key][b], theirs)
                for key in _PER_ENV_INFO:
                    if key in pz_infos[agents[0]]:
                        theirs = pz_infos[agents[0]][key]
                        same(f"{where}, env {b}, {key}", infos[key][b], theirs)
                if "epsilon" in pz_infos[agents[0]]:
                    theirs = pz_infos[agents[0]]["epsilon"]
                    same(f"{where}, env {b}, epsilon", infos["epsilon"][b], theirs)
        if horizon < venv.horizon:
            return
        if episode + 1 < episodes:  # the vector env's autoreset: the next call resets
            arms, messages = vector_actions(rng, 0, num_envs, n, m, d)
            obs, rewards, _, truncs, infos = venv.step(arms, messages)
            same(f"episode {episode + 1}, autoreset rewards", rewards, np.zeros_like(rewards))
    venv.close()


def stepped_then_rolled(
    policy: Any,
    scenario: Any,
    stepped_for: int,
    seeds: tuple[int, ...] = (3, 4),
    before: Callable[[Any], None] | None = None,
) -> Any:
    """Play one episode of ``policy`` (a :class:`~fedbandit_env.vector.VectorPolicy` with
    a compiled step) on ``make_vec(scenario, len(seeds))``: the first ``stepped_for``
    steps through its ``act``, the rest rolled out by the core in compiled code; env
    ``b`` reset with ``seeds[b]`` and the policy with generator ``b``. ``before(policy)``
    runs before the rollout (to weaken it in a power check). Returns the vector env,
    its episode done: a compiled step replays its ``act`` when the regret
    (``unwrapped.core.cum_regret``) and the last delivery (``unwrapped.core.last_routed``)
    do not depend on ``stepped_for``.

    Raises:
        ValueError: Where the env stack does not roll out that policy's compiled step.

    Examples:
        >>> from baselines.ucb.vector import local_ucb
        >>> from fedbandit_env.scenario import Scenario
        >>> scenario = Scenario(n_agents=3, n_arms=2, horizon=20)
        >>> regret = [stepped_then_rolled(local_ucb(), scenario, k).unwrapped.core.cum_regret
        ...           for k in (0, 7, 20)]
        >>> all(np.array_equal(regret[0], r) for r in regret)
        True
    """
    from fedbandit_env.runner.vector_trials import compiled_act
    from fedbandit_env.vector import make_vec
    from fedbandit_env.vector.policy import VectorSpec

    needs = policy.requirements(scenario.n_agents, scenario.n_arms)
    venv = make_vec(scenario, len(seeds), needs)
    observations, _ = venv.reset(seed=list(seeds))
    policy.reset(VectorSpec.from_env(scenario.make_env(needs), len(seeds)),
                 [np.random.default_rng(b) for b in range(len(seeds))])  # fmt: skip
    for _ in range(stepped_for):
        arms, messages = policy.act(observations)
        observations, *_ = venv.step(arms, messages)
    if stepped_for < scenario.horizon:
        compiled = compiled_act(venv, policy)
        if compiled is None:
            raise ValueError(f"this env stack does not roll out {type(policy).__name__}")
        if before is not None:
            before(policy)
        venv.rollout(*compiled, np.array([scenario.horizon]),
                     np.zeros((len(seeds), scenario.n_agents, 1)))  # fmt: skip
    return venv


__all__ = [
    "Replay",
    "check_determinism",
    "check_parallel_env",
    "check_replay",
    "check_vector_replay",
    "stepped_then_rolled",
    "vector_actions",
]
