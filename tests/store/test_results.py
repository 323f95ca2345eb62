"""Parquet writes are atomic and the DuckDB catalog never blocks on a user's open session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store import results
from pipeline.store.results import ResultStore, open_catalog, write_parquet_atomic


def _questions(n: int) -> pa.Table:
    return pa.table(
        {
            "dataset": ["d"] * n,
            "partition_key": [f"d__q{i}" for i in range(n)],
            "question_id": [f"q{i}" for i in range(n)],
        }
    )


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "x" / "t.parquet"
    write_parquet_atomic(path, _questions(3))
    write_parquet_atomic(path, _questions(5))
    assert [p.name for p in path.parent.iterdir()] == ["t.parquet"]
    assert duckdb.sql(f"SELECT count(*) FROM '{path}'").fetchall() == [(5,)]


@pytest.mark.parametrize("buffered", [True, False])
def test_atomic_write_has_the_bytes_of_a_direct_write(tmp_path: Path, buffered: bool, monkeypatch) -> None:
    """Small tables go through a buffer, large ones straight to the file: the same file either way."""
    monkeypatch.setattr(results, "BUFFERED_WRITE_BYTES", 1 << 30 if buffered else 0)
    table = _questions(50)
    write_parquet_atomic(tmp_path / "new" / "t.parquet", table, "snappy")
    pq.write_table(table, tmp_path / "direct.parquet", compression="snappy")
    assert (tmp_path / "new" / "t.parquet").read_bytes() == (tmp_path / "direct.parquet").read_bytes()


def test_atomic_write_in_an_existing_folder_makes_no_folder(tmp_path: Path, monkeypatch) -> None:
    """Why: a stage writes a file per question into one folder; a ``mkdir`` per file failed every time."""
    write_parquet_atomic(tmp_path / "x" / "a.parquet", _questions(1))  # the folder's first file makes it
    made: list[Path] = []
    real = Path.mkdir
    monkeypatch.setattr(Path, "mkdir", lambda self, *a, **k: (made.append(self), real(self, *a, **k))[1])
    write_parquet_atomic(tmp_path / "x" / "b.parquet", _questions(2))
    assert made == []
    assert pq.read_table(tmp_path / "x" / "b.parquet").num_rows == 2


def test_a_failed_atomic_write_leaves_neither_file(tmp_path: Path, monkeypatch) -> None:
    def broken(*_a: object, **_k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(results.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_parquet_atomic(tmp_path / "t.parquet", _questions(1))
    assert list(tmp_path.iterdir()) == []


def test_store_root_is_resolved_once(tmp_path: Path, monkeypatch) -> None:
    """Why: a stage asks for a question file's path twice per question, and each resolve walks the path."""
    store = ResultStore(results_dir=str(tmp_path / "res"))
    resolved: list[Path] = []
    real = Path.resolve
    monkeypatch.setattr(Path, "resolve", lambda self, *a, **k: (resolved.append(self), real(self, *a, **k))[1])
    paths = {store.partition_path("answers", f"d__q{i}") for i in range(3)}
    assert len(resolved) == 1
    assert paths == {(tmp_path / "res").resolve() / "parquet" / "answers" / f"d__q{i}.parquet" for i in range(3)}


def test_catalog_refresh_while_user_holds_it_open(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    store.write(store.canonical_path("d", "questions"), _questions(2))
    store.refresh_catalog()
    # a user's DuckDB session in another process holds the catalog file (and its lock) open
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,time; c=duckdb.connect(r'{store.catalog_path}', read_only=True); "
            "c.execute('select count(*) from questions').fetchall(); print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=store.root,  # the views hold paths relative to the results folder
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        store.write(store.canonical_path("d", "questions"), _questions(7))
        views = store.refresh_catalog()  # a read-only session (duckdb -readonly) never blocks it
        assert "questions" in views and "progress" in views
        con = open_catalog(store.catalog_path)
        assert con.execute("SELECT count(*) FROM questions").fetchone() == (7,)
        con.close()
    finally:
        holder.kill()
        holder.wait()


def test_progress_view_marks_missing_stages(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    store.write(store.canonical_path("d", "questions"), _questions(2))
    got = store.query("SELECT stage, status, count(*) AS n FROM progress GROUP BY ALL ORDER BY ALL").to_pylist()
    assert {"stage": "canonical", "status": "done", "n": 2} in got
    assert {"stage": "answers", "status": "missing", "n": 2} in got


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        (None, ["a", "b", "c"]),  # the whole file
        (["c", "a"], ["c", "a"]),  # the caller's order
        (["c", "missing", "a"], ["c", "a"]),  # a column the file lacks stays absent
        (["missing"], []),
    ],
)
def test_read_partition_reads_the_asked_columns_the_file_has(
    tmp_path: Path, asked: list[str] | None, expected: list[str]
) -> None:
    """One question's file read for the columns a stage uses: those the file holds, in the asked order."""
    store = ResultStore(results_dir=str(tmp_path / "res"))
    write_parquet_atomic(store.partition_path("answers", "d__q1"), pa.table({"a": [1], "b": ["x"], "c": [2.5]}))
    table = store.read_partition("answers", "d__q1", columns=asked)
    assert table is not None and table.column_names == expected
    assert store.read_partition("answers", "d__q2", columns=asked) is None


def test_read_parquet_file_chooses_from_the_files_own_names(tmp_path: Path) -> None:
    """``choose`` sees the file's column names and picks from them; the schema's metadata is kept."""
    path = tmp_path / "t.parquet"
    table = pa.table({"a": [1], "b": [2]}).replace_schema_metadata({b"k": b"v"})
    pq.write_table(table, path)
    seen: list[list[str]] = []

    def choose(names: list[str]) -> list[str]:
        seen.append(names)
        return names[1:]

    got = results.read_parquet_file(path, choose=choose)
    assert seen == [["a", "b"]] and got.column_names == ["b"] and got.schema.metadata == {b"k": b"v"}
