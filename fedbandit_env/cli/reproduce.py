"""``fedbandit reproduce``: every figure and table of the registered papers, measured,
with a verdict each (:mod:`fedbandit_env.reproduce`). It writes to
``results/reproduce`` unless told otherwise; regenerating the committed report in
``docs/`` is the explicit ``--docs``."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--scale``, ``--out`` (or ``--docs``), ``--papers``, ``--store``, ``--jobs``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--scale", "paper", "--papers", "zhu,li_song"])
        >>> a.scale, a.papers, a.out
        ('paper', 'zhu,li_song', None)
    """
    parser.add_argument(
        "--scale",
        choices=("quick", "paper"),
        default="quick",
        help="quick: seconds, checks the report runs (CI); paper: the papers' horizons and "
        "trials where feasible (minutes on 2 cores for most papers, hours for a resumable "
        "one: give those --store; the report's scale sentence says each paper's)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder of reproduction.md; figures go to OUT/figures/reproduction "
        "(default: results/reproduce)",
    )
    where.add_argument(
        "--docs",
        action="store_true",
        help="regenerate the committed report, docs/reproduction.md (run at --scale paper)",
    )
    parser.add_argument(
        "--papers",
        default=None,
        help="comma-separated subset of the registered papers (default: all; the "
        "references register zhu, li_song, dubey, martinez_rubio)",
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="keep every finished run of the resumable papers (dubey) in STORE/runs and "
        "reuse them: an interrupted run resumes, a finished one redraws in seconds "
        "(delete it after changing an algorithm)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes of the resumable papers' runs"
    )


def run(args: argparse.Namespace) -> None:
    """Run the rows and write the report."""
    import sys

    from fedbandit_env.files import check_writable
    from fedbandit_env.reproduce import papers as registered
    from fedbandit_env.reproduce import reproduce

    papers = tuple(p.strip() for p in (args.papers or "").split(",") if p.strip()) or None
    if args.papers is not None and papers is None:  # '' or ',': not "every paper"
        raise ValueError(f"--papers names no paper ({args.papers!r}); leave it out for all")
    if args.store is not None and Path(args.store).exists() and not Path(args.store).is_dir():
        raise ValueError(f"--store must be a folder, and {str(args.store)!r} is a file")
    out = Path("docs") if args.docs else (args.out or Path("results/reproduce"))
    check_writable(out)
    if args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    unkept = [p.name for p in registered().values()
              if p.resumable and (papers is None or p.name in papers)]  # fmt: skip
    if args.scale != "quick" and args.store is None and unkept:
        print(f"fedbandit: without --store, an interruption loses every finished trial of "
              f"{', '.join(unkept)} (hours at --scale {args.scale}); give --store DIR to "
              "resume where it stopped", file=sys.stderr)  # fmt: skip
    report = reproduce(args.scale, out, papers, args.store, args.jobs)
    print(f"wrote {report}")


__all__ = ["add_arguments", "run"]
