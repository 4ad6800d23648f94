"""``fedbandit table``: one summary table of several saved bench or sweep results.

Benches run apart (a learned model's and the references', say) on the same scenario
share a table here, with the tail statistics of every row: the ``worse than random``
column needs a ``random`` run of the same scenario in one of the results.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

PARSER_KWARGS: dict[str, Any] = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The results to merge and the table's form.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["runs/refs", "runs/learner", "--markdown"])
        >>> [str(r) for r in a.results], a.markdown, a.against
        (['runs/refs', 'runs/learner'], True, None)
    """
    parser.add_argument(
        "results",
        type=Path,
        nargs="+",
        help="results folders (of bench or sweep) or tables (.csv, .parquet)",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="Markdown tables, best first (for docs)"
    )
    parser.add_argument(
        "--against",
        metavar="ID",
        default=None,
        help="also a paired table against this policy (same trials, same instances): the "
        "mean paired difference, the share of trials lower, each IQM and the probability "
        "of improvement, each with a bootstrap 95%% interval (rliable's 50,000 "
        "resamples; a warning under 20 trials); over several tables (settings, "
        "horizons) also an aggregate: the mean probability of improvement and IQM ratio "
        "with stratified intervals",
    )
    parser.add_argument(
        "--into",
        type=Path,
        action="append",
        metavar="PAGE",
        help="write the table into this Markdown page's generated block (--block) instead "
        "of printing it; repeat for several pages (how the docs' tables are made: "
        "make docs-numbers)",
    )
    parser.add_argument(
        "--block", metavar="NAME", default=None, help="the generated block --into replaces"
    )


def run(args: argparse.Namespace) -> None:
    """Print one table per scenario (the instances, the setting, the horizon) found in the
    results, in their order; a policy twice in one scenario is refused."""
    from fedbandit_env.runner.plot import find_table
    from fedbandit_env.runner.results import format_table, markdown_table, read_csv

    if (args.into is None) != (args.block is None):
        raise SystemExit("fedbandit table: --into and --block go together")
    pages = []
    if args.into:
        from fedbandit_env.files import read_block

        for page in args.into:  # refuse before any work, naming the page
            try:
                read_block(page.read_text(encoding="utf-8"), args.block)
            except (OSError, ValueError) as err:
                raise SystemExit(f"fedbandit table: {page}: {err}") from None
            pages.append(page)
    out: list[str] = []
    tasks: list[list[dict[str, Any]]] = []
    groups: dict[tuple[str, str, int], list[Any]] = {}
    for results in args.results:
        table = find_table(results)
        config = _config(table.parent / "config.json")
        where, timings = _instances(config), _timings(config)
        for c in read_csv(table):
            if c.policy in timings and not np.any(c.seconds):  # the table keeps no times
                c.seconds = np.full(c.regret.shape[0], timings[c.policy])
            groups.setdefault((c.scenario or where, c.setting, int(c.t[-1])), []).append(c)
    for i, ((scenario, setting, horizon), group) in enumerate(groups.items()):
        names = [c.policy for c in group]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise SystemExit(
                f"fedbandit table: {', '.join(twice)} twice in the results for "
                f"{scenario or setting} at T={horizon} (one row would mix two runs' "
                "trials): leave one of those results out"
            )
        trials = max(c.n_trials for c in group)
        title = ", ".join(x for x in (scenario, setting, f"T = {horizon}", f"{trials} trials") if x)
        out.append(("\n" if i else "") + (f"**{title}**\n" if args.markdown else title))
        out.append(markdown_table(group) if args.markdown else format_table(group))
        if args.against is not None:
            from fedbandit_env.runner.paired import MIN_TRIALS, format_paired, paired_rows

            try:
                rows = paired_rows(group, args.against)
            except ValueError as err:
                raise SystemExit(f"fedbandit table: {err}") from None
            few = min((r["n"] for r in rows), default=MIN_TRIALS)
            if few < MIN_TRIALS:
                print(
                    f"fedbandit: warning: {title}: {few} paired trial(s) against "
                    f"{args.against}; under {MIN_TRIALS} a bootstrap interval under-covers "
                    "(with one trial it is a point): bench more --trials",
                    file=sys.stderr,
                )
            tasks.append(rows)
            out.append(f"\npaired against {args.against} (lower is better):")
            out.append(format_paired(rows, markdown=args.markdown))
    if len(tasks) > 1:
        from fedbandit_env.runner.paired import aggregate, format_aggregate

        out.append(
            f"\naggregate over the {len(tasks)} tables against {args.against} (stratified "
            "bootstrap; IQM ratio below 1 and P(improvement) above 0.5 are better):"
        )
        out.append(format_aggregate(aggregate(tasks), markdown=args.markdown))
    text = "\n".join(out) + "\n"
    if not pages:
        print(text, end="")
        return
    from fedbandit_env.files import replace_block, write_text_atomic

    body = text if args.markdown else f"```\n{text}```\n"
    for page in pages:
        write_text_atomic(page, replace_block(page.read_text(encoding="utf-8"), args.block, body))
        print(f"wrote the block {args.block!r} of {page}")


def _config(path: Path) -> dict[str, Any]:
    """A bench's ``config.json`` beside its table (``{}`` without one)."""
    if not path.is_file():
        return {}
    config = json.loads(path.read_text())
    return config if isinstance(config, dict) else {}


def _timings(config: dict[str, Any]) -> dict[str, float]:
    """Seconds per trial of each policy, from a bench's config summary (the tidy table
    keeps no times); empty if it does not say."""
    summary = config.get("summary")
    if not isinstance(summary, list):
        return {}
    return {
        str(row["policy"]): float(row["seconds_per_trial"])
        for row in summary
        if isinstance(row, dict) and "policy" in row and "seconds_per_trial" in row
    }


def _instances(config: dict[str, Any]) -> str:
    """The instances a bench ran on, from its config ("" if it does not say)."""
    instances = config.get("instances")
    return str(instances.get("distribution", "")) if isinstance(instances, dict) else ""


__all__ = ["add_arguments", "run"]
