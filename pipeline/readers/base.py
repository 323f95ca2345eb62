"""Reader contract: turn (question, retrieved context) into an answer row.

Why a separate stage from retrieval: the same retrieved context is read by several readers (an
LLM, an offline embedding scorer), so memory quality and reader quality are measured apart.
Readers register by name (``READERS``) and are built from one config block (kind + params).

Labels: every answer carries ``label`` = ``'llm'`` or ``'offline'`` so an offline baseline can
never be mistaken for an LLM's result in a report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.memory.base import Encoder, RetrievalResult, RetrievedUnit
from pipeline.records import QuestionRow
from pipeline.registry import Registry

LABEL_LLM = "llm"
LABEL_OFFLINE = "offline"


class LLMReply(Protocol):
    """What one chat call returns (resources/llm.py ``LLMReply``); ``ok`` False = transport failure."""

    text: str
    ok: bool
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cache_hit: bool
    cost_usd: float | None
    model: str


class LLMClient(Protocol):
    """The part of resources/llm.py ``LLMClient`` readers and judges use (cached, retried, priced)."""

    model: str

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply: ...


class ReaderConfigError(ValueError):
    """A reader's configuration is invalid (bad params, missing LLM or encoder)."""


class ReaderCallFailed(RuntimeError):
    """The LLM call behind an answer failed (transport, HTTP, timeout): the answer unit fails."""


@dataclass(frozen=True)
class ReaderDeps:
    """What a reader may use; ``llm`` is None when the config has no ``llm:`` block."""

    encoder: Encoder | None = None
    llm: LLMClient | None = None


@dataclass(frozen=True)
class ReadInput:
    """One question to answer: the question, what the memory retrieved, and session dates."""

    question: QuestionRow
    retrieval: RetrievalResult
    session_dates: Mapping[str, str | None] = field(default_factory=dict)  # session_key -> raw date


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


class Reader(Protocol):
    kind: str
    label: str

    def __init__(self, params: dict[str, Any], deps: ReaderDeps) -> None: ...

    def model_id(self) -> str:
        """What else determines this reader's answers (model names), hashed into the unit's config."""
        ...

    def answer(self, item: ReadInput) -> Answer: ...


READERS: Registry[type[Reader]] = Registry("reader")

P = TypeVar("P", bound="ReaderParams")


class ReaderParams(BaseModel):
    """Strict reader params: a misspelt key fails the run at start instead of using a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_params(model: type[P], params: Mapping[str, Any], kind: str) -> P:
    try:
        return model(**params)
    except ValidationError as exc:
        raise ReaderConfigError(f"reader kind {kind!r}: invalid params {dict(params)}: {exc}") from None


def build_reader(kind: str, params: Mapping[str, Any], deps: ReaderDeps) -> Reader:
    """Instantiate a registered reader (imports the built-in readers so they are registered)."""
    import pipeline.readers.llm_reader  # noqa: F401 - registers 'llm'
    import pipeline.readers.offline  # noqa: F401 - registers 'offline'

    return READERS.get(kind)(dict(params), deps)


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
    ]
)


def retrieval_from_row(row: Mapping[str, Any]) -> RetrievalResult:
    """A ``retrievals`` table row (RETRIEVALS_PAYLOAD columns) back into a RetrievalResult."""
    units = tuple(
        RetrievedUnit(**{**u, "turn_ids": tuple(u.get("turn_ids") or ())}) for u in row.get("units") or ()
    )
    notes = json.loads(row["notes"]) if row.get("notes") else {}
    return RetrievalResult(
        units=units,
        context=row.get("context") or "",
        context_tokens=int(row.get("context_tokens") or 0),
        trimmed_units=int(row.get("trimmed_units") or 0),
        notes=notes,
    )
