"""``search_memory(query, k)``: any ingested memory system, queried with the agent's own words.

Why reopen the memory instead of reading the ``retrievals`` row: the agent asks questions of its
own, so it needs the memory itself. It is opened exactly as the retrieval stage opens it
(pipeline.memory.retrieve.open_memory: restored from its complete ingestion checkpoint of the
same unit hash), so any kind works, plugins included, and an incomplete or stale memory fails the
answer with the retrieval stage's own message. A query is the question row with its text
replaced, so systems that use the question's date or type still get them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from pipeline.agentic.loop import Tool, ToolInputError, ToolResult
from pipeline.agentic.prompts import NO_RESULTS
from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryDeps, MemorySystem, RetrievedUnit
from pipeline.memory.ingest import MemoryRun
from pipeline.memory.retrieve import open_memory
from pipeline.memory.systems import MemoryBenchmark
from pipeline.store.results import ResultStore

SEARCH_TOOL = "search_memory"
SEARCH_DESCRIPTION = (
    "Search the memory of past conversations. Returns the k most relevant memories, each with the "
    "date of the session it comes from. Use short, specific queries; search again with other words "
    "when the results do not hold the answer."
)
MAX_OPEN_MEMORIES = 4  # restored memories kept open (LRU): a run visits haystacks in order


class MemoryUnavailable(RuntimeError):
    """The memory cannot be searched (not ingested, other config, restore failed): the unit fails."""


class MemorySearch(Protocol):
    """What the agentic reader needs from the memory systems (``MemoryAccess``)."""

    def search(self, system: str, question: QuestionRow, query: str, k: int) -> Sequence[RetrievedUnit]: ...

    def session_date(self, dataset: str, session_key: str) -> str | None: ...


class MemoryAccess:
    """Ingested memories opened on demand, the ``MAX_OPEN_MEMORIES`` most recent kept open.

    Thread safety: one lock around opening and searching; searches are milliseconds next to the
    LLM calls between them, and memory systems are not required to be thread-safe.
    """

    def __init__(self, store: ResultStore, bench: MemoryBenchmark, deps: MemoryDeps) -> None:
        self._run = MemoryRun(store, bench, deps, log=deps.log)
        self._lock = threading.Lock()
        self._open: OrderedDict[tuple[str, str, str], MemorySystem] = OrderedDict()

    def _memory(self, system: str, dataset: str, haystack_id: str) -> MemorySystem:
        key = (system, dataset, haystack_id)
        if key in self._open:
            self._open.move_to_end(key)
            return self._open[key]
        spec = self._run.specs(dataset).get(system)
        if spec is None:
            raise MemoryUnavailable(f"memory system {system!r} is not configured for dataset {dataset!r}")
        opened = open_memory(self._run, spec, dataset, haystack_id, [])
        if opened.system is None:
            raise MemoryUnavailable(opened.error or f"memory {system!r} unavailable")
        self._open[key] = opened.system
        while len(self._open) > MAX_OPEN_MEMORIES:
            self._open.popitem(last=False)
        return opened.system

    def search(self, system: str, question: QuestionRow, query: str, k: int) -> Sequence[RetrievedUnit]:
        """The top ``k`` units the memory ``system`` retrieves for ``query`` (the question's own
        dataset, haystack and date)."""
        with self._lock:
            memory = self._memory(system, question.dataset, question.haystack_id)
            result = memory.retrieve(replace(question, question=query))
        return result.units[:k]

    def session_date(self, dataset: str, session_key: str) -> str | None:
        try:
            return self._run.corpus(dataset).session(session_key).datetime_raw
        except KeyError:
            return None


def format_units(units: Sequence[RetrievedUnit], date: Callable[[str], str | None]) -> str:
    """The tool's reply: one numbered memory per line, with its session date when known."""
    if not units:
        return NO_RESULTS
    lines = []
    for i, u in enumerate(units, 1):
        when = date(u.session_key)
        lines.append(f"[{i}] ({when}) {u.text}" if when else f"[{i}] {u.text}")
    return "\n".join(lines)


def search_tool(
    search: Callable[[str, int], Sequence[RetrievedUnit]],
    date: Callable[[str], str | None],
    default_k: int,
    max_k: int,
) -> Tool:
    """The ``search_memory`` tool over ``search(query, k)``; ``k`` defaults to ``default_k`` and is
    clipped to ``max_k`` (recorded as used)."""

    def run(arguments: Any) -> ToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolInputError("'query' must be a non-empty string")
        k = arguments.get("k", default_k)
        if isinstance(k, float) and k.is_integer():
            k = int(k)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ToolInputError(f"'k' must be a positive integer, got {k!r}")
        k = min(k, max_k)
        start = time.monotonic()
        units = search(query, k)
        record = {"query": query, "k": k, "unit_ids": [u.unit_id for u in units],
                  "search_s": round(time.monotonic() - start, 4)}  # fmt: skip
        return ToolResult(format_units(units, date), record)

    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "k": {"type": "integer", "minimum": 1, "maximum": max_k, "description": f"results (default {default_k})"},
        },
        "required": ["query"],
    }
    return Tool(SEARCH_TOOL, SEARCH_DESCRIPTION, parameters, run)
