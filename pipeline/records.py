"""Canonical records: the one in-memory shape every dataset loader produces.

Why: LoCoMo, LoCoMo-MC10 and LongMemEval disagree on almost every field name; downstream stages
(memory, retrieval, answers, judges) must only ever see these frozen records and the matching
Arrow schemas, so a format quirk is handled once, in its loader, and counted in ``data_quality``.

Identity rules:
- ``partition_key`` = ``<dataset>__<question_id sanitized to [A-Za-z0-9_-]>`` (see pipeline.partitions).
- ``session_key`` = content hash of (datetime_raw, turns); a session shared by many haystacks
  (LongMemEval_S) or repeated per question (MC10) is stored once per dataset.
- ``turn_id`` = ``<session_key>:<position>`` (position 0-based inside the session).
- ``haystack_id`` identifies the ordered list of sessions a question is asked against.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa

LEVEL_TURN = "turn"
LEVEL_SESSION = "session"


@dataclass(frozen=True)
class QuestionRow:
    """One benchmark question."""

    dataset: str
    question_id: str
    partition_key: str
    record_index: int
    type_raw: str
    type_name: str
    question: str
    answer: str | None
    adversarial_answer: str | None
    choices: tuple[str, ...] | None
    correct_choice_index: int | None
    question_date_raw: str | None
    question_date: dt.datetime | None
    is_abstention: bool
    haystack_id: str


@dataclass(frozen=True)
class SessionRow:
    """One conversation session, stored once per dataset (keyed by content)."""

    dataset: str
    session_key: str
    source_session_id: str
    datetime_raw: str | None
    datetime: dt.datetime | None
    summary: str | None
    n_turns: int


@dataclass(frozen=True)
class TurnRow:
    """One utterance inside a session."""

    dataset: str
    session_key: str
    turn_id: str
    position: int
    speaker: str
    role: str
    text: str
    has_answer: bool
    source_id: str | None
    caption: str | None = None


@dataclass(frozen=True)
class HaystackRow:
    """Session ``position`` (0-based, time order as given) of haystack ``haystack_id``."""

    dataset: str
    haystack_id: str
    position: int
    session_key: str
    source_session_id: str


@dataclass(frozen=True)
class EvidenceRow:
    """A gold unit for a question: a turn (``level='turn'``) or a session (``level='session'``)."""

    dataset: str
    question_id: str
    partition_key: str
    level: str
    unit_id: str
    source_id: str


@dataclass(frozen=True)
class QualityIssue:
    """A known dataset quirk met and handled (never a crash); ``count`` aggregates repeats."""

    dataset: str
    kind: str
    record_id: str
    field: str
    raw_value: str
    action: str
    count: int = 1


@dataclass(frozen=True)
class LoadFailure:
    """A record that could not be turned into a question: the question is failed, not dropped."""

    dataset: str
    file: str
    record_index: int
    record_id: str
    partition_key: str | None
    field: str
    message: str


@dataclass(frozen=True)
class SessionWithTurns:
    session: SessionRow
    turns: tuple[TurnRow, ...]


@dataclass(frozen=True)
class ParsedRecord:
    """What a loader yields per question (sessions may repeat across records; the writer dedups)."""

    question: QuestionRow | None
    sessions: tuple[SessionWithTurns, ...] = ()
    haystack: tuple[HaystackRow, ...] = ()
    evidence: tuple[EvidenceRow, ...] = ()
    issues: tuple[QualityIssue, ...] = ()
    failure: LoadFailure | None = None


def to_dict(row: Any) -> dict[str, Any]:
    """Dataclass -> plain dict for Arrow (tuples become lists)."""
    d = asdict(row)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


_TS = pa.timestamp("us")

QUESTIONS_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("question_id", pa.string()),
        ("partition_key", pa.string()),
        ("record_index", pa.int64()),
        ("type_raw", pa.string()),
        ("type_name", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("adversarial_answer", pa.string()),
        ("choices", pa.list_(pa.string())),
        ("correct_choice_index", pa.int64()),
        ("question_date_raw", pa.string()),
        ("question_date", _TS),
        ("is_abstention", pa.bool_()),
        ("haystack_id", pa.string()),
    ]
)
SESSIONS_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("session_key", pa.string()),
        ("source_session_id", pa.string()),
        ("datetime_raw", pa.string()),
        ("datetime", _TS),
        ("summary", pa.string()),
        ("n_turns", pa.int64()),
    ]
)
TURNS_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("session_key", pa.string()),
        ("turn_id", pa.string()),
        ("position", pa.int64()),
        ("speaker", pa.string()),
        ("role", pa.string()),
        ("text", pa.string()),
        ("has_answer", pa.bool_()),
        ("source_id", pa.string()),
        ("caption", pa.string()),
    ]
)
HAYSTACKS_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("haystack_id", pa.string()),
        ("position", pa.int64()),
        ("session_key", pa.string()),
        ("source_session_id", pa.string()),
    ]
)
EVIDENCE_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("question_id", pa.string()),
        ("partition_key", pa.string()),
        ("level", pa.string()),
        ("unit_id", pa.string()),
        ("source_id", pa.string()),
    ]
)
DATA_QUALITY_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("kind", pa.string()),
        ("record_id", pa.string()),
        ("field", pa.string()),
        ("raw_value", pa.string()),
        ("action", pa.string()),
        ("count", pa.int64()),
    ]
)
LOAD_FAILURES_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("file", pa.string()),
        ("record_index", pa.int64()),
        ("record_id", pa.string()),
        ("partition_key", pa.string()),
        ("field", pa.string()),
        ("message", pa.string()),
    ]
)

CANONICAL_SCHEMAS: dict[str, pa.Schema] = {
    "questions": QUESTIONS_SCHEMA,
    "sessions": SESSIONS_SCHEMA,
    "turns": TURNS_SCHEMA,
    "haystacks": HAYSTACKS_SCHEMA,
    "evidence": EVIDENCE_SCHEMA,
    "data_quality": DATA_QUALITY_SCHEMA,
    "load_failures": LOAD_FAILURES_SCHEMA,
}


def rows_to_table(rows: list[Any], schema: pa.Schema) -> pa.Table:
    """Frozen dataclass rows -> Arrow table with the pinned schema (empty list -> empty table)."""
    return pa.Table.from_pylist([to_dict(r) for r in rows], schema=schema)
