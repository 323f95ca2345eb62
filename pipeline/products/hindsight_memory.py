"""``hindsight``: the Hindsight memory server (PyPI ``hindsight-api-slim``), driven over its HTTP API.

Why over HTTP: Hindsight cannot share membench's environment (pipeline/products/hindsight_server.py
says why and how membench starts it). The kind is the product as its users run it: one memory bank
per haystack, one ``retain`` per session (the session's turns as ``Speaker: text`` lines, its date
as the item timestamp, ``document_id`` = the session key, the key and position as metadata), one
``recall`` per question. Hindsight extracts and stores the facts itself (its own prompts, entity
linking, BM25 + vector + graph + temporal retrieval fused by RRF); every LLM and embedding call it
makes goes through membench's proxy.

A recalled fact carries the ``document_id`` it was extracted from, so it maps back to its session
(session-level retrieval metrics work); there are no turn ids (``source_ids: session``).

Resumption: Hindsight keeps its store in PostgreSQL, so the per-session snapshot of the live
directory holds nothing of it; what makes a resume exact is that ``retain`` with a ``document_id``
replaces that document's facts (a session re-sent after a crash is not stored twice), and a restore
whose state cannot be trusted deletes every document the checkpoint does not list (the session a
crash interrupted) before ingestion goes on.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import urllib.parse
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_RANK, ranked_result
from pipeline.memory.params import MemoryConfigError, ParamsInput
from pipeline.products.base import ProductMemory, ProductParams, speaker_lines, usage_note
from pipeline.products.hindsight_server import (
    DEFAULT_VENV,
    SERVER_PACKAGE,
    HindsightServer,
    shared_server,
    venv_problem,
)
from pipeline.products.proxy import EndpointOptions
from pipeline.store.corpus import HaystackSession

KIND = "hindsight"
RetainMode = Literal["concise", "verbose", "custom", "verbatim", "chunks"]  # Hindsight's RETAIN_EXTRACTION_MODES


class HindsightParams(ProductParams):
    budget: Literal["low", "mid", "high"] = "mid"  # Hindsight's recall effort
    server_venv: str | None = None  # default: DEFAULT_VENV (pipeline/products/hindsight_server.py)
    start_timeout_s: float = Field(default=600.0, gt=0)  # migrations on a fresh database take a while
    # Hindsight's cap on one fact-extraction reply (HINDSIGHT_API_RETAIN_MAX_COMPLETION_TOKENS); it must
    # exceed its chunk size (3,000 characters). None keeps Hindsight's default, 64,000 tokens.
    retain_max_completion_tokens: int | None = Field(default=None, gt=3000)
    # Hindsight's fact-extraction mode (HINDSIGHT_API_RETAIN_EXTRACTION_MODE). None keeps its default
    # (concise). "chunks" stores each chunk of a session as it is, with no LLM call: what is left to
    # measure is Hindsight's retrieval (docs/guide/products.md says when a run needs it).
    retain_extraction_mode: RetainMode | None = None
    # OpenAI's frequency_penalty, which membench's endpoint adds to Hindsight's LLM calls (Hindsight sets
    # none). With it the 1.5B local model stops instead of repeating one fact to the reply cap.
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)

    @model_validator(mode="after")
    def check_server(self) -> HindsightParams:
        problem = venv_problem(self.venv)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def venv(self) -> Path:
        return Path(self.server_venv) if self.server_venv else DEFAULT_VENV


def bank_id(haystack_id: str) -> str:
    return "h" + hashlib.sha256(haystack_id.encode()).hexdigest()[:16]


class HindsightMemory(ProductMemory):
    """A Hindsight bank per haystack on a server membench started; LLM and embeddings via membench."""

    kind = KIND
    params_model = HindsightParams
    library: ClassVar[tuple[str, str]] = ("json", SERVER_PACKAGE)  # the library lives in the server's venv
    params: HindsightParams

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        super().__init__(params, deps)
        problem = venv_problem(self.params.venv)
        if problem:
            raise MemoryConfigError(problem)
        # one proxy route per server: the server's endpoint is fixed when it starts, and each memory
        # instance registers its own meter under the route while it is open
        self.meter.meter_id = "hindsight-" + self.params_hash()
        self.server: HindsightServer | None = None

    def endpoint_options(self) -> EndpointOptions:
        return EndpointOptions(frequency_penalty=self.params.frequency_penalty)

    def _open(self) -> None:
        venv, state = self.params.venv, self.root / "server"
        url = self.base_url  # registers this instance's meter under the server's route

        def make() -> HindsightServer:
            return HindsightServer(
                venv,
                state,
                url,
                self.chat_model,
                self.embed_model,
                self.embed_dims,
                self.params.start_timeout_s,
                self.call_timeout_s,
                self.params.retain_max_completion_tokens,
                self.params.retain_extraction_mode,
            )

        self.server = shared_server((str(venv), str(state)), make)
        assert self.haystack_id is not None
        self.bank = bank_id(self.haystack_id)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        assert self.server is not None
        return self.server.call(method, f"/v1/default/banks/{self.bank}{path}", body)

    def _ingest(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        key, when = session.session.session_key, session.session.datetime
        item: dict[str, Any] = {
            "content": speaker_lines(session),
            "document_id": key,
            "context": f"conversation session {key}"
            + (f" ({session.session.datetime_raw})" if session.session.datetime_raw else ""),
            "metadata": {"session_key": key, "session_position": str(session.position)},
        }
        if when is not None:
            item["timestamp"] = (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).isoformat()
        self._call("POST", "/memories", {"items": [item], "async": False})
        return []  # the facts live in Hindsight's database; recall returns them with their document id

    def _documents(self) -> list[str]:
        found = self._call("GET", "/documents?limit=1000")
        items = found.get("items", []) if isinstance(found, dict) else []
        return [str(d.get("id")) for d in items if isinstance(d, dict)]

    def _rebuild(self, memories: list[MemoryUnit]) -> None:
        """Hindsight's store is not in the live directory: drop the documents the checkpoint does not list."""
        keep = set(self.positions)
        for doc in self._documents():
            if doc not in keep:
                self._call("DELETE", f"/documents/{urllib.parse.quote(doc, safe='')}")

    def _search(self, question: QuestionRow) -> RetrievalResult:
        body = {
            "query": question.question,
            "budget": self.params.budget,
            "max_tokens": self.params.token_budget or 4096,
        }
        found = self._call("POST", "/memories/recall", body)
        ranked = []
        for rank, hit in enumerate(found.get("results", [])[: self.params.top_k]):
            key = str(hit.get("document_id") or (hit.get("metadata") or {}).get("session_key") or "")
            stamp = hit.get("occurred_start") or hit.get("mentioned_at")
            unit = MemoryUnit(
                str(hit["id"]), question.haystack_id, key, self.positions.get(key, -1), (), str(hit.get("text", "")),
                dt.datetime.fromisoformat(stamp) if isinstance(stamp, str) and stamp else None, "memory", "note",
            )  # fmt: skip
            ranked.append((unit, 1.0 / (rank + 1)))
        notes = usage_note({
            "product": SERVER_PACKAGE, "budget": self.params.budget,
            "turn_ids": "none: Hindsight facts are extracted from a whole session (one document per session)",
        })  # fmt: skip
        return ranked_result(ranked, self.params.token_budget, ORDER_RANK, {}, notes)
