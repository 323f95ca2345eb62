"""A base view reads its files with ``union_by_name = false`` only where every file has one schema.

Why (pipeline/store/file_schemas.py): with ``union_by_name = true`` DuckDB reads every file's footer
each time the view, or a view built on it, is bound; with ``false`` only the first file's. The rows,
columns, their order and types must be the same either way, and a folder mixing schemas (files of
older versions, columns added later) must keep ``union_by_name = true``: with ``false`` its files
would fail the scan or lose columns.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from pipeline.store import file_schemas
from pipeline.store.file_schemas import same_schema
from pipeline.store.results import ResultStore, open_catalog, write_parquet_atomic
from pipeline.util.footer_memo import FooterMemo

BASE = {"dataset": "d", "unit": "s/r", "status": "ok", "system": "s", "reader": "r", "unit_hash": "h"}


def _row(q: str, **extra: object) -> dict[str, object]:
    return {**BASE, "partition_key": f"d__{q}", "question_id": q, "prediction": f"p-{q}", **extra}


def _write(store: ResultStore, q: str, table: pa.Table) -> None:
    write_parquet_atomic(store.partition_path("answers", f"d__{q}"), table)


def _uniform_store(root: Path, n: int = 4) -> ResultStore:
    store = ResultStore(str(root))
    for i in range(n):
        _write(store, f"q{i}", pa.Table.from_pylist([_row(f"q{i}", latency_s=0.5 * i)]))
    return store


def _view_sql(con: duckdb.DuckDBPyConnection, name: str = "answers") -> str:
    row = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [name]).fetchone()
    assert row is not None
    return str(row[0])


def _described(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {sql}").fetchall()]


def _union_read(store: ResultStore) -> str:
    return f"SELECT * FROM read_parquet('{store.parquet_root.as_posix()}/answers/*.parquet', union_by_name = true)"


def test_a_uniform_folder_binds_from_one_footer_and_reads_what_union_by_name_reads(tmp_path: Path) -> None:
    store = _uniform_store(tmp_path / "res")
    with store.connect() as con:
        assert "union_by_name = false" in _view_sql(con)
        assert _described(con, "answers") == _described(con, _union_read(store))
        got = sorted(con.execute("SELECT * FROM answers").fetchall(), key=repr)
        assert got == sorted(con.execute(_union_read(store)).fetchall(), key=repr)
        assert len(got) == 4
    store.refresh_catalog()
    catalog = open_catalog(store.catalog_path)
    try:
        assert "union_by_name = false" in _view_sql(catalog)
        assert sorted(catalog.execute("SELECT * FROM answers").fetchall(), key=repr) == got
    finally:
        catalog.close()


def test_the_snapshot_of_a_uniform_folder_binds_from_one_footer(tmp_path: Path) -> None:
    store = _uniform_store(tmp_path / "res")
    with store.pinned_snapshot() as snap:
        # the snapshot's copy shadows the view; the view itself is still in main
        sql = snap.con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'answers'").fetchone()
        assert sql is not None and "union_by_name = false" in sql[0]
        assert snap.con.execute("SELECT count(*) FROM answers").fetchone() == (4,)


def _missing_column(q: str) -> pa.Table:
    row = _row(q)
    del row["prediction"]
    return pa.Table.from_pylist([row])


def _extra_column(q: str) -> pa.Table:
    return pa.Table.from_pylist([_row(q, latency_s=0.0, agent_trace="t")])


def _legacy_hash(q: str) -> pa.Table:
    row = _row(q, latency_s=0.0)
    row["config_hash"] = row.pop("unit_hash")
    return pa.Table.from_pylist([row])


def _null_typed(q: str) -> pa.Table:
    table = pa.Table.from_pylist([_row(q, latency_s=0.0)])
    i = table.schema.get_field_index("prediction")
    return table.set_column(i, "prediction", pa.nulls(1))


def _int_typed(q: str) -> pa.Table:
    table = pa.Table.from_pylist([_row(q, latency_s=0.0)])
    i = table.schema.get_field_index("latency_s")
    return table.set_column(i, "latency_s", pa.array([7], pa.int64()))


def _reordered(q: str) -> pa.Table:
    table = pa.Table.from_pylist([_row(q, latency_s=0.0)])
    return table.select(list(reversed(table.column_names)))


ODD_FILES = {
    "a column missing": _missing_column,
    "an extra column": _extra_column,
    "a legacy config_hash": _legacy_hash,
    "a null-typed column": _null_typed,
    "a column of another type": _int_typed,
    "the columns in another order": _reordered,
}


@pytest.mark.parametrize("odd", list(ODD_FILES))
def test_a_folder_mixing_schemas_keeps_union_by_name_and_every_row(tmp_path: Path, odd: str) -> None:
    store = ResultStore(str(tmp_path / "res"))
    for i in range(3):
        _write(store, f"q{i}", pa.Table.from_pylist([_row(f"q{i}", latency_s=0.0)]))
    _write(store, "q9", ODD_FILES[odd]("q9"))
    with store.connect() as con:
        assert "union_by_name = true" in _view_sql(con)
        rows = con.execute("SELECT question_id, unit_hash, system FROM answers ORDER BY 1").fetchall()
        assert rows == [(q, "h", "s") for q in ("q0", "q1", "q2", "q9")]
        if odd != "a legacy config_hash":  # that one's view renames the column; the others read as union_by_name
            assert _described(con, "answers") == _described(con, _union_read(store))


def test_a_uniform_folder_of_legacy_files_reads_unit_hash(tmp_path: Path) -> None:
    store = ResultStore(str(tmp_path / "res"))
    for q in ("q1", "q2"):
        _write(store, q, _legacy_hash(q))
    with store.connect() as con:
        assert "union_by_name = false" in _view_sql(con)
        assert con.execute("SELECT question_id, unit_hash FROM answers ORDER BY 1").fetchall() == [
            ("q1", "h"),
            ("q2", "h"),
        ]
        assert "config_hash" not in {r[0] for r in con.execute("DESCRIBE answers").fetchall()}


def test_why_mixed_folders_need_union_by_name(tmp_path: Path) -> None:
    """What ``union_by_name = false`` would do with them: fail, or drop a later file's column."""
    store = ResultStore(str(tmp_path / "res"))
    _write(store, "q0", _missing_column("q0"))
    _write(store, "q1", pa.Table.from_pylist([_row("q1")]))
    glob = f"{store.parquet_root.as_posix()}/answers/*.parquet"
    con = duckdb.connect()
    try:
        columns = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{glob}')").fetchall()]
        assert "prediction" not in columns  # the first file's columns only: q1's prediction is lost
        assert same_schema(sorted((store.parquet_root / "answers").glob("*.parquet"))) is False
    finally:
        con.close()


def test_each_file_footer_is_read_once_per_inode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot's hard links and the next catalog's are the same inodes: one footer read each."""
    store = _uniform_store(tmp_path / "res", n=3)
    files = sorted((store.parquet_root / "answers").glob("*.parquet"))
    links = tmp_path / "links"
    links.mkdir()
    for f in files:
        os.link(f, links / f.name)
    reads: list[str] = []
    real = file_schemas.fingerprint

    def counted(path: Path | str) -> str:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(file_schemas, "fingerprint", counted)
    monkeypatch.setattr(file_schemas._FINGERPRINTS, "entries", {})
    assert same_schema(files) is True
    assert same_schema(sorted(links.iterdir())) is True
    assert len(reads) == 3
    _write(store, "q0", pa.Table.from_pylist([_row("q0", latency_s=1.0, agent_trace="t")]))  # a new inode
    assert same_schema(sorted((store.parquet_root / "answers").glob("*.parquet"))) is False
    assert len(reads) == 4


def test_no_file_and_one_file_are_uniform(tmp_path: Path) -> None:
    store = _uniform_store(tmp_path / "res", n=1)
    assert same_schema([]) is True
    assert same_schema(list((store.parquet_root / "answers").glob("*.parquet"))) is True


def test_the_footer_memo_reads_a_file_once_and_starts_over_past_its_limit(tmp_path: Path) -> None:
    """One read per (device, inode, size, mtime); past ``limit`` entries everything is read again."""
    reads: list[str] = []
    cleared: list[int] = []
    memo = FooterMemo(lambda p: reads.append(p.name) or len(reads), 2, lambda: cleared.append(1))
    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    for f in (a, b, c):
        f.write_text(f.name)
    assert [memo.get(a), memo.get(a), memo.get(b), memo.get(b)] == [1, 1, 2, 2]
    assert (reads, cleared) == (["a", "b"], [])
    assert memo.get(c) == 3  # the third file: the memo starts over
    assert (cleared, memo.get(c), memo.get(a)) == ([1], 3, 4)
    assert reads == ["a", "b", "c", "a"]
