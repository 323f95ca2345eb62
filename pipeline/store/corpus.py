"""Read access to one dataset's canonical tables, shaped for the per-question stages.

Why: memory systems, readers and judges need "the question, its haystack in time order, its gold
evidence"; they must not each re-implement joins over Parquet. A Corpus loads a dataset's tables
once per stage run and serves records (the frozen dataclasses of pipeline.core.records).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa

from pipeline.core.records import EvidenceRow, HaystackRow, QuestionRow, SessionRow, TurnRow
from pipeline.store.results import ResultStore


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


class Corpus:
    """One dataset's canonical data (questions, haystacks, sessions, turns, evidence)."""

    def __init__(self, dataset: str, tables: dict[str, pa.Table]) -> None:
        self.dataset = dataset
        self._tables = tables

    @classmethod
    def load(cls, store: ResultStore, dataset: str) -> Corpus:
        tables = {}
        for name in ("questions", "sessions", "turns", "haystacks", "evidence"):
            t = store.read_canonical(dataset, name)
            if t is None:
                raise FileNotFoundError(
                    f"canonical table {name!r} of dataset {dataset!r} is missing under "
                    f"{store.parquet_root}; materialize the canonical assets first"
                )
            tables[name] = t
        return cls(dataset, tables)

    @cached_property
    def _questions(self) -> dict[str, QuestionRow]:
        return {r["partition_key"]: _question(r) for r in self._tables["questions"].to_pylist()}

    @cached_property
    def _sessions(self) -> dict[str, SessionRow]:
        return {r["session_key"]: SessionRow(**r) for r in self._tables["sessions"].to_pylist()}

    @cached_property
    def _turns(self) -> dict[str, tuple[TurnRow, ...]]:
        by_session: dict[str, list[TurnRow]] = defaultdict(list)
        for r in self._tables["turns"].to_pylist():
            by_session[r["session_key"]].append(TurnRow(**r))
        return {k: tuple(sorted(v, key=lambda t: t.position)) for k, v in by_session.items()}

    @cached_property
    def _haystacks(self) -> dict[str, tuple[HaystackRow, ...]]:
        by_id: dict[str, list[HaystackRow]] = defaultdict(list)
        for r in self._tables["haystacks"].to_pylist():
            by_id[r["haystack_id"]].append(HaystackRow(**r))
        return {k: tuple(sorted(v, key=lambda h: h.position)) for k, v in by_id.items()}

    @cached_property
    def _evidence(self) -> dict[str, tuple[EvidenceRow, ...]]:
        by_key: dict[str, list[EvidenceRow]] = defaultdict(list)
        for r in self._tables["evidence"].to_pylist():
            by_key[r["partition_key"]].append(EvidenceRow(**r))
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

    def evidence(self, partition_key: str) -> tuple[EvidenceRow, ...]:
        return self._evidence.get(partition_key, ())

    def session(self, session_key: str) -> SessionRow:
        return self._sessions[session_key]

    def turns(self, session_key: str) -> tuple[TurnRow, ...]:
        return self._turns.get(session_key, ())
