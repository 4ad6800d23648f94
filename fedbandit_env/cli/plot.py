"""``fedbandit plot``: redraw the figures of saved bench or sweep results."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

PARSER_KWARGS: dict[str, Any] = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The results to draw, where to put the PNGs, and the step axis.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["results/bench", "--log-x"]).log_x
        True
    """
    parser.add_argument(
        "results",
        type=Path,
        help="a results folder (of bench or sweep) or a table (.csv, .parquet)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for the PNGs (default: the results')"
    )
    parser.add_argument("--log-x", action="store_true", help="logarithmic step axis")
    parser.add_argument(
        "--log-y", action="store_true", help="symmetric-log regret axis (small curves visible)"
    )


def run(args: argparse.Namespace) -> None:
    """Draw and say what was written."""
    from fedbandit_env.runner.plot import plot_results

    for path in plot_results(args.results, args.out, log_x=args.log_x, log_y=args.log_y):
        print(f"wrote {path}")


__all__ = ["add_arguments", "run"]
