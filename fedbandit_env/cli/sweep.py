"""``fedbandit sweep``: a grid of scenarios x policies x seeds, in parallel, resumable.

Every combination of the ``--grid`` values (on top of the other options) is a scenario;
each policy runs trials ``0 .. trials - 1`` on each, through the same
:func:`~fedbandit_env.runner.evaluate.evaluate` as ``fedbandit bench``. Finished runs
are kept in ``OUT/runs``, so the same command resumes an interrupted sweep.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedbandit_env import registry
from fedbandit_env.cli.applies import (
    duration_estimate,
    has_fast_path,
    long_run_warning,
    preflight,
)
from fedbandit_env.cli.options import (
    add_setting_options,
    import_modules,
    parse_policies,
    policy_kwargs,
    scenario_from_args,
)
from fedbandit_env.cli.report import (
    check_drawn_instances,
    instance_record,
    problem_record,
)
from fedbandit_env.extras import MissingExtra
from fedbandit_env.runner.evaluate import is_model
from fedbandit_env.runner.results import (
    format_table,
    summary_rows,
    write_config,
    write_csv,
    write_parquet,
)
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.runner.sweep import Run, run_sweep, stored_runs
from fedbandit_env.scenario.instances import instance_names

PARSER_KWARGS: dict[str, Any] = {
    "formatter_class": argparse.ArgumentDefaultsHelpFormatter,
    "description": "Every combination of the --grid values (on top of the other options) "
    "is a scenario; each policy runs trials 0..trials-1 on each. Finished runs are "
    "kept in OUT/runs, so the same command resumes an interrupted sweep.",
}
USES_CONFIG = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The setting options, ``--grid`` and the engine (``--jobs``, ``--cluster``).

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["--grid", "graph=ring,star"]).grid
        ['graph=ring,star']
    """
    add_setting_options(parser, out=Path("results/sweep"))
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="OPTION=V1,V2",
        help="an axis of the grid: a setting option and its values (repeatable; "
        "components values are separated by '/', e.g. components=20x5/1x100)",
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="local worker processes"
    )
    parser.add_argument(
        "--cluster",
        default=None,
        help="run on Dask: 'local' or 'local:N' (a LocalCluster of N workers) or a "
        "scheduler address tcp://host:8786",
    )


GRID_EXCLUDED = frozenset(
    {"policies", "trials", "out", "no_plot", "no_progress", "config", "grid", "jobs"}
    | {"cluster", "record_every", "imports"}
)
"""Options that are not axes of a sweep's grid (``policies`` and ``trials`` are axes
already; the rest say how to run, not what)."""


def parse_grid(specs: Sequence[str], base: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    """Grid points from ``--grid OPTION=V1,V2`` specs: ``(label, {option: value})`` for
    every combination, the first axis slowest. A later spec of the same option replaces
    an earlier one (the command line overrides a config file). No spec: one point,
    ``"base"``.

    Examples:
        >>> from fedbandit_env.cli import build_parser
        >>> base = build_parser().parse_args(["sweep"])
        >>> [label for label, _ in parse_grid(["graph=complete,ring", "epsilon=1"], base)]
        ['graph=complete,epsilon=1', 'graph=ring,epsilon=1']
    """
    axes: dict[str, list[str]] = {}
    for spec in specs:
        key, sep, text = spec.partition("=")
        option = key.strip().lstrip("-").replace("_", "-")
        dest = option.replace("-", "_")
        if not sep or not option or not text.strip():
            raise ValueError(f"--grid must look like OPTION=V1,V2, got {spec!r}")
        if dest not in vars(base) or dest in GRID_EXCLUDED:
            allowed = sorted(k.replace("_", "-") for k in vars(base) if k not in GRID_EXCLUDED)
            raise ValueError(f"--grid {option!r} is not a setting option; choose from {allowed}")
        split = "/" if option == "components" else ","
        values = [v.strip() for v in text.split(split) if v.strip()]
        if len(set(values)) != len(values):
            raise ValueError(f"--grid {option} lists a value twice: {text!r}")
        axes[option] = values
    if not axes:
        return [("base", {})]
    points = []
    for combo in itertools.product(*axes.values()):
        point = dict(zip(axes, combo, strict=True))
        points.append((",".join(f"{k}={v}" for k, v in point.items()), point))
    return points


def runs_in(policy: str, setting: str | None) -> bool:
    """Whether ``policy`` is meant for ``setting`` (saved models: always; they refuse a
    setting whose env they cannot read when they run).

    Examples:
        >>> runs_in("fed_ucb", "local"), runs_in("local_ucb", "gossip"), runs_in("p:m.zip", "x")
        (False, True, True)
    """
    if setting is None or is_model(policy):
        return True
    return registry.spec(policy).runs_in(setting)


def sweep_runs(args: argparse.Namespace) -> tuple[list[Run], dict[str, Any]]:
    """The runs of ``fedbandit sweep`` and the configuration of each scenario.

    Each grid point's options are parsed by the same parser as the command line, on top
    of the other options, so they are checked the same way.

    Examples:
        >>> from fedbandit_env.cli import build_parser
        >>> args = build_parser().parse_args(["sweep", "--policies", "random,local_ucb",
        ...     "--grid", "graph=complete,ring", "--trials", "3"])
        >>> runs, scenarios = sweep_runs(args)
        >>> len(runs), sorted(scenarios)
        (12, ['graph=complete', 'graph=ring'])
    """
    imports = import_modules(args.imports)
    ids = parse_policies(
        args.policies, args.setting, args.instance in instance_names(linear=True), args.instance
    )
    if args.trials < 1:
        raise ValueError(f"--trials must be >= 1, got {args.trials}")
    values = argparse.ArgumentParser(prog="fedbandit sweep --grid", add_help=False)
    add_setting_options(values, out=args.out)
    runs: list[Run] = []
    scenarios: dict[str, Any] = {}
    for label, point in parse_grid(args.grid, args):
        ns = copy.copy(args)
        for option, value in point.items():
            values.parse_args([f"--{option}={value}"], namespace=ns)
        scenario = scenario_from_args(ns)
        check_drawn_instances(scenario, ns)
        problem = scenario.problem()
        record_every = ns.record_every or max(1, scenario.horizon // 100)
        here = [p for p in ids if runs_in(p, scenario.setting)]
        options = {pid: ({} if is_model(pid) else policy_kwargs(pid, ns, problem)) for pid in here}
        scenarios[label] = {
            "point": point,
            "scenario": scenario.to_dict(),
            "seed": ns.seed,
            "record_every": record_every,
            "policy_options": options,
            "instances": instance_record(scenario, ns.seed, args.trials),
            **problem_record(problem),
            "skipped": [p for p in ids if p not in here],  # not meant for this setting
        }
        for pid in here:
            for trial in range(args.trials):
                runs.append(
                    Run(label, scenario, pid, options[pid], ns.seed, trial, record_every, imports)
                )
    return runs, scenarios


def sweep(args: argparse.Namespace) -> list[RegretCurves]:
    """Run ``fedbandit sweep`` from parsed arguments; returns one curve per (scenario,
    policy).

    Writes ``sweep.json`` first (so an interrupted sweep keeps its configuration), each
    finished run to ``runs/``, then the tidy ``results.csv`` (and ``results.parquet``),
    a table per scenario and the plots.

    Examples:
        >>> import tempfile
        >>> from fedbandit_env.cli import build_parser
        >>> args = build_parser().parse_args(["sweep", "--policies", "random", "--horizon",
        ...     "20", "--grid", "graph=complete,ring", "--trials", "2", "--jobs", "1",
        ...     "--no-plot", "--no-progress", "--out", tempfile.mkdtemp()])
        >>> [(c.scenario, c.regret.shape) for c in sweep(args)]  # doctest: +ELLIPSIS
        sweep: 4 runs ...
        [('graph=complete', (2, 10, 20)), ('graph=ring', (2, 10, 20))]
    """
    runs, scenarios = sweep_runs(args)
    preflight(
        args,
        parse_policies(
            args.policies, args.setting, args.instance in instance_names(linear=True), args.instance
        ),
    )
    out: Path = args.out
    config: dict[str, Any] = {
        "command": "sweep",
        "argv": sys.argv[1:],
        "grid": list(args.grid),
        "policies": parse_policies(
            args.policies, args.setting, args.instance in instance_names(linear=True)
        ),
        "trials": args.trials,
        "scenarios": scenarios,
        "runs": [r.describe() for r in runs],
        "engine": {"jobs": args.jobs, "cluster": args.cluster},
    }
    write_config(config, out / "sweep.json")
    keys = {r.key for r in runs}
    done = len(stored_runs(out / "runs", keys))  # sets damaged run files aside, saying so
    engine_text = f"dask cluster {args.cluster}" if args.cluster else f"{args.jobs} local jobs"
    print(
        f"sweep: {len(runs)} runs ({len(scenarios)} scenarios x "
        f"{len(config['policies'])} policies x {args.trials} seeds; {len(keys)} distinct), "
        f"{done} already done, "
        f"on {engine_text}"
    )
    fast = {p: has_fast_path(p) for p in config["policies"]}
    seconds = sum(
        duration_estimate(r.scenario.n_agents, r.scenario.horizon, 1, [fast.get(r.policy, False)])
        for r in runs
        if isinstance(r.policy, str)
    ) / (1 if args.cluster else max(1, args.jobs))
    if (warning := long_run_warning(seconds)) is not None:
        print(f"fedbandit: warning: {warning}", file=sys.stderr)
    start = time.perf_counter()
    curves = run_sweep(
        runs, out, jobs=args.jobs, cluster=args.cluster, progress=not args.no_progress
    )
    elapsed = time.perf_counter() - start
    for label in scenarios:
        print(f"\n[{label}]")
        print(format_table([c for c in curves if c.scenario == label]))
    config["summary"] = [
        {"scenario": c.scenario, **row} for c, row in zip(curves, summary_rows(curves), strict=True)
    ]
    config["seconds"] = elapsed
    write_config(config, out / "sweep.json")
    written = [write_csv(curves, out / "results.csv")]
    parquet = write_parquet(curves, out / "results.parquet")
    written += [parquet] if parquet is not None else []
    if not args.no_plot:
        from fedbandit_env.runner.plot import plot_results

        try:
            written += plot_results(out / "results.csv", out)
        except MissingExtra as err:  # the results are written; the picture needs an extra
            print(f"fedbandit: no plot: {err}", file=sys.stderr)
    print(f"wrote {', '.join(str(w) for w in written)} in {elapsed:.1f}s")
    return curves


def run(args: argparse.Namespace) -> None:
    """The subcommand's entry point; an interruption says how to resume (exit 130)."""
    try:
        sweep(args)
    except KeyboardInterrupt:
        print(
            f"fedbandit: interrupted; finished runs are kept in {args.out / 'runs'}: "
            "run the same command again to resume",
            file=sys.stderr,
        )
        raise SystemExit(130) from None


__all__ = ["add_arguments", "parse_grid", "run", "sweep", "sweep_runs"]
