"""Folders the tests read: the checkout, the committed test data, the bundled samples, the shared datasets."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TEST_DATA = PROJECT_ROOT / "tests" / "data"
OFFICIAL_DIR = TEST_DATA / "official"  # expected figures from the official code (format: its README.md)
SAMPLE_DATA = PROJECT_ROOT / "pipeline" / "sample_data"


def _find_shared_datasets() -> Path:
    """``$MEMBENCH_SHARED_DATASETS``, else ``shared/datasets`` beside the checkout or beside one of
    its parents (a worktree sits deeper)."""
    if os.environ.get("MEMBENCH_SHARED_DATASETS"):
        return Path(os.environ["MEMBENCH_SHARED_DATASETS"])
    for parent in PROJECT_ROOT.parents:
        candidate = parent / "shared" / "datasets"
        if (candidate / "locomo10.json").exists():
            return candidate
    return PROJECT_ROOT.parent / "shared" / "datasets"


SHARED_DATASETS = _find_shared_datasets()
