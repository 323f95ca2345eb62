"""``summaries``: the dataset's own session summaries, retrieved by embedding similarity.

Why: LoCoMo (``session_summary``) and LoCoMo-MC10 (``haystack_session_summaries``) ship a summary
per session; retrieving over them measures how far compressed memories carry without any LLM
cost of ours. Each summary unit maps to its session (``unit_id = <session_key>#summary``,
``session_key`` set, no turn ids: a summary does not point at a turn), so session-level recall
applies and turn-level recall does not. A dataset without summaries (LongMemEval) cannot run
this system: ingestion fails with "dataset has no session summaries", recorded as a failure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_TIME, ranked_result
from pipeline.memory.params import SystemParams
from pipeline.memory.units import KIND_SUMMARY
from pipeline.memory.vector import VectorMemory
from pipeline.store.corpus import HaystackSession

KIND = "summaries"
NO_SUMMARIES = "dataset has no session summaries"


class SummariesParams(SystemParams):
    top_k: int = Field(default=5, gt=0)
    order: Literal["time", "rank"] = ORDER_TIME
    token_budget: int | None = Field(default=8_000, gt=0)


class MissingSummaryError(ValueError):
    """The session has turns but no summary: this system cannot represent it."""


def summary_unit(haystack_id: str, hs: HaystackSession) -> MemoryUnit:
    summary = (hs.session.summary or "").strip()
    if not summary:
        raise MissingSummaryError(
            f"{NO_SUMMARIES}: session {hs.session.source_session_id!r} (session_key "
            f"{hs.session.session_key}, position {hs.position}) of haystack {haystack_id!r} "
            "has no summary (field sessions.summary is empty)"
        )
    return MemoryUnit(
        unit_id=f"{hs.session.session_key}#summary",
        haystack_id=haystack_id,
        session_key=hs.session.session_key,
        session_position=hs.position,
        turn_ids=(),
        text=summary,
        timestamp=hs.session.datetime,
        role="session",
        kind=KIND_SUMMARY,
    )


class SummariesMemory(VectorMemory[SummariesParams]):
    """One unit per session summary; top-k summaries by cosine to the question."""

    params_model = SummariesParams
    version = 1
    kind = KIND

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        if not session.turns and not (session.session.summary or "").strip():
            return []  # an empty session has nothing to summarize
        added = [summary_unit(haystack_id, session)]
        self.index.add(added)
        return added

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        ranked = self.index.search(question.question, self.params.top_k)
        notes = {
            "top_k": self.params.top_k,
            "index_units": len(self.index),
            "unit_level": "session (summaries carry no turn ids)",
        }
        return ranked_result(ranked, self.params.token_budget, self.params.order, self.index.order, notes)
