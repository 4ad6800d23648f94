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
    y = parser.add_mutually_exclusive_group()
    y.add_argument("--log-y", dest="log_y", action="store_const", const=True, default=None,
                   help="log regret axis (default: log when the final regrets span more "
                   "than 20x, else linear)")  # fmt: skip
    y.add_argument("--linear-y", dest="log_y", action="store_const", const=False,
                   help="linear regret axis whatever the span")  # fmt: skip


def run(args: argparse.Namespace) -> None:
    """Draw and say what was written."""
    from fedbandit_env.runner.plot import plot_results

    for path in plot_results(args.results, args.out, log_x=args.log_x, log_y=args.log_y):
        print(f"wrote {path}")


__all__ = ["add_arguments", "run"]
