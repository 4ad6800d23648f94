"""The ``fedbandit`` command.

``fedbandit bench`` runs reference policies on a scenario and writes a table, a regret
plot, the raw per-agent curves (CSV) and the configuration.

Example:
    >>> parser = build_parser()
    >>> args = parser.parse_args(["bench", "--policies", "random", "--horizon", "10"])
    >>> args.policies, args.horizon
    ('random', 10)
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

import numpy as np

from fedbandit_env.network.graph import GRAPH_KINDS
from fedbandit_env.problems.mab import NOISE_KINDS
from fedbandit_env.protocols import PROTOCOLS
from fedbandit_env.runner.evaluate import evaluate, is_model
from fedbandit_env.runner.results import (
    format_table,
    summary_rows,
    write_config,
    write_csv,
    write_parquet,
)
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.runner.scenario import INSTANCES, Scenario
from fedbandit_env.runner.sweep import Run, run_sweep

DEFAULT_POLICIES = "gossip_ucb,fed_ucb,cdp_mab,ddp_mab,hdp_mab,local_ucb,oracle_ucb,random"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``fedbandit`` (subcommand ``bench``).

    Example:
        >>> build_parser().parse_args(["speed", "--quick"]).quick
        True
    """
    parser = argparse.ArgumentParser(
        prog="fedbandit", description="Federated bandit environments and benchmarks."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sp = sub.add_parser(
        "speed",
        help="agent-steps per second of the fast path, the PettingZoo path and a plain loop",
    )
    sp.add_argument("--quick", action="store_true", help="a tenth of the default work")
    b = sub.add_parser(
        "bench",
        help="benchmark policies on one scenario",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_setting_options(b, out=Path("results/bench"))
    b.add_argument(
        "--interactive",
        action="store_true",
        help="run every policy through the PettingZoo path (default: the compiled fast "
        "path where a policy has one; both give the same results)",
    )
    b.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="threads for fast-path trials (results do not depend on it)",
    )
    w = sub.add_parser(
        "sweep",
        help="run a grid of scenarios x policies x seeds, in parallel, resumable",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Every combination of the --grid values (on top of the other options) "
        "is a scenario; each policy runs trials 0..trials-1 on each. Finished runs are "
        "kept in OUT/runs, so the same command resumes an interrupted sweep.",
    )
    add_setting_options(w, out=Path("results/sweep"))
    w.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="OPTION=V1,V2",
        help="an axis of the grid: a setting option and its values (repeatable; "
        "components values are separated by '/', e.g. components=20x5/1x100)",
    )
    w.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="local worker processes")
    w.add_argument(
        "--cluster",
        default=None,
        help="run on Dask: 'local' or 'local:N' (a LocalCluster of N workers) or a "
        "scheduler address tcp://host:8786",
    )
    pl = sub.add_parser(
        "plot",
        help="redraw the figures of saved bench or sweep results",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    pl.add_argument(
        "results",
        type=Path,
        help="a results folder (of bench or sweep) or a table (.csv, .parquet)",
    )
    pl.add_argument(
        "--out", type=Path, default=None, help="folder for the PNGs (default: the results')"
    )
    pl.add_argument("--log-x", action="store_true", help="logarithmic step axis")
    return parser


def add_setting_options(parser: argparse.ArgumentParser, out: Path) -> None:
    """The options that describe a setting and its runs (shared by bench and sweep).

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_setting_options(p, out=Path("r"))
        >>> p.parse_args(["--graph", "ring"]).graph
        'ring'
    """
    b = parser
    d = Scenario()
    b.add_argument(
        "--policies",
        default=DEFAULT_POLICIES,
        help="comma-separated policy ids, or saved models as ppo:path.zip (a2c:, dqn:)",
    )
    b.add_argument("--agents", type=int, default=d.n_agents, help="number of agents N")
    b.add_argument("--arms", type=int, default=d.n_arms, help="number of arms M")
    b.add_argument("--instance", choices=INSTANCES, default=d.instance, help="problem generator")
    b.add_argument(
        "--conflict-fraction",
        type=float,
        default=d.conflict_fraction,
        help="share of misled agents (conflicting instance)",
    )
    b.add_argument(
        "--gap", type=float, default=d.gap, help="guaranteed global gap (conflicting instance)"
    )
    b.add_argument("--noise", choices=NOISE_KINDS, default=d.noise, help="reward noise")
    b.add_argument("--sigma", type=float, default=d.sigma, help="Gaussian noise scale")
    b.add_argument(
        "--clip",
        type=parse_clip,
        default=None,
        help="LOW,HIGH: reward range of every private mechanism (fed_ucb's wrapper and "
        "the *dp_mab policies clip to it and calibrate their noise to its width); "
        "required for private policies under --noise gaussian (a negative LOW: --clip=-1,2)",
    )
    b.add_argument(
        "--graph", choices=sorted(GRAPH_KINDS), default=d.graph, help="communication graph"
    )
    b.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        default=d.protocol,
        help="delivery rule for policies that talk",
    )
    b.add_argument(
        "--epsilon",
        type=float,
        default=1.0,
        help="privacy level of fed_ucb and the *dp_mab policies (inf: no privacy)",
    )
    b.add_argument(
        "--participation",
        type=float,
        default=1.0,
        help="cdp_mab: share p of agents uploading per round (ceil(p N) uploaders)",
    )
    b.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="*dp_mab: at most R communication rounds, Delta_r = Delta^(r/R) (0: unlimited)",
    )
    b.add_argument(
        "--min-gap",
        type=float,
        default=None,
        help="*dp_mab with --rounds: the smallest gap Delta (default: the instance's)",
    )
    b.add_argument(
        "--components",
        type=parse_components,
        default=None,
        help="hybrid topology: component sizes, e.g. 20,20,20,20,20 or 20x5 (five of 20) "
        "or 1x100; each is a --graph; sets --agents to their sum",
    )
    b.add_argument(
        "--estimator",
        choices=("dyadic", "honaker"),
        default=d.estimator,
        help="tree estimator of the privacy wrapper",
    )
    b.add_argument("--c1", type=float, default=d.link_costs[0], help="cost of a server link")
    b.add_argument("--c2", type=float, default=d.link_costs[1], help="cost of a peer link")
    b.add_argument("--horizon", type=int, default=d.horizon, help="steps T")
    b.add_argument("--trials", type=int, default=20, help="independent runs per policy")
    b.add_argument("--seed", type=int, default=0, help="seed of instance, graph and runs")
    b.add_argument(
        "--record-every", type=int, default=0, help="record regret every k steps (0: horizon / 100)"
    )
    b.add_argument(
        "--out", type=Path, default=out, help="output folder (table, plots, CSV, config)"
    )
    b.add_argument("--no-plot", action="store_true", help="skip the PNGs")
    b.add_argument("--no-progress", action="store_true", help="hide progress bars")
    b.add_argument(
        "--config",
        type=Path,
        default=None,
        help="TOML file of options (same names); options given on the command line win",
    )


def config_args(path: Path) -> list[str]:
    """Bench options from a TOML file as command-line tokens: keys are option names
    (``horizon``, ``conflict-fraction`` or ``conflict_fraction``), lists become comma
    lists, ``true`` switches a flag on. Placed before the command line's own options, so
    those win; argparse refuses unknown names.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "s.toml"
        >>> _ = f.write_text('policies = ["cdp_mab", "local_ucb"]\\nno_plot = true\\n')
        >>> config_args(f)
        ['--policies', 'cdp_mab,local_ucb', '--no-plot']
    """
    import tomllib

    try:
        raw = tomllib.loads(Path(path).read_text())
    except FileNotFoundError as err:
        raise ValueError(f"no config file at {str(path)!r}") from err
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"config {str(path)!r} is not valid TOML: {err}") from err
    tokens: list[str] = []
    for key, value in raw.items():
        option = "--" + key.replace("_", "-")
        if isinstance(value, dict):
            if key != "grid":
                raise ValueError(f"config {str(path)!r}: unknown table [{key}] (only [grid])")
            for axis, values in value.items():
                sep = "/" if axis == "components" else ","
                items = values if isinstance(values, list) else [values]
                tokens += ["--grid", f"{axis}={sep.join(_config_value(v) for v in items)}"]
        elif isinstance(value, bool):
            tokens += [option] if value else []
        elif isinstance(value, list):
            tokens += [option, ",".join(str(v) for v in value)]
        else:
            tokens += [option, str(value)]
    return tokens


def _config_value(value: Any) -> str:
    """A TOML value as an option value: lists become comma lists."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def parse_clip(text: str) -> tuple[float, float]:
    """A clip range from ``"LOW,HIGH"`` (finite, ``LOW < HIGH``).

    Example:
        >>> parse_clip("-1,2.5")
        (-1.0, 2.5)
    """
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"clip must look like 0,1 (LOW,HIGH), got {text!r}"
        ) from err
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(f"clip needs finite LOW < HIGH, got {text!r}")
    return lo, hi


def parse_components(text: str) -> tuple[int, ...]:
    """Component sizes from ``"20,20,10"``, with ``"SIZExCOUNT"`` shorthand.

    Example:
        >>> parse_components("20x2,10"), parse_components("1x3")
        ((20, 20, 10), (1, 1, 1))
    """
    sizes: list[int] = []
    try:
        for token in text.split(","):
            size, _, count = token.strip().partition("x")
            sizes += [int(size)] * (int(count) if count else 1)
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"components must look like 20,20,10 or 20x5, got {text!r}"
        ) from err
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"component sizes must be >= 1, got {text!r}")
    return tuple(sizes)


ELIMINATION_IDS = ("cdp_mab", "ddp_mab", "hdp_mab")


def policy_kwargs(pid: str, args: argparse.Namespace, min_gap: float) -> dict[str, Any]:
    """The constructor options ``fedbandit bench`` passes to policy ``pid``.

    Example:
        >>> args = build_parser().parse_args(["bench", "--rounds", "3", "--epsilon", "inf"])
        >>> policy_kwargs("ddp_mab", args, 0.05)
        {'epsilon': None, 'rounds': 3, 'min_gap': 0.05}
    """
    if pid == "fed_ucb":
        return {"epsilon": args.epsilon}
    if pid not in ELIMINATION_IDS:
        return {}
    kw: dict[str, Any] = {"epsilon": args.epsilon if np.isfinite(args.epsilon) else None}
    if pid == "cdp_mab":
        kw["participation"] = args.participation
    if args.rounds:
        kw["rounds"] = args.rounds
        kw["min_gap"] = args.min_gap if args.min_gap is not None else min_gap
    return kw


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The :class:`Scenario` that ``fedbandit bench`` options describe.

    Example:
        >>> args = build_parser().parse_args(["bench", "--components", "2x3", "--graph", "star"])
        >>> s = scenario_from_args(args)
        >>> s.n_agents, s.components, s.graph
        (6, (2, 2, 2), 'star')
    """
    components = args.components
    return Scenario(
        n_agents=sum(components) if components else args.agents,
        n_arms=args.arms,
        instance=args.instance,
        conflict_fraction=args.conflict_fraction,
        gap=args.gap,
        noise=args.noise,
        sigma=args.sigma,
        graph=args.graph,
        horizon=args.horizon,
        seed=args.seed,
        protocol=args.protocol,
        estimator=args.estimator,
        clip=args.clip,
        link_costs=(args.c1, args.c2),
        components=components,
    )


def parse_policies(text: str) -> list[str]:
    """Policy ids (and saved models ``ppo:path.zip``) from a comma list, checked.

    Example:
        >>> parse_policies("gossip_ucb, ppo:m.zip")
        ['gossip_ucb', 'ppo:m.zip']
    """
    from baselines.registry import POLICIES

    ids = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in ids if p not in POLICIES and not is_model(p)]
    if not ids or unknown:
        raise ValueError(f"--policies must name known ids {sorted(POLICIES)}, got {text!r}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"--policies lists a policy twice: {text!r}")
    return ids


def bench(args: argparse.Namespace) -> list[RegretCurves]:
    """Run ``fedbandit bench`` from parsed arguments; returns the curves.

    Example:
        >>> import tempfile
        >>> args = build_parser().parse_args(["bench", "--policies", "random", "--horizon", "20",
        ...     "--trials", "1", "--no-plot", "--no-progress", "--out", tempfile.mkdtemp()])
        >>> [c.policy for c in bench(args)]  # doctest: +ELLIPSIS
        scenario: ...
        ['random']
    """
    ids = parse_policies(args.policies)
    if args.trials < 1:
        raise ValueError(f"--trials must be >= 1, got {args.trials}")
    scenario = scenario_from_args(args)
    components = scenario.components
    problem = scenario.problem()
    network = scenario.network()
    lambda_2 = network.lambda_2 if network.n_edges else float("nan")
    topology = f"{scenario.graph} graph (lambda_2={lambda_2:.4f})"
    if components:
        topology = f"{len(components)} {scenario.graph} components {list(components)}"
    record_every = args.record_every or max(1, scenario.horizon // 100)
    print(
        f"scenario: N={scenario.n_agents} agents, M={scenario.n_arms} arms, "
        f"{scenario.instance} instance ({len(problem.conflicting_agents)} misled agents, "
        f"min gap {problem.min_gap:.3f}), {scenario.noise} noise, {topology}, "
        f"T={scenario.horizon}, {args.trials} trials"
    )
    curves = []
    start = time.perf_counter()
    for pid in ids:
        kwargs = {} if is_model(pid) else policy_kwargs(pid, args, problem.min_gap)
        c = evaluate(
            pid,
            scenario,
            kwargs,
            trials=args.trials,
            seed=args.seed,
            record_every=record_every,
            interactive=args.interactive,
            workers=args.workers,
            progress=not args.no_progress,
        )
        c.meta["lambda_2"] = lambda_2
        if kwargs.get("epsilon") is not None and np.isfinite(kwargs["epsilon"]):
            c.meta["epsilon"] = float(kwargs["epsilon"])
        if np.isfinite(c.privacy_spent[-1]):
            c.meta["privacy_spent"] = float(c.privacy_spent[-1])
        curves.append(c)
    elapsed = time.perf_counter() - start
    print(format_table(curves))
    out: Path = args.out
    config: dict[str, Any] = {
        "command": "bench",
        "policies": ids,
        "epsilon": args.epsilon,
        "scenario": scenario.to_dict(),
        "trials": args.trials,
        "seed": args.seed,
        "record_every": record_every,
        "local_means": problem.local_means.tolist(),
        "global_means": problem.global_means.tolist(),
        "best_arm": problem.best_arm,
        "lambda_2": lambda_2,
        "policy_options": {
            pid: policy_kwargs(pid, args, problem.min_gap) for pid in ids if not is_model(pid)
        },
        "summary": summary_rows(curves),
        "seconds": elapsed,
        "argv": sys.argv[1:],
    }
    write_csv(curves, out / "regret.csv")
    write_config(config, out / "config.json")
    written = ["regret.csv", "config.json"]
    if not args.no_plot:
        from fedbandit_env.runner.plot import plot_regret

        title = (
            f"{scenario.instance}: N={scenario.n_agents}, M={scenario.n_arms}, "
            f"{scenario.graph}, {args.trials} trials"
        )
        plot_regret(curves, out / "regret.png", title=title)
        written.append("regret.png")
    print(f"wrote {', '.join(str(out / w) for w in written)} in {elapsed:.1f}s")
    return curves


GRID_EXCLUDED = frozenset(
    {"policies", "trials", "out", "no_plot", "no_progress", "config", "grid", "jobs"}
    | {"cluster", "record_every"}
)
"""Options that are not axes of a sweep's grid (``policies`` and ``trials`` are axes
already; the rest say how to run, not what)."""


def parse_grid(specs: Sequence[str], base: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    """Grid points from ``--grid OPTION=V1,V2`` specs: ``(label, {option: value})`` for
    every combination, the first axis slowest. A later spec of the same option replaces
    an earlier one (the command line overrides a config file). No spec: one point,
    ``"base"``.

    Example:
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


def sweep_runs(args: argparse.Namespace) -> tuple[list[Run], dict[str, Any]]:
    """The runs of ``fedbandit sweep`` and the configuration of each scenario.

    Each grid point's options are parsed by the same parser as the command line, on top
    of the other options, so they are checked the same way.

    Example:
        >>> args = build_parser().parse_args(["sweep", "--policies", "random,local_ucb",
        ...     "--grid", "graph=complete,ring", "--trials", "3"])
        >>> runs, scenarios = sweep_runs(args)
        >>> len(runs), sorted(scenarios)
        (12, ['graph=complete', 'graph=ring'])
    """
    ids = parse_policies(args.policies)
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
        problem = scenario.problem()
        record_every = ns.record_every or max(1, scenario.horizon // 100)
        options = {
            pid: ({} if is_model(pid) else policy_kwargs(pid, ns, problem.min_gap)) for pid in ids
        }
        scenarios[label] = {
            "point": point,
            "scenario": scenario.to_dict(),
            "seed": ns.seed,
            "record_every": record_every,
            "policy_options": options,
            "global_means": problem.global_means.tolist(),
            "best_arm": problem.best_arm,
        }
        for pid in ids:
            for trial in range(args.trials):
                runs.append(Run(label, scenario, pid, options[pid], ns.seed, trial, record_every))
    return runs, scenarios


def sweep(args: argparse.Namespace) -> list[RegretCurves]:
    """Run ``fedbandit sweep`` from parsed arguments; returns one curve per (scenario,
    policy).

    Writes ``sweep.json`` first (so an interrupted sweep keeps its configuration), each
    finished run to ``runs/``, then the tidy ``results.csv`` (and ``results.parquet``),
    a table per scenario and the plots.

    Example:
        >>> import tempfile
        >>> args = build_parser().parse_args(["sweep", "--policies", "random", "--horizon",
        ...     "20", "--grid", "graph=complete,ring", "--trials", "2", "--jobs", "1",
        ...     "--no-plot", "--no-progress", "--out", tempfile.mkdtemp()])
        >>> [(c.scenario, c.regret.shape) for c in sweep(args)]  # doctest: +ELLIPSIS
        sweep: 4 runs ...
        [('graph=complete', (2, 10, 20)), ('graph=ring', (2, 10, 20))]
    """
    runs, scenarios = sweep_runs(args)
    out: Path = args.out
    config: dict[str, Any] = {
        "command": "sweep",
        "argv": sys.argv[1:],
        "grid": list(args.grid),
        "policies": parse_policies(args.policies),
        "trials": args.trials,
        "scenarios": scenarios,
        "runs": [r.describe() for r in runs],
        "engine": {"jobs": args.jobs, "cluster": args.cluster},
    }
    write_config(config, out / "sweep.json")
    store = out / "runs"
    keys = {r.key for r in runs}
    done = sum((store / f"{k}.npz").exists() for k in keys)
    engine_text = f"dask cluster {args.cluster}" if args.cluster else f"{args.jobs} local jobs"
    print(
        f"sweep: {len(runs)} runs ({len(scenarios)} scenarios x "
        f"{len(config['policies'])} policies x {args.trials} seeds; {len(keys)} distinct), "
        f"{done} already done, "
        f"on {engine_text}"
    )
    start = time.perf_counter()
    curves = run_sweep(
        runs, out, jobs=args.jobs, cluster=args.cluster, progress=not args.no_progress
    )
    elapsed = time.perf_counter() - start
    for label in scenarios:
        print(f"\n[{label}]")
        print(format_table([c for c in curves if c.scenario == label]))
    config["summary"] = [{"scenario": c.scenario, **summary_rows([c])[0]} for c in curves]
    config["seconds"] = elapsed
    write_config(config, out / "sweep.json")
    written = [write_csv(curves, out / "results.csv")]
    parquet = write_parquet(curves, out / "results.parquet")
    written += [parquet] if parquet is not None else []
    if not args.no_plot:
        from fedbandit_env.runner.plot import plot_results

        written += plot_results(out / "results.csv", out)
    print(f"wrote {', '.join(str(w) for w in written)} in {elapsed:.1f}s")
    return curves


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedbandit`` command; returns the exit status.

    Example:
        >>> try:
        ...     main(["bench", "--policies", "nope"])
        ... except SystemExit as stop:
        ...     print(stop.code)
        2
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command in ("bench", "sweep") and args.config is not None:
            rest = list(argv if argv is not None else sys.argv[1:])
            rest.remove(args.command)
            args = parser.parse_args([args.command, *config_args(args.config), *rest])
        if args.command == "bench":
            bench(args)
        elif args.command == "sweep":
            sweep(args)
        elif args.command == "plot":
            from fedbandit_env.runner.plot import plot_results

            for path in plot_results(args.results, args.out, log_x=args.log_x):
                print(f"wrote {path}")
        elif args.command == "speed":
            from baselines.speed import run as run_speed

            run_speed(quick=args.quick)
    except (ValueError, TypeError) as err:
        parser.exit(2, f"fedbandit: error: {err}\n")
    except KeyboardInterrupt:
        if args.command == "sweep":
            parser.exit(
                130,
                f"fedbandit: interrupted; finished runs are kept in {args.out / 'runs'}: "
                "run the same command again to resume\n",
            )
        raise
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


__all__ = ["bench", "build_parser", "main", "sweep"]
