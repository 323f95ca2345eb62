"""The environment of a benchmark script's own Dagster runs: a private Dagster home, never the project's.

Why shared: every script that times ``dagster job execute`` needs the same thing (its own instance
with the project's dagster.yaml, the config chosen by ``MEMBENCH_CONFIG``, the CLI told where the
definitions are, the model hub kept offline), and the copies had started to drift.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dagster_env(folder: Path, config: Path, *, fresh: bool = False) -> dict[str, str]:
    """os.environ plus a Dagster home under ``folder`` (emptied first when ``fresh``) and ``config``."""
    home = folder / "dagster_home"
    if fresh and home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "configs" / "dagster.yaml", home / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "MEMBENCH_CONFIG": str(config),
        "DAGSTER_CLI_JOB_EXECUTE_MODULE_NAME": "pipeline.definitions",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
