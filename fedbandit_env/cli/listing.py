"""``fedbandit list``: the registered policies (id, family, bandit, fast path, tags, the
settings and instance kinds each is meant for, description)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--import`` (modules that register more policies).

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["--import", "my_policies"]).imports
        [['my_policies']]
    """
    from fedbandit_env.cli.options import parse_modules

    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        type=parse_modules,
        default=[],
        metavar="MODULE[,MODULE]",
        help="import these modules first (modules that register policies)",
    )


def run(args: argparse.Namespace) -> None:
    """Print the registry.

    Examples:
        >>> run(argparse.Namespace(imports=[]))  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
        id family bandit fast tags settings instances description
        ...
        gossip_ucb gossip mab yes default,speed gossip,neighbours,gossip+private,...
        ...
    """
    from fedbandit_env import registry
    from fedbandit_env.cli.options import import_modules

    import_modules(args.imports)
    print(registry.describe_registry())


__all__ = ["add_arguments", "run"]
