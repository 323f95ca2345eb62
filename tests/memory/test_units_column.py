"""pipeline.readers.base.units_column: the columnar read of ``retrievals.units`` equals the per-row one."""

from __future__ import annotations

from dataclasses import asdict

import pyarrow as pa

from pipeline.memory.base import RetrievedUnit
from pipeline.readers.base import retrieval_from_row, units_column
from pipeline.readers.run import retrieval_rows, rows_by_unit


def _unit(i: int, turns: tuple[str, ...] = ("t1",), **scores: float) -> RetrievedUnit:
    return RetrievedUnit(f"u{i}", i, f"s{i % 2}", turns, f"text {i}", **scores)


def _row(unit: str, units: list[RetrievedUnit] | None, record_hash: str = "r1") -> dict:
    raw = None if units is None else [{**asdict(u), "turn_ids": list(u.turn_ids)} for u in units]
    return {"unit": unit, "status": "ok", "record_hash": record_hash, "units": raw, "context": "c"}


ROWS = [
    _row("rag", [_unit(1, semantic=0.5), _unit(2, ("a", "b"), bm25=1.25, fused=0.1)]),
    _row("full_context", []),
    _row("hybrid", None),  # a failed retrieval stores no units
    _row("notes", [_unit(3, (), rerank=-2.0, graph=0.0, temporal=0.3)]),
]


def test_units_column_matches_row_by_row_conversion() -> None:
    table = pa.Table.from_pylist(ROWS)
    expected = [retrieval_from_row(r).units for r in table.to_pylist()]
    assert units_column(table.column("units")) == expected
    assert expected[0][1].turn_ids == ("a", "b") and expected[3][0].turn_ids == ()


def test_units_column_on_a_slice_and_chunks() -> None:
    table = pa.Table.from_pylist(ROWS)
    sliced = pa.concat_tables([table.slice(1, 3), table.slice(0, 1)])  # two chunks, offsets not at 0
    expected = [retrieval_from_row(r).units for r in sliced.to_pylist()]
    assert units_column(sliced.column("units")) == expected


def test_a_field_missing_from_an_older_file_is_none() -> None:
    old = [{k: v for k, v in asdict(_unit(1, bm25=2.0)).items() if k != "rerank"}]
    table = pa.Table.from_pylist([{"unit": "rag", "status": "ok", "units": old}])
    (units,) = units_column(table.column("units"))
    assert units[0].rerank is None and units[0].bm25 == 2.0 and units[0].turn_ids == ("t1",)


def test_retrieval_rows_equal_rows_by_unit_but_parsed() -> None:
    table = pa.Table.from_pylist([*ROWS, _row("stale", [_unit(4)], record_hash="old")])
    fast, slow = retrieval_rows(table, "r1"), rows_by_unit(table, "r1")
    assert fast.keys() == slow.keys()
    for unit, row in fast.items():
        assert retrieval_from_row(row) == retrieval_from_row(slow[unit])
        assert {k: v for k, v in row.items() if k != "units"} == {k: v for k, v in slow[unit].items() if k != "units"}
    assert fast["stale"]["status"] == "failed" and "stale" in fast["stale"]["error"]
