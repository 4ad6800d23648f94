"""The ``fedbandit`` command: one module per subcommand, imported only when it runs.

Each subcommand module (``bench``, ``sweep``, ``plot``, ``speed``, ``train``,
``listing``) has
``add_arguments(parser)`` and ``run(args)``, and may set ``PARSER_KWARGS`` (for its
subparser) and ``USES_CONFIG`` (it reads ``--config`` TOML files). The options that
describe a setting are shared through :mod:`fedbandit_env.cli.options`. ``fedbandit
--help`` imports none of them, so it answers at once.

Examples:
    >>> parser = build_parser()
    >>> args = parser.parse_args(["bench", "--policies", "random", "--horizon", "10"])
    >>> args.policies, args.horizon
    ('random', 10)
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence

from fedbandit_env.extras import MissingExtra

COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("fedbandit_env.cli.bench", "benchmark policies on one scenario"),
    "sweep": (
        "fedbandit_env.cli.sweep",
        "run a grid of scenarios x policies x seeds, in parallel, resumable",
    ),
    "plot": ("fedbandit_env.cli.plot", "redraw the figures of saved bench or sweep results"),
    "table": (
        "fedbandit_env.cli.table",
        "one summary table of several saved results (a learner's bench beside the references')",
    ),
    "speed": (
        "fedbandit_env.cli.speed",
        "agent-steps per second of the fast path, the PettingZoo path and a plain loop",
    ),
    "train": (
        "fedbandit_env.cli.train",
        "train a learned policy for one information setting, on train instances",
    ),
    "tune": (
        "fedbandit_env.cli.tune",
        "tune a parametric policy for one information setting, on train instances",
    ),
    "reproduce": (
        "fedbandit_env.cli.reproduce",
        "the papers' figures and tables, measured, with a verdict each: docs/reproduction.md",
    ),
    "yardstick": (
        "fedbandit_env.cli.yardstick",
        "every reference in every setting, regret beside what it sends: docs/yardstick.md",
    ),
    "learned": (
        "fedbandit_env.cli.learned",
        "every reference and every learner (tuned, batched PPO, SB3) on the learning "
        "default, at T = 200 and 2e4: docs/learned-measured.md",
    ),
    "list": ("fedbandit_env.cli.listing", "the registered policies"),
}
"""Subcommand -> (module, one-line help). A new subcommand is a module and a line here."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``fedbandit``.

    Args:
        only: Build the options of this subcommand only (the others are listed with
            their help, without importing their modules); ``None``: all of them;
            ``""``: none (the top-level help).

    Examples:
        >>> build_parser().parse_args(["speed", "--quick"]).quick
        True
        >>> sorted(build_parser("").parse_args(["list"]).__dict__)
        ['command']
    """
    parser = argparse.ArgumentParser(
        prog="fedbandit", description="Federated bandit environments and benchmarks."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        kwargs = getattr(module, "PARSER_KWARGS", {})
        module.add_arguments(sub.add_parser(name, help=help_text, **kwargs))
    return parser


def _command(argv: Sequence[str]) -> str:
    """The subcommand named in ``argv`` (``""`` if none is)."""
    for token in argv:
        if token in COMMANDS:
            return token
        if not token.startswith("-"):
            return ""
    return ""


def _import_first(argv: Sequence[str]) -> None:
    """Import the ``--import`` modules before the parser is built, so that the policies
    they register (and the options those declare) are known to it."""
    from fedbandit_env.cli.options import import_modules, parse_modules

    pre = argparse.ArgumentParser(add_help=False)  # --import alone, abbreviations too
    pre.add_argument("--import", dest="imports", action="append", default=[])
    names = pre.parse_known_args(argv)[0].imports
    try:
        import_modules([parse_modules(n) for n in names])
    except (ValueError, argparse.ArgumentTypeError) as err:
        print(f"fedbandit: error: {err}", file=sys.stderr)
        raise SystemExit(2) from err


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedbandit`` command; returns the exit status.

    Errors in the options or the setting print one line (exit status 2), not a
    traceback; so does Ctrl-C, at any point (exit status 130; ``sweep`` says how to
    resume).

    Examples:
        >>> try:
        ...     main(["bench", "--policies", "nope"])
        ... except SystemExit as stop:
        ...     print(stop.code)
        2
    """
    shown = warnings.formatwarning
    warnings.formatwarning = _one_line  # a warning reads as the errors do: one line
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        args = list(sys.argv[1:] if argv is None else argv)
        hint = ""
        if args[:1] == ["bench"] and "--resume" not in args:
            hint = " (rerun with --resume to go on: finished policies are kept)"
        print(f"fedbandit: interrupted{hint}", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = shown


def _one_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    r"""A warning as the command prints it: ``fedbandit: warning: <message>``.

    Examples:
        >>> _one_line("T is long", UserWarning, "x.py", 1)
        'fedbandit: warning: T is long\n'
    """
    return f"fedbandit: warning: {message}\n"


def _main(argv: list[str]) -> int:
    """:func:`main` without its handling of Ctrl-C."""
    command = _command(argv)
    if command:  # modules named by --import register policies, and their options' flags
        _import_first(argv)
    parser = build_parser(command)
    args = parser.parse_args(argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    try:
        if getattr(module, "USES_CONFIG", False) and args.config is not None:
            from fedbandit_env.cli.config import config_args

            rest = list(argv)
            rest.remove(args.command)
            args = parser.parse_args([args.command, *config_args(args.config), *rest])
        epsilon = getattr(args, "epsilon", 1.0)
        if isinstance(epsilon, float) and not epsilon > 0:  # NaN too: it ran silently
            raise ValueError(f"--epsilon must be > 0 (inf: no privacy), got {epsilon}")
        module.run(args)
    except (ValueError, MissingExtra) as err:  # a TypeError is a bug: its traceback shows
        parser.exit(2, f"fedbandit: error: {err}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


__all__ = ["COMMANDS", "build_parser", "main"]
