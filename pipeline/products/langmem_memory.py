"""``langmem``: LangMem's memory store manager (PyPI ``langmem``) on a LangGraph SQLite store per haystack.

Why this shape: it is the product as its users run it. ``create_memory_store_manager`` with a
``ChatOpenAI`` model and a LangGraph store whose semantic index embeds through ``OpenAIEmbeddings``;
one ``invoke`` per session (the session's turns as messages, each prefixed with the session date
and the speaker); at question time the manager's own ``search``. LangMem decides what to insert,
update or delete through tool calls (trustcall), which membench's proxy carries and caches.
membench supplies only the endpoint (pipeline/products/proxy.py), the store's location and the
session order.

The store is LangGraph's ``SqliteStore`` (package ``langgraph-checkpoint-sqlite``) in the live
directory: one SQLite file per (system, haystack), snapshotted after each session like any product
state. Its vector search is the ``sqlite-vec`` extension, which Python's ``sqlite3`` can load only
when built with extension loading; the pyenv/Debian builds used here are not, so the connection
comes from ``sqlean.py`` (the same SQLite API with loadable extensions).

Where memories come from: LangMem's memory items carry no metadata of ours, and a memory can be
rewritten by a later session. After each session membench lists the namespace and records, for
every memory inserted or changed, the session that wrote it in a side namespace of the same store
(not indexed, never shown to LangMem). A retrieved memory maps to the session that last wrote it:
session-level retrieval metrics work, turn ids do not exist (derived text), and the retrieval notes
say ``source_ids: session``.

Determinism: LangMem draws ``uuid4`` for the ids of new memories and for a tag inside its
extraction prompt. Random ids would make every prompt new (no cache hit on a rerun) and a resumed
store differ from an uninterrupted one, so while membench ingests a session, ``uuid4`` in LangMem's
extraction module draws from a generator seeded by (haystack, session): same prompts, same ids.

Offline: LangSmith tracing is forced off (environment and ``tracing_context(enabled=False)`` around
every call); ``OpenAIEmbeddings`` is built with ``check_embedding_ctx_length=False`` (otherwise
tiktoken downloads its vocabulary).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
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
from pipeline.products.proxy import EndpointOptions
from pipeline.store.corpus import HaystackSession

KIND = "langmem"
PACKAGE = "langmem==0.0.30"
MODULE = "langmem"
PROXY_KEY = "membench-proxy"  # the product never sees the real key: the proxy holds it
STORE_FILE = "store.sqlite"
MEMORIES = "memories"
SOURCES = "membench_sources"  # side namespace: which sessions wrote each memory
KIND_REMOVED = "note_removed"  # checkpoint unit: LangMem deleted this memory in that session
TRACING_ENV = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2")
LIST_LIMIT = 100_000  # listing a namespace (no query: no embedding call)


class LangmemParams(ProductParams):
    requires = (KIND, MODULE, PACKAGE)
    max_tokens: int = Field(default=2_000, gt=0)  # an extraction reply may hold many tool calls
    query_limit: int = Field(default=5, gt=0)  # LangMem's default: existing memories shown to the extractor
    enable_deletes: bool = False  # LangMem's default for the store manager
    # the proxy reads tool calls the endpoint wrote as text (llama-cpp-python's server with the GGUF template)
    text_tool_calls: bool = False


class _SeededUuid:
    """Stands in for the ``uuid`` module inside LangMem's extraction module: ``uuid4`` draws from
    the calling thread's seeded generator while membench ingests a session, the real one otherwise."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)

    def uuid4(self) -> uuid.UUID:
        rng: random.Random | None = getattr(self._local, "rng", None)
        return uuid.uuid4() if rng is None else uuid.UUID(int=rng.getrandbits(128), version=4)

    @contextmanager
    def seeded(self, seed: str) -> Iterator[None]:
        self._local.rng = random.Random(hashlib.sha256(seed.encode()).digest())
        try:
            yield
        finally:
            self._local.rng = None


SEEDED_UUID = _SeededUuid()


def _quiet_import() -> Any:
    """LangMem's extraction module, with tracing off and its ``uuid4`` seedable."""
    for name in TRACING_ENV:
        os.environ[name] = "false"
    with library_notices_off():
        import langmem.knowledge.extraction as extraction

    extraction.uuid = SEEDED_UUID
    return extraction


@contextmanager
def _untraced() -> Iterator[None]:
    from langsmith.run_helpers import tracing_context

    with tracing_context(enabled=False):
        yield


def memory_text(value: Any) -> str:
    """The text of a stored memory (``{"kind", "content": {"content": ...}}`` or a coerced model)."""
    if hasattr(value, "content"):
        return str(value.content)
    content = value.get("content") if isinstance(value, dict) else value
    if isinstance(content, dict):
        return str(content["content"]) if "content" in content else json.dumps(content, sort_keys=True)
    return str(content)


class LangmemMemory(ProductMemory):
    """LangMem's memory store manager driven through its public API; LLM and embeddings via membench."""

    kind = KIND
    params_model = LangmemParams
    library: ClassVar[tuple[str, str]] = (MODULE, PACKAGE)
    params: LangmemParams

    def endpoint_options(self) -> EndpointOptions:
        return EndpointOptions(text_tool_calls=self.params.text_tool_calls)

    def _open(self) -> None:
        import sqlean
        from langchain_openai import ChatOpenAI, OpenAIEmbeddings
        from langgraph.store.sqlite import SqliteStore

        extraction = _quiet_import()
        chat = ChatOpenAI(
            model=self.chat_model, base_url=self.base_url, api_key=PROXY_KEY,  # type: ignore[arg-type]
            temperature=0.0, max_tokens=self.params.max_tokens, max_retries=0,  # type: ignore[call-arg]
        )  # fmt: skip
        embed = OpenAIEmbeddings(
            model=self.embed_model, base_url=self.base_url, api_key=PROXY_KEY,  # type: ignore[arg-type]
            check_embedding_ctx_length=False, max_retries=0,
        )  # fmt: skip
        self.conn = sqlean.connect(str(self.live_dir / STORE_FILE), check_same_thread=False, isolation_level=None)
        self.store = SqliteStore(self.conn, index={"dims": self.embed_dims, "embed": embed})
        self.store.setup()
        self.manager = extraction.create_memory_store_manager(
            chat, store=self.store, namespace=(MEMORIES, "{langgraph_user_id}"),
            query_limit=self.params.query_limit, enable_deletes=self.params.enable_deletes,
        )  # fmt: skip

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
        super().close()

    def _config(self, haystack_id: str) -> dict[str, Any]:
        return {"configurable": {"langgraph_user_id": haystack_label(haystack_id)}}

    def _listing(self, haystack_id: str) -> dict[str, Any]:
        """key -> value of every memory in the haystack's namespace (no query: no embedding call)."""
        items = self.store.search((MEMORIES, haystack_label(haystack_id)), limit=LIST_LIMIT)
        return {it.key: it.value for it in items}

    def _ingest(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        key = session.session.session_key
        before = self._listing(haystack_id)
        with _untraced(), SEEDED_UUID.seeded(f"{haystack_id}\x00{key}"):
            self.manager.invoke({"messages": session_messages(session)}, config=self._config(haystack_id))
        after = self._listing(haystack_id)
        changed = sorted(k for k, v in after.items() if before.get(k) != v)
        removed = sorted(set(before) - set(after))
        self._record_sources(haystack_id, changed, key, session.position)
        ts, pos = session.session.datetime, session.position
        units = [MemoryUnit(f"{key}#{k}", haystack_id, key, pos, (), memory_text(after[k]), ts, "memory", "note")
                 for k in changed]  # fmt: skip
        units += [MemoryUnit(f"{key}#{k}", haystack_id, key, pos, (), "", ts, "memory", KIND_REMOVED)
                  for k in removed]  # fmt: skip
        return units

    def _record_sources(self, haystack_id: str, keys: list[str], session_key: str, position: int) -> None:
        namespace = (SOURCES, haystack_label(haystack_id))
        for k in keys:
            old = self.store.get(namespace, k)
            sessions = [s for s in (old.value["sessions"] if old else []) if s[0] != session_key]
            self.store.put(namespace, k, {"sessions": [*sessions, [session_key, position]]}, index=False)

    def _rebuild(self, memories: list[MemoryUnit]) -> None:
        """Replay the checkpoint's memories in session order (writes and deletions; embeddings only, no LLM)."""
        for u in sorted(memories, key=lambda m: m.session_position):
            k = u.unit_id.rsplit("#", 1)[1]
            if u.kind == KIND_REMOVED:
                self.store.delete((MEMORIES, haystack_label(u.haystack_id)), k)
                continue
            value = {"kind": "Memory", "content": {"content": u.text}}
            self.store.put((MEMORIES, haystack_label(u.haystack_id)), k, value)
            self._record_sources(u.haystack_id, [k], u.session_key, u.session_position)

    def _search(self, question: QuestionRow) -> RetrievalResult:
        with _untraced():
            found = self.manager.search(
                query=question.question, limit=self.params.top_k, config=self._config(question.haystack_id)
            )
        namespace = (SOURCES, haystack_label(question.haystack_id))
        ranked, multi = [], 0
        for hit in found:
            src = self.store.get(namespace, hit.key)
            sessions: list[list[Any]] = src.value["sessions"] if src else [["", -1]]
            multi += len(sessions) > 1
            session_key, position = sessions[-1]  # the session that last wrote this text
            unit = MemoryUnit(
                hit.key, question.haystack_id, str(session_key), int(position), (), memory_text(hit.value),
                None, "memory", "note",
            )  # fmt: skip
            ranked.append((unit, float(hit.score or 0.0)))
        notes = usage_note(
            {
                "product": PACKAGE,
                "turn_ids": "none: LangMem returns memories it derived from whole sessions",
                "memories_written_by_several_sessions": multi,
            }
        )
        return ranked_result(ranked, self.params.token_budget, ORDER_RANK, {}, notes)
