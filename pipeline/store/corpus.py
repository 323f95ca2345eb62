"""Read access to one dataset's canonical tables, shaped for the per-question stages.

Why: memory systems, readers and judges need "the question, its haystack in time order, its gold
evidence"; they must not each re-implement joins over Parquet. A Corpus loads a dataset's tables
once per stage run and serves records (the frozen dataclasses of pipeline.core.records).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core.records import EvidenceRow, HaystackRow, QuestionRow, SessionRow, TurnRow
from pipeline.store.results import ResultStore

R = TypeVar("R", bound=Any)  # a frozen record dataclass of pipeline.core.records
TABLE_NAMES = ("questions", "sessions", "turns", "haystacks", "evidence")


@dataclass(frozen=True)
class HaystackSession:
    """A session at ``position`` of a haystack, with its turns in order."""

    position: int
    session: SessionRow
    turns: tuple[TurnRow, ...]


def _question(d: dict) -> QuestionRow:
    d = dict(d)
    for name in ("choices", "evidence_raw", "rubric"):
        if d.get(name) is not None:
            d[name] = tuple(d[name])
    return QuestionRow(**d)


def rows_of(table: pa.Table, cls: type[R]) -> list[R]:
    """The table's rows as ``cls`` records, read column by column.

    Why not ``cls(**row)`` over ``to_pylist()``: a dict per row costs ~2 s for the 245k turns of
    LongMemEval_S, read by each memory stage. A table whose columns are the record's fields in
    order (every canonical table written by membench) builds each record from its row's values;
    any other column order takes the keyword path, with the same result.
    """
    names = table.column_names
    columns = [table.column(n).to_pylist() for n in names]
    if names == [f.name for f in fields(cls)]:
        return [cls(*row) for row in zip(*columns, strict=True)]
    return [cls(**dict(zip(names, row, strict=True))) for row in zip(*columns, strict=True)]


class Corpus:
    """One dataset's canonical data (questions, haystacks, sessions, turns, evidence).

    Tables are read when first used (``load``): a stage that only needs the questions (retrieval,
    whose memories come from their checkpoints) does not read the turns, 85 MB of Parquet on
    LongMemEval_S. ``turn_roles``: only the turns of these roles become records (None = all), for
    a stage that uses no others: the memory stages index the dataset's ``index_roles`` only, and
    LongMemEval_S's assistant turns are half of its 245k turns (records built and never read).
    """

    def __init__(
        self,
        dataset: str,
        tables: dict[str, pa.Table],
        read: Callable[[str, pc.Expression | None], pa.Table] | None = None,
        turn_roles: tuple[str, ...] | None = None,
    ) -> None:
        self.dataset = dataset
        self._tables = dict(tables)
        self._read = read
        self.turn_roles = turn_roles

    @classmethod
    def load(cls, store: ResultStore, dataset: str, turn_roles: tuple[str, ...] | None = None) -> Corpus:
        """The dataset's corpus; a missing canonical table fails here, its data is read on first use."""

        def missing(name: str) -> FileNotFoundError:
            return FileNotFoundError(
                f"canonical table {name!r} of dataset {dataset!r} is missing under "
                f"{store.parquet_root}; materialize the canonical assets first"
            )

        for name in TABLE_NAMES:
            if not store.canonical_parts(dataset, name):
                raise missing(name)

        def read(name: str, where: pc.Expression | None) -> pa.Table:
            table = store.read_canonical(dataset, name, where)
            if table is None:  # removed since the corpus was opened
                raise missing(name)
            return table

        return cls(dataset, {}, read, turn_roles)

    def _table(self, name: str, where: pc.Expression | None = None) -> pa.Table:
        """The rows of table ``name`` that match ``where`` (all of them when None): a table given to
        the corpus is filtered here, one from the store is read filtered (a row group at a time).

        Not kept: each table feeds one cached property, which keeps what it made of the rows."""
        given = self._tables.get(name)
        if given is not None:
            return given if where is None else given.filter(where)
        if self._read is None:
            raise KeyError(name)
        return self._read(name, where)

    @cached_property
    def _questions(self) -> dict[str, QuestionRow]:
        return {r["partition_key"]: _question(r) for r in self._table("questions").to_pylist()}

    @cached_property
    def _sessions(self) -> dict[str, SessionRow]:
        return {r.session_key: r for r in rows_of(self._table("sessions"), SessionRow)}

    @cached_property
    def _turns(self) -> dict[str, tuple[TurnRow, ...]]:
        by_session: dict[str, list[TurnRow]] = defaultdict(list)
        where = None if self.turn_roles is None else pc.field("role").isin(list(self.turn_roles))
        for t in rows_of(self._table("turns", where), TurnRow):
            by_session[t.session_key].append(t)
        return {k: tuple(sorted(v, key=lambda t: t.position)) for k, v in by_session.items()}

    @cached_property
    def _haystacks(self) -> dict[str, tuple[HaystackRow, ...]]:
        by_id: dict[str, list[HaystackRow]] = defaultdict(list)
        for h in rows_of(self._table("haystacks"), HaystackRow):
            by_id[h.haystack_id].append(h)
        return {k: tuple(sorted(v, key=lambda h: h.position)) for k, v in by_id.items()}

    @cached_property
    def _evidence(self) -> dict[str, tuple[EvidenceRow, ...]]:
        by_key: dict[str, list[EvidenceRow]] = defaultdict(list)
        for e in rows_of(self._table("evidence"), EvidenceRow):
            by_key[e.partition_key].append(e)
        return {k: tuple(v) for k, v in by_key.items()}

    # ---- public API ---------------------------------------------------------------------
    def keys(self) -> list[str]:
        return list(self._questions)

    def question(self, partition_key: str) -> QuestionRow:
        return self._questions[partition_key]

    def haystack(self, haystack_id: str) -> list[HaystackSession]:
        """The haystack's sessions in position (time) order, each with its turns."""
        return [
            HaystackSession(h.position, self._sessions[h.session_key], self._turns.get(h.session_key, ()))
            for h in self._haystacks[haystack_id]
        ]

    def check_haystack(self, haystack_id: str) -> None:
        """Load what ``haystack`` reads (sessions, turns, haystacks), raising its KeyError for an
        unknown id, without building the sessions: a stage loads the corpus before its threads
        start, and building every haystack once more for that was ~0.1 s of LongMemEval_S's 498."""
        sessions, _ = self._sessions, self._turns
        for h in self._haystacks[haystack_id]:
            sessions[h.session_key]  # the lookup is the check (a KeyError, as haystack raises)

    def evidence(self, partition_key: str) -> tuple[EvidenceRow, ...]:
        return self._evidence.get(partition_key, ())

    def session(self, session_key: str) -> SessionRow:
        return self._sessions[session_key]

    def turns(self, session_key: str) -> tuple[TurnRow, ...]:
        return self._turns.get(session_key, ())
