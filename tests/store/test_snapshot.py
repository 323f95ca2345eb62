"""ResultStore.snapshot(): the report's connection reads answers, judgments and progress once into
temp tables that shadow the views (also inside the views built on them), and answers exactly as
``connect()`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.store.results import SNAPSHOT_TABLES, ResultStore
from tests.support.report import build_full_store

VIEWS = ("accuracy_report", "accuracy_by_type", "paired_comparisons", "progress_summary")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    return build_full_store(tmp_path_factory.mktemp("snapshot") / "results")


def _rows(con, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(con.execute(sql).fetchall(), key=repr)


def test_snapshot_copies_tables_and_answers_as_connect(store: ResultStore) -> None:
    with store.connect() as live, store.snapshot() as snap:
        temp = {r[0] for r in snap.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
        assert temp == set(SNAPSHOT_TABLES)
        for name in (*SNAPSHOT_TABLES, *VIEWS):
            assert _rows(snap, f'SELECT * FROM "{name}"') == _rows(live, f'SELECT * FROM "{name}"'), name


def test_snapshot_is_one_consistent_read(store: ResultStore, tmp_path: Path) -> None:
    """Rows read at the start stay: a file removed meanwhile is still counted (a view would drop it)."""
    copy = ResultStore(str(tmp_path / "results"))
    import shutil

    shutil.copytree(store.root, copy.root)
    with copy.snapshot() as snap:
        before = snap.execute("SELECT count(*) FROM answers").fetchone()
        victim = sorted((copy.parquet_root / "answers").glob("*.parquet"))[0]
        victim.unlink()
        assert snap.execute("SELECT count(*) FROM answers").fetchone() == before
    with copy.connect() as live:
        assert live.execute("SELECT count(*) FROM answers").fetchone() < before  # type: ignore[operator]


def test_snapshot_skips_missing_tables(tmp_path: Path) -> None:
    with ResultStore(str(tmp_path / "empty")).snapshot() as snap:
        assert snap.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone() == (0,)
