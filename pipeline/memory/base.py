"""Memory-system contract: ingest a haystack session by session, then retrieve for a question.

Why this shape: a deployed memory sees sessions one at a time in time order and is queried later;
benchmarks that hand the whole haystack at once hide ingestion cost and order effects. Systems are
registered by name (``MEMORY_SYSTEMS``) and built from one config block (kind + params).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from pipeline.core.records import QuestionRow, TurnRow
from pipeline.memory.params import ParamsInput
from pipeline.store.corpus import HaystackSession


@dataclass(frozen=True)
class MemoryUnit:
    """One retrievable item held by a memory (a turn, a session chunk, a summary or a note)."""

    unit_id: str
    haystack_id: str
    session_key: str
    session_position: int
    turn_ids: tuple[str, ...]
    text: str
    timestamp: dt.datetime | None
    role: str
    kind: str  # turn | session | summary | note


@dataclass(frozen=True)
class RetrievedUnit:
    unit_id: str
    rank: int  # 1-based rank after fusion / rerank
    session_key: str
    turn_ids: tuple[str, ...]
    text: str
    semantic: float | None = None
    bm25: float | None = None
    graph: float | None = None
    temporal: float | None = None
    fused: float | None = None
    rerank: float | None = None


def unit_row(unit: RetrievedUnit) -> dict[str, Any]:
    """A ranked unit as a RETRIEVED_UNIT_TYPE row: its fields, ``turn_ids`` as a list.

    Why not ``asdict``: it deep-copies each field, and a LongMemEval_S turn ranking stores every
    one of ~500 units per question; the fields are plain values, so a shallow copy is the same row.
    """
    return {**vars(unit), "turn_ids": list(unit.turn_ids)}


@dataclass(frozen=True)
class RetrievalResult:
    """Ranked units and the context string actually handed to the reader.

    ``at_depth``: the same retrieval cut to its first c ranked units, context rendered as the system
    renders it (set by systems whose context is built from their ranking, pipeline.memory.context.
    ranked_result; None: the system cannot be read at a depth). Never stored, never compared.
    """

    units: tuple[RetrievedUnit, ...]
    context: str
    context_tokens: int
    trimmed_units: int = 0
    notes: dict[str, Any] = field(default_factory=dict)
    at_depth: Callable[[int], RetrievalResult] | None = field(default=None, compare=False, repr=False)


class Encoder(Protocol):
    """Text -> L2-normalized float32 vectors (shape (n, dim)); cached by (model, text hash)."""

    model_name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class MemoryDeps:
    """What a memory system may use; ``llm`` is None when no endpoint is configured."""

    encoder: Encoder | None
    llm: Any | None = None
    cross_encoder_path: str | None = None
    data_dir: str | None = None  # where a system may keep files of its own (kind mcp: the servers' memory files)
    log: Callable[[str], None] = lambda _msg: None
    state_dir: Path | None = None  # the run's results dir: product memories keep their stores under it


class MemorySystem(Protocol):
    """A memory for ONE haystack: built by ``ingest_session`` calls in time order."""

    kind: str
    # its params schema (a pydantic BaseModel class): the resolved params enter the unit hash.
    # type[Any], not type[BaseModel]: a protocol attribute is invariant, so type[BaseModel] would reject
    # every system whose params_model is a subclass; kinds/resolve.py checks it is a BaseModel class at load.
    params_model: type[Any]
    version: int  # bump when a code change alters what it stores or returns for the same params

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None: ...

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        """Ingest one session; return the units it added (persisted as the checkpoint)."""
        ...

    def restore(self, units: list[MemoryUnit]) -> None:
        """Rebuild state from units persisted by earlier ``ingest_session`` calls (resume)."""
        ...

    def retrieve(self, question: QuestionRow) -> RetrievalResult: ...


def turn_unit_text(turn: TurnRow) -> str:
    """The text a turn is indexed and embedded as (pre-embedded by the embeddings asset)."""
    text = f"{turn.speaker}: {turn.text}"
    if turn.caption:
        text += f" [shares an image: {turn.caption}]"
    return text


RETRIEVED_UNIT_TYPE = pa.struct(
    [
        ("unit_id", pa.string()),
        ("rank", pa.int32()),
        ("session_key", pa.string()),
        ("turn_ids", pa.list_(pa.string())),
        ("text", pa.string()),
        ("semantic", pa.float64()),
        ("bm25", pa.float64()),
        ("graph", pa.float64()),
        ("temporal", pa.float64()),
        ("fused", pa.float64()),
        ("rerank", pa.float64()),
    ]
)

# payload columns of the ``retrievals`` stage table (unit = memory system instance name)
RETRIEVALS_PAYLOAD = pa.schema(
    [
        ("system_kind", pa.string()),
        ("haystack_id", pa.string()),
        ("units", pa.list_(RETRIEVED_UNIT_TYPE)),
        ("context", pa.string()),
        ("context_tokens", pa.int64()),
        ("trimmed_units", pa.int64()),
        ("retrieval_latency_s", pa.float64()),
        ("notes", pa.string()),  # JSON object, e.g. {"rerank": "skipped: no cross-encoder configured"}
    ]
)

# payload columns of the ``ingestion`` stage table (unit = memory system instance name)
INGESTION_PAYLOAD = pa.schema(
    [
        ("system_kind", pa.string()),
        ("haystack_id", pa.string()),
        ("sessions_completed", pa.int64()),
        ("sessions_total", pa.int64()),
        ("next_session", pa.int64()),  # position of the next session to ingest (= total when done)
        ("units", pa.int64()),
        ("ingest_seconds", pa.float64()),
    ]
)
