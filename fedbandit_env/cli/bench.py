"""``fedbandit bench``: reference (and registered, and saved) policies on one scenario.

Writes a table to the terminal, and under ``--out`` the raw per-agent curves
(``regret.csv``), the configuration (``config.json``) and a regret plot.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

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
    describe_instances,
    describe_setting,
    instance_record,
    problem_record,
)
from fedbandit_env.extras import MissingExtra
from fedbandit_env.runner.evaluate import evaluate, is_model
from fedbandit_env.runner.results import format_table, summary_rows, write_config, write_csv
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.scenario.instances import instance_names
from fedbandit_env.scenario.scenario import Scenario

PARSER_KWARGS: dict[str, Any] = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter}
USES_CONFIG = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The setting options, ``--interactive`` and ``--workers``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["--interactive"]).interactive
        True
    """
    add_setting_options(parser, out=Path("results/bench"))
    parser.set_defaults(instance=None)  # given, or the saved models' kind (resolve_instance)
    for action in parser._actions:
        if action.dest == "instance":
            action.help = (
                "problem generator (the instance table: the package's kinds and the ones "
                "families register); default: the kind the listed saved models were trained "
                f"on, else {Scenario.instance}"
            )
    parser.add_argument(
        "--interactive",
        action="store_true",
        help="run every policy through the PettingZoo path (default: the compiled fast "
        "path where a policy has one; both give the same results)",
    )
    parser.add_argument(
        "--greedy",
        action="store_true",
        help="saved models act on their most likely arm (default: drawn from the policy's "
        "action distribution with each trial's seed, as PPO and A2C were trained)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="threads for fast-path trials (results do not depend on it)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the results of an earlier bench in --out (default: refuse)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with an interrupted bench to the same --out: each policy it finished "
        "(with the same options, scenario, trials and seed) is read back, not run again",
    )


PARTIAL = ".partial"
"""The folder in ``--out`` where a bench keeps each policy's finished trials until the
whole bench is written (what ``--resume`` reads back)."""


def run_key(pid: str, kwargs: dict[str, Any], scenario: Scenario, args: argparse.Namespace) -> str:
    """The digest of everything a policy's trials depend on: its id (a saved model's
    bytes too), options, the scenario, trials, seed, recording and path.

    Examples:
        >>> ns = argparse.Namespace(trials=2, seed=0, record_every=0, interactive=False,
        ...                         greedy=False)
        >>> a = run_key("random", {}, Scenario(horizon=10), ns)
        >>> a == run_key("random", {}, Scenario(horizon=10), ns), a == run_key(
        ...     "random", {}, Scenario(horizon=11), ns)
        (True, False)
    """
    import hashlib

    model = ""
    if is_model(pid):
        from fedbandit_env.runner.sweep import _file_digest

        model = _file_digest(pid.partition(":")[2])
    record = {
        "policy": pid, "model": model, "kwargs": kwargs, "scenario": scenario.to_dict(),
        "trials": args.trials, "seed": args.seed, "record_every": args.record_every,
        "interactive": args.interactive, "greedy": args.greedy,
    }  # fmt: skip
    text = json.dumps(record, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def save_partial(curves: RegretCurves, folder: Path, key: str) -> None:
    """Keep one policy's finished trials (and their labels) for ``--resume``."""
    from fedbandit_env.runner.sweep import save_run

    save_run(curves, folder / f"{key}.npz")
    meta = {k: v for k, v in curves.meta.items() if isinstance(v, int | float | str)}
    record = {"policy": curves.policy, "setting": curves.setting, "seeds": curves.seeds.tolist(),
              "meta": meta}  # fmt: skip
    (folder / f"{key}.json").write_text(json.dumps(record))


def load_partial(folder: Path, key: str) -> RegretCurves | None:
    """What :func:`save_partial` kept under ``key`` (``None`` if nothing whole is)."""
    data_path, meta_path = folder / f"{key}.npz", folder / f"{key}.json"
    if not (data_path.is_file() and meta_path.is_file()):
        return None
    try:
        record = json.loads(meta_path.read_text())
        with np.load(data_path) as data:
            curves = RegretCurves(
                record["policy"], data["t"], data["regret"], data["seconds"],
                comm_cost=data["comm_cost"], privacy_spent=data["privacy_spent"],
                privacy_delta=float(data["privacy_delta"]), seeds=np.array(record["seeds"]),
                setting=record["setting"],
            )  # fmt: skip
    except (OSError, ValueError, KeyError):
        return None  # damaged: run it again
    curves.meta.update(record["meta"])
    return curves


def trained_instance_kinds(policies: str | None) -> set[str]:
    """The instance kinds the saved models and tuned files among ``policies`` were
    trained or tuned on (from the stack saved beside a model, or the tuned file's
    scenario); unreadable ones are left to the run to report.

    Examples:
        >>> import json, tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "model.fedbandit.json").write_text(
        ...     json.dumps({"distribution": "biased(N=3,M=3)"}))
        >>> trained_instance_kinds(f"ppo:{folder},local_ucb")
        {'biased'}
    """
    kinds: set[str] = set()
    for entry in (p.strip() for p in (policies or "").split(",")):
        kind, sep, path = entry.partition(":")
        if not sep or not path:
            continue
        try:
            if kind == "tuned":
                data = json.loads(Path(path).read_text())
                name = str(data.get("scenario", {}).get("instance", ""))
            else:
                file = Path(path) / "model.zip" if Path(path).is_dir() else Path(path)
                stem = file.name[: -len(".zip")] if file.name.endswith(".zip") else file.name
                data = json.loads(file.with_name(stem + ".fedbandit.json").read_text())
                name = str(data.get("distribution", "")).split("(")[0]
        except (OSError, ValueError, AttributeError):
            continue
        if name:
            kinds.add(name)
    return kinds


def resolve_instance(args: argparse.Namespace) -> str | None:
    """``--instance`` as given; else the kind the listed saved models were trained on
    (when they agree: a model benched with the defaults plays the instances it learned
    on, not another kind), else the scenario's default. Returns the note to print when
    the models chose it.

    Examples:
        >>> ns = argparse.Namespace(instance=None, policies="local_ucb")
        >>> resolve_instance(ns), ns.instance
        (None, 'biased')
    """
    if args.instance is not None:
        return None
    kinds = trained_instance_kinds(args.policies)
    if len(kinds) == 1:
        args.instance = kinds.pop()
        return (
            f"fedbandit: instances of kind {args.instance!r}, the saved policies' training "
            "kind (--instance to choose another)"
        )
    args.instance = Scenario.instance
    return None


def check_fresh_out(out: Path, overwrite: bool, resume: bool = False) -> None:
    """Refuse to replace an earlier bench's results without ``--overwrite``; with
    ``resume``, refuse a finished bench (results and nothing interrupted to go on with).

    Raises:
        ValueError: Naming the folder and the two ways on.

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> check_fresh_out(folder, overwrite=False)  # empty: fine
        >>> _ = (folder / "regret.csv").write_text("x")
        >>> check_fresh_out(folder, overwrite=False)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: --out ... holds an earlier bench's results (regret.csv); pass --overwrite ...
    """
    finished = (Path(out) / "regret.csv").exists()
    if resume and not overwrite and finished and not (Path(out) / PARTIAL).exists():
        raise ValueError(
            f"--out {out} holds a finished bench (regret.csv), nothing to resume; pass "
            "--overwrite to replace it, or --out another folder"
        )
    if not (overwrite or resume) and finished:
        raise ValueError(
            f"--out {out} holds an earlier bench's results (regret.csv); pass --overwrite "
            "to replace them, or --out another folder"
        )


def bench(args: argparse.Namespace) -> list[RegretCurves]:
    """Run ``fedbandit bench`` from parsed arguments; returns the curves.

    Examples:
        >>> import tempfile
        >>> from fedbandit_env.cli import build_parser
        >>> args = build_parser().parse_args(["bench", "--policies", "random", "--horizon", "20",
        ...     "--trials", "1", "--no-plot", "--no-progress", "--out", tempfile.mkdtemp()])
        >>> [c.policy for c in bench(args)]  # doctest: +ELLIPSIS
        scenario: ...
        ['random']
    """
    import_modules(args.imports)
    note = resolve_instance(args)
    if note:
        print(note, file=sys.stderr)
    ids = parse_policies(
        args.policies, args.setting, args.instance in instance_names(linear=True), args.instance
    )
    if args.trials < 1:
        raise ValueError(f"--trials must be >= 1, got {args.trials}")
    scenario = scenario_from_args(args)
    check_fresh_out(args.out, getattr(args, "overwrite", False), getattr(args, "resume", False))
    preflight(args, ids)
    components = scenario.components
    problem = scenario.problem()
    network = scenario.network()
    lambda_2 = network.lambda_2 if network.n_edges else float("nan")
    topology = f"{scenario.graph} graph (lambda_2={lambda_2:.4f})"
    if components:
        topology = f"{len(components)} {scenario.graph} components {list(components)}"
    record_every = args.record_every or max(1, scenario.horizon // 100)
    check_drawn_instances(scenario, args)
    arms = f"K={scenario.n_arms} vectors a set" if scenario.linear else f"M={scenario.n_arms} arms"
    print(
        f"scenario: N={scenario.n_agents} agents, {arms}, "
        f"{describe_instances(scenario, problem)}, {scenario.noise} noise, {topology}, "
        f"T={scenario.horizon}, {args.trials} trials{describe_setting(scenario)}"
    )
    fast = [has_fast_path(pid, args.interactive) for pid in ids]
    estimate = duration_estimate(
        scenario.n_agents, scenario.horizon, args.trials, fast, args.workers
    )
    if (warning := long_run_warning(estimate)) is not None:
        print(f"fedbandit: warning: {warning}", file=sys.stderr)
    curves = []
    start = time.perf_counter()
    partial = Path(args.out) / PARTIAL
    partial.mkdir(parents=True, exist_ok=True)
    for pid in ids:
        if is_model(pid):
            kwargs: dict[str, Any] = {"deterministic": True} if args.greedy else {}
        else:
            kwargs = policy_kwargs(pid, args, problem)
        key = run_key(pid, kwargs, scenario, args)
        kept = load_partial(partial, key) if getattr(args, "resume", False) else None
        if kept is not None:
            print(f"fedbandit: {pid}: read back from the interrupted bench", file=sys.stderr)
            c = kept
        else:
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
            save_partial(c, partial, key)
        c.meta["lambda_2"] = lambda_2
        c.scenario = scenario.label  # rows that say what they are (two benches concatenated)
        if "rejected_messages" in c.meta:  # dropped as no honest sender's, all trials
            c.meta["rejected_messages"] = int(np.sum(c.meta["rejected_messages"]))
        if kwargs.get("epsilon") is not None and np.isfinite(kwargs["epsilon"]):
            c.meta["epsilon"] = float(kwargs["epsilon"])
        if np.isfinite(c.privacy_spent[-1]):
            c.meta["privacy_spent"] = float(c.privacy_spent[-1])
            c.meta["privacy_delta"] = float(c.privacy_delta)
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
        "instances": instance_record(scenario, args.seed, args.trials),
        **problem_record(problem),
        "lambda_2": lambda_2,
        "policy_options": {
            pid: policy_kwargs(pid, args, problem) for pid in ids if not is_model(pid)
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
            f"{scenario.instance}: N={scenario.n_agents}, "
            + (f"d={scenario.dim}, K=" if scenario.linear else "M=")
            + f"{scenario.n_arms}, "
            f"{scenario.graph}, T={scenario.horizon}, {args.trials} trials"
            + (f", setting {scenario.setting}" if scenario.setting else "")
        )
        try:
            plot_regret(curves, out / "regret.png", title=title)
            written.append("regret.png")
        except MissingExtra as err:  # the results are written; the picture needs an extra
            print(f"fedbandit: no plot: {err}", file=sys.stderr)
    import shutil

    shutil.rmtree(partial, ignore_errors=True)  # the bench is whole: nothing to resume
    print(f"wrote {', '.join(str(out / w) for w in written)} in {elapsed:.1f}s")
    if any(np.isfinite(c.privacy_spent[-1]) and c.privacy_spent[-1] > 0 for c in curves):
        print(
            "note: a results folder is a privileged view, not a private release: its "
            "per-agent regret and seed give back the raw rewards (docs/privacy.md)"
        )
    return curves


def run(args: argparse.Namespace) -> None:
    """The subcommand's entry point."""
    bench(args)


__all__ = [
    "PARTIAL",
    "add_arguments",
    "bench",
    "check_fresh_out",
    "load_partial",
    "run",
    "run_key",
    "save_partial",
]
