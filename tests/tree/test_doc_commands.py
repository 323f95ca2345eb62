"""Every ```bash block of README.md and docs/**/*.md runs as a newcomer copies it (project root,
after ``source .venv/bin/activate``) and exits 0, so none goes stale. A block that cannot run
offline in the suite (the install, the suite itself, an 11-minute run on the real datasets) is
preceded by ``<!-- not run by tests/tree/test_doc_commands.py: <why> -->``; it must say why."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import PROJECT_ROOT

NOT_RUN = re.compile(r"<!-- not run by tests/tree/test_doc_commands\.py: (?P<why>[^>]*\S) -->\n$")
BLOCK = re.compile(r"```bash\n(?P<code>.*?)```", re.S)
DOCS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").rglob("*.md"))]


def _blocks() -> list[tuple[str, str, str | None]]:
    """(file:line, code, why it is not run or None) for every bash block of the docs."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            before = NOT_RUN.search(text[: m.start()])
            found.append((f"{doc.relative_to(PROJECT_ROOT)}:{line}", m.group("code"), before and before.group("why")))
    return found


BLOCKS = _blocks()
RUN = [(where, code) for where, code, why in BLOCKS if why is None]


def test_the_docs_have_blocks_and_every_exception_says_why() -> None:
    assert len(BLOCKS) >= 5 and RUN
    assert all(why is None or len(why) > 10 for _, _, why in BLOCKS)


@pytest.mark.parametrize(("where", "code"), RUN, ids=[w for w, _ in RUN])
def test_block_runs_as_copied(where: str, code: str, tmp_path: Path) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    script = f"set -e\nsource .venv/bin/activate\nexport DAGSTER_HOME={home}\n{code}"
    proc = subprocess.run(["bash", "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{where}\n{code}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
