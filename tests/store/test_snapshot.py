"""ResultStore.snapshot(): the report's connection reads answers, judgments and progress once into
temp tables that shadow the views (also inside the views built on them), and answers exactly as
``connect()`` does."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from pipeline.report.refresh import report_fingerprint
from pipeline.store.results import (
    SNAPSHOT_TABLES,
    SNAPSHOT_THREADS,
    SNAPSHOT_VIEWS,
    ResultStore,
    write_parquet_atomic,
)
from pipeline.util.fingerprint import sorted_paths
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
        assert temp == set(SNAPSHOT_TABLES) | set(SNAPSHOT_VIEWS)
        for name in (*SNAPSHOT_TABLES, *VIEWS):
            assert _rows(snap, f'SELECT * FROM "{name}"') == _rows(live, f'SELECT * FROM "{name}"'), name


def test_snapshot_runs_on_one_thread(store: ResultStore) -> None:
    """Its scans are of thousands of one-row files: a second thread added CPU (and RSS), not speed."""
    assert SNAPSHOT_THREADS == 1
    with store.snapshot() as snap:
        assert snap.execute("SELECT current_setting('threads')").fetchall() == [(SNAPSHOT_THREADS,)]
    with store.connect() as live:  # other connections keep DuckDB's default
        assert live.execute("SELECT current_setting('threads')").fetchall() == [
            (duckdb.connect().execute("SELECT current_setting('threads')").fetchall()[0][0],)
        ]


def test_snapshot_is_one_consistent_read(store: ResultStore, tmp_path: Path) -> None:
    """Rows read at the start stay: a file removed meanwhile is still counted (a view would drop it)."""
    copy = ResultStore(str(tmp_path / "results"))
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


def _flags(n: int) -> pa.Table:
    return pa.table({"dataset": ["lme"] * n, "flag": [f"f{i}" for i in range(n)]})


def test_relink_points_the_named_views_at_their_files_now_and_keeps_the_rest(
    store: ResultStore, tmp_path: Path
) -> None:
    """The run's end writes the manifest's tables from a snapshot's queries, then reports from it
    (pipeline/provenance/run_end.py): the report must show the tables just written, and nothing else
    the snapshot read may move."""
    copy = ResultStore(str(tmp_path / "results"))
    shutil.copytree(store.root, copy.root)
    flags = copy.parquet_root / "manifest" / "integrity_flags.parquet"
    write_parquet_atomic(flags, _flags(1))
    with copy.pinned_snapshot() as snap:
        retrievals = snap.con.execute("SELECT count(*) FROM retrievals").fetchone()
        victim = sorted((copy.parquet_root / "retrievals").glob("*.parquet"))[0]
        victim.unlink()  # a file the snapshot read, changed meanwhile: still read as it was
        write_parquet_atomic(flags, _flags(3))
        assert snap.con.execute("SELECT count(*) FROM integrity_flags").fetchone() == (1,)
        copy.relink(snap, ("integrity_flags", "run_manifest"))
        assert snap.con.execute("SELECT count(*) FROM integrity_flags").fetchone() == (3,)
        assert snap.con.execute("SELECT count(*) FROM retrievals").fetchone() == retrievals
        assert "run_manifest" not in _views(snap.con)  # no file: no view
        write_parquet_atomic(copy.parquet_root / "manifest" / "run_manifest.parquet", _flags(2))
        copy.relink(snap, ("run_manifest",))
        assert snap.con.execute("SELECT count(*) FROM run_manifest").fetchone() == (2,)


def test_a_snapshots_report_fingerprint_is_its_files_as_they_were(store: ResultStore, tmp_path: Path) -> None:
    """Taken over a snapshot's links, the report's fingerprint is the live files' at the snapshot: a
    file written after it must leave the report stale, never mark stale rows current."""
    copy = ResultStore(str(tmp_path / "results"))
    shutil.copytree(store.root, copy.root)
    with copy.pinned_snapshot() as snap:
        assert report_fingerprint(copy, snap.parquet) == report_fingerprint(copy)
        victim = sorted((copy.parquet_root / "judgments").glob("*.parquet"))[0]
        new = victim.with_name(".new")  # a new version renamed over it, as a stage writes (the link keeps the old)
        shutil.copy(victim, new)
        os.utime(new, ns=(victim.stat().st_atime_ns, victim.stat().st_mtime_ns + 1_000_000_000))
        new.replace(victim)
        before = report_fingerprint(copy, snap.parquet)
        assert before != report_fingerprint(copy)
    with copy.pinned_snapshot() as snap:
        assert report_fingerprint(copy, snap.parquet) == report_fingerprint(copy) != before


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


@pytest.mark.parametrize(
    "names",
    [
        ["a/b.parquet", "a-b/c.parquet", "a/b/c.parquet", "a.parquet", "A/x.parquet", "a b/c.parquet", "a/a.parquet"],
        ["answers/q10.parquet", "answers/q2.parquet", "answers/q1.parquet", "memory/s/d/h.parquet", "memory.parquet"],
    ],
)
def test_sorted_paths_is_paths_own_order(tmp_path: Path, names: list[str]) -> None:
    """The fingerprints hash files in this order: it must be exactly ``sorted()``'s (which compares
    paths part by part: "a/b" before "a-b/c", where their strings compare the other way)."""
    paths = [tmp_path / n for n in names]
    assert sorted_paths(paths) == sorted(paths)
    assert sorted_paths(reversed(paths)) == sorted(paths)
    assert [str(p) for p in sorted_paths(paths)] != sorted(str(p) for p in paths)  # not the strings' order
