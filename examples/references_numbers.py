"""Every table of docs/references.md, measured by the command that states it.

Each section of the references page is one ``fedbandit bench`` (or two, whose tables
sit in one block) and ``fedbandit table --markdown`` into the page's generated block
``references-<name>``; ``tests/test_docs.py`` checks each block against the section here
(its setting, horizon, trials and policies), so a table cannot drift from its command.

Run: ``make references-numbers`` (every section, about half an hour on two shared cores), or
``.venv/bin/python examples/references_numbers.py --only zhu,server`` for some; the
results stay in ``results/references/<name>``, and ``--render-only`` writes the blocks
again from them without measuring::

    python examples/references_numbers.py --render-only --into docs/references.md
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

CONFLICTING = "--held-out --instance conflicting"
BIASED = "--held-out --instance biased"
LONG = "--horizon 20000 --record-every 5000"
DDUCB = (
    "--setting neighbours --instance dducb --noise gaussian --agents 100 --arms 17 "
    "--horizon 10000 --trials 10 --record-every 1000 --policies dducb,dducb_accelerated,"
    "dducb_plain,coop_ucb2,coop_ts,coop_ts_relay,gossip_ucb,local_ucb,kl_ucb,local_ts,"
    "oracle_ucb,random"
)
SERVER = (
    "--setting server --instance homogeneous --agents 10 --arms 20 --horizon 5000 "
    "--trials 10 --epsilon inf --record-every 500"
)
EPOCH = (
    "--instance homogeneous --agents 50 --arms 100 --horizon 20000 --trials 2 --epsilon 1 "
    "--record-every 2000"
)


@dataclass(frozen=True)
class Section:
    """One generated block of the references page: the benches that measure it (each a
    ``fedbandit bench`` argument list, without ``--out``), the reference its paired
    table is against (none: the plain table) and, if the page shows it, the figure under
    ``docs/figures/references`` its (first) bench's ``regret.png`` becomes.

    Examples:
        >>> s = Section("x", (("--setting", "local", "--policies", "random"),))
        >>> s.block, s.folders(Path("r"))
        ('references-x', [PosixPath('r/x')])
    """

    name: str
    benches: tuple[tuple[str, ...], ...]
    against: str | None = None
    figure: str | None = None

    @property
    def block(self) -> str:
        """The page's generated block this section writes."""
        return f"references-{self.name}"

    def folders(self, root: Path) -> list[Path]:
        """The results folder of each bench under ``root``."""
        if len(self.benches) == 1:
            return [root / self.name]
        return [root / f"{self.name}-{i}" for i in range(len(self.benches))]


def _bench(*parts: str) -> tuple[str, ...]:
    """One bench's arguments from space-separated parts."""
    return tuple(" ".join(parts).split())


SECTIONS: tuple[Section, ...] = (
    Section(
        "neighbours",
        (
            _bench(
                f"--setting neighbours {CONFLICTING} --horizon 200 --trials 100 --policies",
                "coop_ts,coop_ts_relay,dducb,dducb_accelerated,dducb_plain,coop_ucb2,gossip_ucb,"
                "robust_gossip_ucb,local_ucb,kl_ucb,local_ts,oracle_ucb,random",
            ),
            _bench(
                f"--setting neighbours {CONFLICTING} {LONG} --trials 100 --policies",
                "coop_ts,coop_ts_relay,dducb,dducb_accelerated,dducb_plain,coop_ucb2,gossip_ucb,"
                "local_ucb,kl_ucb,local_ts,oracle_ucb,random",
            ),
        ),
    ),
    Section(
        "gossip",
        (
            _bench(
                f"--setting gossip {CONFLICTING} --horizon 200 --trials 100",
                "--policies coop_ts,coop_ts_relay,gossip_ucb",
            ),
        ),
    ),
    Section(
        "private",
        (
            _bench(
                f"--setting neighbours+private --epsilon 1 {CONFLICTING} --horizon 200",
                "--trials 100 --policies private_coop_ts,fed_ucb,gossip_ucb,local_ucb,oracle_ucb,"
                "random",
            ),
            _bench(
                f"--setting neighbours+private --epsilon 1 {CONFLICTING} {LONG} --trials 20",
                "--policies private_coop_ts,fed_ucb,oracle_ucb",
            ),
        ),
    ),
    Section(
        "ring",
        (
            _bench(
                f"--setting neighbours --graph ring {CONFLICTING} {LONG} --trials 20 --policies",
                "coop_ts,coop_ts_relay,dducb_accelerated,coop_ucb2,gossip_ucb,oracle_ucb",
            ),
        ),
    ),
    Section("dducb-ring", (_bench(DDUCB, "--graph ring"),), figure="dducb_ring.png"),
    Section("dducb-grid", (_bench(DDUCB, "--graph grid"),), figure="dducb_grid.png"),
    Section(
        "zhu",
        (
            _bench(
                "--agents 10 --arms 10 --graph path --instance zhu --noise clipped_gaussian",
                "--horizon 20000 --trials 20 --record-every 1000 --policies gossip_ucb,fed_ucb,"
                "cdp_mab,ddp_mab,hdp_mab,coop_ts,coop_ts_relay,private_coop_ts,dducb,"
                "dducb_accelerated,dducb_plain,coop_ucb2,local_ucb,kl_ucb,local_ts,oracle_ucb,"
                "random",
            ),
        ),
        figure="zhu_fig2b.png",
    ),
    Section(
        "tuned",
        tuple(
            _bench(
                f"--setting {setting} {BIASED} --horizon 200 --trials 300",
                "--policies tuned_ts,coop_ts,coop_ts_relay,gossip_ucb",
            )
            for setting in ("neighbours", "gossip")
        ),
        against="coop_ts_relay",
    ),
    Section(
        "tuned-private",
        tuple(
            _bench(
                f"--setting {setting} --epsilon 1 {BIASED} --horizon 200 --trials 300",
                "--policies tuned_private_ts,private_coop_ts,gossip_ucb",
            )
            for setting in ("gossip+private", "neighbours+private")
        ),
        against="gossip_ucb",
    ),
    Section(
        "tuned-long",
        (
            _bench(
                f"--setting neighbours {BIASED} --horizon 20000 --trials 50 --record-every 1000",
                "--policies tuned_ts,coop_ts_relay,coop_ts,gossip_ucb",
            ),
            _bench(
                f"--setting gossip {BIASED} --horizon 20000 --trials 50 --record-every 1000",
                "--policies tuned_ts,coop_ts_relay,coop_ts",
            ),
        ),
        against="coop_ts_relay",
    ),
    Section(
        "tuned-private-long",
        (
            _bench(
                f"--setting gossip+private --epsilon 1 {BIASED} --horizon 20000 --trials 50",
                "--record-every 1000 --policies tuned_private_ts,private_coop_ts,gossip_ucb",
            ),
        ),
        against="private_coop_ts",
    ),
    *(
        Section(
            name,
            tuple(
                _bench(
                    f"--import examples/coop_ts_beta.py --setting {setting} {BIASED} {length}",
                    f"--policies {moment},{beta}",
                )
                for setting in ("neighbours", "gossip")
                for length in ("--horizon 200 --trials 300", f"{LONG} --trials 30")
            ),
            against=beta,
        )
        for name, moment, beta in (
            ("moment", "coop_ts", "coop_ts_beta"),
            ("moment-relay", "coop_ts_relay", "coop_ts_relay_beta"),
        )
    ),
    Section("server", (_bench(SERVER, "--policies server_ts,fed1_ucb,cdp_mab,local_ts"),)),
    Section(
        "server-variants",
        (
            _bench(SERVER, "--period 10 --policies server_ts"),
            _bench(SERVER, "--period 100 --policies server_ts"),
            _bench(SERVER, "--kappa 1 --c 1 --policies fed1_ucb"),
        ),
    ),
    Section(
        "epoch",
        (
            _bench(f"--setting neighbours {EPOCH} --policies epoch_private_ts,random"),
            _bench(
                f"--setting neighbours+private {EPOCH}",
                "--policies tuned_private_ts,private_coop_ts",
            ),
        ),
    ),
)
"""The page's sections, in its order."""


def option(bench: tuple[str, ...], name: str) -> str | None:
    """The value of ``name`` in a bench's arguments (None if absent).

    Examples:
        >>> option(("--horizon", "200", "--held-out"), "--horizon")
        '200'
    """
    for i, arg in enumerate(bench[:-1]):
        if arg == name:
            return bench[i + 1]
    return None


def measure(section: Section, root: Path) -> None:
    """Run the section's benches into their folders under ``root`` (each replaced)."""
    from fedbandit_env.cli import main

    for bench, out in zip(section.benches, section.folders(root), strict=True):
        print(f"[{section.name}] fedbandit bench {' '.join(bench)}", flush=True)
        code = main(["bench", *bench, "--overwrite", "--no-progress", "--out", str(out)])
        if code:
            raise SystemExit(f"references_numbers: the bench of {section.name!r} failed ({code})")


def _wrapped(words: list[str]) -> list[str]:
    """A command's words as lines of at most 88 characters, an option kept on the line
    of its value, continued with a backslash."""
    groups: list[str] = []
    for word in words:
        last = groups[-1] if groups else ""
        if last.startswith("--") and " " not in last and not word.startswith("--"):
            groups[-1] += " " + word
            continue
        groups.append(word)
    lines, line = [], groups[0]
    for group in groups[1:]:
        if len(line) + 1 + len(group) > 86:
            lines.append(line + " \\")
            line = "    " + group
        else:
            line += " " + group
    return [*lines, line]


def command_lines(section: Section) -> str:
    """The section's benches as the fenced commands shown above its table, then the
    table's own command.

    Examples:
        >>> s = Section("x", (("--setting", "local", "--policies", "random"),), "random")
        >>> print(command_lines(s))
        ```
        .venv/bin/fedbandit bench --setting local --policies random --out results/references/x
        .venv/bin/fedbandit table results/references/x --markdown --against random
        ```
    """
    lines = []
    folders = section.folders(Path("results/references"))
    for bench, out in zip(section.benches, folders, strict=True):
        lines += _wrapped([".venv/bin/fedbandit", "bench", *bench, "--out", str(out)])
    for argv in _table_calls(section, folders):
        lines += _wrapped([".venv/bin/fedbandit", *argv])
    return "\n".join(["```", *lines, "```"])


def _table_calls(section: Section, folders: list[Path]) -> list[list[str]]:
    """The ``fedbandit table`` calls that write the section: one over every folder when
    paired (its aggregate spans them), else one per folder (two runs of one policy under
    different options, such as ``--period``, cannot share a table)."""
    if section.against is not None:
        return [["table", *map(str, folders), "--markdown", "--against", section.against]]
    return [["table", str(folder), "--markdown"] for folder in folders]


def render(section: Section, root: Path, pages: list[Path]) -> None:
    """Write the section's commands and table (paired against its reference, if any)
    into the generated block ``section.block`` of each of ``pages``."""
    import contextlib
    import io

    from fedbandit_env.cli import main
    from fedbandit_env.files import replace_block, write_text_atomic

    folders = section.folders(root)
    missing = [str(f) for f in folders if not (f / "regret.csv").exists()]
    if missing:
        raise SystemExit(f"references_numbers: no results in {', '.join(missing)}: measure first")
    tables = []
    calls = _table_calls(section, folders)
    for argv in calls:
        table = io.StringIO()
        if len(calls) > 1:  # say which command's table each is
            table.write(f"`{Path(argv[1]).name}`:\n\n")
        with contextlib.redirect_stdout(table):
            main(argv)
        tables.append(table.getvalue())
    body = f"{command_lines(section)}\n\n" + "\n".join(tables)
    if section.figure is not None:
        import shutil

        figure = Path("docs/figures/references") / section.figure
        shutil.copyfile(folders[0] / "regret.png", figure)
        print(f"copied {folders[0] / 'regret.png'} to {figure}")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        write_text_atomic(page, replace_block(text, section.block, body))
        print(f"wrote the block {section.block!r} of {page}")


def main(argv: list[str] | None = None) -> int:
    """The command line: measure the chosen sections and write their blocks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="comma-separated section names")
    parser.add_argument("--results", type=Path, default=Path("results/references"))
    parser.add_argument("--into", type=Path, action="append", default=None,
                        help="page(s) whose generated blocks receive the tables")  # fmt: skip
    parser.add_argument("--render-only", action="store_true",
                        help="write the blocks from the results already there")  # fmt: skip
    args = parser.parse_args(argv)
    names = [s.name for s in SECTIONS]
    chosen = names if args.only is None else args.only.split(",")
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(names)}")
    sections = [s for s in SECTIONS if s.name in chosen]
    for page in args.into or []:  # refuse before any work, naming the page
        from fedbandit_env.files import read_block

        try:
            text = page.read_text(encoding="utf-8")
            for section in sections:
                read_block(text, section.block)
        except (OSError, ValueError) as err:
            parser.error(f"{page}: {err}")
    for section in sections:
        if not args.render_only:
            measure(section, args.results)
        if args.into:
            render(section, args.results, args.into)
    return 0


if __name__ == "__main__":
    sys.exit(main())
