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
    assert len(lines) <= 250, "the README is the front door; the manual lives in docs/"
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
