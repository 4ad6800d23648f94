"""``fedbandit learned``: every reference and every learner of the learning default, in
the settings a learner trains in, at a short and a long horizon
(:mod:`fedbandit_env.runner.learned`); ``--docs`` regenerates
``docs/learned-measured.md``. Needs the ``[rl]`` extra (it trains)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DOCS_PAGE = Path("docs/learned-measured.md")
"""The committed page ``fedbandit learned --docs`` regenerates."""


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma list of integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("at least one value")
    return values


def _counts(text: str) -> tuple[int, ...]:
    """A comma list of whole numbers >= 1 (horizons, trials).

    Examples:
        >>> _counts("200,20000")
        (200, 20000)
    """
    values = _ints(text)
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"every value must be >= 1, got {text!r}")
    return values


def _seeds(text: str) -> tuple[int, ...]:
    """A comma list of seeds >= 0."""
    values = _ints(text)
    if min(values) < 0:
        raise argparse.ArgumentTypeError(f"seeds must be >= 0, got {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The plan's options (:class:`~fedbandit_env.runner.learned.LearnedPlan`), ``--quick``,
    ``--markdown FILE`` / ``--docs``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--settings", "local,gossip", "--seeds", "0,1", "--docs"])
        >>> a.settings, a.seeds, a.markdown
        ('local,gossip', (0, 1), PosixPath('docs/learned-measured.md'))
    """
    parser.add_argument("--settings", default=None,
                        help="comma list (default: local, neighbours, gossip, "
                        "gossip+private)")  # fmt: skip
    parser.add_argument("--horizons", type=_counts, default=(200, 20_000),
                        help="comma list of evaluation horizons")  # fmt: skip
    parser.add_argument("--trials", type=_counts, default=(300, 10),
                        help="held-out instances per row, one count per horizon")  # fmt: skip
    parser.add_argument("--seeds", type=_seeds, default=(0, 1, 2),
                        help="training seeds of the deep and recurrent learners")  # fmt: skip
    parser.add_argument("--deep-timesteps", type=int, default=3_840_000,
                        help="agent-steps of each deep learner (batched PPO)")  # fmt: skip
    parser.add_argument("--recurrent-timesteps", type=int, default=3_840_000,
                        help="agent-steps per seed of the recurrent learner (0: none)")  # fmt: skip
    parser.add_argument("--sb3-timesteps", type=int, default=200_000,
                        help="agent-steps of the SB3 learner (0: none)")  # fmt: skip
    parser.add_argument("--models", type=Path, default=Path("runs/learned"),
                        help="where the learners are saved; ones trained for the same plan "
                        "are reused")  # fmt: skip
    parser.add_argument("--render-only", action="store_true",
                        help="write the page (--docs or --markdown) from the last run's "
                        "MODELS/rows.json, without measuring")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help="a few minutes: small budgets and few trials (not for "
                        "the page)")  # fmt: skip
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                     help="also write the tables as a Markdown page")  # fmt: skip
    out.add_argument("--docs", dest="markdown", action="store_const", const=DOCS_PAGE,
                     help=f"regenerate the committed page, {DOCS_PAGE}")  # fmt: skip


def run(args: argparse.Namespace) -> None:
    """Train (or reuse), measure, print each row as it comes, and write the page."""
    from fedbandit_env.extras import require

    require("stable_baselines3", "rl", "fedbandit learned trains learners")
    from fedbandit_env.files import check_page, measured_line, write_text_atomic
    from fedbandit_env.runner.learned import (
        LEARNED_SETTINGS,
        LearnedPlan,
        format_row,
        learned_table,
        load_rows,
        markdown,
        save_rows,
    )

    command = "fedbandit learned" + (" --docs" if args.markdown == DOCS_PAGE else "")
    # a quick run keeps its rows beside its models (MODELS/quick), never over the page's
    saved = args.models / ("quick" if args.quick else "") / "rows.json"
    if args.markdown == DOCS_PAGE and args.quick:
        raise SystemExit("fedbandit learned: --quick is for trying, not for the docs page")
    if args.markdown is not None:
        check_page(args.markdown)  # before the training and measuring, not after
    if args.render_only:
        if args.markdown is None:
            raise SystemExit("fedbandit learned: --render-only writes a page: add --docs")
        rows, plan, seconds, measured = load_rows(saved)
        if args.markdown == DOCS_PAGE and plan.models.name == "quick":
            raise SystemExit(
                f"fedbandit learned: {saved} holds a --quick run, not for the docs page"
            )
        write_text_atomic(args.markdown, markdown(rows, plan, command, seconds, measured))
        print(f"wrote {args.markdown} from {saved}")
        return

    settings = LEARNED_SETTINGS
    if args.settings is not None:
        settings = tuple(s.strip() for s in args.settings.split(",") if s.strip())
    plan = LearnedPlan(
        settings=settings, horizons=args.horizons, trials=args.trials, seeds=args.seeds,
        deep_timesteps=args.deep_timesteps, sb3_timesteps=args.sb3_timesteps,
        recurrent_timesteps=args.recurrent_timesteps,
        models=args.models,
    )  # fmt: skip
    if args.quick:
        plan = plan.quick()
    start = time.perf_counter()
    rows = learned_table(
        plan, report=lambda r: print(format_row(r), flush=True),
        say=lambda s: print(s, file=sys.stderr, flush=True),
    )  # fmt: skip
    seconds = time.perf_counter() - start
    print(f"{len(rows)} rows in {seconds / 60:.1f} min", file=sys.stderr)
    measured = measured_line()
    save_rows(rows, plan, seconds, saved, measured)
    print(f"wrote {saved}")
    if args.markdown is not None:
        write_text_atomic(args.markdown, markdown(rows, plan, command, seconds, measured))
        print(f"wrote {args.markdown}")


__all__ = ["DOCS_PAGE", "add_arguments", "run"]
