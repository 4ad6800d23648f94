"""``fedbandit tune``: a tunable policy's parameters, searched on train instances with the
vector env (:mod:`fedbandit_env.runner.tune`).

Example::

    fedbandit tune --setting neighbours --horizon 200       # writes runs/tuned/neighbours.json
    fedbandit bench --setting neighbours --held-out --horizon 200 --trials 300 \\
        --policies tuned:runs/tuned/neighbours.json,coop_ts,coop_ts_relay,gossip_ucb
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fedbandit_env import registry
from fedbandit_env.cli.applies import FAST_RATE, long_run_warning
from fedbandit_env.cli.options import add_setting_options, parse_count, scenario_from_args
from fedbandit_env.cli.train import hide_bench_options, refuse_bench_options

PARSER_KWARGS: dict[str, Any] = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter}
TUNE_OUT = Path("runs/tuned")
TUNE_DEFAULTS: dict[str, Any] = {
    "horizon": 200,
    "setting": "neighbours",
    "out": TUNE_OUT,
    "instance": "biased",
    "instances": "train",
}
"""The learning default (as ``fedbandit train``'s): ``biased`` train instances, T = 200."""
GENERATIONS = 16
"""The search's length when no ``--budget`` is given: this many generations at any
horizon (the budget scales with population x episodes x N x T, so T = 20,000 is 100
times T = 200's 49M agent-steps, and the long-run warning says how long that takes)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The setting options, the policy, the search's size and seed.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--budget", "1e6"])
        >>> a.policy, a.budget, a.setting, a.instances, a.population
        (None, 1000000, 'neighbours', 'train', 24)
        >>> p.parse_args([]).budget is None  # GENERATIONS generations at any horizon
        True
    """
    add_setting_options(parser, out=TUNE_OUT)
    parser.set_defaults(**TUNE_DEFAULTS)
    parser.add_argument(
        "--policy",
        default=None,
        help="a tunable policy's id (default: the first registered with the tag 'tunable' "
        "that runs in --setting; see `fedbandit list`)",
    )
    parser.add_argument(
        "--budget",
        type=parse_count,
        default=None,
        help="agent-steps the search may play (generations = budget / (population x "
        f"episodes x N x T)); default: {GENERATIONS} generations at any horizon, "
        "49M agent-steps at N = 10, T = 200",
    )
    parser.add_argument(
        "--population", type=parse_count, default=24, help="candidates per generation"
    )
    parser.add_argument(
        "--episodes",
        type=parse_count,
        default=64,
        help="train episodes per candidate and generation",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier tune's file at --out (refused without it)",
    )
    parser.add_argument(
        "--elite", type=float, default=0.2, help="share of a generation the search moves to"
    )
    hide_bench_options(parser)


def _default_policy(setting: str) -> str:
    """The first policy tagged ``tunable`` that runs in ``setting``.

    Examples:
        >>> _default_policy("neighbours") in registry.tagged("tunable")
        True
    """
    for pid in registry.tagged("tunable"):
        if registry.spec(pid).runs_in(setting):
            return pid
    raise ValueError(f"no policy tagged 'tunable' runs in the {setting!r} setting")


def strongest_references(setting: str, exclude: str = "") -> list[str]:
    """The policies tagged ``strongest`` (then ``local``) that run in ``setting``: what a
    tuned result is benched beside.

    Examples:
        >>> all(registry.spec(p).runs_in("gossip") for p in strongest_references("gossip"))
        True
    """
    return [
        p
        for p in registry.tagged("strongest")
        if p != exclude and registry.spec(p).runs_in(setting)
    ]


def run(args: argparse.Namespace) -> None:
    """Tune, save, and say how to bench the result on held-out instances."""
    from fedbandit_env.files import check_writable
    from fedbandit_env.runner.tune import tune

    refuse_bench_options(args, "tune")
    if args.epsilon != 1.0 and not (args.setting or "").endswith("+private"):
        raise ValueError(
            f"--epsilon {args.epsilon} changes nothing in the {args.setting!r} setting: "
            "no noise is drawn (use a +private setting)"
        )
    if args.setting is None:
        raise ValueError("fedbandit tune needs --setting (the setting it is tuned for)")
    private = args.setting.endswith("+private")
    policy = args.policy or _default_policy(args.setting)
    spec = registry.spec(policy)
    if not spec.runs_in(args.setting):
        raise ValueError(
            f"{policy} is not meant for the {args.setting!r} setting; it runs in "
            f"{list(spec.settings or ())}"
        )
    scenario = scenario_from_args(args)
    fixed = spec.options({"epsilon": args.epsilon}, None) if private else {}
    per_generation = args.population * args.episodes * scenario.n_agents * scenario.horizon
    budget = GENERATIONS * per_generation if args.budget is None else args.budget
    generations = budget // per_generation
    if generations < 1:
        raise ValueError(
            f"--budget {args.budget} is below one generation ({per_generation:,} agent-steps "
            f"at T = {scenario.horizon}: population x episodes x N x T); {GENERATIONS} "
            f"generations, the default, need --budget {GENERATIONS * per_generation:.3g}"
        )
    if generations < 4:
        print(
            f"fedbandit: warning: --budget {args.budget} is {generations} generation(s) at "
            f"T = {scenario.horizon}: the search barely moves from its start ({GENERATIONS} "
            f"generations, the default, need --budget {GENERATIONS * per_generation:.3g})",
            file=sys.stderr,
        )
    out = Path(args.out)
    if out.suffix != ".json":  # a folder: one file per setting
        out = out / f"{args.setting}.json"
    check_writable(out.parent)  # before the search, not after
    if out.exists() and not args.overwrite:
        raise ValueError(
            f"{out} holds an earlier tune's result; pass --overwrite to replace it, or "
            "--out another path"
        )
    seconds = generations * per_generation / FAST_RATE
    if (warning := long_run_warning(seconds, "lower --budget")) is not None:
        print(f"fedbandit: warning: {warning}", file=sys.stderr)
    print(
        f"tuning {policy} in the {args.setting!r} setting on train instances of "
        f"{scenario.distribution_name}, T={scenario.horizon}: {generations} generations of "
        f"{args.population} candidates x {args.episodes} episodes "
        f"({generations * per_generation:,} agent-steps, about {seconds / 60:.0f} min at "
        f"{FAST_RATE / 1e6:.0f} M agent-steps/s)"
    )
    result = tune(
        policy, scenario, generations=generations, population=args.population,
        episodes=args.episodes, elite=args.elite, seed=args.seed,
        progress=not args.no_progress, fixed=fixed,
    )  # fmt: skip
    path = result.save(out)
    found = ", ".join(f"{k}={v:.4g}" for k, v in result.parameters.items())
    print(f"found {found} in {result.seconds:.0f}s; wrote {path}")
    refs = ",".join(strongest_references(args.setting, exclude=policy))
    print(
        "evaluate it on held-out instances beside the setting's strongest references:\n"
        f"  fedbandit bench --setting {args.setting} --held-out --instance {args.instance} "
        f"--horizon {args.horizon} --trials 300 --policies tuned:{path},{refs}"
    )
