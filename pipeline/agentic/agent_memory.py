"""Memory kind ``agent``: an LLM agent reads each session and maintains its own memory store.

Per session, the agent gets the dated transcript and four tools (pipeline.agentic.loop):
``add_memory(text)``, ``update_memory(memory_id, text)``, ``delete_memory(memory_id)`` and
``search_memory(query, k)`` over the store as it stands. Retrieval ranks the store's memories by
cosine similarity (the run's encoder) to the question.

Why the store is persisted as its tool-call log: ingestion checkpoints hold the units each
session added (pipeline.memory.ingest), but an agent also edits and deletes earlier memories.
So every tool call of a session becomes one ``agent_op`` unit of that session (tool, arguments,
result or error, step); ``restore`` replays the successful add/update/delete calls in order. A
session's calls are applied to the live store while its loop runs, and persisted only with the
session's checkpoint: after ``kill -9`` the resumed run restores the sessions before it and runs
the interrupted session again from its start (its LLM calls replay from the cache), so no session's
calls are ever applied twice. The log is queryable as the ``agent_memory_log`` view.

Memory ids are ``m1``, ``m2``, ... in the order of creation (deterministic, so the prompts of a
re-run are identical and hit the cache).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field

from pipeline.agentic.loop import (
    AgentLoopError,
    LoopResult,
    LoopSettings,
    Tool,
    ToolInputError,
    ToolResult,
    run_tool_loop,
)
from pipeline.agentic.prompts import NO_RESULTS
from pipeline.catalog.agentic import KIND_OP as KIND_OP  # a logged tool call's unit kind; its view owns it
from pipeline.core.records import QuestionRow, SessionRow
from pipeline.llm.identity import not_set
from pipeline.llm.protocol import ChatClient
from pipeline.memory.base import Encoder, MemoryDeps, MemoryUnit, RetrievalResult, turn_unit_text
from pipeline.memory.context import ORDER_TIME, format_date, ranked_result
from pipeline.memory.params import MemoryConfigError, ParamsInput, SystemParams, parse_params
from pipeline.store.corpus import HaystackSession

KIND = "agent"
KIND_MEMORY = "agent_memory"  # MemoryUnit.kind of a stored memory (what retrieval returns)
MUTATING = ("add_memory", "update_memory", "delete_memory")

AGENT_SYSTEM_PROMPT = """You are the long-term memory of a conversational assistant. You read one \
conversation session at a time and keep a memory store up to date with tools, so that questions \
about the conversations can be answered later from the store alone.

- add_memory: store one new fact as a short, self-contained sentence that names who it is about and \
starts with the date it refers to (resolve "yesterday", "last week" against the session date).
- update_memory: when a fact changes or gets more precise, rewrite the existing memory.
- delete_memory: when a memory turns out to be wrong.
- search_memory: look up what is already stored before adding or changing something.

Store facts about every person (events, plans, preferences, possessions, relationships, opinions) \
and facts the assistant stated that may be asked about again. When the session is fully stored, \
reply with the single word DONE."""

AGENT_SESSION_TEMPLATE = """Session date: {date}

Transcript:
{transcript}"""


class AgentMemoryParams(SystemParams):
    top_k: int = Field(default=20, gt=0)
    order: Literal["time", "rank"] = ORDER_TIME
    token_budget: int | None = Field(default=8_000, gt=0)
    model: str | None = None  # None = the config's llm.model
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=512, gt=0)
    max_steps: int = Field(default=30, ge=1)  # tool calls per session
    max_tool_errors: int = Field(default=3, ge=1)
    search_k: int = Field(default=5, ge=1)  # search_memory's default k during ingestion


@dataclass(frozen=True)
class StoredMemory:
    memory_id: str
    text: str
    session_key: str
    session_position: int
    unit: MemoryUnit  # a KIND_MEMORY unit for ranked_result (its session is the last writer's)


class MemoryStore:
    """The agent's memories, with cosine search over their (cached) embeddings."""

    def __init__(self, encoder: Encoder, haystack_id: str) -> None:
        self.encoder = encoder
        self.haystack_id = haystack_id
        self.memories: dict[str, StoredMemory] = {}
        self.created = 0  # ids issued so far (deleted ones are never reused)
        self.order: dict[str, int] = {}
        self._vectors: dict[str, np.ndarray] = {}

    def add(self, text: str, hs: HaystackSession) -> str:
        self.created += 1
        memory_id = f"m{self.created}"
        self.order[memory_id] = self.created
        self._put(memory_id, text, hs)
        return memory_id

    def update(self, memory_id: str, text: str, hs: HaystackSession) -> None:
        self._known(memory_id)
        self._put(memory_id, text, hs)

    def delete(self, memory_id: str) -> None:
        self._known(memory_id)
        del self.memories[memory_id]
        self._vectors.pop(memory_id, None)

    def _known(self, memory_id: str) -> None:
        if memory_id not in self.memories:
            raise ToolInputError(f"no memory {memory_id!r} (ids are shown by search_memory and add_memory)")

    def _put(self, memory_id: str, text: str, hs: HaystackSession) -> None:
        unit = MemoryUnit(memory_id, self.haystack_id, hs.session.session_key, hs.position, (), text,
                          hs.session.datetime, "memory", KIND_MEMORY)  # fmt: skip
        self.memories[memory_id] = StoredMemory(memory_id, text, hs.session.session_key, hs.position, unit)
        self._vectors.pop(memory_id, None)

    def search(self, query: str, k: int) -> list[tuple[StoredMemory, float]]:
        """Top ``k`` memories by cosine (ties: older first)."""
        if not self.memories or k <= 0:
            return []
        missing = [m for m in self.memories if m not in self._vectors]
        if missing:
            vecs = self.encoder.encode([self.memories[m].text for m in missing])
            self._vectors.update(zip(missing, np.asarray(vecs, dtype=np.float32), strict=True))
        ids = list(self.memories)
        matrix = np.stack([self._vectors[m] for m in ids])
        scores = matrix @ np.asarray(self.encoder.encode([query]), dtype=np.float32)[0]
        ranked = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), self.order[ids[i]]))[:k]
        return [(self.memories[ids[i]], float(scores[i])) for i in ranked]


def _text_arg(arguments: Mapping[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"{name!r} must be a non-empty string")
    return value.strip()


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_TEXT = {"type": "string", "description": "the memory, one self-contained sentence"}
_ID = {"type": "string", "description": "id of an existing memory, e.g. m3"}


def store_tools(store: MemoryStore, hs: HaystackSession, search_k: int) -> list[Tool]:
    """The four tools over ``store`` while session ``hs`` is ingested."""

    def add(args: Mapping[str, Any]) -> ToolResult:
        memory_id = store.add(_text_arg(args, "text"), hs)
        return ToolResult(f"added {memory_id}", {"memory_id": memory_id})

    def update(args: Mapping[str, Any]) -> ToolResult:
        memory_id = _text_arg(args, "memory_id")
        store.update(memory_id, _text_arg(args, "text"), hs)
        return ToolResult(f"updated {memory_id}", {"memory_id": memory_id})

    def delete(args: Mapping[str, Any]) -> ToolResult:
        memory_id = _text_arg(args, "memory_id")
        store.delete(memory_id)
        return ToolResult(f"deleted {memory_id}", {"memory_id": memory_id})

    def search(args: Mapping[str, Any]) -> ToolResult:
        k = args.get("k", search_k)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ToolInputError(f"'k' must be a positive integer, got {k!r}")
        hits = store.search(_text_arg(args, "query"), k)
        content = "\n".join(f"[{m.memory_id}] {m.text}" for m, _ in hits) or NO_RESULTS
        return ToolResult(content, {"unit_ids": [m.memory_id for m, _ in hits]})

    query = {"type": "string", "description": "what to look for"}
    return [
        Tool("add_memory", "Store a new memory.", _object({"text": _TEXT}, ["text"]), add),
        Tool(
            "update_memory",
            "Rewrite an existing memory.",
            _object({"memory_id": _ID, "text": _TEXT}, ["memory_id", "text"]),
            update,
        ),
        Tool("delete_memory", "Delete a memory.", _object({"memory_id": _ID}, ["memory_id"]), delete),
        Tool(
            "search_memory",
            "Search the stored memories.",
            _object({"query": query, "k": {"type": "integer"}}, ["query"]),
            search,
        ),
    ]


def session_messages(hs: HaystackSession, system_prompt: str = AGENT_SYSTEM_PROMPT) -> list[dict[str, str]]:
    """The memory agent's messages for one session: its instructions, then the dated transcript."""
    date = hs.session.datetime_raw or format_date(hs.session.datetime)
    transcript = "\n".join(turn_unit_text(t) for t in hs.turns)
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": AGENT_SESSION_TEMPLATE.format(date=date, transcript=transcript)},
    ]


def op_units(haystack_id: str, hs: HaystackSession, result: LoopResult) -> list[MemoryUnit]:
    """Every tool call of the session's loop as an ``agent_op`` unit (the session's log)."""
    units: list[MemoryUnit] = []
    for step in result.steps:
        for call in step.tool_calls:
            text = json.dumps({"step": step.index, "call_id": call.call_id, "arguments": call.arguments,
                               "error": call.error, **call.record}, sort_keys=True)  # fmt: skip
            units.append(MemoryUnit(f"{hs.session.session_key}#op{len(units)}", haystack_id, hs.session.session_key,
                                    hs.position, (), text, hs.session.datetime, call.tool, KIND_OP))  # fmt: skip
    return units


class AgentMemory:
    """An LLM agent's own memory store, built session by session through tools."""

    params_model = AgentMemoryParams
    version = 1
    kind = KIND
    uses_llm = True

    @classmethod
    def llm_fields(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The ``llm:`` settings its calls take: the model unless its params name one, and the tag
        (temperature and reply cap are its own params)."""
        return (*not_set(params, "model"), "model_tag")

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        if deps.llm is None:
            raise MemoryConfigError(f"memory system kind {KIND!r} needs an LLM, but the config has no `llm:` block")
        if deps.encoder is None:
            raise MemoryConfigError(f"memory system kind {KIND!r} needs the embedding encoder")
        self.llm: ChatClient = deps.llm
        self.encoder = deps.encoder
        self.store: MemoryStore | None = None
        self.settings = LoopSettings(self.params.max_steps, self.params.max_tool_errors, self.params.model,
                                     self.params.temperature, self.params.max_tokens)  # fmt: skip

    def _store(self, haystack_id: str) -> MemoryStore:
        if self.store is None:
            self.store = MemoryStore(self.encoder, haystack_id)
        return self.store

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        store = self._store(haystack_id)
        if not session.turns:
            return []
        tools = store_tools(store, session, self.params.search_k)
        try:
            result = run_tool_loop(self.llm, session_messages(session), tools, self.settings)
        except AgentLoopError as exc:
            raise AgentLoopError(f"memory agent: {exc}") from exc
        return op_units(haystack_id, session, result)

    def restore(self, units: list[MemoryUnit]) -> None:
        """Replay the logged add/update/delete calls that succeeded, in order."""
        for u in units:
            if u.kind != KIND_OP or u.role not in MUTATING:
                continue
            op = json.loads(u.text)
            if op.get("error"):
                continue
            store = self._store(u.haystack_id)
            hs = _session_of(u)
            if u.role == "add_memory":
                memory_id = store.add(op["arguments"]["text"].strip(), hs)
                if memory_id != op["memory_id"]:
                    raise ValueError(f"replaying {u.unit_id}: got id {memory_id}, the log says {op['memory_id']}")
            elif u.role == "update_memory":
                store.update(op["memory_id"], op["arguments"]["text"].strip(), hs)
            else:
                store.delete(op["memory_id"])

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        store = self._store(question.haystack_id)
        hits = [(m.unit, score) for m, score in store.search(question.question, self.params.top_k)]
        positions = {m: store.order[m] for m in store.memories}
        notes = {"top_k": self.params.top_k, "memories": len(store.memories), "created": store.created}
        return ranked_result(hits, self.params.token_budget, self.params.order, positions, notes)


def _session_of(unit: MemoryUnit) -> HaystackSession:
    """A stand-in session (key, position, date) for replaying a logged call: what ``_put`` reads."""
    row = SessionRow("", unit.session_key, "", None, unit.timestamp, None, 0)
    return HaystackSession(unit.session_position, row, ())
