"""A Parquet schema read as its footer's bytes (pipeline/util/schema_bytes.py) says what pyarrow's
decoded schema says: equal prefixes for equal schemas, different ones for any difference DuckDB binds.

Why: the catalog's schema check compares ~8k footers at a run's end by these bytes instead of
pyarrow's full decode (pipeline/store/file_schemas.py).
"""

from __future__ import annotations

import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store import file_schemas
from pipeline.util.footer_memo import read_footer
from pipeline.util.schema_bytes import footer_bytes, schema_prefix

BASE = pa.table({"id": ["a", "b"], "n": [1, 2], "units": [[{"s": "x", "t": [1]}], []]})
# (name, table) pairs: each differs from BASE in what a schema says, or in rows only ("rows")
VARIANTS: list[tuple[str, pa.Table]] = [
    ("rows", pa.table({"id": ["c"], "n": [7], "units": [[{"s": "yy", "t": [2, 3]}]]})),
    ("a column's type", BASE.set_column(1, "n", pa.array([1.0, 2.0]))),
    ("a column's name", BASE.rename_columns(["id", "m", "units"])),
    ("a column's order", BASE.select(["n", "id", "units"])),
    ("an extra column", BASE.append_column("extra", pa.array([True, False]))),
    ("a missing column", BASE.drop_columns(["n"])),
    ("a nested field's type", BASE.set_column(2, "units", pa.array([[{"s": "x", "t": ["1"]}], []]))),
    ("not nullable", BASE.cast(BASE.schema.set(1, pa.field("n", pa.int64(), nullable=False)))),
    ("a timestamp's zone", pa.table({"t": pa.array([0], pa.timestamp("us", tz="UTC"))})),
    ("a decimal", pa.table({"d": pa.array([decimal.Decimal("1.25")], pa.decimal128(9, 2))})),
    ("a map", pa.table({"m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))})),
    ("a field id", BASE.cast(BASE.schema.set(1, pa.field("n", pa.int64(), metadata={"PARQUET:field_id": "7"})))),
]


def _write(path: Path, table: pa.Table, **kwargs: object) -> Path:
    pq.write_table(table, path, **kwargs)  # type: ignore[arg-type]
    return path


def _decoded(path: Path) -> str:
    return str(read_footer(path).schema).split("\n", 1)[1]  # line 1 is the Python object's address


@pytest.mark.parametrize(("name", "table"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_equal_prefixes_exactly_for_equal_schemas(tmp_path: Path, name: str, table: pa.Table) -> None:
    base, other = _write(tmp_path / "base.parquet", BASE), _write(tmp_path / "other.parquet", table)
    same_bytes = schema_prefix(footer_bytes(base)) == schema_prefix(footer_bytes(other))
    assert same_bytes == (_decoded(base) == _decoded(other)) == (name == "rows")


def test_the_prefix_starts_the_footer_and_holds_the_schema(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.parquet", BASE, compression="zstd")
    footer = footer_bytes(path)
    prefix = schema_prefix(footer)
    assert footer.startswith(prefix) and len(prefix) < len(footer)
    assert all(name.encode() in prefix for name in ("id", "n", "units", "s", "t"))
    assert b"ARROW:schema" not in prefix  # the key-value metadata comes after it


def test_other_writer_settings_keep_the_schema(tmp_path: Path) -> None:
    """Compression, row groups and statistics are not the schema: the same prefix."""
    a = _write(tmp_path / "a.parquet", BASE, compression="snappy")
    b = _write(tmp_path / "b.parquet", BASE, compression="zstd", row_group_size=1, write_statistics=False)
    assert schema_prefix(footer_bytes(a)) == schema_prefix(footer_bytes(b))


def test_a_missing_or_damaged_file_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        footer_bytes(tmp_path / "none.parquet")
    for bad in (b"not parquet" * 10, b"PAR1", b"x" * 20 + (10**6).to_bytes(4, "little") + b"PAR1"):
        (tmp_path / "bad.parquet").write_bytes(bad)
        with pytest.raises(ValueError):
            footer_bytes(tmp_path / "bad.parquet")
    footer = footer_bytes(_write(tmp_path / "a.parquet", BASE))
    for damaged in (footer[:5], b"\x00" + footer[1:], b"\x1f"):  # cut short; no fields; an unknown type
        with pytest.raises(ValueError):
            schema_prefix(damaged)


def test_a_prefix_match_is_the_fingerprint_the_walk_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files after the first of a schema are matched by ``startswith``: the same fingerprint object."""
    monkeypatch.setattr(file_schemas, "_DISTINCT", {})
    first, later = _write(tmp_path / "a.parquet", BASE), _write(tmp_path / "b.parquet", VARIANTS[0][1])
    other = _write(tmp_path / "c.parquet", VARIANTS[1][1])
    a, b, c = (file_schemas.fingerprint(p) for p in (first, later, other))
    assert a is b and a == schema_prefix(footer_bytes(later))
    assert c != a and len(file_schemas._DISTINCT) == 2
