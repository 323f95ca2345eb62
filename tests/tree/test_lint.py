"""The code base stays ruff-clean and ruff-formatted (style is part of the brief, so CI enforces it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# ``check``: the rules of pyproject.toml; ``format --check``: one layout for every file (37 older
# files once drifted from it unnoticed while only the rules were checked).
RUFF_COMMANDS = {"rules": ["check", "."], "format": ["format", "--check", "."]}


@pytest.mark.parametrize("args", list(RUFF_COMMANDS.values()), ids=list(RUFF_COMMANDS))
def test_ruff(project_root: Path, args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", *args], cwd=project_root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
