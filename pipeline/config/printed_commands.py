"""Commands membench prints for copying, with the config selection they need to run as printed.

Why: the definitions read ``$MEMBENCH_CONFIG`` (default configs/sample.yaml); a re-run command
printed for another config without ``MEMBENCH_CONFIG=...`` would, copied into a fresh shell, run
the sample config instead.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from pipeline.config.model import CONFIG_ENV, DEFAULT_CONFIG
from pipeline.config.project import default_config, project_of

RUN_ALL = "dagster job execute -j full_benchmark"


def config_selection(source: str | Path) -> str:
    """``MEMBENCH_CONFIG=<file> `` for a config other than the default of the project the command
    runs in, else "". The path is relative only when typed in the project root about a file inside
    it (where the dagster commands are run); otherwise absolute, so it holds wherever the line is pasted."""
    default = default_config() or DEFAULT_CONFIG
    path = Path(source).resolve() if str(source) else default
    if path == default.resolve():
        return ""
    root = project_of(Path.cwd())
    inside = root is not None and Path.cwd().resolve() == root and path.is_relative_to(root)
    shown = os.path.relpath(path, root) if inside and root is not None else str(path)
    return f"{CONFIG_ENV}={shlex.quote(shown)} "


def run_all(source: str | Path) -> str:
    """The command that runs every question of the config not yet done."""
    return config_selection(source) + RUN_ALL


def materialize_one(source: str | Path, selection: str, partition: str) -> str:
    """The command that re-runs one question's per-question stages."""
    return f"{config_selection(source)}dagster asset materialize --select '{selection}' --partition {partition}"
