"""Issue 62's speed gate, in one run: a family's vector form rolled out by the core
(``CompiledTrials``) against the family's own whole-trial loop (its registered fast
path), on the ``fedbandit speed`` grid.

Both play the same trials (checked: the regret curves must be equal, or the script says
so); they are timed in turn after a warm-up call each, best of ``--repeats``, and the
printed ratio is the vector form's speed over the loop's (the gate: at least 0.8 before
the loop may go). Gossip_UCB and Fed_UCB are the families whose loop still stands (CDP-,
DDP- and HDP-MAB's went once their gate was read: ``baselines/elimination/fast.py``
says what it read).

    python examples/vector_gate.py
    python examples/vector_gate.py --policy fed_ucb --speed-line   # where the gate is read
    python examples/vector_gate.py --policy fed_ucb --workers 2
    python examples/vector_gate.py --trials 32
    python examples/vector_gate.py --size big --horizon 20000
    python examples/vector_gate.py --size big --core   # what the core's rollout costs alone
    python examples/vector_gate.py --against old_vector:gossip_ucb --repeats 25 --horizon 10000

The gate is read on the ``fedbandit speed`` line, which gives each policy the horizon
its fast path would play in about three seconds a trial at the rate a 200-step probe
measures, its set-up included (so horizons of some hundred thousand steps at the small
size, up to 2,000,000, and up to 100,000 at the big one:
:func:`~fedbandit_env.runner.speed.speed_horizon`): ``--speed-line`` times the two
there. The sizes' default horizons are quicker to run, but a fixed cost (setting up the
envs, a Python call per block) and the first steps weigh more in them.

``--against module:factory`` also times another vector form of the same policy in the same
run (say, the family's modules as a commit had them, copied under other names onto
``PYTHONPATH``: ``git show REV:baselines/gossip/vector.py``), so a change to a step is
measured against what it replaced in one process, alternating: this machine's noise
moves a ratio measured in separate runs by more than most such changes. Short horizons
and many repeats give the steadiest best-of.

``--core`` also times the same rollout with the family's step replaced by one that does
no algorithm (each agent pulls one arm throughout and sends a full row of the same
width, listing nothing), so the vector form's time splits into the core's part (env
step, routing, the wire's checks and float32 copy of every row; under private rewards
the trees, which then close with the fewest draws, as for a policy that has settled:
one that still explores draws more) and the family's step; its trials are not the
family's. Where the family's step lists the entries it writes
(``core.kernels.WireChanges``: Gossip_UCB's with long messages) its wire costs less than
that, and the split overstates the core's part.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

import numpy as np
from numba import njit

from baselines.gossip.vector import GossipVector
from fedbandit_env import registry
from fedbandit_env.core.kernels import UNCOUNTED
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.speed import measure_fast, speed_horizon
from fedbandit_env.runner.vector_trials import CompiledTrials
from fedbandit_env.scenario import Scenario

VECTOR_FORMS = {
    "gossip_ucb": ("baselines.gossip.vector:gossip_ucb", "gossip"),
    "fed_ucb": ("baselines.gossip.vector:fed_ucb", "gossip+private"),
}
"""Each policy whose loop stands beside its vector form: the form's factory and the
setting it is measured in (``None``: the policy's own protocol)."""

SIZES = {
    "small": ({"n_agents": 10, "n_arms": 10, "graph": "complete"}, 40_000),
    "big": ({"n_agents": 50, "n_arms": 100, "graph": "erdos_renyi", "graph_p": 6 / 49}, 4000),
}
"""The ``fedbandit speed`` grid's two settings and a default horizon for each."""


@njit(nogil=True, **UNCOUNTED)
def wire_only(last: Any, seen: Any, t: int, heard: Any, mask: Any, counts: Any, arms: Any,
              sent: Any) -> None:  # pragma: no cover  # fmt: skip
    """A talking step with no algorithm: agent ``i`` pulls arm ``i mod M`` every step
    (pulling the arms in turn instead made every private tree draw for every stream at
    each high level's close: a cost no settled policy pays) and sends a row of ones
    (every entry a number the wire checks and copies)."""
    n_envs, n = last.shape
    m = counts.shape[2]
    for b in range(n_envs):
        for i in range(n):
            arms[b, i] = i % m
            for k in range(sent.shape[2]):
                sent[b, i, k] = 1.0


class CoreAlone(GossipVector):
    """The vector form with :func:`wire_only` as its compiled step: the core's rollout
    over the same env, the same protocol and the same message width."""

    def kernel(self) -> Any:
        """:func:`wire_only` and a state array of the policy's shape."""
        return wire_only, (self.state[:, :, 0],)


def timed(runner: Any, scenario: Scenario, trials: int, workers: int) -> tuple[float, Any]:
    """Seconds of one ``run_fast`` call of ``runner`` (a registry spec) and its curves."""
    start = time.perf_counter()
    curves = run_fast(runner, scenario, trials, record_every=scenario.horizon,
                      progress=False, workers=workers)  # fmt: skip
    return time.perf_counter() - start, curves


def gate_scenario(policy: str, size: str, horizon: int = 0) -> tuple[Scenario, str]:
    """The ``fedbandit speed`` grid's scenario for ``policy`` at ``size`` (its setting,
    private rewards where the form reads them; ``horizon`` 0: the size's default) and
    the policy's vector form (``module:factory``).

    Examples:
        >>> scenario, factory = gate_scenario("fed_ucb", "small")
        >>> scenario.n_agents, scenario.setting, factory
        (10, 'gossip+private', 'baselines.gossip.vector:fed_ucb')
    """
    setting, default = SIZES[size]
    factory, information = VECTOR_FORMS[policy]
    private = {"epsilon": 1.0} if "private" in (information or "") else {}
    scenario = Scenario(instance="zhu", noise="clipped_gaussian", setting=information,
                        horizon=horizon or default, **private, **setting)  # fmt: skip
    return scenario, factory


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Measure and print; returns the loop's and the vector form's best seconds and the
    ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy", choices=sorted(VECTOR_FORMS), default="gossip_ucb")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    horizon = parser.add_mutually_exclusive_group()
    horizon.add_argument("--horizon", type=int, default=0, help="0: the size's default")
    horizon.add_argument(
        "--speed-line",
        action="store_true",
        help="the horizon `fedbandit speed` gives the policy at this size (its loop "
        "probed: about BUDGET_S a trial, up to the size's cap), where the gate is read",
    )
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--against", default="", help="another vector form, module:factory")
    parser.add_argument(
        "--core",
        action="store_true",
        help="also time the core's rollout with a step that does no algorithm",
    )
    args = parser.parse_args(argv)
    if args.speed_line:  # as `fedbandit speed`: a first call compiles, then the probe
        measure_fast(args.policy, SIZES[args.size][0], 200, 1, 1)
        args.horizon = speed_horizon(args.policy, SIZES[args.size][0])
    scenario, factory = gate_scenario(args.policy, args.size, args.horizon)
    information = VECTOR_FORMS[args.policy][1]
    loop = registry.spec(args.policy)
    vector = replace(loop, fast_entry_point=CompiledTrials(factory))
    runners = {"loop": loop, "vector": vector}
    if args.against:
        runners["against"] = replace(loop, fast_entry_point=CompiledTrials(args.against))
    if args.core:
        family = CompiledTrials(factory)
        alone = CompiledTrials(lambda **params: CoreAlone(family.policy(params).template))
        runners["core"] = replace(loop, fast_entry_point=alone)
    best = {name: np.inf for name in runners}
    curves: dict[str, Any] = {}
    for runner in runners.values():  # warm-up: compile or load the caches
        timed(runner, scenario, args.trials, args.workers)
    for _ in range(args.repeats):
        for name, runner in runners.items():
            seconds, curves[name] = timed(runner, scenario, args.trials, args.workers)
            best[name] = min(best[name], seconds)
    same = np.array_equal(curves["loop"].regret, curves["vector"].regret)
    ratio = best["loop"] / best["vector"]
    where = information or "its own protocol"
    print(f"{args.policy}, {where}, {args.size} (N={scenario.n_agents}, "
          f"M={scenario.n_arms}, T={scenario.horizon}"
          f"{': the speed line' if args.speed_line else ''}), {args.trials} trials, "
          f"{args.workers} thread(s), best of {args.repeats}, one run")  # fmt: skip
    print(f"loop {best['loop']:.3f} s, vector form {best['vector']:.3f} s: the vector form "
          f"runs at {ratio:.2f}x the loop's speed (gate: 0.8); same trials: {same}")  # fmt: skip
    result = {"loop": best["loop"], "vector": best["vector"], "ratio": ratio, "same": same,
              "horizon": scenario.horizon}  # fmt: skip
    if args.against:
        also = np.array_equal(curves["loop"].regret, curves["against"].regret)
        print(f"{args.against} {best['against']:.3f} s: {best['loop'] / best['against']:.2f}x "
              f"the loop's speed; same trials: {also}")  # fmt: skip
        result["against"], result["same_against"] = best["against"], also
    if args.core:
        steps = args.trials * scenario.horizon * scenario.n_agents / 1e9
        print(
            f"per agent-step: loop {best['loop'] / steps:.0f} ns, vector form "
            f"{best['vector'] / steps:.0f} ns = the core's rollout {best['core'] / steps:.0f} "
            f"ns + the family's step {(best['vector'] - best['core']) / steps:.0f} ns"
        )
        result["core"] = best["core"]
    return result


if __name__ == "__main__":
    main()
