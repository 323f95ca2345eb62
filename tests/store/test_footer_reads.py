"""The footers the catalog's checks read (schema fingerprints, checkpoint ``kind`` bounds) are read
without a ``pq.ParquetFile``, and say what ``pq.read_metadata`` says.

Why (pipeline/util/footer_memo.py ``read_footer``): ``pq.read_metadata`` opens a ``ParquetFile``,
which maps every column's nested path in Python; a run's end reads ~10k footers and uses no such map.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.catalog import products
from pipeline.store import file_schemas
from pipeline.util.footer_memo import read_footer


def _file(path: Path, rows: list[dict[str, object]]) -> Path:
    table = pa.Table.from_pylist(rows).replace_schema_metadata({"k": "v"})
    pq.write_table(table, path)
    return path


def _rows() -> list[dict[str, object]]:
    return [{"kind": "note", "n": 1, "units": [{"a": "x", "b": [1, 2]}]}, {"kind": "op", "n": 2, "units": []}]


def test_the_footer_is_the_one_read_metadata_reads(tmp_path: Path) -> None:
    path = _file(tmp_path / "a.parquet", _rows())
    got, want = read_footer(path), pq.read_metadata(path)
    assert got.equals(want)
    assert str(got.schema).split("\n", 1)[1] == str(want.schema).split("\n", 1)[1]
    assert got.metadata == want.metadata
    stats = got.row_group(0).column(0).statistics
    assert (stats.min, stats.max) == ("note", "op")


def test_a_missing_or_damaged_file_raises_what_read_metadata_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        read_footer(tmp_path / "none.parquet")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet" * 10)
    with pytest.raises(ValueError):
        read_footer(bad)


def test_the_checks_open_no_parquet_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema fingerprints and the ``kind`` bounds read their footers without a ``pq.ParquetFile``."""
    a, b = _file(tmp_path / "a.parquet", _rows()), _file(tmp_path / "b.parquet", _rows())
    expected = file_schemas.fingerprint(a)

    def no_parquet_file(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pq.ParquetFile was opened")

    monkeypatch.setattr(pq, "ParquetFile", no_parquet_file)
    monkeypatch.setattr(pq.core, "ParquetFile", no_parquet_file)
    assert file_schemas.fingerprint(b) == expected
    assert products._kind_bounds(a) == (("note", "op"),)
