"""The code base stays mypy-clean (pipeline/, assets/, resources/ with [tool.mypy] of pyproject.toml),
enforced here like ruff in tests/tree/test_lint.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_mypy_clean(project_root: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml"],
        cwd=project_root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
