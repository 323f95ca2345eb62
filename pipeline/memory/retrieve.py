"""Retrieval: for each (memory system, question), the ranked units and the reader's context.

Why grouped by haystack: restoring a memory (embedding its units, building its index) costs far
more than one query, and LoCoMo asks ~200 questions of each of its 10 conversations; the memory
is opened once per (system, haystack) and queried for all of them. Only ``retrieve`` is timed as
the question's ``retrieval_latency_s``; the one-off restore time is in ``notes.restore_s``.
A memory whose ingestion is not complete cannot answer: its questions fail with the upstream
ingestion error (never an empty context presented as a success).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pipeline.core.records import QuestionRow
from pipeline.core.status import STATUS_FAILED
from pipeline.core.tokens import count_tokens
from pipeline.core.units import base_system, cutoff_of
from pipeline.memory.base import MemorySystem, RetrievalResult, unit_row
from pipeline.memory.checkpoint import load
from pipeline.memory.cutoffs import at_depth
from pipeline.memory.ingest import MemoryRun, haystack_groups
from pipeline.memory.systems import SystemSpec, uses_encoder
from pipeline.run.stage import UnitResult, UnitSpec, WorkItem, timed


class RetrievalContractError(ValueError):
    """A memory system returned a malformed result (ranks not 1..n, duplicate unit ids)."""


@dataclass(frozen=True)
class OpenMemory:
    """A restored memory ready for questions, or why it is not available."""

    spec: SystemSpec
    haystack_id: str
    system: MemorySystem | None
    error: str | None
    restore_s: float = 0.0
    units: int = 0
    notes: dict[str, Any] = field(default_factory=dict)  # run-level facts added to every row's notes


def _ingestion_error(run: MemoryRun, unit: str, group: list[WorkItem]) -> str | None:
    """The error recorded by the ``ingestion`` stage for this unit on any question of the group."""
    for item in group:
        table = run.store.read_partition("ingestion", item.partition_key)
        if table is None:
            continue
        for row in table.select(["unit", "status", "error"]).to_pylist():
            if row["unit"] == unit and row["status"] == STATUS_FAILED and row["error"]:
                return str(row["error"])
    return None


def open_memory(
    run: MemoryRun,
    spec: SystemSpec,
    dataset: str,
    haystack_id: str,
    group: list[WorkItem],
    notes: dict[str, Any] | None = None,
) -> OpenMemory:
    """Restore the memory from its complete checkpoint, or explain what upstream is missing."""
    ck = load(run.path(spec, dataset, haystack_id))
    problem = None
    if ck is None:
        problem = "no ingestion checkpoint (materialize `ingestion` first)"
    elif ck.state.unit_hash != spec.unit_hash:
        problem = "the ingestion checkpoint was made under another config (re-materialize `ingestion`)"
    elif not ck.state.complete:
        problem = f"ingestion is incomplete ({ck.state.sessions_completed}/{ck.state.sessions_total} sessions)"
    if problem is not None or ck is None:
        upstream = _ingestion_error(run, spec.name, group)
        detail = f"; upstream error: {upstream}" if upstream else ""
        return OpenMemory(
            spec,
            haystack_id,
            None,
            f"ingestion of {spec.name!r} for haystack {haystack_id!r}: {problem}{detail}",
        )
    start = time.monotonic()
    try:
        system = spec.build(run.deps)
        system.restore(list(ck.units))
    except Exception as exc:  # the memory cannot be opened: every question of it fails with this
        return OpenMemory(spec, haystack_id, None, f"restoring the memory failed: {type(exc).__name__}: {exc}")
    return OpenMemory(spec, haystack_id, system, None, time.monotonic() - start, len(ck.units), notes or {})


def _check(result: RetrievalResult) -> None:
    ranks = [u.rank for u in result.units]
    if ranks != list(range(1, len(ranks) + 1)):
        raise RetrievalContractError(f"ranks must be 1..n in order, got {ranks[:20]}")
    ids = [u.unit_id for u in result.units]
    if len(set(ids)) != len(ids):
        raise RetrievalContractError("duplicate unit ids in the ranking")


def retrieval_payload(memory: OpenMemory, question: QuestionRow) -> dict[str, Any]:
    """One question's RETRIEVALS_PAYLOAD row (the memory must be open)."""
    result, latency = retrieve_checked(memory, question)
    return payload_of(memory, result, latency)


def retrieve_checked(memory: OpenMemory, question: QuestionRow) -> tuple[RetrievalResult, float]:
    """The system's one retrieval for ``question`` (contract checked) and its latency."""
    assert memory.system is not None
    start = time.monotonic()
    result = memory.system.retrieve(question)
    latency = time.monotonic() - start
    _check(result)
    return result, latency


def payload_of(memory: OpenMemory, result: RetrievalResult, latency: float) -> dict[str, Any]:
    """The RETRIEVALS_PAYLOAD row of ``result`` (a cut-off row carries its retrieval's latency)."""
    notes = {**result.notes, **memory.notes, "restore_s": round(memory.restore_s, 4), "memory_units": memory.units}
    return {
        "system_kind": memory.spec.kind,
        "haystack_id": memory.haystack_id,
        "units": [unit_row(u) for u in result.units],
        "context": result.context,
        "context_tokens": count_tokens(result.context),  # the pinned definition, whatever the system said
        "trimmed_units": result.trimmed_units,
        "retrieval_latency_s": latency,
        "notes": json.dumps(notes, sort_keys=True, default=str),
    }


def _question_results(
    memories: dict[str, OpenMemory], question: QuestionRow, units: tuple[UnitSpec, ...]
) -> list[UnitResult]:
    """Each unit's row; a system and its cut-off units (``<system>@<c>``) share ONE retrieval."""
    retrieved: dict[str, tuple[RetrievalResult, float] | str] = {}  # system -> (result, latency) or its error
    results = []
    for unit in units:
        name, cutoff = base_system(unit.unit), cutoff_of(unit.unit)
        memory = memories[name]
        if memory.system is None:
            results.append(UnitResult.failed(unit, memory.error or "memory unavailable"))
            continue
        if name not in retrieved:
            start = time.monotonic()
            try:
                retrieved[name] = retrieve_checked(memory, question)
            except Exception as exc:
                retrieved[name] = f"{type(exc).__name__}: {exc}"
                results.append(UnitResult.failed(unit, str(retrieved[name]), time.monotonic() - start))
                continue
        got = retrieved[name]
        if isinstance(got, str):
            results.append(UnitResult.failed(unit, f"retrieval failed: {got}" if cutoff else got))
            continue
        result, latency = got
        results.append(timed(partial(_cut_payload, memory, result, latency, cutoff), unit))
    return results


def _cut_payload(memory: OpenMemory, result: RetrievalResult, latency: float, cutoff: int | None) -> dict[str, Any]:
    """The row of the retrieval itself (``cutoff`` None) or of its first ``cutoff`` ranked units."""
    return payload_of(memory, result if cutoff is None else at_depth(result, cutoff, memory.spec.kind), latency)


def prembed_questions(run: MemoryRun, items: list[WorkItem]) -> dict[str, Any]:
    """Embed every question text of the run in one batch (the encoder caches the vectors).

    Why: the cached encoder pays a large fixed cost per call (~1.5 s for one text vs ~0.35 s for
    50, measured on the 2-core dev machine), so per-question query embedding would dominate
    retrieval time. ``retrieval_latency_s`` is then retrieval with a cached query vector; the
    batch time, amortized, is reported in ``notes.query_embed_s``.
    """
    encoder = run.deps.encoder
    uses = any(uses_encoder(s.cls) for ds in {i.dataset for i in items} for s in run.specs(ds).values())
    if encoder is None or not uses or not items:
        return {}
    texts = sorted({run.corpus(i.dataset).question(i.partition_key).question for i in items})
    start = time.monotonic()
    encoder.encode(texts)
    seconds = time.monotonic() - start
    run.log(f"retrievals: {len(texts)} question texts embedded in {seconds:.1f}s")
    return {"query_embed_s": round(seconds / len(items), 4), "query_vectors": "batch-embedded per run (cached)"}


def retrieval_results(run: MemoryRun, items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
    """QuestionStage ``compute``: open each (system, haystack) memory once, query it per question."""
    shared = prembed_questions(run, items)
    for (dataset, haystack_id), group in haystack_groups(run, items).items():
        specs = run.specs(dataset)
        needed = list(dict.fromkeys(base_system(u.unit) for item in group for u in item.units))
        memories = {
            name: open_memory(
                run, specs[name], dataset, haystack_id, group, shared if uses_encoder(specs[name].cls) else {}
            )
            for name in needed
        }
        for name, memory in memories.items():
            if memory.error:
                run.log(f"retrieval {name}/{haystack_id}: {memory.error}")
        corpus = run.corpus(dataset)
        for item in group:
            yield (
                item.partition_key,
                _question_results(memories, corpus.question(item.partition_key), item.units),
            )
