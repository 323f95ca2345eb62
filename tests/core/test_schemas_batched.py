"""Canonical checks in bounded memory keep the guarantees of a whole-table pandera check
(issue 11 item 6): every row is checked, uniqueness holds across row groups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pandera.errors
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.core.records import CANONICAL_SCHEMAS, TABLES
from pipeline.core.schemas import MAX_FAILURE_CASES, _BatchChecker, _on_arrow, _row_schema, validate_table_file
from pipeline.util.row_groups import iter_row_groups


def _turns(n: int) -> list[dict[str, object]]:
    return [
        {
            "dataset": "d",
            "session_key": f"s{i // 3}",
            "turn_id": f"s{i // 3}:{i % 3}",
            "position": i % 3,
            "speaker": "user",
            "role": "user",
            "text": f"turn {i}",
            "has_answer": False,
            "source_id": None,
            "caption": None,
        }
        for i in range(n)
    ]


def _write(path: Path, rows: list[dict[str, object]], group: int = 4) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=CANONICAL_SCHEMAS["turns"]), path, row_group_size=group)
    return path


def test_clean_table_passes_and_counts_every_row(tmp_path: Path) -> None:
    result = validate_table_file(_write(tmp_path / "t.parquet", _turns(30)), "turns", batch_rows=3)
    assert result.passed and result.rows == 30


def test_duplicate_across_row_groups_is_caught(tmp_path: Path) -> None:
    rows = _turns(30)
    rows[25]["turn_id"] = rows[1]["turn_id"]  # rows 1 and 25 sit in different row groups
    result = validate_table_file(_write(tmp_path / "t.parquet", rows), "turns", batch_rows=3)
    assert not result.passed and result.failure_cases is not None
    case = result.failure_cases.iloc[0]
    assert case["check"] == "unique(turn_id)" and case["failure_case"] == rows[1]["turn_id"] and case["n"] == 2


def test_bad_value_in_a_late_batch_names_its_row_in_the_file(tmp_path: Path) -> None:
    rows = _turns(30)
    rows[27]["role"] = "system"
    result = validate_table_file(_write(tmp_path / "t.parquet", rows), "turns", batch_rows=3)
    assert not result.passed and result.failure_cases is not None
    bad = result.failure_cases[result.failure_cases["column"] == "role"]
    assert bad["failure_case"].tolist() == ["system"] and bad["index"].tolist() == [27]


# ---- the type and null checks done on Arrow (issue 41, target 1) ---------------------------------


def _pandera_alone(path: Path, batch_rows: int) -> pd.DataFrame | None:
    """What the check reported before the Arrow checks (9079de4): pandera over each batch of each row
    group, converted to pandas whole, the first failing batch's cases."""
    schema = _row_schema("turns")
    wanted = [c for c in pq.ParquetFile(path).schema_arrow.names if c in schema.columns]
    rows = 0
    for group in iter_row_groups(path, wanted):
        for start in range(0, group.num_rows, batch_rows):
            df = group.slice(start, batch_rows).to_pandas()
            df.index = pd.RangeIndex(rows, rows + len(df))
            rows += len(df)
            try:
                schema.validate(df, lazy=True)
            except pandera.errors.SchemaErrors as exc:
                return exc.failure_cases.head(MAX_FAILURE_CASES)
    return None


def _write_as(path: Path, rows: list[dict[str, object]], stats: bool = True, **types: pa.DataType) -> Path:
    """Turns rows written with some columns' Arrow types replaced (or dropped: ``pa.null()``),
    with or without the column statistics (null counts) the check may read instead of a column."""
    fields = [pa.field(f.name, types.get(f.name, f.type)) for f in CANONICAL_SCHEMAS["turns"]]
    schema = pa.schema([f for f in fields if f.type != pa.null() or f.name not in types])
    data = [{k: v for k, v in r.items() if k in schema.names} for r in rows]
    pq.write_table(pa.Table.from_pylist(data, schema=schema), path, row_group_size=4, write_statistics=stats)
    return path


def test_every_column_of_the_turns_table_is_checked_on_arrow() -> None:
    """The texts, ids and flags by their Arrow type and nulls; ``position`` (``ge(0)``) and ``role``
    (``isin``) by vectorised value checks too (pass 10), so no batch of turns goes to pandas."""
    checker = _BatchChecker.of("turns")
    assert list(checker.rest.columns) == []
    assert {c.name for c in checker.arrow} == {
        "dataset", "session_key", "turn_id", "position", "speaker", "role", "text", "has_answer", "source_id",
        "caption",
    }  # fmt: skip
    assert _BatchChecker.of("questions").arrow == ()  # cross-column checks read any column


@pytest.mark.parametrize(
    ("table", "column", "on_arrow"),
    [
        ("turns", "position", True),  # int64, ge
        ("turns", "role", True),  # str, isin
        ("sessions", "n_turns", True),  # int64, ge
        ("data_quality", "count", True),  # int64, ge(1)
        ("questions", "partition_key", False),  # str_matches: Python's re, not Arrow's RE2
        ("questions", "correct_choice_index", False),  # coerced (a nullable int read as float)
        ("questions", "choices", False),  # a list column: pandas objects
    ],
)
def test_which_columns_arrow_decides(table: str, column: str, on_arrow: bool) -> None:
    (definition,) = (c for c in TABLES[table].columns if c.name == column)
    assert _on_arrow(definition) is on_arrow


def _mutations() -> dict[str, tuple[list[dict[str, object]], dict[str, Any]]]:
    def rows(**change: object) -> list[dict[str, object]]:
        out = _turns(30)
        for column, value in change.items():
            out[17][column] = value
        return out

    return {
        "clean": (rows(), {}),
        "null text": (rows(text=None), {}),
        "null flag": (rows(has_answer=None), {}),
        "null optional id": (rows(source_id=None, caption=None), {}),
        "null text and bad role": (rows(text=None, role="system"), {}),
        "large strings": (rows(), {"text": pa.large_string()}),
        "text stored as numbers": ([{**r, "text": i} for i, r in enumerate(_turns(30))], {"text": pa.int64()}),
        "flag stored as text": ([{**r, "has_answer": "no"} for r in _turns(30)], {"has_answer": pa.string()}),
        "text column missing": (rows(), {"text": pa.null()}),
        "null text, no statistics": (rows(text=None), {"stats": False}),
        "clean, no statistics": (rows(), {"stats": False}),
        "negative position": (rows(position=-1), {}),
        "null position": (rows(position=None), {}),
        "position stored as int32": (rows(), {"position": pa.int32()}),
        "position stored as text": (
            [{**r, "position": str(r["position"])} for r in _turns(30)],
            {"position": pa.string()},
        ),
        "bad role": (rows(role="system"), {}),
        "null role": (rows(role=None), {}),
        "roles as large strings": (rows(), {"role": pa.large_string()}),
        "bad role as large strings": (rows(role="tool"), {"role": pa.large_string()}),
        "no rows": ([], {}),
    }


@pytest.mark.parametrize("case", list(_mutations()))
def test_the_arrow_checks_report_what_pandera_alone_reports(tmp_path: Path, case: str) -> None:
    rows, types = _mutations()[case]
    path = _write_as(tmp_path / "t.parquet", rows, **types)
    result = validate_table_file(path, "turns", batch_rows=3)
    expected = _pandera_alone(path, batch_rows=3)
    if expected is None:
        assert result.passed, result.failure_cases
    else:
        assert result.failure_cases is not None
        pd.testing.assert_frame_equal(result.failure_cases.reset_index(drop=True), expected.reset_index(drop=True))


def test_a_column_the_metadata_settles_is_not_read(tmp_path: Path) -> None:
    """Texts without nulls (the row group's null count) are not read; a null text or a file without
    null counts is read and checked."""
    checker = _BatchChecker.of("turns")
    clean = pq.ParquetFile(_write_as(tmp_path / "clean.parquet", _turns(8)))
    assert {"text", "turn_id", "has_answer", "source_id"} <= checker.settled(clean, 0)
    rows = _turns(8)
    rows[1]["text"] = None
    assert "text" not in checker.settled(pq.ParquetFile(_write_as(tmp_path / "null.parquet", rows)), 0)
    bare = pq.ParquetFile(_write_as(tmp_path / "bare.parquet", _turns(8), stats=False))
    assert checker.settled(bare, 0) == frozenset()
