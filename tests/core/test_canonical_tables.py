"""Canonical tables: the derived Arrow and pandera schemas are exactly the ones stored before the
single declaration (pipeline.core.records) replaced the hand-written copies.

Why pinned literals: stored Parquet files must stay readable and the blocking pandera check must
reject the same rows. The expected values below were printed from the hand-written
CANONICAL_SCHEMAS / CANONICAL_PANDERA / UNIQUE_KEYS before the refactor.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import pandera.errors
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.core.records import CANONICAL_SCHEMAS
from pipeline.core.schemas import CANONICAL_PANDERA, UNIQUE_KEYS, validate_table_file

S, N, B, TS, L = "string", "int64", "bool", "timestamp[us]", "list<item: string>"
EXPECTED_ARROW: dict[str, list[tuple[str, str]]] = {
    "questions": [
        ("dataset", S), ("question_id", S), ("partition_key", S), ("record_index", N), ("type_raw", S),
        ("type_name", S), ("question", S), ("answer", S), ("adversarial_answer", S), ("choices", L),
        ("correct_choice_index", N), ("question_date_raw", S), ("question_date", TS), ("is_abstention", B),
        ("haystack_id", S), ("evidence_raw", L), ("difficulty", S), ("rubric", L),
    ],
    "sessions": [
        ("dataset", S), ("session_key", S), ("source_session_id", S), ("datetime_raw", S), ("datetime", TS),
        ("summary", S), ("n_turns", N), ("observations", S),
    ],
    "turns": [
        ("dataset", S), ("session_key", S), ("turn_id", S), ("position", N), ("speaker", S), ("role", S),
        ("text", S), ("has_answer", B), ("source_id", S), ("caption", S),
    ],
    "haystacks": [("dataset", S), ("haystack_id", S), ("position", N), ("session_key", S), ("source_session_id", S)],
    "evidence": [
        ("dataset", S), ("question_id", S), ("partition_key", S), ("level", S), ("unit_id", S), ("source_id", S),
    ],
    "data_quality": [
        ("dataset", S), ("kind", S), ("record_id", S), ("field", S), ("raw_value", S), ("action", S), ("count", N),
    ],
    "load_failures": [
        ("dataset", S), ("file", S), ("record_index", N), ("record_id", S), ("partition_key", S), ("field", S),
        ("message", S),
    ],
}  # fmt: skip

# column -> (dtype, nullable, unique, coerce, checks); table -> (columns, unique, frame-check errors)
_s, _os = ("str", False, False, False, []), ("str", True, False, False, [])
_GE0 = [("greater_than_or_equal_to", {"min_value": 0})]
EXPECTED_PANDERA: dict[str, tuple[dict[str, tuple[Any, ...]], list[str] | None, list[str]]] = {
    "questions": (
        {
            "dataset": _s, "question_id": _s,
            "partition_key": ("str", False, True, False, [("str_matches", {"pattern": "^[A-Za-z0-9_-]+$"})]),
            "record_index": ("int64", False, False, False, _GE0),
            "type_raw": _s, "type_name": _s, "question": _s, "answer": _os, "adversarial_answer": _os,
            "choices": ("object", True, False, False, []),
            "correct_choice_index": (
                "float64", True, False, True,
                [("in_range", {"min_value": 0, "max_value": 9, "include_min": True, "include_max": True})],
            ),
            "question_date_raw": _os, "is_abstention": ("bool", False, False, False, []), "haystack_id": _s,
            "evidence_raw": ("object", True, False, False, []),
            "difficulty": _os, "rubric": ("object", True, False, False, []),
        },
        None,
        [
            "a non-abstention question has neither answer nor adversarial_answer",
            "a multiple-choice question lacks correct_choice_index",
        ],
    ),
    "sessions": (
        {
            "dataset": _s, "session_key": ("str", False, True, False, []), "source_session_id": _s,
            "datetime_raw": _os, "summary": _os, "n_turns": ("int64", False, False, False, _GE0), "observations": _os,
        },
        None,
        [],
    ),
    "turns": (
        {
            "dataset": _s, "session_key": _s, "turn_id": ("str", False, True, False, []),
            "position": ("int64", False, False, False, _GE0), "speaker": _s,
            "role": ("str", False, False, False, [("isin", {"allowed_values": ["user", "assistant"]})]),
            "text": _s, "has_answer": ("bool", False, False, False, []), "source_id": _os, "caption": _os,
        },
        None,
        [],
    ),
    "haystacks": (
        {
            "dataset": _s, "haystack_id": _s, "position": ("int64", False, False, False, _GE0),
            "session_key": _s, "source_session_id": _s,
        },
        ["haystack_id", "position"],
        [],
    ),
    "evidence": (
        {
            "dataset": _s, "question_id": _s, "partition_key": _s,
            "level": ("str", False, False, False, [("isin", {"allowed_values": ["turn", "session"]})]),
            "unit_id": _s, "source_id": _os,
        },
        None,
        [],
    ),
    "data_quality": (
        {
            "dataset": _s, "kind": _s, "record_id": _os, "field": _os, "raw_value": _os, "action": _s,
            "count": ("int64", False, False, False, [("greater_than_or_equal_to", {"min_value": 1})]),
        },
        None,
        [],
    ),
}  # fmt: skip
EXPECTED_UNIQUE_KEYS = {
    "questions": ("partition_key",),
    "sessions": ("session_key",),
    "turns": ("turn_id",),
    "haystacks": ("haystack_id", "position"),
}


def test_arrow_schemas_are_the_stored_ones() -> None:
    assert list(CANONICAL_SCHEMAS) == list(EXPECTED_ARROW)
    for name, fields in EXPECTED_ARROW.items():
        schema = CANONICAL_SCHEMAS[name]
        assert [(f.name, str(f.type)) for f in schema] == fields, name
        assert all(f.nullable for f in schema), name
        assert schema.metadata is None, name


def test_pandera_schemas_are_the_same() -> None:
    assert list(CANONICAL_PANDERA) == list(EXPECTED_PANDERA)
    for name, (columns, unique, frame_errors) in EXPECTED_PANDERA.items():
        schema = CANONICAL_PANDERA[name]
        got = {
            c: (str(col.dtype), col.nullable, col.unique, col.coerce, [(ch.name, ch.statistics) for ch in col.checks])
            for c, col in schema.columns.items()
        }
        assert got == columns, name
        assert schema.unique == unique, name
        assert [ch.error for ch in schema.checks] == frame_errors, name
        assert schema.strict is False and schema.name == name
    assert UNIQUE_KEYS == EXPECTED_UNIQUE_KEYS


# ---- table-driven bad rows: each is rejected, the good row passes -------------------------
GOOD: dict[str, dict[str, Any]] = {
    "questions": {
        "dataset": "d", "question_id": "q1", "partition_key": "d__q1", "record_index": 0, "type_raw": "1",
        "type_name": "multi_hop", "question": "?", "answer": "a", "adversarial_answer": None, "choices": None,
        "correct_choice_index": None, "question_date_raw": None, "question_date": None, "is_abstention": False,
        "haystack_id": "h", "evidence_raw": None, "difficulty": None, "rubric": None,
    },
    "sessions": {
        "dataset": "d", "session_key": "s1", "source_session_id": "S1", "datetime_raw": None,
        "datetime": dt.datetime(2023, 5, 8), "summary": None, "n_turns": 2, "observations": None,
    },
    "turns": {
        "dataset": "d", "session_key": "s1", "turn_id": "s1:0", "position": 0, "speaker": "A", "role": "user",
        "text": "hi", "has_answer": False, "source_id": None, "caption": None,
    },
    "haystacks": {"dataset": "d", "haystack_id": "h", "position": 0, "session_key": "s1", "source_session_id": "S1"},
    "evidence": {
        "dataset": "d", "question_id": "q1", "partition_key": "d__q1", "level": "turn", "unit_id": "s1:0",
        "source_id": None,
    },
    "data_quality": {
        "dataset": "d", "kind": "k", "record_id": None, "field": None, "raw_value": None, "action": "kept",
        "count": 1,
    },
}  # fmt: skip

BAD: list[tuple[str, str, dict[str, Any]]] = [
    ("questions", "null id", {"question_id": None}),
    ("questions", "key alphabet", {"partition_key": "d__q 1"}),
    ("questions", "negative record index", {"record_index": -1}),
    ("questions", "choice index out of range", {"choices": ["a", "b"], "correct_choice_index": 10}),
    ("questions", "no answer, not abstention", {"answer": None}),
    ("questions", "choices without index", {"choices": ["a", "b"]}),
    ("sessions", "negative n_turns", {"n_turns": -1}),
    ("sessions", "null source id", {"source_session_id": None}),
    ("turns", "bad role", {"role": "system"}),
    ("turns", "negative position", {"position": -1}),
    ("turns", "null text", {"text": None}),
    ("haystacks", "negative position", {"position": -2}),
    ("evidence", "bad level", {"level": "paragraph"}),
    ("evidence", "null unit", {"unit_id": None}),
    ("data_quality", "zero count", {"count": 0}),
    ("data_quality", "null action", {"action": None}),
]
GOOD_TOO: list[tuple[str, dict[str, Any]]] = [
    ("questions", {"answer": None, "is_abstention": True}),
    ("questions", {"answer": None, "adversarial_answer": "x"}),
    ("questions", {"choices": ["a", "b"], "correct_choice_index": 9}),
    ("evidence", {"level": "session", "source_id": "S1"}),
]


def _write(tmp_path: Path, table: str, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{table}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=CANONICAL_SCHEMAS[table]), path)
    return path


@pytest.mark.parametrize("table", list(GOOD))
def test_good_row_passes(tmp_path: Path, table: str) -> None:
    assert validate_table_file(_write(tmp_path, table, [GOOD[table]]), table).passed
    CANONICAL_PANDERA[table].validate(pd.DataFrame([GOOD[table]]))


@pytest.mark.parametrize(("table", "change"), GOOD_TOO)
def test_other_good_rows_pass(tmp_path: Path, table: str, change: dict[str, Any]) -> None:
    assert validate_table_file(_write(tmp_path, table, [{**GOOD[table], **change}]), table).passed


@pytest.mark.parametrize(("table", "why", "change"), BAD, ids=[f"{t}-{w}" for t, w, _ in BAD])
def test_bad_row_is_rejected(tmp_path: Path, table: str, why: str, change: dict[str, Any]) -> None:
    row = {**GOOD[table], **change}
    assert not validate_table_file(_write(tmp_path, table, [row]), table).passed, why
    with pytest.raises(pandera.errors.SchemaErrors):
        CANONICAL_PANDERA[table].validate(pd.DataFrame([row]), lazy=True)


@pytest.mark.parametrize("table", list(EXPECTED_UNIQUE_KEYS))
def test_duplicate_key_is_rejected(tmp_path: Path, table: str) -> None:
    result = validate_table_file(_write(tmp_path, table, [GOOD[table], GOOD[table]]), table)
    assert not result.passed
    assert result.failure_cases is not None
    assert result.failure_cases["check"].iloc[0] == f"unique({', '.join(EXPECTED_UNIQUE_KEYS[table])})"
