"""One Parquet file's table is read without a ``pq.ParquetFile``, and is the table it reads.

Why (pipeline/store/results.py ``read_parquet_file``): a stage reads a per-question file for every
question (the answers their retrievals, the judgments their answers); ``pq.ParquetFile`` also
resolves a filesystem for the path and maps every column's nested path in Python, ~0.06-0.14 ms
of a ~0.5 ms read.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store.results import ResultStore, read_parquet_file


def _file(path: Path) -> Path:
    rows = [
        {"unit": "a", "units": [{"key": "s1", "turn_ids": [1, 2]}], "status": "ok", "meta": {"x": 1, "y": "z"}},
        {"unit": "b", "units": [], "status": "failed", "meta": None},
    ]
    table = pa.Table.from_pylist(rows).replace_schema_metadata({"k": "v"})
    pq.write_table(table, path)
    return path


def _parquet_file_read(path: Path, columns: list[str] | None) -> pa.Table:
    with pq.ParquetFile(path, pre_buffer=False) as f:
        return f.read(columns=columns, use_threads=False)


@pytest.mark.parametrize(
    "columns",
    [
        None,
        ["unit"],
        ["status", "unit"],  # the asked order, not the file's
        ["units"],  # a nested column: all its leaves
        ["meta", "units", "status"],
        ["unit", "missing"],  # a name the file lacks selects nothing
        [],
    ],
)
def test_the_table_is_the_one_parquet_file_reads(tmp_path: Path, columns: list[str] | None) -> None:
    path = _file(tmp_path / "a.parquet")
    got, want = read_parquet_file(path, columns), _parquet_file_read(path, columns)
    assert got.equals(want)
    assert got.schema.metadata == want.schema.metadata
    assert got.column_names == want.column_names


def test_a_missing_or_damaged_file_raises_what_parquet_file_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        read_parquet_file(tmp_path / "none.parquet")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet" * 10)
    with pytest.raises(pa.ArrowInvalid):
        read_parquet_file(bad)
    with pytest.raises(pa.ArrowInvalid):
        pq.ParquetFile(bad)


def test_partition_reads_open_no_parquet_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage's reads of a question's file, whole or some columns, go through no ``pq.ParquetFile``."""
    store = ResultStore(str(tmp_path))
    path = store.partition_path("answers", "q1")
    path.parent.mkdir(parents=True)
    _file(path)
    whole, some = _parquet_file_read(path, None), _parquet_file_read(path, ["status", "units"])

    def no_parquet_file(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pq.ParquetFile was opened")

    monkeypatch.setattr(pq, "ParquetFile", no_parquet_file)
    monkeypatch.setattr(pq.core, "ParquetFile", no_parquet_file)
    assert store.read_partition("answers", "q1") == whole
    assert store.read_partition("answers", "q1", ["status", "units"]) == some
    assert store.read_partition("answers", "q2") is None
