"""Throughput benchmark of the three ways to run a reference algorithm.

``fedbandit speed`` prints, measured in one run on this machine, agent-steps per second
of: the compiled fast path (one and all threads), the PettingZoo path (env + protocol +
wrappers + per-agent policies), a plain per-agent Python loop (the same policies fed
prebuilt observations, no env), and the PettingZoo path with a policy that does
nothing next to the bare dict-API cost; with the ratios between them and the first
call's compile (or cache-load) time. Ratios are what to compare across machines.
"""

from __future__ import annotations

import datetime
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.policies import IndependentTeam
from fedbandit_env.registry import make as make_team
from fedbandit_env.registry import tagged
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.rollout import rollout
from fedbandit_env.scenario.scenario import Scenario

SETTINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("N=10, M=10, complete", {"n_agents": 10, "n_arms": 10, "graph": "complete"}),
    (
        "N=50, M=100, ER deg~6",
        {"n_agents": 50, "n_arms": 100, "graph": "erdos_renyi", "graph_p": 6 / 49},
    ),
)


BUDGET_S = 3.0
"""Seconds a fast-path trial is given (a tenth with ``quick``): each policy's horizon is
cut to what its rate, probed on 200 steps, plays in that time, so a policy 100x slower
than another is measured as long, not 100x longer."""


@dataclass
class SpeedRow:
    """One measurement: agent-steps per second of one path.

    Examples:
        >>> SpeedRow("N=3", "gossip_ucb", "fast-1", 1e6, 0.5).path
        'fast-1'
    """

    setting: str
    policy: str
    path: str
    agent_steps_per_s: float
    seconds: float


def _scenario(setting: dict[str, Any], horizon: int) -> Scenario:
    return Scenario(instance="zhu", noise="clipped_gaussian", horizon=horizon, **setting)


def measure_fast(
    policy: str, setting: dict[str, Any], horizon: int, trials: int, workers: int
) -> float:
    """Agent-steps per second of :func:`run_fast` (after compilation).

    Examples:
        >>> small = {"n_agents": 3, "n_arms": 2, "graph": "complete"}
        >>> measure_fast("gossip_ucb", small, 50, 1, 1) > 0
        True
    """
    scenario = _scenario(setting, horizon)
    start = time.perf_counter()
    run_fast(policy, scenario, trials, record_every=horizon, progress=False, workers=workers)
    return trials * horizon * scenario.n_agents / (time.perf_counter() - start)


def speed_horizon(policy: str, setting: dict[str, Any], quick: bool = False) -> int:
    """The horizon ``fedbandit speed`` gives ``policy`` in ``setting``: what its fast path,
    probed on 200 steps of one trial, plays in :data:`BUDGET_S` (a tenth with ``quick``),
    at least 200 steps and at most the setting's cap (2,000,000 steps for ``N <= 10``,
    100,000 above; a tenth with ``quick``, at least 1000). The probe's time includes the
    run's set-up, so a policy's first call (which compiles or loads its cache) comes
    before, as :func:`run` makes it. Issue 62's speed gate
    (``examples/vector_gate.py --speed-line``) times a family there.

    Examples:
        >>> tiny = {"n_agents": 2, "n_arms": 2, "graph": "complete"}
        >>> 200 <= speed_horizon("random", tiny, quick=True) <= 200_000
        True
    """
    scale = 0.1 if quick else 1.0
    n = int(setting["n_agents"])
    cap = max(1000, int((2_000_000 if n <= 10 else 100_000) * scale))
    probe = measure_fast(policy, setting, 200, 1, 1)  # agent-steps a second
    return int(min(cap, max(200, probe * BUDGET_S * scale / n)))


def measure_pettingzoo(policy: str, setting: dict[str, Any], horizon: int) -> float:
    """Agent-steps per second of one episode through the PettingZoo API.

    Examples:
        >>> measure_pettingzoo("gossip_ucb", {"n_agents": 3, "n_arms": 2}, 20) > 0
        True
    """
    scenario = _scenario(setting, horizon)
    team = make_team(policy)  # its registered defaults (fed_ucb: epsilon 1)
    env = scenario.make_env(team.requirements(scenario.n_agents, scenario.n_arms))
    start = time.perf_counter()
    rollout(env, team, seed=0, record_every=horizon)
    return horizon * scenario.n_agents / (time.perf_counter() - start)


def measure_plain_loop(policy: str, setting: dict[str, Any], horizon: int) -> float:
    """Agent-steps per second of the per-agent policies alone, fed a fixed observation.

    Examples:
        >>> measure_plain_loop("gossip_ucb", {"n_agents": 3, "n_arms": 2}, 20) > 0
        True
    """
    scenario = _scenario(setting, max(horizon, int(setting["n_arms"]) + 2))
    team = make_team(policy)
    env = scenario.make_env(team.requirements(scenario.n_agents, scenario.n_arms))
    obs, _ = env.reset(seed=0)
    team.reset(env, seed=0)
    assert isinstance(team, IndependentTeam)
    for _ in range(scenario.n_arms + 1):  # leave the initial round-robin
        obs, *_ = env.step(team.act(obs))
    policies = team.policies
    agents = list(obs)
    start = time.perf_counter()
    for _ in range(horizon):
        for agent, pol in zip(agents, policies, strict=True):
            pol.act(obs[agent])
    return horizon * scenario.n_agents / (time.perf_counter() - start)


def measure_noop_env(
    setting: dict[str, Any], horizon: int, repeats: int = 5
) -> tuple[float, float]:
    """Microseconds per step of the env with fixed actions, and of the bare dict API,
    each the best of ``repeats`` episodes of ``horizon`` steps (the usual defence
    against a shared, noisy machine; both sides are measured the same way).

    The bare cost builds the same per-agent dicts (observation, reward, flags, info) a
    parallel env must return, with nothing computed.


    Examples:
        >>> env_us, bare_us = measure_noop_env({"n_agents": 3, "n_arms": 2}, 20)
        >>> env_us > 0 and bare_us > 0
        True
    """
    scenario = _scenario(setting, horizon)
    env = scenario.make_env()
    actions = dict.fromkeys(env.possible_agents, 0)
    agents = env.possible_agents
    zero = np.zeros(1, dtype=np.float32)
    env_s, bare_s = np.inf, np.inf
    for episode in range(repeats):
        env.reset(seed=episode)
        start = time.perf_counter()
        while env.agents:
            env.step(actions)
        env_s = min(env_s, time.perf_counter() - start)
        start = time.perf_counter()
        for t in range(horizon):
            obs = {a: {"arm": 0, "reward": zero, "step": zero} for a in agents}
            rew = dict.fromkeys(agents, 0.0)
            flags = dict.fromkeys(agents, False)
            infos: dict[str, dict[str, float]] = {a: {"regret": 0.0} for a in agents}
            del obs, rew, flags, infos, t
        bare_s = min(bare_s, time.perf_counter() - start)
    return env_s / horizon * 1e6, bare_s / horizon * 1e6


def cpu_name() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux), else ``platform``'s.

    Examples:
        >>> isinstance(cpu_name(), str)
        True
    """
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def markdown(rows: list[SpeedRow], lines: list[str], quick: bool) -> str:
    """The measurement as a page of the docs site (``fedbandit speed --docs``): the
    conditions, a table of every row and the printed ratios.

    Examples:
        >>> page = markdown([SpeedRow("N=3", "gossip_ucb", "fast-1", 2.5e6, 0.5)], ["x"], True)
        >>> "| N=3 | `gossip_ucb` | fast-1 | 2,500,000 |" in page
        True
    """
    from fedbandit_env.files import package_versions

    versions = ", ".join(f"{k} {v}" for k, v in sorted(package_versions().items()))
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# Speed, measured",
        "",
        "Generated by `fedbandit speed --docs`"
        + (" `--quick`" if quick else "")
        + ", never edited: agent-steps per second of each policy tagged `speed`, on the",
        "compiled fast path (one thread and every core), the PettingZoo path and a plain",
        "per-agent Python loop, measured in one run, then every vector wrapper's step as a",
        "multiple of the bare vector step's (`fedbandit_env.runner.vector_speed`). Machines",
        "here are shared and noisy: compare the ratios, which are measured side by side,",
        "rather than the rates.",
        "",
        f"- measured: {when}; {os.cpu_count() or 1} cores, {cpu_name()}",
        f"- Python {platform.python_version()}; {versions}",
        "",
        "| setting | policy | path | agent-steps/s |",
        "|---|---|---|---|",
    ]
    out += [f"| {r.setting} | `{r.policy}` | {r.path} | {r.agent_steps_per_s:,.0f} |" for r in rows]
    out += ["", "What `fedbandit speed` printed:", "", "```text", *lines, "```", ""]
    return "\n".join(out)


def run(quick: bool = False, docs: str | Path | None = None) -> list[SpeedRow]:
    """Measure and print the table; returns the rows. With ``docs``, also write the
    measurement as a Markdown page there (:func:`markdown`).

    Examples:
        >>> import inspect  # ``fedbandit speed`` calls it; a full run takes ~2 minutes
        >>> list(inspect.signature(run).parameters)
        ['quick', 'docs']
    """
    workers = os.cpu_count() or 1
    rows: list[SpeedRow] = []
    lines: list[str] = []
    scale = 0.1 if quick else 1.0

    def say(line: str) -> None:  # printed, and kept for the page
        lines.append(line)
        print(line, flush=True)

    say(f"agent-steps per second on this machine ({workers} cores), measured in one run")
    for name, setting in SETTINGS:
        n = int(setting["n_agents"])
        slow_t = max(50, int((2000 if n <= 10 else 200) * scale))
        measured = tagged("speed")  # the registered policies tagged 'speed'
        for policy in measured:
            start = time.perf_counter()
            measure_fast(policy, setting, 200, 1, 1)  # first call: compile or load cache
            first = time.perf_counter() - start
            horizon = speed_horizon(policy, setting, quick)
            fast1 = measure_fast(policy, setting, horizon, 2, 1)
            fastw = measure_fast(policy, setting, horizon, 2 * workers, workers)
            pz = measure_pettingzoo(policy, setting, slow_t)
            plain = measure_plain_loop(policy, setting, slow_t)
            say(
                f"{name:<22} {policy:<11} fast {fast1 / 1e6:7.2f} M (1 thread) "
                f"{fastw / 1e6:7.2f} M ({workers} threads) | PettingZoo {pz / 1e3:8.1f} k | "
                f"plain loop {plain / 1e3:8.1f} k | fast/PettingZoo {fastw / pz:7.0f}x "
                f"fast/plain {fastw / plain:6.0f}x | first call {first:5.1f} s"
            )
            rows += [
                SpeedRow(name, policy, "fast-1", fast1, first),
                SpeedRow(name, policy, f"fast-{workers}", fastw, 0.0),
                SpeedRow(name, policy, "pettingzoo", pz, 0.0),
                SpeedRow(name, policy, "plain", plain, 0.0),
            ]
        one = {
            r.policy: r.agent_steps_per_s for r in rows if r.setting == name and r.path == "fast-1"
        }
        for policy in measured[1:]:  # each beside the first, in one run
            say(
                f"{name:<22} {policy} time / {measured[0]} time on the fast path: "
                f"{one[measured[0]] / one[policy]:.2f}"
            )
        env_us, bare_us = measure_noop_env(setting, max(200, int(2000 * scale)))
        say(
            f"{name:<22} PettingZoo step, do-nothing policy: {env_us:7.1f} us; bare dict "
            f"API: {bare_us:6.1f} us; ratio {env_us / bare_us:.1f}; target <= 2 x (9 + 0.4 N) "
            f"= {2 * (9 + 0.4 * n):.0f} us"
        )
    from fedbandit_env.runner.vector_speed import wrapper_lines

    for line in wrapper_lines(steps=max(30, int(300 * scale))):
        say(line)
    if docs is not None:
        from fedbandit_env.files import write_text_atomic

        print(f"wrote {write_text_atomic(docs, markdown(rows, lines, quick))}")
    return rows
