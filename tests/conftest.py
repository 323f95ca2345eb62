"""Shared fixtures. Tests stay offline: no hub downloads, ever."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """../shared/datasets when present; the test is skipped otherwise (users won't have it)."""
    if not (SHARED_DATASETS / "locomo10.json").exists():
        pytest.skip("../shared/datasets is absent")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def project_root() -> Path:
    return PROJECT_ROOT
