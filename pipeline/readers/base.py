"""Reader contract: turn (question, retrieved context) into an answer row.

Why a separate stage from retrieval: the same retrieved context is read by several readers (an
LLM, an offline embedding scorer), so memory quality and reader quality are measured apart.
Readers register by name (``READERS``) and are built from one config block (kind + params).

Labels: every answer carries ``label`` = ``'llm'`` or ``'offline'`` so an offline baseline can
never be mistaken for an LLM's result in a report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeVar

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.config.model import BenchmarkConfig
from pipeline.core.records import QuestionRow
from pipeline.llm.protocol import ChatClient
from pipeline.memory.base import Encoder, RetrievalResult, RetrievedUnit

LABEL_LLM = "llm"
LABEL_OFFLINE = "offline"


class LLMClient(ChatClient, Protocol):
    """The LLM API readers and judges use: pipeline/llm/client.py ``OpenAIChatClient`` (cached, retried, priced).

    ``model`` is the default model name; it goes into the answers' config hash so that switching
    models recomputes answers instead of mixing two models' results under one unit name.
    """

    model: str


class ReaderConfigError(ValueError):
    """A reader's configuration is invalid (bad params, missing LLM or encoder)."""


class ReaderCallFailed(RuntimeError):
    """The LLM call behind an answer failed (transport, HTTP, timeout): the answer unit fails."""


@dataclass(frozen=True)
class ReaderDeps:
    """What a reader may use; ``llm`` is None when the config has no ``llm:`` block."""

    encoder: Encoder | None = None
    llm: LLMClient | None = None
    memory: Any | None = None  # searchable memories (pipeline.agentic.search.MemorySearch), agentic readers


@dataclass(frozen=True)
class ReadInput:
    """One question to answer: the question, what the memory retrieved, and session dates."""

    question: QuestionRow
    retrieval: RetrievalResult
    session_dates: Mapping[str, str | None] = field(default_factory=dict)  # session_key -> raw date
    repeat: int = 1  # which repeat of the reader (``repeats`` in its config entry); 1 = the only one
    system: str = ""  # the memory system's instance name (agentic readers search it)


@dataclass(frozen=True)
class Answer:
    """A reader's answer; ``invalid`` = a multiple-choice reply that did not parse (counted apart)."""

    prediction: str | None
    predicted_index: int | None = None
    invalid: bool = False
    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    cache_hit: bool | None = None
    cost_usd: float | None = None
    # agentic readers (pipeline.agentic): tool calls made, LLM calls, step cap hit, the steps as JSON
    tool_calls: int | None = None
    llm_calls: int | None = None
    capped: bool | None = None
    agent_trace: str | None = None


class Reader(Protocol):
    """A reader kind. ``uses_encoder`` / ``uses_llm`` say what to build for it; ``thread_safe``
    False means the runner serialises its calls (the offline reader shares one torch model)."""

    kind: str
    label: str
    # its params schema (a ReaderParams class): the resolved params enter the unit hash. type[Any], not
    # type[ReaderParams]: a protocol attribute is invariant, so that would reject every reader whose params_model
    # is a subclass; kinds/resolve.py checks it is a BaseModel class at load.
    params_model: type[Any]
    uses_encoder: bool
    uses_llm: bool
    thread_safe: bool

    def __init__(self, params: Mapping[str, Any] | BaseModel, deps: ReaderDeps) -> None: ...

    @classmethod
    def identity(cls, params: Mapping[str, Any], cfg: BenchmarkConfig) -> str:
        """What besides its params determines the answers (model names, prompt hash); hashed into
        the answer unit's config so a model or prompt change recomputes answers. Computed from
        the config alone, so the judgments stage can derive answer hashes without building it."""
        ...

    def answer(self, item: ReadInput) -> Answer: ...


P = TypeVar("P", bound="ReaderParams")


class ReaderParams(BaseModel):
    """Strict reader params: a misspelt key fails the run at start instead of using a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_params(model: type[P], params: Mapping[str, Any] | BaseModel, kind: str) -> P:
    """``params`` validated with ``model``; an instance of ``model`` (parsed once when the config
    was resolved, pipeline/kinds/resolve.py) is returned as is."""
    if isinstance(params, model):
        return params
    if isinstance(params, BaseModel):
        raise ReaderConfigError(
            f"reader kind {kind!r}: params are a {type(params).__name__}, expected {model.__name__}"
        )
    try:
        return model(**params)
    except ValidationError as exc:
        raise ReaderConfigError(f"reader kind {kind!r}: invalid params {dict(params)}: {exc}") from None


def is_multiple_choice(question: QuestionRow) -> bool:
    return question.choices is not None


# payload columns of the ``answers`` stage table (unit = "<system>/<reader>")
ANSWERS_PAYLOAD = pa.schema(
    [
        ("system", pa.string()),
        ("reader", pa.string()),
        ("reader_kind", pa.string()),
        ("label", pa.string()),  # 'offline' | 'llm'
        ("model", pa.string()),
        ("prediction", pa.string()),
        ("predicted_index", pa.int64()),  # multiple choice only
        ("invalid", pa.bool_()),  # unparseable multiple-choice reply (counted apart, never guessed)
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("latency_s", pa.float64()),
        ("cache_hit", pa.bool_()),
        ("cost_usd", pa.float64()),  # null when unknown (unpriced model), never 0
        ("context_tokens", pa.int64()),
        ("tool_calls", pa.int64()),  # agentic readers only (null otherwise): see pipeline.agentic.reader
        ("llm_calls", pa.int64()),
        ("capped", pa.bool_()),
        ("agent_trace", pa.string()),  # JSON: steps, queries, unit ids, tokens per step
    ]
)


_UNIT_FIELDS = tuple(f.name for f in fields(RetrievedUnit))


def units_column(column: pa.ChunkedArray | pa.Array) -> list[tuple[RetrievedUnit, ...]]:
    """A ``retrievals`` table's ``units`` column as RetrievedUnit tuples, one per row.

    Why columnar: converting each row to nested dicts and each dict to a RetrievedUnit cost ~8 s
    of the answers stage on configs/shared.yaml (~13.9k rows, ~500k units); reading each struct
    field as one list builds the same units at a fraction of that. A field the file lacks is None.
    """
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(array) == 0:
        return []
    offsets = array.offsets.to_pylist()
    flat = array.flatten()  # the struct values of the non-null lists, offsets relative to array.offsets[0]
    names = {flat.type.field(i).name for i in range(flat.type.num_fields)}
    fields = [flat.field(n).to_pylist() if n in names else [None] * len(flat) for n in _UNIT_FIELDS]
    turn_pos = _UNIT_FIELDS.index("turn_ids")
    fields[turn_pos] = [tuple(t) if t else () for t in fields[turn_pos]]
    units = [RetrievedUnit(*values) for values in zip(*fields, strict=True)]
    base = offsets[0]
    return [tuple(units[offsets[i] - base : offsets[i + 1] - base]) for i in range(len(array))]


def retrieval_from_row(row: Mapping[str, Any]) -> RetrievalResult:
    """A ``retrievals`` table row (RETRIEVALS_PAYLOAD columns) back into a RetrievalResult.

    ``units`` may already be RetrievedUnit objects (a tuple, from ``units_column``) or the raw
    list of dicts of ``to_pylist``.
    """
    raw = row.get("units") or ()
    if isinstance(raw, tuple):
        units = raw
    else:
        units = tuple(RetrievedUnit(**{**u, "turn_ids": tuple(u.get("turn_ids") or ())}) for u in raw)
    notes = json.loads(row["notes"]) if row.get("notes") else {}
    return RetrievalResult(
        units=units,
        context=row.get("context") or "",
        context_tokens=int(row.get("context_tokens") or 0),
        trimmed_units=int(row.get("trimmed_units") or 0),
        notes=notes,
    )
