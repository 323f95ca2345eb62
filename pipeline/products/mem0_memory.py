"""``mem0``: the open-source ``mem0.Memory`` (PyPI ``mem0ai``) on a local FAISS store per haystack.

Why this shape: it is the product as its users run it (``Memory.from_config`` + ``add`` per
conversation chunk + ``search``), with its own extraction prompt, dedup and scoring; membench
only supplies the endpoint (pipeline/products/proxy.py), the storage location and the session
order. One ``add`` call per session (the session's turns as messages, each prefixed with the
session date and the speaker, since the OSS SDK refuses a ``timestamp``), scoped by
``user_id`` = a file-safe form of the haystack id, with ``metadata`` = the session key and date.

What comes back from ``search`` is the product's derived facts: each carries the session key it
was extracted from (session-level retrieval metrics work), but no turn ids (mem0 extracts facts
from the whole session); the retrieval notes say ``source_ids: session``.

Offline notes (measured with mem0ai 2.2.1): telemetry is off (``MEM0_TELEMETRY=False`` is set
before the import); the optional spaCy features (entity boost, lemmatised BM25) are not
installed (``mem0ai[nlp]`` downloads ``en_core_web_sm`` from GitHub at run time), so mem0 falls
back to plain text for them, as it does by design. mem0's extraction prompt contains the current
date, so its LLM cache entries are reused within one UTC day only.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_RANK, ranked_result
from pipeline.products.base import (
    ProductMemory,
    ProductParams,
    haystack_label,
    library_notices_off,
    session_messages,
    usage_note,
)
from pipeline.store.corpus import HaystackSession

KIND = "mem0"
PACKAGE = "mem0ai==2.2.1"
MODULE = "mem0"
COLLECTION = "membench"
PROXY_KEY = "membench-proxy"  # the product never sees the real key: the proxy holds it


class Mem0Params(ProductParams):
    requires = (KIND, MODULE, PACKAGE)
    threshold: float = Field(default=0.1, ge=0, le=1)  # mem0's own default
    max_tokens: int = Field(default=2_000, gt=0)  # extraction replies list many facts


def _quiet_import() -> Any:
    """``mem0.Memory`` with telemetry off and its home directory under the state root."""
    os.environ["MEM0_TELEMETRY"] = "False"
    with library_notices_off():
        import mem0.memory.main as mem0_main
        import mem0.memory.telemetry as mem0_telemetry

    # also when mem0 was imported before the variable was set: both modules read the flag at import
    mem0_telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False
    return mem0_main.Memory


class Mem0Memory(ProductMemory):
    """mem0's ``Memory`` driven through its public API; LLM and embeddings via membench."""

    kind = KIND
    params_model = Mem0Params
    library: ClassVar[tuple[str, str]] = (MODULE, PACKAGE)
    params: Mem0Params

    def _config(self, live: Path) -> dict[str, Any]:
        return {
            "llm": {
                "provider": "openai",
                "config": {
                    "model": self.chat_model, "api_key": PROXY_KEY, "openai_base_url": self.base_url,
                    "temperature": 0.0, "max_tokens": self.params.max_tokens,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": self.embed_model, "api_key": PROXY_KEY, "openai_base_url": self.base_url,
                    "embedding_dims": self.embed_dims,
                },
            },
            "vector_store": {
                "provider": "faiss",
                "config": {
                    "collection_name": COLLECTION, "path": str(live / "faiss"),
                    "embedding_model_dims": self.embed_dims, "distance_strategy": "cosine",
                },
            },
            "history_db_path": str(live / "history.db"),
        }  # fmt: skip

    def _open(self) -> None:
        os.environ.setdefault("MEM0_DIR", str(self.root / ".mem0"))
        memory_cls = _quiet_import()
        self.memory = memory_cls.from_config(self._config(self.live_dir))

    def _ingest(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        key = session.session.session_key
        meta = _meta(key, session.position, session.session.datetime)
        out = self.memory.add(session_messages(session), user_id=haystack_label(haystack_id), metadata=meta)
        units, ts = [], session.session.datetime
        for i, r in enumerate(m for m in out.get("results", []) if m.get("event") == "ADD"):
            text = str(r.get("memory", ""))
            units.append(
                MemoryUnit(f"{key}#mem0-{i}", haystack_id, key, session.position, (), text, ts, "memory", "note")
            )
        return units

    def _rebuild(self, memories: list[MemoryUnit]) -> None:
        """Re-add the checkpoint's memories verbatim (``infer=False``: no LLM call) with their metadata."""
        for u in memories:
            meta = _meta(u.session_key, u.session_position, u.timestamp)
            self.memory.add(u.text, user_id=haystack_label(u.haystack_id), metadata=meta, infer=False)

    def _search(self, question: QuestionRow) -> RetrievalResult:
        found = self.memory.search(
            question.question, top_k=self.params.top_k, filters={"user_id": haystack_label(question.haystack_id)},
            threshold=self.params.threshold,
        )  # fmt: skip
        ranked = []
        for hit in found.get("results", []):
            meta = hit.get("metadata") or {}
            unit = MemoryUnit(
                str(hit["id"]), question.haystack_id, str(meta.get("session_key", "")),
                int(meta.get("session_position", -1)), (), str(hit.get("memory", "")),
                _parse(meta.get("session_date")), "memory", "note",
            )  # fmt: skip
            ranked.append((unit, float(hit.get("score") or 0.0)))
        notes = usage_note({"product": PACKAGE, "turn_ids": "none: mem0 returns facts derived from a whole session"})
        return ranked_result(ranked, self.params.token_budget, ORDER_RANK, {}, notes)


def _meta(session_key: str, position: int, ts: dt.datetime | None) -> dict[str, Any]:
    """The metadata stored with each memory: what maps a retrieved fact back to its session."""
    return {"session_key": session_key, "session_position": position, "session_date": ts.isoformat() if ts else None}


def _parse(value: object) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if isinstance(value, str) and value else None
