"""The code base stays ruff-clean (style is part of the brief, so CI enforces it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_ruff_clean(project_root: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=project_root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_formatted(project_root: Path) -> None:
    """One layout for every file: ``ruff format`` would change none (37 older files once drifted)."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."], cwd=project_root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
