"""MkDocs hook: the pages whose content is the code's own state, generated at every
build so they cannot go stale: the policy registry (``fedbandit list`` with each
policy's options), the information settings and instance kinds, and the ``fedbandit``
command's help. ``docs/reproduction.md`` is generated too, but by a measurement
(``fedbandit reproduce --scale paper --docs``), so it is committed."""

from __future__ import annotations

import argparse
import io
import os
from contextlib import redirect_stdout
from typing import Any

from mkdocs.structure.files import File, Files

GENERATED = "reference"


def _cell(text: object) -> str:
    """A table cell: pipes escaped, newlines folded."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def policies_page() -> str:
    """Every registered policy, its family, settings, instance kinds and options: one
    section per family, three columns, so that the page reads at 1280 px without a
    horizontal scroll (checked in headless Chromium at 1280 x 2400)."""
    from fedbandit_env import registry

    ids = registry.policy_ids()
    specs = sorted((registry.spec(i) for i in ids), key=lambda s: (s.family, s.id))
    lines = [
        "# Policies",
        "",
        "Generated from the registry at build time (`fedbandit list` prints the same), one",
        "section per family. Under each id: whether it has a compiled fast path and its",
        "tags. `meant for`: the bandit, the information settings (`fedbandit bench` runs it",
        "there by default) and the instance kinds (`any`: every one that gives it what it",
        "needs); `*`: privileged (it uses more than its setting gives, e.g. the oracle pools",
        "every agent's raw rewards).",
    ]
    for family in dict.fromkeys(s.family for s in specs):
        lines += ["", f"## {family}", "", "| policy | meant for | description |", "|---|---|---|"]
        for s in (s for s in specs if s.family == family):
            name = f"`{s.id}`" + ("*" if s.privileged else "")
            facts = ("fast path" if s.has_fast_path else "no fast path") + (
                "; " + ", ".join(sorted(s.tags)) if s.tags else ""
            )
            settings = "any" if s.settings is None else ", ".join(s.settings) or "-"
            instances = "any" if s.instances is None else ", ".join(s.instances) or "-"
            cells = (
                f"{name}<br><small>{facts}</small>",
                f"{s.bandit}: {settings}<br><small>instances: {instances}</small>",
                s.description,
            )
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += [
        "",
        "## Options a policy declares",
        "",
        "Each becomes a flag of `fedbandit bench` and `fedbandit sweep` (range-checked;",
        "a flag set away from its default becomes the constructor argument).",
        "",
        "| flag | default, range | help |",
        "|---|---|---|",
    ]
    for s in specs:
        for o in s.cli_options:
            low = "(-inf" if o.low is None else ("(" if o.low_open else "[") + f"{o.low:g}"
            high = "inf)" if o.high is None else f"{o.high:g}]"
            span = "" if o.low is None and o.high is None else f"{low}, {high}"
            if o.choices:
                span = ", ".join(o.choices)
            flag = "--" + o.name.replace("_", "-")
            default = f"`{o.default!r}` ({o.type.__name__})" + (f"<br>{span}" if span else "")
            row = (f"`{flag}`<br><small>`{s.id}`</small>", default, o.help)
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def settings_page() -> str:
    """The information settings and the instance kinds."""
    from fedbandit_env.scenario.instances import instance_kinds
    from fedbandit_env.settings import SETTINGS

    lines = [
        "# Settings and instances",
        "",
        "Generated from `fedbandit_env.settings.SETTINGS` and the instance table",
        "(`fedbandit_env.scenario.instances`) at build time. A setting fixes who an agent",
        "hears and how it sees its rewards, for every policy alike (see",
        "[information settings](../guides/settings.md)).",
        "",
        "| `--setting` | protocol | private rewards | description |",
        "|---|---|---|---|",
    ]
    for name, s in SETTINGS.items():
        protocol = f"`{s.protocol}`" if s.protocol else "none (no messages)"
        lines.append(
            f"| `{name}` | {protocol} | {'yes' if s.private else 'no'} | {_cell(s.description)} |"
        )
    lines += [
        "",
        "| `--instance` | bandit | a trial's instance | description |",
        "|---|---|---|---|",
    ]
    for name, spec in instance_kinds().items():
        bandit = "linear" if spec.linear else "multi-armed"
        drawn = "drawn from its distribution" if spec.distribution else "built from the seed"
        lines.append(f"| `{name}` | {bandit} | {drawn} | {_cell(spec.description)} |")
    return "\n".join(lines) + "\n"


def cli_page() -> str:
    """``fedbandit --help`` and every subcommand's help."""
    from fedbandit_env.cli import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: fix it for the page
    parser = build_parser()
    lines = [
        "# The `fedbandit` command",
        "",
        "Generated from the argument parser at build time: each subcommand's `--help`.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        buf = io.StringIO()
        with redirect_stdout(buf):
            p.print_help()
        lines += ["", f"## `fedbandit {name}`", "", "```text", buf.getvalue().rstrip(), "```"]
    return "\n".join(lines) + "\n"


PAGES = {
    f"{GENERATED}/policies.md": policies_page,
    f"{GENERATED}/settings.md": settings_page,
    f"{GENERATED}/cli.md": cli_page,
}


def on_files(files: Files, config: Any) -> Files:
    """MkDocs event: add the generated pages to the site's files."""
    for uri, page in PAGES.items():
        files.append(File.generated(config, uri, content=page()))
    return files
