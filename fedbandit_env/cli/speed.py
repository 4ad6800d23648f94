"""``fedbandit speed``: agent-steps per second of the fast path, the PettingZoo path and
a plain loop (:mod:`fedbandit_env.runner.speed`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--quick``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["--quick"]).quick
        True
    """
    parser.add_argument("--quick", action="store_true", help="a tenth of the default work")


def run(args: argparse.Namespace) -> None:
    """Measure and print the table."""
    from fedbandit_env.runner.speed import run as run_speed

    run_speed(quick=args.quick)


__all__ = ["add_arguments", "run"]
