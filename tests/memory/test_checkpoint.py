"""An ingestion checkpoint gives back exactly the units it was given (built column by column)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.memory.base import MemoryUnit
from pipeline.memory.checkpoint import (
    CHECKPOINT_LOCKS,
    DICTIONARY_COLUMNS,
    MEMORY_UNIT_SCHEMA,
    STATISTICS_COLUMNS,
    Checkpoint,
    CheckpointState,
    checkpoint_lock,
    load,
    save,
    timestamps,
    units_from_table,
    units_of_rows,
    units_to_table,
)
from pipeline.util.filelock import keyed_locks_available
from tests.support.locks import other_process_sees, other_process_sees_key

UNITS = [
    MemoryUnit("u1", "h", "s1", 0, ("t1", "t2"), "I moved to Porto.", dt.datetime(2023, 5, 8, 13, 56), "user", "turn"),
    MemoryUnit("u2", "h", "s1", 0, (), "", None, "session", "session"),
    MemoryUnit("u3", "h", "s2", 7, ("t9",), "état -- 5:30pm;", dt.datetime(2024, 1, 1), "assistant", "note"),
]


def test_schema_columns_are_the_unit_fields_in_order() -> None:
    """units_from_table builds MemoryUnit positionally from the schema's columns."""
    assert MEMORY_UNIT_SCHEMA.names == [f.name for f in dataclasses.fields(MemoryUnit)]


def test_units_round_trip_through_the_table_and_the_file(tmp_path: Path) -> None:
    table = units_to_table(UNITS)
    assert table.schema == MEMORY_UNIT_SCHEMA
    assert units_from_table(table) == UNITS
    assert units_from_table(units_to_table([])) == []
    state = CheckpointState("bm25", "flat_bm25", "abc", "fp", 2, 2, 0.5)
    save(tmp_path / "c.parquet", Checkpoint(state, UNITS))
    loaded = load(tmp_path / "c.parquet")
    assert loaded is not None and loaded.state == state and loaded.units == UNITS


def test_units_of_rows_are_the_constructors_units() -> None:
    """Equal, hashed alike, of the class, frozen; and MemoryUnit keeps what makes the shortcut the same."""
    names = MEMORY_UNIT_SCHEMA.names
    rows = [dataclasses.astuple(u) for u in UNITS]
    made = units_of_rows(names, rows)
    assert made == UNITS and [hash(u) for u in made] == [hash(u) for u in UNITS]
    assert all(type(u) is MemoryUnit and vars(u) == vars(c) for u, c in zip(made, UNITS, strict=True))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].text = "changed"  # type: ignore[misc]
    assert units_of_rows(names, []) == []
    assert not hasattr(MemoryUnit, "__post_init__") and not hasattr(MemoryUnit, "__slots__")
    fields = dataclasses.fields(MemoryUnit)
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING for f in fields)


def test_timestamps_are_the_columns_values_each_date_made_once() -> None:
    """Dates shared, repeated, unordered, across chunks, with microseconds, before 1970, none, a null: to_pylist's."""
    day = dt.datetime(2023, 5, 8, 13, 56)
    values = [day, dt.datetime(1969, 12, 31, 23, 59, 59, 999999), day, dt.datetime(2024, 2, 29, 0, 0, 0, 1), day]
    kind = pa.timestamp("us")
    column = pa.chunked_array([pa.array(values[:2], kind), pa.array(values[2:], kind)])
    assert timestamps(column) == column.to_pylist() == values
    assert timestamps(pa.chunked_array([], kind)) == []
    with_null = pa.chunked_array([pa.array([day, None, day], kind)])
    assert timestamps(with_null) == [day, None, day]
    for other in (pa.timestamp("us", tz="UTC"), pa.timestamp("ns"), pa.timestamp("s")):  # Arrow's own conversion
        column = pa.chunked_array([pa.array([day, day], other)])
        assert timestamps(column) == column.to_pylist()


def test_a_checkpoint_file_has_dictionaries_and_statistics_only_where_they_serve(tmp_path: Path) -> None:
    """Dictionaries for the repeating columns, bounds for ``kind`` only (pipeline/catalog/products.py
    reads them); the table read back is the one written, schema included."""
    path = tmp_path / "c.parquet"
    save(path, Checkpoint(CheckpointState("bm25", "flat_bm25", "abc", "fp", 2, 2, 0.5), UNITS))
    chunks = pq.ParquetFile(path).metadata.row_group(0)
    columns = {chunks.column(i).path_in_schema.split(".")[0]: chunks.column(i) for i in range(chunks.num_columns)}
    assert {n for n, c in columns.items() if c.has_dictionary_page} == set(DICTIONARY_COLUMNS)
    assert {n for n, c in columns.items() if c.is_stats_set} == set(STATISTICS_COLUMNS) == {"kind"}
    assert (columns["kind"].statistics.min, columns["kind"].statistics.max) == ("note", "turn")
    table = pq.read_table(path)
    assert table.schema.equals(MEMORY_UNIT_SCHEMA) and table.equals(units_to_table(UNITS))


@pytest.mark.skipif(not keyed_locks_available(), reason="byte-range locks owned by the open file: Linux only")
def test_a_checkpoint_lock_is_a_byte_of_its_folders_lock_file(tmp_path: Path) -> None:
    """No file per checkpoint; an older membench's lock file beside the checkpoint is held too."""
    path = tmp_path / "memory" / "bm25" / "d" / "h1.parquet"
    with checkpoint_lock(path):
        assert other_process_sees_key(path.with_name(CHECKPOINT_LOCKS), "h1.parquet") == "busy"
        assert other_process_sees_key(path.with_name(CHECKPOINT_LOCKS), "h2.parquet") == "free"
    assert sorted(p.name for p in path.parent.iterdir()) == [CHECKPOINT_LOCKS]
    older = path.with_name("h1.parquet.lock")
    older.touch()
    with checkpoint_lock(path):
        assert other_process_sees(older) == "busy"
    assert other_process_sees(older) == "free"
