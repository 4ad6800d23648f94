"""``fedbandit yardstick``: every reference in every setting, regret beside what it
sends (:mod:`fedbandit_env.runner.yardstick`); ``--docs`` regenerates
``docs/yardstick.md``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DOCS_PAGE = Path("docs/yardstick.md")
"""The committed page ``fedbandit yardstick --docs`` regenerates."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--settings``, ``--horizon``, ``--trials``, ``--quick``, ``--markdown FILE`` /
    ``--docs``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--settings", "local,server", "--docs"])
        >>> a.settings, a.markdown
        ('local,server', PosixPath('docs/yardstick.md'))
    """
    parser.add_argument(
        "--settings", default=None, help="comma list of settings (default: every multi-armed one)"
    )
    parser.add_argument("--horizon", type=int, default=2000, help="T of every trial")
    parser.add_argument("--trials", type=int, default=20, help="held-out instances per row")
    parser.add_argument("--agents", type=int, default=10, help="N")
    parser.add_argument("--arms", type=int, default=5, help="M")
    parser.add_argument("--epsilon", type=float, default=1.0, help="every private row's epsilon")
    parser.add_argument(
        "--quick", action="store_true", help="a tenth of the work (T / 4, trials / 2.5)"
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                     help="also write the tables as a Markdown page")  # fmt: skip
    out.add_argument(
        "--docs",
        dest="markdown",
        action="store_const",
        const=DOCS_PAGE,
        help=f"regenerate the committed page, {DOCS_PAGE}",
    )


def run(args: argparse.Namespace) -> None:
    """Measure, print each row as it comes, and write the page."""
    from fedbandit_env.files import check_page, write_text_atomic
    from fedbandit_env.runner.yardstick import format_row, markdown, strongest, yardstick

    horizon = max(2, args.horizon // 4) if args.quick else args.horizon
    trials = max(2, int(args.trials / 2.5)) if args.quick else args.trials
    if horizon < 2 or trials < 2 or args.agents < 2 or args.arms < 2:
        raise ValueError("--horizon, --trials, --agents and --arms must each be >= 2")
    settings = None
    if args.settings is not None:
        settings = [s.strip() for s in args.settings.split(",") if s.strip()]
        twice = sorted({s for s in settings if settings.count(s) > 1})
        if twice:
            raise ValueError(f"--settings names {twice} more than once")
    if args.markdown is not None:
        check_page(args.markdown)  # before the measuring, not after
    conditions = (
        f"N = {args.agents}, M = {args.arms}, held-out `biased` instances, Bernoulli rewards, "
        f"complete graph, T = {horizon}, {trials} trials, epsilon = {args.epsilon:g}"
    )
    print(f"yardstick: {conditions}", flush=True)
    start = time.perf_counter()
    rows = yardstick(
        settings, n_agents=args.agents, n_arms=args.arms, horizon=horizon, trials=trials,
        epsilon=args.epsilon, report=lambda r: print(format_row(r), flush=True),
    )  # fmt: skip
    print(f"{len(rows)} rows in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    for setting, best in strongest(rows).items():
        print(f"strongest in {setting}: {', '.join(best)}")
    if args.markdown is not None:
        command = "fedbandit yardstick" + (" --docs" if args.markdown == DOCS_PAGE else "")
        write_text_atomic(args.markdown, markdown(rows, conditions, command))
        print(f"wrote {args.markdown}")


__all__ = ["DOCS_PAGE", "add_arguments", "run"]
