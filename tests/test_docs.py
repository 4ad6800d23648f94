"""The front door and the manual: every link of the README resolves, every page of
``docs/`` is in the site's navigation, and the README's and the getting-started page's
Python examples run as written (the site itself is built with warnings as errors by
``make test``: ``mkdocs build --strict``)."""

from __future__ import annotations

import re
from pathlib import Path

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
