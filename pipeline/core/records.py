"""Canonical records: the one in-memory shape every dataset loader produces.

Why: LoCoMo, LoCoMo-MC10 and LongMemEval disagree on almost every field name; downstream stages
(memory, retrieval, answers, judges) must only ever see these frozen records and the matching
Arrow schemas, so a format quirk is handled once, in its loader, and counted in ``data_quality``.

Identity rules:
- ``partition_key`` = ``<dataset>__<question_id sanitized to [A-Za-z0-9_-]>`` (see pipeline.core.partitions).
- ``session_key`` = content hash of (datetime_raw, turns); a session shared by many haystacks
  (LongMemEval_S) or repeated per question (MC10) is stored once per dataset.
- ``turn_id`` = ``<session_key>:<position>`` (position 0-based inside the session).
- ``haystack_id`` identifies the ordered list of sessions a question is asked against.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from dataclasses import field as dfield
from functools import cached_property
from itertools import compress
from typing import Any, get_args, get_type_hints

import pyarrow as pa

LEVEL_TURN = "turn"
LEVEL_SESSION = "session"


# ---- the canonical tables: each declared once --------------------------------------------------
# A canonical table is declared by the frozen dataclass of its rows plus one ``TableDef``: a field's
# type gives the column's Arrow type and nullability, its ``col(...)`` metadata the checks,
# uniqueness and catalog doc; the TableDef adds the table-level facts (file glob, descriptions,
# multi-column key, cross-column checks). Derived from them: the Arrow schemas
# (``CANONICAL_SCHEMAS``), the pandera schemas (pipeline.core.schemas), the catalog globs
# (pipeline.store.results.TABLE_GLOBS), the asset descriptions (assets/canonical.py) and the column docs
# (pipeline.catalog.docs).
_META = "membench_column"


@dataclass(frozen=True)
class Check:
    """A pandera column check, declared without importing pandera: ``kind`` names the ``pa.Check``."""

    kind: str  # ge | in_range | isin | str_matches
    args: tuple[Any, ...]


def ge(value: int) -> Check:
    return Check("ge", (value,))


def in_range(low: int, high: int) -> Check:
    return Check("in_range", (low, high))


def isin(*values: str) -> Check:
    return Check("isin", (list(values),))


def str_matches(pattern: str) -> Check:
    return Check("str_matches", (pattern,))


def col(doc: str | None = None, *checks: Check, unique: bool = False, nullable: bool | None = None) -> dict[str, Any]:
    """Field metadata of a canonical column.

    ``doc``: its catalog comment (None: the shared text of pipeline.catalog.docs.SHARED);
    ``checks``: pandera checks; ``unique``: unique over the whole file (checked by DuckDB);
    ``nullable``: overrides the type's (a ``str`` the loaders always set but the table may hold NULL in).
    """
    return {_META: ColumnMeta(doc, checks, unique, nullable)}


@dataclass(frozen=True)
class ColumnMeta:
    doc: str | None
    checks: tuple[Check, ...]
    unique: bool
    nullable: bool | None


@dataclass(frozen=True)
class QuestionRow:
    """One benchmark question."""

    dataset: str = dfield(metadata=col())
    question_id: str = dfield(metadata=col())
    partition_key: str = dfield(metadata=col(None, str_matches(r"^[A-Za-z0-9_-]+$"), unique=True))
    record_index: int = dfield(metadata=col(None, ge(0)))
    type_raw: str = dfield(metadata=col())
    type_name: str = dfield(metadata=col())
    question: str = dfield(metadata=col("the question text"))
    answer: str | None = dfield(metadata=col("gold answer"))
    adversarial_answer: str | None = dfield(metadata=col("LoCoMo adversarial answer"))
    choices: tuple[str, ...] | None = dfield(metadata=col("multiple-choice options (MC10)"))
    correct_choice_index: int | None = dfield(metadata=col("index of the correct option", in_range(0, 9)))
    question_date_raw: str | None = dfield(metadata=col("question date as given"))
    question_date: dt.datetime | None = dfield(metadata=col("question date, parsed"))
    is_abstention: bool = dfield(metadata=col("LongMemEval abstention question (id ends in _abs)"))
    haystack_id: str = dfield(metadata=col())
    evidence_raw: tuple[str, ...] | None = dfield(
        default=None, metadata=col("LoCoMo evidence list exactly as given (unsplit, unrepaired); NULL without one")
    )
    difficulty: str | None = dfield(default=None, metadata=col("difficulty label as given (BEAM); NULL without one"))
    rubric: tuple[str, ...] | None = dfield(
        default=None, metadata=col("rubric items the answer is judged on, in the given order (BEAM); NULL without one")
    )


@dataclass(frozen=True)
class SessionRow:
    """One conversation session, stored once per dataset (keyed by content)."""

    dataset: str = dfield(metadata=col())
    session_key: str = dfield(metadata=col(None, unique=True))
    source_session_id: str = dfield(metadata=col())
    datetime_raw: str | None = dfield(metadata=col("session date as given"))
    datetime: dt.datetime | None = dfield(metadata=col("session date, parsed"))
    summary: str | None = dfield(metadata=col("session summary shipped with the dataset"))
    n_turns: int = dfield(metadata=col("turns in the session", ge(0)))
    observations: str | None = dfield(
        default=None,
        metadata=col("LoCoMo observations shipped with the dataset: JSON [[speaker, fact, dialogue ids as given]]"),
    )


@dataclass(frozen=True)
class TurnRow:
    """One utterance inside a session."""

    dataset: str = dfield(metadata=col())
    session_key: str = dfield(metadata=col())
    turn_id: str = dfield(metadata=col("turn id (LoCoMo D<s>:<t>)", unique=True))
    position: int = dfield(metadata=col("0-based position in the session", ge(0)))
    speaker: str = dfield(metadata=col("speaker as given"))
    role: str = dfield(metadata=col("user or assistant", isin("user", "assistant")))
    text: str = dfield(metadata=col())
    has_answer: bool = dfield(metadata=col("LongMemEval: the turn holds the answer"))
    source_id: str | None = dfield(metadata=col("the turn's id in the raw file"))
    caption: str | None = dfield(default=None, metadata=col("image caption (LoCoMo)"))


@dataclass(frozen=True)
class HaystackRow:
    """Session ``position`` (0-based, time order as given) of haystack ``haystack_id``."""

    dataset: str = dfield(metadata=col())
    haystack_id: str = dfield(metadata=col())
    position: int = dfield(metadata=col("0-based position of the session in the haystack", ge(0)))
    session_key: str = dfield(metadata=col())
    source_session_id: str = dfield(metadata=col())


@dataclass(frozen=True)
class EvidenceRow:
    """A gold unit for a question: a turn (``level='turn'``) or a session (``level='session'``)."""

    dataset: str = dfield(metadata=col())
    question_id: str = dfield(metadata=col())
    partition_key: str = dfield(metadata=col())
    level: str = dfield(metadata=col(None, isin("turn", "session")))
    unit_id: str = dfield(metadata=col("gold unit id (turn id or session key)"))
    source_id: str = dfield(metadata=col("evidence id as given", nullable=True))


@dataclass(frozen=True)
class QualityIssue:
    """A known dataset quirk met and handled (never a crash); ``count`` aggregates repeats."""

    dataset: str = dfield(metadata=col())
    kind: str = dfield(metadata=col("issue kind"))
    record_id: str = dfield(metadata=col(None, nullable=True))
    field: str = dfield(metadata=col(None, nullable=True))
    raw_value: str = dfield(metadata=col("the offending raw value", nullable=True))
    action: str = dfield(metadata=col("what the loader did"))
    count: int = dfield(default=1, metadata=col("occurrences", ge(1)))


# Progress key of a load failure: its partition key, or for a record whose id could not be read
# (or whose key belongs to another record) ``<dataset>__#<record index>``. Why a pseudo key: such a
# record is a question of the file that will never run, so it must count in every total; "#" is
# outside the sanitized key alphabet, so it never equals a real partition key.
LOAD_FAILURE_KEY_SQL = "coalesce(partition_key, dataset || '__#' || CAST(record_index AS VARCHAR))"
# Progress key of a dataset whose file could not be loaded at all (pipeline.datasets base.py).
DATASET_FAILURE_KEY_SQL = "dataset || '__*'"


@dataclass(frozen=True)
class LoadFailure:
    """A record that could not be turned into a question: the question is failed, not dropped."""

    dataset: str = dfield(metadata=col())
    file: str = dfield(metadata=col())
    record_index: int = dfield(metadata=col())
    record_id: str = dfield(metadata=col())
    partition_key: str | None = dfield(metadata=col())
    field: str = dfield(metadata=col())
    message: str = dfield(metadata=col())


# the TurnRow fields a session's turns hold one value each of (the others follow from the session)
TURN_COLUMNS = ("speaker", "role", "text", "has_answer", "source_id", "caption")


@dataclass(frozen=True)
class TurnColumns:
    """The turns of one session field by field: item ``i`` of each tuple belongs to turn ``i``.

    Why columns and not a ``TurnRow`` per turn: LongMemEval_S has 245,625 turns; building a frozen
    row per turn and taking each apart again field by field for Arrow cost its ~3 s conversion
    ~0.4 s more than columns, which go to Arrow as they are (docs/design/speed.md, pass 8).
    Field names are ``TURN_COLUMNS``, the turns table's column names.
    """

    speaker: tuple[str, ...]
    role: tuple[str, ...]
    text: tuple[str, ...]
    has_answer: tuple[bool, ...]
    source_id: tuple[str | None, ...]
    caption: tuple[str | None, ...]

    def __len__(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class SessionWithTurns:
    """A session and its turns, held as columns; ``turns`` builds the rows on first use.

    Why both: the canonical converter writes the columns (``turn_columns``) and never needs a row,
    while memory products, evidence and LoCoMo's dialogue ids read turns as ``TurnRow``s.
    ``turn_id`` = ``<session_key>:<position>``, ``position`` = the index in the columns.
    """

    session: SessionRow
    turn_columns: TurnColumns

    @cached_property
    def turns(self) -> tuple[TurnRow, ...]:
        """The turns as rows, in position order (built once, on first use)."""
        s, c = self.session, self.turn_columns
        key = s.session_key
        values = zip(c.speaker, c.role, c.text, c.has_answer, c.source_id, c.caption, strict=True)
        return tuple(TurnRow(s.dataset, key, f"{key}:{i}", i, *v) for i, v in enumerate(values))

    def answer_positions(self) -> tuple[int, ...]:
        """Positions of the turns marked ``has_answer``, in order."""
        return tuple(compress(range(len(self.turn_columns)), self.turn_columns.has_answer))


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


# ---- column and table definitions derived from the row dataclasses ------------------------------
_TS = pa.timestamp("us")
# Python type of a field -> (Arrow type, pandera dtype). A nullable int is checked as float (pandas
# reads an int column holding NULLs as float64), coerced; datetimes are parsed by the loaders and
# not checked by pandera (None).
_TYPES: dict[Any, tuple[pa.DataType, Any]] = {
    str: (pa.string(), str),
    int: (pa.int64(), int),
    bool: (pa.bool_(), bool),
    dt.datetime: (_TS, None),
    tuple[str, ...]: (pa.list_(pa.string()), object),
}


@dataclass(frozen=True)
class ColumnDef:
    """One column of a canonical table, derived from its row dataclass field."""

    name: str
    arrow_type: pa.DataType
    pandera_dtype: Any  # None: not checked by pandera
    nullable: bool
    coerce: bool
    checks: tuple[Check, ...]
    unique: bool
    doc: str | None


@dataclass(frozen=True)
class FrameCheck:
    """A cross-column pandera check: ``fn(df)`` -> boolean Series, ``error`` names the rule."""

    error: str
    fn: Callable[[Any], Any]


@dataclass(frozen=True)
class TableDef:
    """A canonical table: its rows' dataclass plus the table-level facts."""

    name: str
    row: type
    doc: str  # catalog comment (one line)
    description: str  # the Dagster asset's description
    glob: str = ""  # relative to <results_dir>/parquet; "" = canonical/*/<name>.parquet
    unique: tuple[str, ...] = ()  # a multi-column key, unique over the whole file
    frame_checks: tuple[FrameCheck, ...] = ()
    asset: bool = True  # its own asset key with a blocking pandera check (load_failures: no)

    @property
    def file_glob(self) -> str:
        return self.glob or f"canonical/*/{self.name}.parquet"

    @property
    def columns(self) -> tuple[ColumnDef, ...]:
        return _columns(self.row)

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([(c.name, c.arrow_type) for c in self.columns])

    def unique_key(self) -> tuple[str, ...] | None:
        """The columns unique over the whole file (one unique column, else the table key)."""
        single = tuple(c.name for c in self.columns if c.unique)
        return single or self.unique or None

    def column_docs(self) -> dict[str, str]:
        return {c.name: c.doc for c in self.columns if c.doc is not None}


def _columns(row: type) -> tuple[ColumnDef, ...]:
    hints = get_type_hints(row)
    out: list[ColumnDef] = []
    for f in fields(row):
        tp, nullable = hints[f.name], False
        args = get_args(tp)
        if type(None) in args:
            (tp,) = (a for a in args if a is not type(None))
            nullable = True
        arrow_type, dtype = _TYPES[tp]
        meta: ColumnMeta = f.metadata[_META]
        coerce = nullable and dtype is int
        out.append(
            ColumnDef(
                name=f.name,
                arrow_type=arrow_type,
                pandera_dtype=float if coerce else dtype,
                nullable=nullable if meta.nullable is None else meta.nullable,
                coerce=coerce,
                checks=meta.checks,
                unique=meta.unique,
                doc=meta.doc,
            )
        )
    return tuple(out)


CANONICAL_TABLES: tuple[TableDef, ...] = (
    TableDef(
        "questions",
        QuestionRow,
        doc="one row per loaded question (canonical form of every dataset)",
        description="One row per question: ids, partition key, raw + named type, answer, choices, dates.",
        frame_checks=(
            FrameCheck(
                "a non-abstention question has neither answer nor adversarial_answer",
                lambda df: df["answer"].notna() | df["adversarial_answer"].notna() | df["is_abstention"],
            ),
            FrameCheck(
                "a multiple-choice question lacks correct_choice_index",
                lambda df: df["choices"].isna() | df["correct_choice_index"].notna(),
            ),
        ),
    ),
    TableDef(
        "sessions",
        SessionRow,
        doc="conversation sessions of each haystack",
        description="Sessions stored once per dataset, keyed by content hash; dates parsed + raw.",
    ),
    TableDef(
        "turns",
        TurnRow,
        doc="conversation turns (the text memories index)",
        description="Turns of each session: speaker, role, text, has_answer, source id (e.g. D3:7).",
        glob="canonical/*/turns*.parquet",
    ),
    TableDef(
        "haystacks",
        HaystackRow,
        doc="which sessions, in which order, form a question's haystack",
        description="Question haystack -> ordered session keys (a LoCoMo conversation is stored once).",
        unique=("haystack_id", "position"),
    ),
    TableDef(
        "evidence",
        EvidenceRow,
        doc="gold evidence units of each question (turns and sessions)",
        description="Gold units per question: turn ids and session keys.",
    ),
    TableDef(
        "data_quality",
        QualityIssue,
        doc="issues found while loading raw files and what was done about them",
        description="Every known dataset quirk met: kind, record, raw value, action taken, count.",
    ),
    TableDef(
        "load_failures",
        LoadFailure,
        doc="raw records that could not be loaded (their questions fail, counted apart)",
        description="Raw records that could not be turned into a question.",
        asset=False,
    ),
)
TABLES: dict[str, TableDef] = {t.name: t for t in CANONICAL_TABLES}
# the tables with their own asset key and blocking pandera check, in pipeline order
CANONICAL_ASSET_TABLES: tuple[str, ...] = tuple(t.name for t in CANONICAL_TABLES if t.asset)

CANONICAL_SCHEMAS: dict[str, pa.Schema] = {t.name: t.arrow_schema() for t in CANONICAL_TABLES}
QUESTIONS_SCHEMA = CANONICAL_SCHEMAS["questions"]
SESSIONS_SCHEMA = CANONICAL_SCHEMAS["sessions"]
TURNS_SCHEMA = CANONICAL_SCHEMAS["turns"]
EVIDENCE_SCHEMA = CANONICAL_SCHEMAS["evidence"]
LOAD_FAILURES_SCHEMA = CANONICAL_SCHEMAS["load_failures"]


def rows_to_table(rows: list[Any], schema: pa.Schema) -> pa.Table:
    """Frozen dataclass rows -> Arrow table with the pinned schema (empty list -> empty table)."""
    return pa.Table.from_pylist([to_dict(r) for r in rows], schema=schema)
