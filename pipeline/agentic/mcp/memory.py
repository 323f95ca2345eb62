"""Memory kind ``mcp``: benchmark any MCP memory server through its own tools.

Config (params): the server (``command`` argv for stdio, or ``url``), which tool ingests and which
searches, with argument templates, and how ingestion goes:

- ``ingest: turn`` / ``session``: each turn (or whole dated session) is sent to ``ingest_tool`` with
  ``ingest_args`` rendered from ``{key} {text} {speaker} {date} {session} {haystack}``;
- ``ingest: agent``: the memory agent's loop (pipeline.agentic.loop, as kind ``agent``) reads each
  session and calls the server's own tools, whatever they are.

Retrieval calls ``search_tool`` with ``search_args`` (``{query} {k}``) and parses the reply as
``lines`` (``[key] text`` per line; our server) or a ``knowledge_graph`` (JSON entities with
observations; ``@modelcontextprotocol/server-memory``). A key naming an ingested turn or session
maps the result back to it, so retrieval metrics work when the server keeps our keys.

Placeholders in ``command`` and ``env``: ``{python}`` (this interpreter), ``{data_file}`` (the
server's memory file of this (system, haystack): ``<data_dir>/<params hash>/<haystack>``, where
``data_dir`` is the run's ``parquet/mcp_memory`` folder) and ``{npm_servers}`` (the folder the
set-up's ``npm ci`` installed the npm servers into).

Failures: a server that dies, hangs past ``timeout_s`` or returns a tool error fails the unit with
the server's message; the client is closed and the next question starts a fresh server, which
reads the same memory file. Ingestion restarted from its first session empties the file first.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from pipeline.agentic.agent_memory import AGENT_SESSION_TEMPLATE, op_units, session_messages
from pipeline.agentic.loop import AgentLoopError, LoopSettings, Tool, ToolResult, run_tool_loop
from pipeline.agentic.mcp.spec import DATA_SUBDIR, McpCallFailed, ServerSpec, data_file, safe_name
from pipeline.config.extras import missing_extra
from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult, turn_unit_text
from pipeline.memory.context import ORDER_RANK, format_date, ranked_result
from pipeline.memory.params import MemoryConfigError, ParamsInput, SystemParams, parse_params
from pipeline.store.corpus import HaystackSession

if TYPE_CHECKING:
    from pipeline.agentic.mcp.client import McpClient

KIND = "mcp"
KIND_ITEM = "mcp_item"  # MemoryUnit.kind of an item sent to the ingest tool (key = unit_id)
NPM_SERVERS = Path(__file__).resolve().parent / "npm" / "node_modules"


MCP_AGENT_PROMPT = """You are the long-term memory of a conversational assistant. You read one \
conversation session at a time and store what is worth remembering with the memory tools you are \
given, so that questions about the conversations can be answered later from the memory alone. \
Store facts about every person (events, plans, preferences, possessions, relationships), with \
their dates (resolve "yesterday", "last week" against the session date). When the session is \
stored, reply with the single word DONE."""

_PLACEHOLDER = re.compile(r"^\{([a-z_]+)\}$")


class McpMemoryParams(SystemParams):
    command: list[str] | None = None  # stdio server argv (placeholders: {python} {data_file} {npm_servers})
    url: str | None = None  # or a streamable-HTTP server
    env: dict[str, str] = Field(default_factory=dict)
    data_dir: str | None = None  # default: the run's parquet/mcp_memory
    data_suffix: str = ".json"
    ingest: Literal["turn", "session", "agent"] = "turn"
    ingest_tool: str | None = None
    ingest_args: dict[str, Any] = Field(default_factory=dict)
    search_tool: str
    search_args: dict[str, Any] = Field(default_factory=lambda: {"query": "{query}"})
    results: Literal["lines", "knowledge_graph"] = "lines"
    top_k: int = Field(default=10, gt=0)
    token_budget: int | None = Field(default=8_000, gt=0)
    timeout_s: float = Field(default=30.0, gt=0)
    # ingest: agent
    model: str | None = None
    max_steps: int = Field(default=30, ge=1)
    max_tokens: int = Field(default=512, gt=0)
    max_tool_errors: int = Field(default=3, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _installed(cls, data: Any) -> Any:
        """The MCP SDK (extra membench[mcp]) and, when the command names them, the npm servers: checked
        at config load, one line each, instead of a failed start on every question."""
        problem = missing_sdk() or (npm_problem() if "{npm_servers}" in json.dumps(data, default=str) else None)
        if problem:
            raise ValueError(problem)
        return data

    @model_validator(mode="after")
    def _server_and_tools(self) -> McpMemoryParams:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of 'command' (stdio server) or 'url'")
        if self.ingest != "agent" and not self.ingest_tool:
            raise ValueError(f"ingest {self.ingest!r} needs 'ingest_tool' (and 'ingest_args')")
        return self


def missing_sdk() -> str | None:
    """The config error when the MCP SDK is not installed, else None."""
    return None if importlib.util.find_spec("mcp") is not None else missing_extra(KIND, "mcp==2.3.0", "mcp")


def npm_problem() -> str | None:
    """The config error when a command names ``{npm_servers}`` and they are not installed, else None."""
    if NPM_SERVERS.is_dir():
        return None
    return (
        f"memory system kind {KIND!r}: the command names {{npm_servers}}, which are not installed in {NPM_SERVERS}: "
        f"run `npm ci --prefix {NPM_SERVERS.parent}` (the set-up's --extras mcp does it in a clone)"
    )


def render(template: Any, values: Mapping[str, Any]) -> Any:
    """``template`` with ``{name}`` placeholders filled; a string that is one placeholder keeps the
    value's type (``"{k}"`` -> 10)."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.match(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]
        return template.format_map(dict(values))
    if isinstance(template, Mapping):
        return {k: render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values) for v in template]
    return template


def parse_results(text: str, form: str) -> list[tuple[str | None, str]]:
    """(key or None, text) per result of a search reply."""
    if form == "knowledge_graph":
        try:
            graph = json.loads(text)
        except ValueError:
            raise McpCallFailed(f"search reply is not a knowledge graph (JSON): {text[:200]!r}") from None
        entities = graph.get("entities", []) if isinstance(graph, dict) else []
        return [(str(e.get("name")), "; ".join(map(str, e.get("observations") or []))) for e in entities]
    out: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        line = line.strip()
        match = re.match(r"^\[([^\]]+)\]\s*(.*)$", line)
        if match:
            out.append((match.group(1), match.group(2)))
        elif line:
            out.append((None, line))
    return out


class McpMemory:
    """One (system, haystack) memory held by an MCP server."""

    params_model = McpMemoryParams
    version = 1
    kind = KIND
    uses_encoder = False
    # a checkpoint per session: a resumed ingestion re-sends only the interrupted session, which servers
    # that keep items by key (ours, the npm one's entity names) store once
    checkpoint_every = 1

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        self.llm = deps.llm
        if self.params.ingest == "agent" and self.llm is None:
            raise MemoryConfigError(f"memory kind {KIND!r} with ingest: agent needs an LLM (`llm:` block)")
        self.data_root = Path(self.params.data_dir or deps.data_dir or DATA_SUBDIR)
        blob = json.dumps(self.params.model_dump(mode="json"), sort_keys=True)
        self.key = hashlib.sha256(blob.encode()).hexdigest()[:12]
        self.items: dict[str, MemoryUnit] = {}  # ingested key -> its unit (maps search results back)
        self.haystack_id: str | None = None
        self.client: McpClient | None = None
        self.restored = False
        self.first_session = True  # the next ingest_session is this object's first

    # ---- the server ---------------------------------------------------------------------------
    def _file(self) -> Path:
        assert self.haystack_id is not None
        return data_file(self.data_root, self.key, self.haystack_id, self.params.data_suffix)

    def _spec(self) -> ServerSpec:
        values = {"python": sys.executable, "data_file": str(self._file()), "npm_servers": str(NPM_SERVERS)}
        command = [render(c, values) for c in self.params.command or ()]
        env = {k: render(v, values) for k, v in self.params.env.items()}
        return ServerSpec(command=command, env=env or None, url=self.params.url)

    def _client(self) -> McpClient:
        from pipeline.agentic.mcp.client import McpClient  # the SDK is imported only when a server starts

        if self.client is None or self.client.closed:
            self._file().parent.mkdir(parents=True, exist_ok=True)
            self.client = McpClient(self._spec(), self.params.timeout_s)
            weakref.finalize(self, self.client.close)
        return self.client

    def close(self) -> None:
        """Stop the server now (a run leaves it to the finalizer; a check that builds memories of its
        own, pipeline/memory/isolation.py, stops them before it removes their folder)."""
        if self.client is not None:
            self.client.close()

    # ---- ingestion ----------------------------------------------------------------------------
    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        first = self.first_session
        self.haystack_id = self.haystack_id or haystack_id
        self.first_session = False
        if first and not self.restored:  # ingestion starts over: the server's memory file starts empty
            self._file().unlink(missing_ok=True)
        if self.params.url is None:  # the memory file is ours: keep it as it was before this session
            self._before_session(session.session.session_key, resumed=first and self.restored)
        if not session.turns:
            return []
        if self.params.ingest == "agent":
            return self._agent_session(haystack_id, session)
        date = session.session.datetime_raw or format_date(session.session.datetime)
        if self.params.ingest == "session":
            text = AGENT_SESSION_TEMPLATE.format(
                date=date, transcript="\n".join(turn_unit_text(t) for t in session.turns)
            )
            items = [(session.session.session_key, text, "", tuple(t.turn_id for t in session.turns))]
        else:
            items = [(t.turn_id, turn_unit_text(t), t.speaker, (t.turn_id,)) for t in session.turns]
        added = []
        for key, text, speaker, turn_ids in items:
            values = {"key": key, "text": text, "speaker": speaker, "date": date,
                      "session": session.session.session_key, "haystack": haystack_id}  # fmt: skip
            assert self.params.ingest_tool is not None
            self._client().call_tool(self.params.ingest_tool, render(self.params.ingest_args, values))
            unit = MemoryUnit(key, haystack_id, session.session.session_key, session.position, turn_ids, text,
                              session.session.datetime, "item", KIND_ITEM)  # fmt: skip
            self.items[key] = unit
            added.append(unit)
        return added

    def _snapshot(self, session_key: str) -> Path:
        file = self._file()
        return file.with_name(f"{file.name}.before.{safe_name(session_key)}")

    def _before_session(self, session_key: str, resumed: bool) -> None:
        """Snapshot the server's memory file as it is before this session (tagged with the session).

        Why: the ingestion checkpoint is written after a session, the server writes its file during
        it. When a resumed ingestion starts at the session an interrupted run had begun (its snapshot
        is there), the file is put back as it was before that session, so the session's tool calls are
        applied once even by a server that stores a resent item again. A snapshot of an earlier
        session means the run stopped between sessions: the file already matches the checkpoint.
        """
        file, snap = self._file(), self._snapshot(session_key)
        if resumed and snap.exists():
            if self.client is not None:  # a server reads its file at start: none may be running
                self.client.close()
            blob = snap.read_bytes()
            if blob[:1] == b"1":
                _write_atomic(file, blob[1:])
            else:
                file.unlink(missing_ok=True)
        _write_atomic(snap, b"1" + file.read_bytes() if file.exists() else b"0")
        for old in file.parent.glob(f"{file.name}.before.*"):
            if old != snap:
                old.unlink(missing_ok=True)

    def _agent_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        client = self._client()
        tools = [_forward(client, t.name, t.description, t.input_schema) for t in client.list_tools()]
        messages = session_messages(session, MCP_AGENT_PROMPT)
        settings = LoopSettings(self.params.max_steps, self.params.max_tool_errors, self.params.model,
                                0.0, self.params.max_tokens)  # fmt: skip
        try:
            result = run_tool_loop(self.llm, messages, tools, settings)  # type: ignore[arg-type]
        except AgentLoopError as exc:
            raise AgentLoopError(f"MCP memory agent: {exc}") from exc
        return op_units(haystack_id, session, result)

    def restore(self, units: list[MemoryUnit]) -> None:
        """The server keeps the memory in its file; here only the keys that map results back."""
        self.restored = True
        for u in units:
            self.haystack_id = self.haystack_id or u.haystack_id
            if u.kind == KIND_ITEM:
                self.items[u.unit_id] = u

    # ---- retrieval ----------------------------------------------------------------------------
    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        self.haystack_id = self.haystack_id or question.haystack_id
        args = render(self.params.search_args, {"query": question.question, "k": self.params.top_k})
        reply = self._client().call_tool(self.params.search_tool, args)
        hits: list[tuple[MemoryUnit, float]] = []
        seen: set[str] = set()
        for i, (key, text) in enumerate(parse_results(reply, self.params.results)[: self.params.top_k]):
            known = self.items.get(key) if key else None
            unit_id = key if key and key not in seen else f"result{i}"
            seen.add(unit_id)
            unit = MemoryUnit(unit_id, question.haystack_id, known.session_key if known else "",
                              known.session_position if known else -1, known.turn_ids if known else (), text,
                              known.timestamp if known else None, "result", KIND_ITEM)  # fmt: skip
            hits.append((unit, 1.0 / (i + 1)))
        notes = {"server": self._spec().describe(), "search_tool": self.params.search_tool, "results": len(hits)}
        return ranked_result(hits, self.params.token_budget, ORDER_RANK, {}, notes)


def _write_atomic(path: Path, blob: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(blob)
    os.replace(tmp, path)


def _forward(client: McpClient, name: str, description: str, schema: Mapping[str, Any]) -> Tool:
    """A loop tool that forwards the agent's call to the server (a server tool error fails the call
    for the agent, which is told; a dead or hung server fails the session)."""

    def run(arguments: Mapping[str, Any]) -> ToolResult:
        return ToolResult(client.call_tool(name, arguments), {})

    return Tool(name, description, dict(schema), run)
