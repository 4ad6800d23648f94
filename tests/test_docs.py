"""The front door and the manual: every link of the README resolves, every page of
``docs/`` is in the site's navigation, and the README's and the getting-started page's
Python examples run as written (the site itself is built with warnings as errors by
``make test``: ``mkdocs build --strict``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _links(path: Path) -> list[str]:
    return [t for t in LINK.findall(path.read_text()) if "://" not in t]


def test_every_relative_link_of_the_readme_resolves() -> None:
    links = _links(ROOT / "README.md")
    assert len(links) >= 10  # the manual's pages are linked from the front door
    missing = [t for t in links if not (ROOT / t).exists()]
    assert missing == []


def test_the_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, "the README is the front door; the manual lives in docs/"
    text = "\n".join(lines)
    assert "make bench" in text and "make test" in text


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [
        p.relative_to(ROOT / "docs").as_posix()
        for p in (ROOT / "docs").rglob("*.md")
        if "hooks" not in p.parts
    ]
    assert pages
    assert [p for p in pages if f": {p}" not in nav] == []


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


@pytest.mark.slow
@pytest.mark.parametrize("page", ["README.md", "docs/guides/getting-started.md"])
def test_the_tour_runs_as_written(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # plot_regret writes regret.png into the working folder
    blocks = _python_blocks(ROOT / page)
    assert blocks
    from fedbandit_env import registry

    before = set(registry.policy_ids())
    namespace: dict[str, object] = {}
    try:
        for block in blocks:  # later blocks use the names of earlier ones, as a reader would
            exec(compile(block, page, "exec"), namespace)
    finally:
        for new in set(registry.policy_ids()) - before:  # the page registers a policy
            registry.deregister(new)


DEFAULT_BENCH_PAGES = ("README.md", "docs/index.md", "docs/guides/benchmarks.md")


def test_the_default_bench_tables_are_generated_for_todays_defaults() -> None:
    """Issue 53 item 7: the pages' default-bench tables are one generated block
    (``make docs-numbers``), the same on every page, for the scenario the defaults build
    now (its label hashes every field: a changed default fails here until the block is
    generated again) and the policies a bench runs by default."""
    from fedbandit_env.cli.options import default_policies
    from fedbandit_env.files import read_block
    from fedbandit_env.scenario.scenario import Scenario

    blocks = [read_block((ROOT / p).read_text(encoding="utf-8"), "default-bench")
              for p in DEFAULT_BENCH_PAGES]  # fmt: skip
    assert all(b == blocks[0] for b in blocks[1:]), "the pages' tables differ"
    lines = blocks[0].splitlines()
    assert lines[0] == "```" and lines[-1] == "```"
    assert lines[1].startswith(Scenario().label + ","), (lines[1], Scenario().label)
    rows = [line.split()[0] for line in lines[4:-1] if line.strip()]
    assert [r.rstrip("*") for r in rows] == default_policies()


def test_table_writes_into_a_pages_generated_block_and_refuses_a_page_without_one(
    tmp_path: Path,
) -> None:
    from fedbandit_env.cli import main
    from fedbandit_env.files import block_markers, read_block

    out = tmp_path / "b"
    argv = ["bench", "--policies", "random", "--agents", "3", "--arms", "2", "--horizon", "20",
            "--trials", "2", "--no-plot", "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    start, end = block_markers("t")
    page = tmp_path / "page.md"
    page.write_text(f"# Page\n\n{start}\nold\n{end}\n\nafter\n", encoding="utf-8")
    import json

    config = json.loads((out / "config.json").read_text())
    config["summary"][0]["seconds_per_trial"] = 1.5  # the CSV keeps no times: the config does
    (out / "config.json").write_text(json.dumps(config))
    assert main(["table", str(out), "--into", str(page), "--block", "t"]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.splitlines()[-5].rstrip().endswith("1.50"), text  # random's s/trial
    block = read_block(text, "t")
    assert block.startswith("```\n") and "random" in block and "old" not in block
    assert text.startswith("# Page\n") and text.endswith(f"{end}\n\nafter\n")
    bare = tmp_path / "bare.md"
    bare.write_text("# No block\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="bare.md.*generated block 't' once"):
        main(["table", str(out), "--into", str(bare), "--block", "t"])
    with pytest.raises(SystemExit, match="--into and --block go together"):
        main(["table", str(out), "--into", str(page)])
    assert bare.read_text(encoding="utf-8") == "# No block\n"


def test_the_policies_page_has_three_columns_per_table() -> None:
    """Issue 53 item 7: at 1280 px the eight-column Policies table hid its description
    behind a horizontal scroll (seen in headless Chromium); one section per family with
    three columns reads whole there. Every id appears once, whole, in code."""
    import importlib.util

    from fedbandit_env import registry

    spec = importlib.util.spec_from_file_location("generated", ROOT / "docs/hooks/generated.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.policies_page()
    rows = [line for line in page.splitlines() if line.startswith("| ")]
    cells = {len(re.split(r"(?<!\\)\|", row)) - 2 for row in rows}
    assert cells == {3}, cells
    for pid in registry.policy_ids():
        assert len(re.findall(rf"\| `{pid}`\*?<br>", page)) == 1, pid
    assert "(0, inf)" in page  # an open range reads as the command line says it


FIGURE = re.compile(
    r"(?<![\w.`/=-])(\d+(?:,\d{3})*\.\d+|\d+(?:\.\d+)?x\b|\d+(?:\.\d+)?\s?%|"
    r"\d+(?:\.\d+)?\s?(?:k|M)\b(?! (?:numbers|agents)))"
)
"""A typed figure: a decimal, a ratio (``240x``), a share (``60%``) or a rate (``5 M``)."""
NOT_FIGURES = re.compile(
    r"\b95\s?%\s+(?:interval|CI|bootstrap|confidence)|Python 3\.\d+\+|CC BY \d\.\d|"
    r"\b(?:Sec|Eq|Fig|Table)\.? \d+(?:\.\d+)*|"
    r"(?:at most|at least|within|target:?) \d+(?:\.\d+)?x\b"
)
"""What looks like a figure and is not one: the confidence level of an interval, a
Python version, a licence's version, a paper's section, a target the text states."""


def _typed_figures(text: str) -> list[str]:
    """The lines of a page that carry a figure outside generated blocks, code blocks and
    inline code (commands and their arguments, which may span lines)."""
    if text.startswith("# ") and "\nGenerated by `" in text[:600]:
        return []  # a page a command writes whole (yardstick.md, ...)
    kept, generated, fenced = [], False, False
    for line in text.splitlines():
        if line.startswith("<!-- generated"):
            generated = True
        elif line.startswith("<!-- end generated"):
            generated = False
        elif line.strip().startswith("```"):
            fenced = not fenced
        elif not (generated or fenced):
            kept.append(line)
    prose = re.sub(r"`[^`]*`", lambda m: "\n" * m.group().count("\n"), "\n".join(kept))
    prose = NOT_FIGURES.sub(lambda m: "\n" * m.group().count("\n"), prose)
    return [line for line in prose.splitlines() if FIGURE.search(line)]


def test_no_page_has_a_hand_typed_figure() -> None:
    """Issue 64 item 5: a measured number on a page is written by the command that
    measures it (a generated block or page, checked for drift), or it drifts, as the
    wrappers guide's 240x did (its own command gave 5.7x). No page of the docs or the
    README has a typed figure outside generated blocks, code and inline code."""
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    for page in pages:
        lines = _typed_figures(page.read_text(encoding="utf-8"))
        assert not lines, f"{page.relative_to(ROOT)}: hand-typed figures:\n" + "\n".join(lines)


def test_the_figure_detector_finds_figures_and_passes_conventions() -> None:
    page = "\n".join([
        "Gossip_UCB is 240x the PettingZoo path, and 60% of the time goes to it.",
        "regret fell from 3940.7 to 871.9",
        "at 5 M agent-steps/s",
        "`fedbandit bench --epsilon 0.5` with a 95% interval; Python 3.10+; target: 2x",
        "<!-- generated: x (make docs-numbers); edit the command, not the text -->",
        "| a | 12.5 |",
        "<!-- end generated: x -->",
        "```", "speed 1.5x", "```",
        "messages of 2M numbers",
    ])  # fmt: skip
    assert len(_typed_figures(page)) == 3


def _example(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("example", "saved", "page", "block"),
    [
        ("robustness", "robustness.json", "guides/wrappers.md", "robustness"),
        ("learner_among_gossip", "learner_among_gossip.json", "guides/learned.md",
         "learner-among-gossip"),
    ],
)  # fmt: skip
def test_the_examples_tables_are_their_committed_figures_numbers(
    example: str, saved: str, page: str, block: str
) -> None:
    """The guides' tables of the examples' figures are generated from the numbers each
    figure was drawn from (``--replot ... --into``, ``make docs-numbers``): a
    re-measured JSON without its block regenerated fails here."""
    import json

    from fedbandit_env.files import read_block

    module = _example(example)
    data = json.loads((ROOT / "docs" / "figures" / saved).read_text())
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    want = (
        module.markdown(data)
        if example != "robustness"
        else module.markdown(data["points"], data["scale"])
    )
    assert read_block(text, block) == want


def test_the_privacy_audit_tables_are_generated_from_tests_that_exist() -> None:
    """docs/privacy.md's bounds are the block ``make privacy-numbers`` writes from the
    audit tests' own reports (``fedbandit_env.privacy.audit_log``): every audit module
    of the Makefile has a table, and every row names a test that still exists (a renamed
    or removed audit fails here until the block is generated again)."""
    from fedbandit_env.files import read_block

    block = read_block((ROOT / "docs/privacy.md").read_text(encoding="utf-8"), "privacy-audits")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    audited = set(re.findall(r"(tests/\S+?\.py)", makefile.split("AUDIT_TESTS :=")[1][:400]))
    modules = re.findall(r"^`(tests/[^`]+\.py)`$", block, re.M)
    assert set(modules) == audited, (sorted(modules), sorted(audited))
    for module in modules:
        table = block.split(f"`{module}`")[1].split("\n`tests/")[0]
        names = re.findall(r"^\| `([^`\[]+)(?:\[[^`]*\])?` \|", table, re.M)
        source = (ROOT / module).read_text(encoding="utf-8")
        assert names and all(f"def {n}(" in source for n in names), (module, names)


TABLE_TITLE = re.compile(r"^\*\*(.+), T = (\d+), (\d+) trials\*\*$", re.M)


def test_the_references_tables_are_their_sections_commands() -> None:
    """Issue 64 item 5: every table of docs/references.md is the generated block its
    section of ``examples/references_numbers.py`` writes (``make references-numbers``),
    headed by the commands that measured it; each table's horizon, trials, setting and
    policies are the ones its bench names, so a changed command fails here until its
    block is measured again, and a typed table has no block to hide in."""
    from fedbandit_env.files import read_block

    module = _example("references_numbers")
    text = (ROOT / "docs/references.md").read_text(encoding="utf-8")
    named = re.findall(r"^<!-- generated: (references-\S+) ", text, re.M)
    assert named == [s.block for s in module.SECTIONS]
    for section in module.SECTIONS:
        block = read_block(text, section.block)
        assert block.startswith(module.command_lines(section) + "\n\n"), section.name
        titles = list(TABLE_TITLE.finditer(block))
        assert len(titles) == len(section.benches), (section.name, len(titles))
        ends = [t.start() for t in titles[1:]] + [len(block)]
        for bench, title, end in zip(section.benches, titles, ends, strict=True):
            label, horizon, trials = title.groups()
            stated = (module.option(bench, "--horizon"), module.option(bench, "--trials"))
            assert (horizon, trials) == stated, section.name
            setting = module.option(bench, "--setting")
            assert setting is None or label.endswith(f", {setting}"), (label, setting)
            table = block[title.end() : end].split("\npaired against")[0]
            rows = re.findall(r"^\| ([a-z0-9_]+)(?:\\\*)? \|", table, re.M)[1:]  # not the head
            assert sorted(rows) == sorted(module.option(bench, "--policies").split(",")), (
                section.name
            )
            if section.against is not None:
                assert f"paired against {section.against}" in block[title.end() : end]
        if section.figure is not None:
            assert f"](figures/references/{section.figure})" in text, section.figure
