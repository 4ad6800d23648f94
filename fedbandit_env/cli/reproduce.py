"""``fedbandit reproduce``: every figure and table of the three papers, measured, with a
verdict each (:mod:`fedbandit_env.reproduce`)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--scale``, ``--out``, ``--papers``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--scale", "paper", "--papers", "zhu,li_song"])
        >>> a.scale, a.papers
        ('paper', 'zhu,li_song')
    """
    parser.add_argument(
        "--scale",
        choices=("quick", "paper"),
        default="quick",
        help="quick: seconds, checks the report runs (CI); paper: the papers' horizons and "
        "trials where feasible (about 20 minutes on 2 cores)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("docs"),
        help="folder of reproduction.md; figures go to OUT/figures/reproduction",
    )
    parser.add_argument(
        "--papers",
        default="zhu,li_song,dubey",
        help="comma-separated subset of zhu, li_song, dubey (default: all three)",
    )


def run(args: argparse.Namespace) -> None:
    """Run the rows and write the report."""
    from fedbandit_env.reproduce import reproduce
    from fedbandit_env.runner.files import check_writable

    papers = tuple(p.strip() for p in args.papers.split(",") if p.strip())
    check_writable(args.out)
    report = reproduce(args.scale, args.out, papers)
    print(f"wrote {report}")


__all__ = ["add_arguments", "run"]
