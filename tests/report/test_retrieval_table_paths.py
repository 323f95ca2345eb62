"""The metric table's fast paths give the rows the row-by-row path gives.

``build_dataset_table`` makes the units column-wise from Arrow (``unit_columns``) and derives the
LongMemEval gold from four turn columns (``GoldTurn``); the references below are the paths they
replaced: every retrievals row through ``to_pylist``, ``_units`` and ``RankedUnits.of``, the gold from
whole TurnRows.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from pipeline.core.records import EvidenceRow, TurnRow
from pipeline.metrics.retrieval import Gold, RankedUnits, gold_protocol, lme_gold
from pipeline.report.retrieval_table import (
    _RETRIEVALS_SQL,
    _haystack_session_ids,
    _units,
    build_dataset_table,
    load_gold,
    load_questions,
    metric_rows,
    metrics_schema,
    unit_columns,
)
from pipeline.report.sql import query_rows
from tests.support.report import LOADERS, build_store

UNIT = pa.struct([("rank", pa.int32()), ("session_key", pa.string()), ("turn_ids", pa.list_(pa.string()))])


def _u(rank: int | None, session: str | None, turns: list[str] | None) -> dict[str, Any]:
    return {"rank": rank, "session_key": session, "turn_ids": turns}


ROWS: list[list[dict[str, Any]] | None] = [
    [_u(1, "A", ["A:0"]), _u(2, "B", ["B:1"]), _u(3, "A", ["A:2"])],  # a turn ranking
    [_u(2, "S", ["S:0", "S:1", "S:2"]), _u(1, "T", ["T:4", "T:0"])],  # session units, out of rank order
    [],
    None,  # a failed retrieval: no units
    [_u(1, "A", None), _u(2, "B", [])],  # units without turn ids (a product's facts)
    [_u(5, None, ["x"])],
    [_u(2, "A", ["A:0"]), _u(1, "B", ["B:0"]), _u(2, "C", ["C:0"]), _u(1, "D", ["A:0"])],  # ties, out of order
    [_u(1, "A", ["A:0", "A:1"]), _u(1, "B", None), _u(3, "C", ["C:0"])],  # ascending with a tie: kept as listed
]


@pytest.mark.parametrize(
    "column",
    [
        pa.chunked_array([pa.array(ROWS, pa.list_(UNIT))]),
        pa.chunked_array([pa.array(ROWS[:2], pa.list_(UNIT)), pa.array(ROWS[2:], pa.list_(UNIT))]),
        pa.chunked_array([pa.array(ROWS + ROWS, pa.list_(UNIT)).slice(3, 7)]),  # a chunk with an offset
        pa.chunked_array([pa.array([], pa.list_(UNIT))]),
        pa.chunked_array([], pa.list_(UNIT)),
    ],
    ids=["one chunk", "two chunks", "sliced", "no rows", "no chunks"],
)
def test_unit_columns_equal_the_units_of_each_row(column: pa.ChunkedArray) -> None:
    assert unit_columns(column) == [RankedUnits.of(_units(raw)) for raw in column.to_pylist()]


def test_unit_columns_of_a_null_list_backed_by_values_is_empty() -> None:
    """Arrow lets a null list span values: it is still no units, as ``_units(None)``."""
    values = pa.array([_u(1, "A", ["A:0"]), _u(2, "B", ["B:0"]), _u(3, "C", ["C:0"])], UNIT)
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), values, mask=pa.array([False, True, False]))
    column = pa.chunked_array([lists])
    assert (
        unit_columns(column)
        == [RankedUnits.of(_units(raw)) for raw in column.to_pylist()]
        == [RankedUnits.of(_units(ROWS[0][:1])), RankedUnits.of([]), RankedUnits.of(_units([values[2].as_py()]))]
    )


def test_a_null_unit_takes_the_row_path_and_its_error() -> None:
    with_null = pa.chunked_array([pa.array([[_u(1, "A", ["A:0"]), None]], pa.list_(UNIT))])
    with pytest.raises(TypeError):
        _units(with_null.to_pylist()[0])
    with pytest.raises(TypeError):
        unit_columns(with_null)
    null_rank = pa.chunked_array([pa.array([[_u(None, "A", ["A:0"])]], pa.list_(UNIT))])
    with pytest.raises(TypeError):
        unit_columns(null_rank)


def _gold_from_turn_rows(con: duckdb.DuckDBPyConnection, dataset: str, protocol: str) -> dict[str, Gold]:
    """load_gold as it was: LongMemEval's gold from whole TurnRows of the answer sessions."""
    if protocol != "longmemeval":
        return load_gold(con, dataset, protocol)
    by_key: dict[str, list[EvidenceRow]] = defaultdict(list)
    for r in query_rows(con, "SELECT * FROM evidence WHERE dataset = ?", [dataset]):
        by_key[r["partition_key"]].append(EvidenceRow(**r))
    turns: dict[str, list[TurnRow]] = defaultdict(list)
    sql = (
        "SELECT * FROM turns WHERE dataset = ? AND session_key IN "
        "(SELECT unit_id FROM evidence WHERE dataset = ? AND level = 'session')"
    )
    for r in query_rows(con, sql, [dataset, dataset]):
        turns[r["session_key"]].append(TurnRow(**{f: r.get(f) for f in TurnRow.__dataclass_fields__}))
    source_ids = _haystack_session_ids(con, dataset)
    return {k: lme_gold(v, turns, source_ids.get(k)) for k, v in by_key.items()}


def _row_path_table(con: duckdb.DuckDBPyConnection, dataset: str, protocol: str) -> pa.Table:
    questions, gold = load_questions(con, dataset), _gold_from_turn_rows(con, dataset, protocol)
    empty = Gold(frozenset(), frozenset())
    rows: list[dict[str, Any]] = []
    for r in query_rows(con, _RETRIEVALS_SQL, [dataset]):
        key = r["partition_key"]
        rows += metric_rows(r, questions.get(key), gold.get(key, empty), protocol, dataset)
    return pa.Table.from_pylist(rows, schema=metrics_schema())


@pytest.mark.parametrize(("dataset", "rows"), [("lme", 32), ("loco", 4), ("mc", 0)])
def test_metric_table_equals_the_row_path(tmp_path: Path, dataset: str, rows: int) -> None:
    """Every dataset kind of the hand-built store (failures, exclusions, trimmed contexts, LoCoMo's
    official recall; mc has no retrievals): the same rows, in the same order, with the same values."""
    store = build_store(tmp_path / "results")
    protocol = gold_protocol(LOADERS[dataset])
    with store.connect(report_views=False) as con:
        table = build_dataset_table(con, dataset, protocol)
        assert load_gold(con, dataset, protocol) == _gold_from_turn_rows(con, dataset, protocol)
        reference = _row_path_table(con, dataset, protocol)
    assert table.num_rows == rows
    assert table.equals(reference)
    assert table.to_pylist() == reference.to_pylist()
