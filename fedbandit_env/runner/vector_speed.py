"""What each vector wrapper costs over the bare vector step, measured in one run (issue
62's target: every wrapper within 2x of the bare step).

Every wrapper a PettingZoo wrapper names as its vector form (``vector_form``) is built
over :func:`~fedbandit_env.vector.make_vec`'s env with sample arguments
(:data:`WRAPPER_ARGUMENTS`) and stepped with the same arms and messages as the bare env,
the stacks in turn within each round, so all see the same load; a stack's time is its
best round. ``fedbandit speed`` prints these ratios and ``fedbandit speed --docs`` writes
them into the generated page; ``examples/vector_speed.py`` prints them beside the vector
env's speed over the PettingZoo env's.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from fedbandit_env.policies import Requirements
from fedbandit_env.rng_kernels import (
    generator_at,
    generator_table,
    laplace_at,
    next_double_at,
    pcg64_distance,
)
from fedbandit_env.scenario import Scenario
from fedbandit_env.vector.make import make_vec

WRAPPER_ARGUMENTS: dict[str, tuple[Any, ...]] = {
    "LocalStatistics": (),
    "HeldMessages": (),
    "HorizonFree": (),
    "TeamPosterior": (),
    "ClipRewards": (0.0, 1.0),
    "PrivateRewards": (1.0,),
    "MessageLoss": (0.1,),
    "MessageDelay": (2,),
    "AgentCrash": (0.01, 0.1),
    "Byzantine": (1, "boost"),
}
"""Sample arguments of each wrapper's vector form (after the env)."""
BELOW = {"HorizonFree": "LocalStatistics"}
"""A wrapper that needs another below it (``HorizonFree`` reads the counts): its stack
holds both, and its ratio is the stack's."""
AUDIT_ONLY = {"ReplaceReward"}
"""Vector forms that are audit instruments, not layers of a stack (not measured)."""


def vector_wrappers() -> dict[str, Any]:
    """Every wrapper's vector form, by the wrapper's name (``wrappers.base.vector_form``).

    Examples:
        >>> "MessageLoss" in vector_wrappers()
        True
    """
    import fedbandit_env.wrappers as wrappers
    from fedbandit_env.wrappers.audit import ReplaceReward
    from fedbandit_env.wrappers.base import vector_form

    kinds = [getattr(wrappers, name) for name in wrappers.__all__] + [ReplaceReward]
    return {k.__name__: vector_form(k) for k in kinds if isinstance(k, type) and vector_form(k)}


def wrapper_ratios(
    scenario: Scenario, needs: Requirements, envs: int, steps: int, repeats: int
) -> dict[str, float | None]:
    """Each vector wrapper's seconds a step over the bare vector step's, the stacks
    stepped in turn within each round (``None``: no sample arguments for it, so a new
    vector form shows as not measured rather than being left out).

    Examples:
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=4, setting="neighbours")
        >>> ratios = wrapper_ratios(s, Requirements(message_dim=4), 2, 4, 1)
        >>> ratios["ClipRewards"] > 0, "ReplaceReward" in ratios
        (True, False)
    """
    forms = vector_wrappers()
    stacks: dict[str, Any] = {"bare": make_vec(scenario, envs, needs)}
    out: dict[str, float | None] = {}
    for name, form in forms.items():
        if name in AUDIT_ONLY:
            continue
        if name not in WRAPPER_ARGUMENTS:
            out[name] = None
            continue
        venv = make_vec(scenario, envs, needs)
        if name in BELOW:
            venv = forms[BELOW[name]](venv)
        stacks[name] = form(venv, *WRAPPER_ARGUMENTS[name])
    n, m, d = scenario.n_agents, scenario.n_arms, needs.message_dim
    rng = np.random.default_rng(0)
    arms = rng.integers(m, size=(8, envs, n))
    msgs = rng.random((8, envs, n, d))
    best = dict.fromkeys(stacks, np.inf)
    for r in range(repeats):
        for name, venv in stacks.items():
            venv.reset(seed=r)
            sends = name != "TeamPosterior"  # it sends the agents' messages itself
            begin = time.perf_counter()
            for t in range(steps - 1):
                if sends:
                    venv.step(arms[t % 8], msgs[t % 8])
                else:
                    venv.step(arms[t % 8])
            best[name] = min(best[name], time.perf_counter() - begin)
    out.update({name: best[name] / best["bare"] for name in stacks if name != "bare"})
    return out


def wrapper_lines(
    agents: int = 10,
    arms: int = 5,
    envs: int = 1024,
    steps: int = 300,
    repeats: int = 5,
    setting: str = "neighbours",
) -> list[str]:
    """:func:`wrapper_ratios` in ``setting`` (messages of ``2 arms`` numbers) as printed
    lines, the costliest last.

    Examples:
        >>> lines = wrapper_lines(3, 2, 2, 4, 1)
        >>> lines[0].startswith("vector wrappers over the bare vector step"), len(lines) > 5
        (True, True)
    """
    scenario = Scenario(n_agents=agents, n_arms=arms, horizon=max(steps, 1), setting=setting)
    ratios = wrapper_ratios(scenario, Requirements(message_dim=2 * arms), envs, steps, repeats)
    lines = [
        f"vector wrappers over the bare vector step ({setting}, N={agents}, M={arms}, "
        f"messages of {2 * arms} numbers, {envs} envs, {steps} steps, best of {repeats}; "
        "target <= 2x):"
    ]
    for name, ratio in sorted(ratios.items(), key=lambda kv: -1.0 if kv[1] is None else kv[1]):
        shown = "not measured (no sample arguments)" if ratio is None else f"{ratio:6.2f}x"
        over = f" (over Vec{BELOW[name]})" if name in BELOW else ""
        lines.append(f"  Vec{name:<22} {shown}{over}")
    return lines


DRAW_KINDS: dict[str, str] = {
    "MessageLoss": "uniform",
    "AgentCrash": "uniform",
    "PrivateRewards": "laplace",
}
"""What each drawing vector form takes from its streams, number by number as its
PettingZoo wrapper does (so that the two replay): ``Generator.random()`` or
``Generator.laplace()``."""


@njit(cache=True, nogil=True)
def draw_numbers(table: np.ndarray, counts: np.ndarray, laplace: bool) -> float:
    """Draw ``counts[b]`` numbers from generator ``b`` of ``table`` (uniforms, or
    Laplace with ``laplace``) through the kernels the vector forms draw with
    (:func:`~fedbandit_env.rng_kernels.next_double_at`,
    :func:`~fedbandit_env.rng_kernels.laplace_at`); returns their sum (so nothing is
    left out).

    Examples:
        >>> rngs = [np.random.default_rng(1)]
        >>> draw_numbers(generator_table(rngs), np.array([3]), False) == float(
        ...     np.random.default_rng(1).random(3).sum())
        True
    """
    total = 0.0
    for b in range(counts.shape[0]):
        slot = generator_at(table, b)
        for _ in range(counts[b]):
            total += laplace_at(slot) if laplace else next_double_at(slot)
    return total


def _drawing_layer(venv: Any) -> Any:
    """The outermost layer of a stack that keeps generators (``_rngs``)."""
    layer = venv
    while layer is not None and "_rngs" not in layer.__dict__:
        layer = getattr(layer, "env", None)
    return layer


def draw_floors(
    scenario: Scenario, needs: Requirements, envs: int, steps: int, repeats: int
) -> dict[str, tuple[float, float]]:
    """What the exact draws alone cost, for each vector form of :data:`DRAW_KINDS`:
    ``(draws an agent-step, seconds of those draws over the bare vector step's)``.

    The draws are counted, not assumed: each env's stream is read before and after the
    same ``steps - 1`` steps :func:`wrapper_ratios` plays
    (:func:`~fedbandit_env.rng_kernels.pcg64_distance`); then as many numbers of the
    form's kind are drawn from fresh generators by :func:`draw_numbers`, timed against
    the bare step in the same rounds. A vector form must draw these numbers to replay
    its PettingZoo wrapper, so its ratio over the bare step cannot be below ``1 +``
    this one (less only by drawing faster than these kernels).

    Examples:
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=6, setting="neighbours")
        >>> floors = draw_floors(s, Requirements(message_dim=4), 2, 6, 1)
        >>> floors["MessageLoss"][0]  # every delivered peer message: one uniform
        2.0
    """
    forms = vector_wrappers()
    n, m, d = scenario.n_agents, scenario.n_arms, needs.message_dim
    rng = np.random.default_rng(0)
    arms = rng.integers(m, size=(8, envs, n))
    msgs = rng.random((8, envs, n, d))
    bare = make_vec(scenario, envs, needs)
    counts: dict[str, np.ndarray] = {}
    for name in DRAW_KINDS:
        if name not in forms or name not in WRAPPER_ARGUMENTS:
            continue
        venv = forms[name](make_vec(scenario, envs, needs), *WRAPPER_ARGUMENTS[name])
        venv.reset(seed=0)
        layer = _drawing_layer(venv)
        before = [r.bit_generator.state for r in layer._rngs]
        for t in range(steps - 1):
            venv.step(arms[t % 8], msgs[t % 8])
        after = [r.bit_generator.state for r in layer._rngs]
        counts[name] = np.array([pcg64_distance(a, z) for a, z in zip(before, after, strict=True)])
    warm = [np.random.default_rng(0)]  # kept alive: the table holds its address
    for laplace in (False, True):  # compiled (or loaded) before the clock runs
        draw_numbers(generator_table(warm), np.array([1]), laplace)
    best = dict.fromkeys(["bare", *counts], np.inf)
    for r in range(repeats):
        bare.reset(seed=r)
        begin = time.perf_counter()
        for t in range(steps - 1):
            bare.step(arms[t % 8], msgs[t % 8])
        best["bare"] = min(best["bare"], time.perf_counter() - begin)
        for name, count in counts.items():
            table = generator_table(fresh := [np.random.default_rng(r) for _ in range(envs)])
            begin = time.perf_counter()
            draw_numbers(table, count, DRAW_KINDS[name] == "laplace")
            best[name] = min(best[name], time.perf_counter() - begin)
            del fresh
    agent_steps = envs * n * max(steps - 1, 1)
    return {name: (float(c.sum()) / agent_steps, best[name] / best["bare"])
            for name, c in counts.items()}  # fmt: skip


def floor_lines(
    agents: int = 10,
    arms: int = 5,
    envs: int = 1024,
    steps: int = 300,
    repeats: int = 5,
    setting: str = "neighbours",
) -> list[str]:
    """:func:`draw_floors` as printed lines, in :func:`wrapper_lines`' setting.

    Examples:
        >>> floor_lines(3, 2, 2, 4, 1)[1].split()[0]
        'VecMessageLoss'
    """
    scenario = Scenario(n_agents=agents, n_arms=arms, horizon=max(steps, 1), setting=setting)
    floors = draw_floors(scenario, Requirements(message_dim=2 * arms), envs, steps, repeats)
    lines = [
        f"the exact draws alone over the bare vector step ({setting}, N={agents}, M={arms}, "
        f"{envs} envs; a drawing vector form's ratio is at least 1 + this):"
    ]
    for name, (per_step, ratio) in floors.items():
        lines.append(
            f"  Vec{name:<22} {ratio:6.2f}x  ({per_step:.2f} {DRAW_KINDS[name]} draws an "
            "agent-step)"
        )
    return lines


__all__ = ["AUDIT_ONLY", "BELOW", "DRAW_KINDS", "WRAPPER_ARGUMENTS", "draw_floors", "draw_numbers",
           "floor_lines", "vector_wrappers", "wrapper_lines", "wrapper_ratios"]  # fmt: skip
