"""``rag``: dense retrieval (MiniLM cosine, faiss exact search) over turns or session chunks.

Why two granularities: LongMemEval reports retrieval over turns and over whole sessions, and the
answer to "does finer indexing help?" depends on the dataset. ``granularity: session`` splits each
session into consecutive turn chunks of at most ``chunk_tokens`` tokens (MiniLM reads only 256
word pieces, so embedding a whole session would silently embed its first minute), scores a
session by its best chunk, and returns whole sessions (their indexed turns) ranked by that score.
The context lists the retrieved units in time order (default, dated session blocks) or rank order.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_TIME, ranked_result
from pipeline.memory.params import SystemParams
from pipeline.memory.units import KIND_SESSION, chunk_turns, session_unit, turn_units
from pipeline.memory.vector import VectorMemory
from pipeline.store.corpus import HaystackSession

KIND = "rag"
GRANULARITY_TURN: Final = "turn"
GRANULARITY_SESSION: Final = "session"


class RagParams(SystemParams):
    top_k: int = Field(default=10, gt=0)
    granularity: Literal["turn", "session"] = GRANULARITY_TURN
    order: Literal["time", "rank"] = ORDER_TIME
    token_budget: int | None = Field(default=8_000, gt=0)
    chunk_tokens: int = Field(default=200, gt=0)  # session granularity: tokens per embedded chunk


def session_chunks(haystack_id: str, hs: HaystackSession, chunk_tokens: int) -> list[MemoryUnit]:
    """Chunk units ``<session_key>#c<i>`` (kind 'session'), each with the turn ids it covers."""
    units = []
    for i, turns in enumerate(chunk_turns(hs.turns, chunk_tokens)):
        chunk = HaystackSession(hs.position, hs.session, turns)
        text = "\n".join(u.text for u in turn_units(haystack_id, chunk))
        units.append(session_unit(haystack_id, chunk, text, f"{hs.session.session_key}#c{i}", KIND_SESSION))
    return units


class RagMemory(VectorMemory[RagParams]):
    """Turn units (or session chunks) in a flat inner-product index; top-k by cosine."""

    params_model = RagParams
    version = 1
    kind = KIND

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        if self.params.granularity == GRANULARITY_SESSION:
            added = session_chunks(haystack_id, session, self.params.chunk_tokens)
        else:
            added = turn_units(haystack_id, session)
        self.index.add(added)
        return added

    def _ranked(self, question: QuestionRow) -> list[tuple[MemoryUnit, float]]:
        if self.params.granularity == GRANULARITY_TURN:
            return self.index.search(question.question, self.params.top_k)
        hits = self.index.search(question.question, len(self.index))
        return _best_sessions(hits, self.params.top_k)

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        notes = {
            "top_k": self.params.top_k,
            "granularity": self.params.granularity,
            "index_units": len(self.index),
        }
        return ranked_result(
            self._ranked(question), self.params.token_budget, self.params.order, self.index.order, notes
        )


def _best_sessions(hits: list[tuple[MemoryUnit, float]], k: int) -> list[tuple[MemoryUnit, float]]:
    """Merge chunk hits into sessions scored by their best chunk; top ``k`` sessions."""
    best: dict[str, float] = {}
    chunks: dict[str, list[MemoryUnit]] = {}
    for unit, s in hits:
        best[unit.session_key] = max(best.get(unit.session_key, s), s)
        chunks.setdefault(unit.session_key, []).append(unit)
    top = sorted(best, key=lambda key: -best[key])[:k]
    return [(_merge_chunks(chunks[key]), best[key]) for key in top]


def _merge_chunks(chunks: list[MemoryUnit]) -> MemoryUnit:
    """All chunks of one session as one unit (id = session_key), chunks in turn order."""
    ordered = sorted(chunks, key=lambda u: int(u.unit_id.rsplit("#c", 1)[1]))
    first = ordered[0]
    return MemoryUnit(
        unit_id=first.session_key,
        haystack_id=first.haystack_id,
        session_key=first.session_key,
        session_position=first.session_position,
        turn_ids=tuple(t for u in ordered for t in u.turn_ids),
        text="\n".join(u.text for u in ordered),
        timestamp=first.timestamp,
        role=first.role,
        kind=KIND_SESSION,
    )
