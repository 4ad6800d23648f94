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

from fedbandit_env.policies import Requirements
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


__all__ = ["AUDIT_ONLY", "BELOW", "WRAPPER_ARGUMENTS", "vector_wrappers", "wrapper_lines",
           "wrapper_ratios"]  # fmt: skip
