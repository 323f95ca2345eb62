"""Table-driven tests of the small parsing rules (evidence ids, dates, session keys, field checks)."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.core.records import TurnColumns, TurnRow
from pipeline.datasets.base import DatasetFileError, RecordContext, RecordError, describe
from pipeline.datasets.categories import LOCOMO_CATEGORY_MAPPING, LOCOMO_CATEGORY_NAMES, locomo_type_name
from pipeline.datasets.dates import (
    format_locomo,
    format_longmemeval,
    parse_iso_datetime,
    parse_locomo_datetime,
    parse_longmemeval_datetime,
)
from pipeline.datasets.fields import answer_text, check_type, optional, required, string_list
from pipeline.datasets.locomo_evidence import split_evidence
from pipeline.datasets.sessions import TurnSpec, build_session, haystack_key, session_key, session_of_columns


@pytest.mark.parametrize(
    ("raw", "expected", "kinds"),
    [
        ("D3:7", ["D3:7"], set()),
        ("D8:6; D9:17", ["D8:6", "D9:17"], {"evidence_semicolon_joined"}),
        ("D9:1 D4:4 D4:6", ["D9:1", "D4:4", "D4:6"], {"evidence_space_joined"}),
        ("D:11:26", ["D11:26"], {"evidence_extra_colon"}),
        ("D30:05", ["D30:5"], {"evidence_zero_padded"}),
        ("D", [None], {"evidence_unparseable"}),
        ("", [None], {"evidence_unparseable"}),
        ("session 3", [None, None], {"evidence_space_joined", "evidence_unparseable"}),
    ],
)
def test_split_evidence(raw: str, expected: list[str | None], kinds: set[str]) -> None:
    tokens = split_evidence(raw)
    assert [t.normalized for t in tokens] == expected
    assert {k for t in tokens for k in t.kinds} == kinds


@pytest.mark.parametrize(
    ("parse", "raw", "expected"),
    [
        (parse_locomo_datetime, "1:56 pm on 8 May, 2023", dt.datetime(2023, 5, 8, 13, 56)),
        (parse_locomo_datetime, "12:09 am on 13 September, 2023", dt.datetime(2023, 9, 13, 0, 9)),
        (parse_locomo_datetime, "8 May 2023", None),
        (parse_longmemeval_datetime, "2023/04/10 (Mon) 23:07", dt.datetime(2023, 4, 10, 23, 7)),
        (parse_longmemeval_datetime, "2023/02/30 (Thu) 10:00", None),
        (parse_longmemeval_datetime, "April 10", None),
        (parse_iso_datetime, "2023-05-08T13:56:00", dt.datetime(2023, 5, 8, 13, 56)),
        (parse_iso_datetime, "2023-05-08T13:56:00Z", dt.datetime(2023, 5, 8, 13, 56)),
        (parse_iso_datetime, "2023-05-08T15:56:00+02:00", dt.datetime(2023, 5, 8, 13, 56)),
        (parse_iso_datetime, "1:56 pm on 8 May, 2023", dt.datetime(2023, 5, 8, 13, 56)),
        (parse_iso_datetime, "yesterday", None),
    ],
)
def test_date_parsers(parse: object, raw: str, expected: dt.datetime | None) -> None:
    assert parse(raw) == expected  # type: ignore[operator]


def test_date_formatters_round_trip() -> None:
    when = dt.datetime(2023, 3, 4, 14, 15)
    assert format_locomo(when) == "2:15 pm on 4 March, 2023"
    assert format_longmemeval(when) == "2023/03/04 (Sat) 14:15"
    assert parse_locomo_datetime(format_locomo(when)) == when
    assert parse_longmemeval_datetime(format_longmemeval(when)) == when


def test_category_mapping_is_the_official_one() -> None:
    assert LOCOMO_CATEGORY_MAPPING == "locomo_official"
    assert dict(LOCOMO_CATEGORY_NAMES) == {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    }
    assert locomo_type_name("2") == "temporal"


def test_session_key_is_content_hash() -> None:
    turns = [TurnSpec("user", "user", "hi", False), TurnSpec("assistant", "assistant", "hello", True)]
    key = session_key("2023/01/01 (Sun) 10:00", turns)
    assert len(key) == 16
    # has_answer and source ids are not content; date, text, speaker and caption are
    assert session_key("2023/01/01 (Sun) 10:00", [t._replace(has_answer=not t.has_answer) for t in turns]) == key
    assert session_key("2023/01/02 (Mon) 10:00", turns) != key
    assert session_key(None, turns) != session_key("", turns)
    assert session_key("d", [turns[0]._replace(text="hi", caption="x")]) != session_key("d", [turns[0]])
    # field boundaries cannot be shifted into each other
    assert session_key("d", [TurnSpec("ab", "c", "", False)]) != session_key("d", [TurnSpec("a", "bc", "", False)])
    built = build_session("ds", "s1", "2023/01/01 (Sun) 10:00", None, None, turns)
    assert built.session.session_key == key
    assert [t.turn_id for t in built.turns] == [f"{key}:0", f"{key}:1"]
    assert built.session.n_turns == 2
    assert haystack_key([key, key]) != haystack_key([key])


def test_a_session_holds_its_turns_as_columns_and_builds_rows_from_them() -> None:
    """build_session (TurnSpecs) and session_of_columns (LongMemEval's columns) make the same session;
    its TurnRows, built on first use, are the rows a TurnRow per turn gave."""
    turns = [
        TurnSpec("Ann", "user", "hi", False, "D1:1"),
        TurnSpec("Bob", "assistant", "", True, "D1:2", "a cat"),
    ]
    built = build_session("ds", "s1", "d", None, None, turns)
    columns = TurnColumns(
        ("Ann", "Bob"), ("user", "assistant"), ("hi", ""), (False, True), ("D1:1", "D1:2"), (None, "a cat")
    )
    assert built.turn_columns == columns and len(columns) == 2
    assert session_of_columns("ds", "s1", "d", None, None, columns) == built
    key = session_key("d", turns)
    assert built.session.session_key == key and built.session.n_turns == 2
    assert built.turns == (
        TurnRow("ds", key, f"{key}:0", 0, "Ann", "user", "hi", False, "D1:1", None),
        TurnRow("ds", key, f"{key}:1", 1, "Bob", "assistant", "", True, "D1:2", "a cat"),
    )
    assert built.turns is built.turns  # built once
    assert built.answer_positions() == (1,)
    empty = build_session("ds", "s2", "d", None, None, [])
    assert (empty.turns, empty.answer_positions(), empty.session.n_turns) == ((), (), 0)


def _ctx() -> RecordContext:
    return RecordContext("ds", "f.json", 3, "q3")


@pytest.mark.parametrize(
    ("obj", "call", "message"),
    [
        ({}, lambda o: required(o, "question", str), "field question: missing required field"),
        ({"question": None}, lambda o: required(o, "question", str), "required field is null"),
        ({"question": 3}, lambda o: required(o, "question", str), "expected string, got integer"),
        ({"n": True}, lambda o: required(o, "n", int), "expected integer, got boolean"),
        ({"a": ["x", 2]}, lambda o: string_list(o, "a", "qa[1]."), "field qa[1].a[1]: expected string, got integer"),
        ({"a": {}}, lambda o: optional(o, "a", list), "expected array, got object"),
    ],
)
def test_field_errors_name_the_field(obj: dict, call: object, message: str) -> None:
    with pytest.raises(RecordError) as info:
        call(obj)  # type: ignore[operator]
    assert message in str(info.value)


def test_answer_text_counts_numbers() -> None:
    ctx = _ctx()
    assert answer_text("x", "answer", ctx) == "x"
    assert answer_text(2022, "answer", ctx) == "2022"
    assert answer_text(1.5, "answer", ctx) == "1.5"
    assert [i.kind for i in ctx.issues] == ["integer_answer", "numeric_answer"]
    with pytest.raises(RecordError):
        answer_text(["a"], "answer", ctx)
    assert check_type(None, (str, type(None)), "x") is None


def test_error_messages_name_file_record_id_and_field() -> None:
    err = DatasetFileError("data.json", "duplicate", record_index=4, record_id="q9", field="question_id")
    assert str(err) == "data.json: record 4 (id q9), field question_id: duplicate"
    assert describe("f", None, None, None, "m") == "f: record - (id -), field -: m"
    failed = _ctx().failure(RecordError("answer", "missing required field"), "ds__q3")
    assert failed.question is None and failed.failure is not None
    assert failed.failure.message == "f.json: record 3 (id q3), field answer: missing required field"
    assert (failed.failure.record_index, failed.failure.partition_key) == (3, "ds__q3")
