"""A flat retriever run on LongMemEval records outside Dagster, scored with membench's metrics.

Why: the parity test and ``benchmarks/official_retrievers.py`` must rank exactly what the pipeline
ranks (the loader's sessions, in haystack order, through the memory system's own ``ingest_session``
and ``retrieve``) and score it with the report's functions, on hundreds of questions in seconds,
without materializing a run. Nothing here scores differently from the pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.partitions import KeyRegistry
from pipeline.core.records import ParsedRecord, QuestionRow
from pipeline.datasets.base import RecordContext
from pipeline.datasets.longmemeval import parse_record
from pipeline.datasets.sources import iter_json_array
from pipeline.memory.base import MemoryDeps, RetrievalResult
from pipeline.memory.flat_corpus import FlatMemory
from pipeline.metrics.retrieval import (
    K_VALUES,
    LEVEL_SESSION,
    LEVEL_TURN,
    NDCG_ANY,
    PROTOCOL_LONGMEMEVAL,
    RECALL_ALL,
    RECALL_ANY,
    Gold,
    UnitRef,
    exclusion,
    lme_gold,
    metric_label,
    ndcg_any_at_k,
    ranking_at,
    recall_all_at_k,
    recall_any_at_k,
)
from pipeline.store.corpus import HaystackSession

METRICS = {RECALL_ANY: recall_any_at_k, RECALL_ALL: recall_all_at_k, NDCG_ANY: ndcg_any_at_k}


@dataclass(frozen=True)
class LmeItem:
    """One parsed LongMemEval record: its question, haystack sessions in order, and gold."""

    raw: Mapping[str, Any]
    question: QuestionRow
    sessions: tuple[HaystackSession, ...]
    gold: Gold


def lme_items(path: Path) -> Iterator[LmeItem]:
    """Every loadable record of a LongMemEval file (the loader's own parse), in file order."""
    keys = KeyRegistry("lme")
    for index, raw in iter_json_array(path):
        parsed = parse_record(RecordContext("lme", str(path), index, f"#{index}"), raw, keys)
        if parsed.question is None:
            continue
        yield LmeItem(raw, parsed.question, haystack_sessions(parsed), _gold(parsed))


def haystack_sessions(parsed: ParsedRecord) -> tuple[HaystackSession, ...]:
    """The record's sessions in haystack order (a repeated session appears at each position)."""
    by_key = {s.session.session_key: s for s in parsed.sessions}
    rows = sorted(parsed.haystack, key=lambda r: r.position)
    return tuple(HaystackSession(r.position, by_key[r.session_key].session, by_key[r.session_key].turns) for r in rows)


def _gold(parsed: ParsedRecord) -> Gold:
    turns = {s.session.session_key: s.turns for s in parsed.sessions}
    source_ids = {r.session_key: r.source_session_id for r in parsed.haystack}
    return lme_gold(list(parsed.evidence), turns, source_ids)


def ingest(memory: FlatMemory, item: LmeItem) -> FlatMemory:
    """``memory`` with the item's haystack ingested session by session, as the pipeline does."""
    for hs in item.sessions:
        memory.ingest_session(item.question.haystack_id, hs)
    return memory


def build(cls: type[FlatMemory], params: Mapping[str, Any], item: LmeItem, deps: MemoryDeps) -> FlatMemory:
    return ingest(cls(params, deps), item)


def level_metrics(result: RetrievalResult, item: LmeItem, level: str) -> dict[str, float] | None:
    """``recall_any@k``, ``recall_all@k``, ``ndcg_any@k`` at ``level`` (None: excluded, as the report)."""
    gold_ids = item.gold.at(level)
    if exclusion(PROTOCOL_LONGMEMEVAL, item.question.question_id, gold_ids) is not None:
        return None
    units = [UnitRef(u.rank, u.session_key, u.turn_ids) for u in result.units]
    ranked = ranking_at(level, units, item.gold)
    return {metric_label(m, k): f(ranked, gold_ids, k) for k in K_VALUES for m, f in METRICS.items()}


LEVELS = {"turn": LEVEL_TURN, "session": LEVEL_SESSION}
