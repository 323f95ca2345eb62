"""Shared fixtures. Tests stay offline: no hub downloads, ever.

Under ``CI=true`` a skipped test is a failed test: CI runs on a fresh machine whose set-up
(scripts/setup.sh) installs everything the suite needs, so a skip there means a test that
silently does not exist. Locally, skips stay skips (a missing browser is not your bug).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

# shared helpers hold assertions and fixtures: rewritten however a test module reaches them (import or plugin)
pytest.register_assert_rewrite("tests.support")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def under_ci() -> bool:
    """CI sets ``CI=true`` (as GitHub Actions and most runners do)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def _fail_if_skipped(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Turn a skip into a failure that says why it was skipped (xfail is not a skip)."""
    if not under_ci() or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true, which counts as a failure: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    _fail_if_skipped(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, None, None]:
    outcome = yield
    _fail_if_skipped(outcome.get_result())


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """shared/datasets when present; skipped otherwise (users won't have it; CI=true fails instead).

    The paths are read inside the fixture: this file also runs alone (tests/tree/test_ci_no_skips.py)."""
    from tests.support.paths import SHARED_DATASETS

    if not (SHARED_DATASETS / "locomo10.json").exists():
        pytest.skip("shared/datasets is absent")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def project_root() -> Path:
    from tests.support.paths import PROJECT_ROOT

    return PROJECT_ROOT
