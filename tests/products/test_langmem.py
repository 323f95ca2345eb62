"""The ``langmem`` kind: the real langmem library (memory store manager, trustcall tool calls) on a
LangGraph SQLite store, its LLM and embedding calls through membench's proxy.

The fake OpenAI server answers LangMem's extraction prompt with scripted tool calls (``Memory`` to
insert, ``PatchDoc`` to rewrite an existing memory), matched on the session's text, which LangMem
puts in its prompt. What is asserted: what LangMem stored (read from the SQLite file) and which
session wrote each memory, what it retrieves (session keys mapped back, the last writer of an
updated memory), per-phase usage, 0 upstream calls on a rerun, resumption after a kill -9 in the
middle of a session (sessions already ingested not sent again, the store equal to an
uninterrupted run), a rebuilt store when the live state cannot be trusted, a product exception
as a failed unit with the product's message, and the missing-library config error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.config.model import ComponentConfig
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server, tool_call
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.checkpoint import load
from pipeline.memory.ingest import IngestOutcome, ingest_haystack
from pipeline.memory.systems import SystemSpec
from pipeline.products import base as product_base
from pipeline.products.base import KIND_PRODUCT_SESSION
from pipeline.products.langmem_memory import TRACING_ENV, LangmemMemory, LangmemParams
from tests.support.memory import HAYSTACK, build_haystack, encoder, question
from tests.support.products import check_toy_stages, kill_during_session, missing_library_message, yaml_config
from tests.support.products_worker import run as run_worker

FACTS = {
    "golden retriever": ["Alice adopted a golden retriever puppy named Biscuit", "Bob trains for the Boston marathon"],
    "Lisbon": ["Alice spent a week in Lisbon, Portugal"],
    "cello": ["Alice takes cello lessons on Tuesday evenings"],
}
SESSION_OF = {"golden retriever": "s0", "Lisbon": "s1", "cello": "s2"}


def _inserts(facts: list[str]) -> dict[str, Any]:
    return {"tool_calls": [tool_call("Memory", {"content": f}) for f in facts]}


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="No memories to record.") as srv:
        for match, facts in FACTS.items():
            srv.add_script(match, [_inserts(facts)], repeat_last=True)
        yield srv


def _deps(server: FakeOpenAIServer, enc: Encoder, tmp: Path) -> MemoryDeps:
    llm = OpenAIChatClient(
        base_url=server.base_url, model="fake-lm", cache_dir=str(tmp / "llm"), max_retries=0, timeout_s=10
    )
    return MemoryDeps(enc, llm=llm, state_dir=tmp / "results")


def _ingest(deps: MemoryDeps, tmp: Path) -> IngestOutcome:
    spec = SystemSpec.from_class(ComponentConfig(name="langmem", kind="langmem"), LangmemMemory, "hash-lm", None)
    return ingest_haystack(spec, lambda: LangmemMemory({}, deps), HAYSTACK, build_haystack(), tmp / "ck.parquet")


def _stored(tmp: Path) -> list[tuple[str, str, list[str]]]:
    """(memory key, text, sessions that wrote it) of every memory in LangMem's SQLite store, sorted."""
    db = next((tmp / "results" / "products").glob("langmem-*/*/live/store.sqlite"))
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT prefix, key, value FROM store").fetchall()
    memories = {k: json.loads(v) for p, k, v in rows if p.startswith("memories.")}
    sources = {k: json.loads(v) for p, k, v in rows if p.startswith("membench_sources.")}
    return sorted((k, v["content"]["content"], [s for s, _ in sources[k]["sessions"]]) for k, v in memories.items())


def _texts(stored: list[tuple[str, str, list[str]]]) -> list[tuple[str, list[str]]]:
    return sorted((text, sessions) for _, text, sessions in stored)


def _all_facts() -> list[tuple[str, list[str]]]:
    return sorted((f, [SESSION_OF[m]]) for m, facts in FACTS.items() for f in facts)


def test_ingest_store_retrieve_and_usage(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    outcome = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert outcome.error is None and outcome.sessions_completed == 3
    assert server.request_count == 3  # one extraction call per session
    first = server.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["Memory"]  # LangMem's own tool, via the proxy
    assert "golden retriever" in first["messages"][-1]["content"]  # LangMem's prompt, our turns
    later = server.requests[2]["messages"][0]["content"]
    assert "Alice adopted a golden retriever" in later  # existing memories shown back to LangMem
    assert _texts(_stored(tmp_path)) == _all_facts()
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    markers = [json.loads(u.text) for u in ck.units if u.kind == KIND_PRODUCT_SESSION]
    assert [m["upstream_llm_calls"] for m in markers] == [1, 1, 1]
    assert [m["memories"] for m in markers] == [2, 1, 1]
    assert all(m["embed_calls"] >= 1 and m["prompt_tokens"] > 0 and m["completion_tokens"] > 0 for m in markers)
    assert sorted(u.text for u in ck.units if u.kind == "note") == sorted(f for f, _ in _all_facts())

    memory = LangmemMemory({}, _deps(server, enc, tmp_path))
    memory.restore(ck.units)
    result = memory.retrieve(question("Which city in Portugal did Alice visit?"))
    memory.close()
    assert len(result.units) == 4  # every memory, ranked by LangGraph's vector index
    assert result.units[0].text == "Alice spent a week in Lisbon, Portugal"
    assert result.units[0].session_key == "s1" and result.units[0].turn_ids == ()
    assert result.notes["source_ids"] == "session" and result.notes["product"] == "langmem==0.0.30"
    assert result.notes["search_usage"]["llm_calls"] == 0 and result.notes["search_usage"]["embed_calls"] == 1
    assert result.notes["state"] == "trusted"
    assert "Lisbon" in result.context
    assert all(os.environ[name] == "false" for name in TRACING_ENV)


def test_an_updated_memory_maps_to_the_session_that_last_wrote_it(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path
) -> None:
    """Session s2's extraction rewrites s0's memory with PatchDoc (the id LangMem showed it)."""
    memory = LangmemMemory({"top_k": 1}, _deps(server, enc, tmp_path))
    sessions = build_haystack()
    for s in sessions[:2]:
        memory.ingest_session(HAYSTACK, s)
    shown = re.findall(
        r"<instance id=(\w+) schema_type=\"Memory\">\n\{'content': '([^']*)'",
        server.requests[1]["messages"][0]["content"],
    )
    puppy = next(doc_id for doc_id, text in shown if "golden retriever" in text)
    patch = {"op": "replace", "path": "/content", "value": "Alice's puppy Biscuit comes to her cello lessons"}
    server.rules[2].script[0] = {
        "tool_calls": [tool_call("PatchDoc", {"json_doc_id": puppy, "planned_edits": "add", "patches": [patch]})]
    }
    units = memory.ingest_session(HAYSTACK, sessions[2])
    assert [u.text for u in units if u.kind == "note"] == ["Alice's puppy Biscuit comes to her cello lessons"]
    texts = _texts(_stored(tmp_path))
    assert ("Alice's puppy Biscuit comes to her cello lessons", ["s0", "s2"]) in texts
    assert not any("golden retriever puppy" in t for t, _ in texts)  # rewritten, not duplicated
    result = memory.retrieve(question("Who comes to the cello lessons?"))
    memory.close()
    assert [(u.text, u.session_key) for u in result.units] == [(patch["value"], "s2")]
    assert result.notes["memories_written_by_several_sessions"] == 1


def test_rerun_makes_no_upstream_call(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    first = _stored(tmp_path)
    (tmp_path / "ck.parquet").unlink()  # forget the checkpoint: everything is ingested again
    server.reset_counts()
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    assert server.request_count == 0  # same prompts (seeded ids): every call answered by membench's cache
    assert _stored(tmp_path) == first  # same memory keys too


def test_a_swallowed_failed_call_fails_the_session(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    """Session s1's extraction fails upstream. LangMem (trustcall) swallows the error: it retries with
    "Fix the validation error ..." (answered here with the right memory) and goes on. membench sees the
    failed call in the session's usage: the unit fails with the error, s0 is kept, s1 is ingested again."""
    server.rules[1].faults.append(Fault.server_error(500))
    server.add_script("Fix the validation error", [_inserts(FACTS["Lisbon"])], repeat_last=True)
    failed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert failed.error is not None and failed.sessions_completed == 1
    assert "ingestion stopped at session 1" in failed.error and "ProductCallFailed" in failed.error
    assert "langmem: 1 LLM call(s) failed" in failed.error and "Last error: HTTP 500" in failed.error
    assert "upstream LLM call failed: HTTP 500" in server.requests[-1]["messages"][-1]["content"]  # trustcall's retry
    server.reset_counts()
    resumed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert resumed.error is None and resumed.sessions_completed == 3 and resumed.resumed_from == 1
    assert server.request_count == 2  # sessions s1 and s2 only
    assert _texts(_stored(tmp_path)) == _all_facts()


def test_product_exception_is_a_failed_unit(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    """An endpoint that writes tool calls as text (as llama-cpp-python's server does without a tool-calling
    chat format): from session s1 on, LangMem requires a tool call; each reply fails (membench never caches
    it), trustcall retries until LangGraph's recursion limit and raises. The unit fails with that message."""
    server.rules[1].script.clear()  # the Lisbon session gets a text reply to tool_choice="required"
    server.rules[1].reply = '{"name": "Memory", "arguments": {"content": "Alice went to Lisbon"}}'
    failed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert failed.error is not None and failed.sessions_completed == 1
    assert "ingestion stopped at session 1" in failed.error and "GraphRecursionError: Recursion limit" in failed.error
    assert server.requests[1]["tool_choice"] == "required"
    assert _texts(_stored(tmp_path)) == sorted((f, ["s0"]) for f in FACTS["golden retriever"])  # s0 kept


def test_kill_9_mid_session_then_rerun(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    """A child process ingests; it is SIGKILLed while session 3's extraction call is in flight."""
    reference = tmp_path / "uninterrupted"
    assert _ingest(_deps(server, enc, reference), reference).error is None
    work = tmp_path / "killed"
    server.rules[2].faults.append(Fault.hang(120))  # the cello session (the last) hangs once
    server.reset_counts()
    kill_during_session(server, work, "langmem", requests=3)
    ck = load(work / "ck.parquet")
    assert ck is not None and ck.state.sessions_completed == 2
    server.reset_counts()
    assert run_worker(server.base_url, work, "langmem") is None
    assert server.request_count == 1  # only the killed session was sent again
    assert _stored(work) == _stored(reference)  # same keys, texts and sources: nothing lost, nothing twice


def test_untrusted_state_without_snapshot_is_rebuilt(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    before = _stored(tmp_path)
    root = next((tmp_path / "results" / "products").glob("langmem-*/*"))
    shutil.rmtree(root / "snap")
    (root / "STATE").write_text('{"k": 3, "clean": false}')
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    server.reset_counts()
    memory = LangmemMemory({}, _deps(server, enc, tmp_path))
    memory.restore(ck.units)
    assert server.request_count == 0  # rebuilt from the checkpoint's memories, no extraction call
    assert _stored(tmp_path) == before
    assert memory.retrieve(question("cello lessons")).notes["state"] == "rebuilt"
    memory.close()


def test_missing_library_is_one_config_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = product_base.importlib.util.find_spec
    monkeypatch.setattr(product_base.importlib.util, "find_spec", lambda m: None if m == "langmem" else real(m))
    expected = r"kind 'langmem' needs the extra membench\[langmem\] \(package langmem==0.0.30"
    with pytest.raises(ValueError, match=expected):
        LangmemParams()


def _written(facts: list[str], form: str) -> dict[str, Any]:
    """LangMem's insert calls written as the model's text, as llama-cpp-python's server returns them
    (no tool-calling chat format): Qwen's <tool_call> blocks, one bare JSON object, or one fenced."""
    calls = [json.dumps({"name": "Memory", "arguments": {"content": f}}) for f in facts]
    if form == "tagged":
        return {"content": "\n".join(f"<tool_call>\n{c}\n</tool_call>" for c in calls)}
    return {"content": calls[0] if form == "bare" else f"```json\n{calls[0]}\n```"}


@pytest.fixture
def text_server() -> Iterator[FakeOpenAIServer]:
    """Answers LangMem's extraction with its calls written as text (s0 tagged, s1 bare, s2 fenced)."""
    with running_fake_server(default_reply="No memories to record.") as srv:
        for (match, facts), form in zip(FACTS.items(), ("tagged", "bare", "fenced"), strict=True):
            srv.add_script(match, [_written(facts, form)], repeat_last=True)
        yield srv


def test_text_tool_calls_store_and_retrieve_through_the_proxy(
    text_server: FakeOpenAIServer, enc: Encoder, tmp_path: Path
) -> None:
    """``text_tool_calls: true``: the proxy hands LangMem the calls the endpoint wrote as text, also where
    LangMem requires a call (tool_choice "required" from s1 on); what it stores and retrieves is what the
    structured calls give, and a rerun is answered from membench's cache."""
    params = {"text_tool_calls": True}
    spec = SystemSpec.from_class(ComponentConfig(name="langmem", kind="langmem"), LangmemMemory, "hash-lm", None)
    deps = _deps(text_server, enc, tmp_path)
    outcome = ingest_haystack(spec, lambda: LangmemMemory(params, deps), HAYSTACK, build_haystack(), tmp_path / "ck")
    assert outcome.error is None and outcome.sessions_completed == 3
    assert text_server.request_count == 3  # one extraction call per session, no retry
    assert [r.get("tool_choice") for r in text_server.requests][1:] == ["required", "required"]
    assert _texts(_stored(tmp_path)) == _all_facts()
    ck = load(tmp_path / "ck")
    assert ck is not None
    memory = LangmemMemory(params, _deps(text_server, enc, tmp_path))
    memory.restore(ck.units)
    result = memory.retrieve(question("Which city in Portugal did Alice visit?"))
    memory.close()
    assert (result.units[0].text, result.units[0].session_key) == ("Alice spent a week in Lisbon, Portugal", "s1")
    (tmp_path / "ck").unlink()
    text_server.reset_counts()
    again = ingest_haystack(spec, lambda: LangmemMemory(params, deps), HAYSTACK, build_haystack(), tmp_path / "ck")
    assert again.error is None and text_server.request_count == 0  # the calls were cached as read


def test_yaml_text_tool_calls_through_the_stages(text_server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    entry = {"name": "langmem-text", "kind": "langmem", "params": {"top_k": 3, "text_tool_calls": True}}
    check_toy_stages(yaml_config(tmp_path, text_server, entry, "fake-lm"), enc)


def _config(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    return yaml_config(tmp_path, server, {"name": "langmem-top3", "kind": "langmem", "params": {"top_k": 3}}, "fake-lm")


def test_yaml_kind_through_the_ingestion_and_retrieval_stages(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path
) -> None:
    check_toy_stages(_config(tmp_path, server), enc)


def test_yaml_missing_library_fails_at_config_load(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = missing_library_message(_config(tmp_path, server), "langmem", monkeypatch)
    assert "memory_systems[0] (name: langmem-top3)" in message
    assert "kind 'langmem' needs the extra membench[langmem] (package langmem==0.0.30" in message
