"""The ``mem0`` kind: the real mem0ai library, its LLM and embedding calls through membench's proxy.

The fake OpenAI server answers mem0's extraction prompt with scripted facts (matched on the
session's text, which mem0 puts in its prompt). What is asserted: what mem0 stored (the FAISS
store's payloads carry our session keys), what it retrieves (session keys mapped back), the
per-phase usage, 0 upstream calls on a rerun, resumption after a crash mid-session (the sessions
already ingested are not sent again, the store ends with the same memories and no duplicate),
a rebuilt store when the live state cannot be trusted, a product exception as a failed unit
with the product's message, and the missing-library config error.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.config.model import ComponentConfig
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.checkpoint import load
from pipeline.memory.ingest import ingest_haystack
from pipeline.memory.params import MemoryConfigError
from pipeline.memory.systems import SystemSpec
from pipeline.metrics.retrieval import PROTOCOL_EVIDENCE, Gold
from pipeline.products import base as product_base
from pipeline.products.base import KIND_PRODUCT_SESSION
from pipeline.products.mem0_memory import Mem0Memory, Mem0Params
from pipeline.report.retrieval_table import metric_rows
from tests.support.memory import DATASET, HAYSTACK, build_haystack, encoder, question
from tests.support.products import check_toy_stages, kill_during_session, missing_library_message, yaml_config
from tests.support.products_worker import run as run_worker

FACTS = {
    "golden retriever": ["Alice adopted a golden retriever puppy named Biscuit", "Bob trains for the Boston marathon"],
    "Lisbon": ["Alice spent a week in Lisbon, Portugal"],
    "cello": ["Alice takes cello lessons on Tuesday evenings"],
}


def _reply(facts: list[str]) -> str:
    return json.dumps({"memory": [{"id": str(i), "text": f} for i, f in enumerate(facts)]})


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply='{"memory": []}') as srv:
        # latest session first: mem0's prompt also quotes the previous sessions' messages
        for match, facts in reversed(FACTS.items()):
            srv.add_rule(match, _reply(facts))
        yield srv


def _deps(server: FakeOpenAIServer, enc: Encoder, tmp: Path) -> MemoryDeps:
    llm = OpenAIChatClient(
        base_url=server.base_url, model="fake-mem0", cache_dir=str(tmp / "llm"), max_retries=0, timeout_s=10
    )
    return MemoryDeps(enc, llm=llm, state_dir=tmp / "results")


def _spec() -> SystemSpec:
    return SystemSpec.from_class(ComponentConfig(name="mem0", kind="mem0"), Mem0Memory, "hash-mem0", None)


def _ingest(deps: MemoryDeps, tmp: Path) -> object:
    return ingest_haystack(_spec(), lambda: Mem0Memory({}, deps), HAYSTACK, build_haystack(), tmp / "ck.parquet")


def _stored(tmp: Path) -> list[tuple[str, str]]:
    """(session_key, text) of every memory in mem0's FAISS docstore, sorted."""
    docs = next((tmp / "results" / "products").glob("mem0-*/*/live/faiss/membench.json"))
    data = json.loads(docs.read_text())
    store = data[0] if isinstance(data, list) else data.get("docstore", data)
    return sorted((p["session_key"], p["data"]) for p in store.values())


def _all_facts() -> list[tuple[str, str]]:
    keys = {"golden retriever": "s0", "Lisbon": "s1", "cello": "s2"}
    return sorted((keys[m], f) for m, facts in FACTS.items() for f in facts)


def test_ingest_store_retrieve_and_usage(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    outcome = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert outcome.error is None and outcome.sessions_completed == 3
    assert server.request_count == 3  # one extraction call per session
    assert "golden retriever" in server.requests[0]["messages"][-1]["content"]  # mem0's own prompt, our turns
    assert _stored(tmp_path) == _all_facts()
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    markers = [json.loads(u.text) for u in ck.units if u.kind == KIND_PRODUCT_SESSION]
    assert [m["upstream_llm_calls"] for m in markers] == [1, 1, 1]
    assert all(m["embed_calls"] >= 1 and m["prompt_tokens"] > 0 for m in markers)
    assert sorted(u.text for u in ck.units if u.kind == "note") == sorted(f for _, f in _all_facts())

    memory = Mem0Memory({}, _deps(server, enc, tmp_path))
    memory.restore(ck.units)
    result = memory.retrieve(question("Where did Alice travel?"))
    assert result.units[0].text == "Alice spent a week in Lisbon, Portugal"
    assert result.units[0].session_key == "s1" and result.units[0].turn_ids == ()
    assert result.notes["source_ids"] == "session"
    assert result.notes["search_usage"]["llm_calls"] == 0 and result.notes["search_usage"]["embed_calls"] == 1
    assert result.notes["state"] == "trusted"
    assert "Lisbon" in result.context
    import mem0.memory.main
    import mem0.memory.telemetry

    assert mem0.memory.telemetry.MEM0_TELEMETRY is False and mem0.memory.main.MEM0_TELEMETRY is False


def test_rerun_makes_no_upstream_call(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    first = _stored(tmp_path)
    (tmp_path / "ck.parquet").unlink()  # forget the checkpoint: everything is ingested again
    server.reset_counts()
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    assert server.request_count == 0  # every extraction prompt answered by membench's cache
    assert _stored(tmp_path) == first


def test_resume_after_crash_mid_session(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    """Session 2 fails after session 1's memories are committed; a later run resumes at 2 only."""
    server.rules[1].faults.append(Fault.server_error(500))  # the Lisbon session's extraction fails once
    failed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert failed.error is not None and "LLM extraction failed" in failed.error and "HTTP 500" in failed.error
    assert failed.sessions_completed == 1
    # simulate a kill -9 that left the live store dirty with a half-written memory
    live = next((tmp_path / "results" / "products").glob("mem0-*/*/live"))
    shutil.rmtree(live / "faiss")
    server.reset_counts()
    resumed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert resumed.error is None and resumed.sessions_completed == 3 and resumed.resumed_from == 1
    assert server.request_count == 2  # sessions 2 and 3 only: session 1 was not sent again
    assert _stored(tmp_path) == _all_facts()  # same memories as an uninterrupted run, none twice


def test_kill_9_mid_session_then_rerun(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """A child process ingests; it is SIGKILLed while session 3's extraction call is in flight."""
    server.rules[0].faults.append(Fault.hang(120))  # the cello session (the last) hangs once
    kill_during_session(server, tmp_path, "mem0", requests=3)
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None and ck.state.sessions_completed == 2
    server.reset_counts()
    outcome = run_worker(server.base_url, tmp_path)
    assert outcome is None
    assert server.request_count == 1  # only the killed session was sent again
    assert _stored(tmp_path) == _all_facts()  # nothing lost, nothing twice


def test_untrusted_state_without_snapshot_is_rebuilt(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    root = next((tmp_path / "results" / "products").glob("mem0-*/*"))
    shutil.rmtree(root / "snap")
    (root / "STATE").write_text('{"k": 3, "clean": false}')
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    server.reset_counts()
    memory = Mem0Memory({}, _deps(server, enc, tmp_path))
    memory.restore(ck.units)
    assert server.request_count == 0  # rebuilt from the checkpoint's memories, no extraction call
    assert _stored(tmp_path) == _all_facts()
    assert memory.retrieve(question("cello lessons")).notes["state"] == "rebuilt"


def test_missing_library_is_one_config_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = product_base.importlib.util.find_spec
    monkeypatch.setattr(product_base.importlib.util, "find_spec", lambda m: None if m == "mem0" else real(m))
    expected = r"kind 'mem0' needs the extra membench\[mem0\] \(package mem0ai==2.2.1, module 'mem0'\)"
    with pytest.raises(ValueError, match=expected + r".*run `bash scripts/setup.sh --extras mem0`"):
        Mem0Params()


def test_needs_an_llm(enc: Encoder, tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match=r"needs an `llm:` block"):
        Mem0Memory({}, MemoryDeps(enc, llm=None, state_dir=tmp_path))


def _config(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    return yaml_config(tmp_path, server, {"name": "mem0-top3", "kind": "mem0", "params": {"top_k": 3}}, "fake-mem0")


def test_yaml_kind_through_the_ingestion_and_retrieval_stages(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path
) -> None:
    check_toy_stages(_config(tmp_path, server), enc)


def test_yaml_missing_library_fails_at_config_load(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = missing_library_message(_config(tmp_path, server), "mem0", monkeypatch)
    assert "memory_systems[0] (name: mem0-top3)" in message
    assert "kind 'mem0' needs the extra membench[mem0] (package mem0ai==2.2.1" in message


@pytest.mark.parametrize(("source_ids", "turn_outcome"), [("session", "excluded_no_source_ids"), (None, "scored")])
def test_turn_level_is_not_scored_for_session_only_products(source_ids: str | None, turn_outcome: str) -> None:
    """A product that maps items to sessions only gets session metrics, and no turn-level zero."""
    notes = json.dumps({"source_ids": source_ids} if source_ids else {})
    units = [{"rank": 1, "session_key": "s1", "turn_ids": []}, {"rank": 2, "session_key": "s0", "turn_ids": []}]
    retrieval = {
        "partition_key": "toy__q1", "question_id": "q1", "system": "mem0", "system_kind": "mem0", "status": "ok",
        "units": units, "trimmed_units": 0, "notes": notes, "context_tokens": 10, "retrieval_latency_s": 0.01,
    }  # fmt: skip
    gold = Gold(turns=frozenset({"s1:0"}), sessions=frozenset({"s1"}))
    rows = {r["level"]: r for r in metric_rows(retrieval, None, gold, PROTOCOL_EVIDENCE, DATASET)}
    assert rows["turn"]["outcome"] == turn_outcome
    assert rows["session"]["outcome"] == "scored" and rows["session"]["recall_all_at_1"] == 1.0
