"""Shared fixtures. Tests stay offline: no hub downloads, ever.

Under ``CI=true`` a skipped test is a failed test: CI runs on a fresh machine whose set-up
installs everything the suite needs, so a skip there means a test that silently does not exist.
Locally, skips stay skips (a missing browser is not your bug).

What only the tests use (every extra, ruff and mypy, chromium, PostgreSQL, the npm MCP server,
Hindsight's server) is not installed by ``bash scripts/setup.sh``, which README commands (1) and
(2) share: the test command's first step installs it (``scripts/setup.sh --tests``), before any
test module is imported, in a ``.venv`` that set-up made in this checkout and that lacks it.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

# shared helpers hold assertions and fixtures: rewritten however a test module reaches them (import or plugin)
pytest.register_assert_rewrite("tests.support")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _needs_test_setup(root: Path) -> bool:
    """The suite runs in ``root/.venv``, made by scripts/setup.sh (its ``membench-locks`` record), without
    the test-only set-up. Any other interpreter (a virtualenv of one's own, a shared one) is left as it is."""
    venv = root / ".venv"
    record = venv / "membench-locks"
    if not record.is_file() or Path(sys.prefix).resolve() != venv.resolve():
        return False
    return "test" not in record.read_text().split()


def pytest_sessionstart(session: pytest.Session) -> None:
    """README command (2) brings what only the tests use: installed here, before collection imports a test."""
    root = Path(__file__).resolve().parents[1]
    if not _needs_test_setup(root):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("installing what only the tests use: bash scripts/setup.sh --tests")
    done = subprocess.run(["bash", "scripts/setup.sh", "--tests"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.exit(f"bash scripts/setup.sh --tests failed:\n{(done.stdout + done.stderr)[-4000:]}", returncode=3)
    importlib.invalidate_caches()  # the libraries just installed are importable in this process


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
