"""The run's end when the catalog cannot be rebuilt (assets/run_gate.py ``refresh_at_end``).

The failure is real: the catalog's coalescing lock file (pipeline/util/coalesce.py) is a folder,
so both the report refresh and the catalog rebuild after it raise. The run's end must log both
errors and return, so that the run's summary and verdict still follow.
"""

from __future__ import annotations

import logging
from pathlib import Path

import dagster as dg
import pytest

from assets.run_gate import refresh_at_end
from pipeline.store.results import CATALOG_WORK, ResultStore


def _store_whose_catalog_fails(tmp_path: Path) -> ResultStore:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    store.root.mkdir(parents=True)
    (store.root / f".{CATALOG_WORK}.lock").mkdir()  # opening the lock file raises IsADirectoryError
    with pytest.raises(IsADirectoryError):
        store.refresh_catalog()
    return store


class _Collect(logging.Handler):
    """Keeps the messages the step's Dagster logger writes."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_failing_catalog_rebuild_is_logged_and_the_run_end_goes_on(tmp_path: Path) -> None:
    store = _store_whose_catalog_fails(tmp_path)
    context = dg.build_asset_context()
    seen = _Collect()
    context.log.addHandler(seen)
    refresh_at_end(context, store, dg.StaticPartitionsDefinition(["q1"]))  # returns: the summary follows
    errors = [r.getMessage() for r in seen.records if r.levelno >= logging.ERROR]
    assert any("report refresh failed (IsADirectoryError" in e for e in errors), errors
    rebuild = [e for e in errors if "catalog rebuild failed (IsADirectoryError" in e]
    assert len(rebuild) == 1, errors
    assert str(store.catalog_path) in rebuild[0] and "next run rebuilds it" in rebuild[0]
    assert not store.catalog_path.exists()
