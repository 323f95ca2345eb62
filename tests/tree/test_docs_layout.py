"""The documentation's shape: a short README, one index, how-tos and design notes apart, no dead link."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"
README = PROJECT_ROOT / "README.md"
README_MAX_LINES = 120
README_MAX_CHARS = 12_000
LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)]*)?\)")


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_readme_is_short() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES and len(text) <= README_MAX_CHARS


def test_docs_are_an_index_views_and_two_folders() -> None:
    top = {p.name for p in DOCS.iterdir()}
    assert top == {"README.md", "views.md", "guide", "design"}
    assert all(p.parent.name in ("docs", "guide", "design") for p in _pages())


def test_the_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text()
    listed = {(DOCS / m.group("target")).resolve() for m in LINK.finditer(index)}
    assert {p.resolve() for p in _pages() if p.name != "README.md"} <= listed


def test_every_relative_link_resolves() -> None:
    dead = [
        f"{page.relative_to(PROJECT_ROOT)}: {m.group('target')}"
        for page in [README, *_pages()]
        for m in LINK.finditer(page.read_text())
        if "://" not in m.group("target") and not (page.parent / m.group("target")).exists()
    ]
    assert dead == []
