"""Stratified slices (``limit_per_type``), named questions and the first-N limit over a record stream."""

from __future__ import annotations

import pytest

from pipeline.config.model import DatasetConfig
from pipeline.core.records import LoadFailure, ParsedRecord
from pipeline.datasets.slicing import sliced
from tests.support.report import question_row


def _rec(qid: str, type_raw: str) -> ParsedRecord:
    return ParsedRecord(question=question_row("d", qid, type_raw, type_raw))


def _fail(qid: str) -> ParsedRecord:
    return ParsedRecord(question=None, failure=LoadFailure("d", "f.json", 0, qid, f"d__{qid}", "question", "bad"))


STREAM = [_rec("1", "a"), _rec("2", "a"), _rec("3", "a"), _rec("4", "b"), _fail("5"), _rec("6", "c"), _rec("7", "b"),
          _rec("8", "c"), _rec("9", "b"), ParsedRecord(question=None)]  # fmt: skip


def _ids(recs: list[ParsedRecord]) -> list[str]:
    return [r.question.question_id if r.question else (r.failure.record_id if r.failure else "-") for r in recs]


# limit, limit_per_type -> kept records (in file order)
CASES = [
    (None, None, ["1", "2", "3", "4", "5", "6", "7", "8", "9", "-"]),
    (3, None, ["1", "2", "3"]),  # first N: a single type
    (None, 1, ["1", "4", "5", "6", "-"]),  # one of each type (+ the keyed failure, + a record with neither)
    (None, 2, ["1", "2", "4", "5", "6", "7", "8", "-"]),
    (4, 2, ["1", "2", "4", "5"]),  # both limits: per type, then the total (failures count)
    (0, None, []),
]


@pytest.mark.parametrize(("limit", "per_type", "expected"), CASES)
def test_sliced(limit: int | None, per_type: int | None, expected: list[str]) -> None:
    assert _ids(list(sliced(STREAM, limit, per_type))) == expected


# question_ids (+ limit, limit_per_type) -> kept records: named questions and keyed failures only
NAMED = [
    (("2", "5", "8", "9"), None, None, ["2", "5", "8", "9", "-"]),
    (("2", "5", "8", "9"), 2, None, ["2", "5"]),  # named first, then the total
    (("1", "2", "3", "4"), None, 1, ["1", "4", "-"]),  # named first, then per type
    (("nope",), None, None, ["-"]),
]


@pytest.mark.parametrize(("ids", "limit", "per_type", "expected"), NAMED)
def test_sliced_named(ids: tuple[str, ...], limit: int | None, per_type: int | None, expected: list[str]) -> None:
    assert _ids(list(sliced(STREAM, limit, per_type, ids))) == expected


def test_sliced_rejects_bad_limits() -> None:
    with pytest.raises(ValueError):
        list(sliced(STREAM, limit_per_type=0))
    with pytest.raises(ValueError):
        list(sliced(STREAM, limit=-1))


def test_config_field() -> None:
    assert DatasetConfig(name="d", loader="locomo", path="x", limit_per_type=5).limit_per_type == 5
    with pytest.raises(ValueError):
        DatasetConfig(name="d", loader="locomo", path="x", limit_per_type=0)
    assert DatasetConfig(name="d", loader="locomo", path="x", question_ids=["a", "b"]).question_ids == ("a", "b")
    with pytest.raises(ValueError):
        DatasetConfig(name="d", loader="locomo", path="x", question_ids=[])
