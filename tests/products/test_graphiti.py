"""The ``graphiti`` kind: the real graphiti-core on embedded Kuzu, its LLM and embedding calls through membench.

The fake OpenAI server answers graphiti's own prompts with scripted JSON: entity extraction
(matched on ``<CURRENT MESSAGE>`` + the session's first line, which graphiti puts in its prompt),
fact extraction (``<CURRENT_MESSAGE>`` + the first line), fact deduplication (``<NEW FACT>``) and
fact dating (``<FACT>``). What is asserted: what graphiti stored in its Kuzu file (episodes named by
our session keys, entities, facts with the episodes they came from), what it retrieves (facts mapped
back to sessions), the per-phase usage, 0 upstream calls on a rerun, resumption after a failure
and after ``kill -9`` mid-session (sessions already ingested are not sent again, the graph ends as
an uninterrupted run leaves it), a rebuild without LLM calls when no snapshot can be trusted, a
product exception as a failed unit with graphiti's message, telemetry off, the missing-library line.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kuzu
import pytest
import yaml

from pipeline.config.model import ComponentConfig, load_config
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.checkpoint import load
from pipeline.memory.ingest import IngestOutcome, MemoryRun, ingest_haystack, ingestion_results, units_for
from pipeline.memory.retrieve import retrieval_results
from pipeline.memory.systems import SystemSpec
from pipeline.products import base as product_base
from pipeline.products.base import KIND_PRODUCT_SESSION
from pipeline.products.graphiti_memory import KIND_GRAPH_DELTA, GraphitiMemory, GraphitiParams
from pipeline.run.stage import WorkItem
from pipeline.store.results import ResultStore
from tests.support.kind_worker import kill_9_then_rerun
from tests.support.memory import (
    DATASET,
    HAYSTACK,
    HAYSTACK_2,
    SESSIONS,
    build_haystack,
    encoder,
    question,
    write_toy_dataset,
)
from tests.support.paths import PROJECT_ROOT

# per session (by its first line): entities, then facts (source, target, relation, fact)
SCRIPT: list[tuple[list[str], list[tuple[str, str, str, str]]]] = [
    (
        ["Alice", "Bob", "Biscuit", "Boston marathon"],
        [
            ("Alice", "Biscuit", "ADOPTED", "Alice adopted a golden retriever puppy named Biscuit"),
            ("Bob", "Boston marathon", "TRAINS_FOR", "Bob trains for the Boston marathon every morning"),
        ],
    ),
    (["Alice", "Lisbon"], [("Alice", "Lisbon", "VISITED", "Alice spent a week in Lisbon, Portugal")]),
    (
        ["Alice", "cello lessons"],
        [("Alice", "cello lessons", "TAKES", "Alice takes cello lessons on Tuesday evenings")],
    ),
]
CALLS_PER_SESSION = [4, 4, 4]  # entities + facts + (dedup per fact once facts exist) + one dating call per fact
EXPECTED = {
    "episodes": [("s0",), ("s1",), ("s2",)],
    "entities": sorted([("Alice",), ("Biscuit",), ("Bob",), ("Boston marathon",), ("Lisbon",), ("cello lessons",)]),
    "facts": sorted((f, f"s{i}") for i, (_, facts) in enumerate(SCRIPT) for *_, f in facts),
}


def first_line(i: int) -> str:
    speaker, _, text = SESSIONS[i][2][0]
    return f"{speaker}: {text}"


def _entities(names: list[str]) -> str:
    return json.dumps({"extracted_entities": [{"name": n, "entity_type_id": 0} for n in names]})


def _facts(facts: list[tuple[str, str, str, str]]) -> str:
    keys = ("source_entity_name", "target_entity_name", "relation_type", "fact")
    return json.dumps({"edges": [dict(zip(keys, f, strict=True)) for f in facts]})


def script(srv: FakeOpenAIServer, sessions: range = range(3)) -> None:
    srv.add_rule("<NEW FACT>", json.dumps({"duplicate_facts": [], "contradicted_facts": []}))
    srv.add_rule("<FACT>", json.dumps({"valid_at": None, "invalid_at": None}))
    for i in sessions:
        srv.add_rule(f"<CURRENT MESSAGE>\n{first_line(i)}", _entities(SCRIPT[i][0]))
        srv.add_rule(f"<CURRENT_MESSAGE>\n{first_line(i)}", _facts(SCRIPT[i][1]))


def rule(srv: FakeOpenAIServer, prefix: str, session: int) -> int:
    """Index of the rule answering ``prefix`` (``<CURRENT MESSAGE>`` or ``<CURRENT_MESSAGE>``) for a session."""
    return next(i for i, r in enumerate(srv.rules) if r.match == f"{prefix}\n{first_line(session)}")


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="{}") as srv:  # an unscripted prompt fails graphiti's validation
        script(srv)
        yield srv


def _deps(server: FakeOpenAIServer, enc: Encoder, tmp: Path) -> MemoryDeps:
    llm = OpenAIChatClient(
        base_url=server.base_url, model="fake-mem0", cache_dir=str(tmp / "llm"), max_retries=0, timeout_s=30
    )
    return MemoryDeps(enc, llm=llm, state_dir=tmp / "results")


def _ingest(deps: MemoryDeps, tmp: Path, params: dict[str, Any] | None = None) -> IngestOutcome:
    spec = SystemSpec.from_class(ComponentConfig(name="graphiti", kind="graphiti"), GraphitiMemory, "hash-g", None)
    build = lambda: GraphitiMemory(params or {}, deps)  # noqa: E731
    return ingest_haystack(spec, build, HAYSTACK, build_haystack(), tmp / "ck.parquet")


def _live(tmp: Path) -> Path:
    return next((tmp / "results" / "products").glob("graphiti-*/*/live"))


def stored(tmp: Path) -> dict[str, list[tuple[str, ...]]]:
    """Episodes, entities and facts (with the names of the episodes they came from) in the Kuzu file."""
    conn = kuzu.Connection(kuzu.Database(str(_live(tmp) / "graph.kuzu"), read_only=True))
    names = {str(u): str(n) for n, u in conn.execute("MATCH (e:Episodic) RETURN e.name, e.uuid").get_all()}  # type: ignore[union-attr]
    entities = conn.execute("MATCH (n:Entity) RETURN n.name").get_all()  # type: ignore[union-attr]
    facts = conn.execute("MATCH (e:RelatesToNode_) RETURN e.fact, e.episodes").get_all()  # type: ignore[union-attr]
    conn.close()
    return {
        "episodes": sorted((n,) for n in names.values()),
        "entities": sorted((str(r[0]),) for r in entities),
        "facts": sorted((str(f), *[names.get(str(u), "?") for u in eps]) for f, eps in facts),
    }


@pytest.fixture
def outbound(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every socket connection to a non-loopback address (graphiti, Kuzu, the openai client)."""
    seen: list[object] = []
    real = socket.socket.connect

    def connect(self: socket.socket, address: object) -> None:
        host = address[0] if isinstance(address, tuple) else str(address)
        if not (self.family == socket.AF_UNIX or str(host) in ("127.0.0.1", "::1", "localhost")):
            seen.append(address)
        real(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


def test_ingest_store_retrieve_and_usage(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path, outbound: list[object]
) -> None:
    outcome = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert outcome.error is None and outcome.sessions_completed == 3
    assert server.request_count == sum(CALLS_PER_SESSION)
    assert stored(tmp_path) == EXPECTED
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    markers = [json.loads(u.text) for u in ck.units if u.kind == KIND_PRODUCT_SESSION]
    assert [m["upstream_llm_calls"] for m in markers] == CALLS_PER_SESSION
    assert all(m["embed_calls"] >= 1 and m["prompt_tokens"] > 0 for m in markers)
    notes = sorted((u.session_key, u.text) for u in ck.units if u.kind == "note")
    assert notes == sorted((s, f) for f, s in EXPECTED["facts"])
    assert [u.session_key for u in ck.units if u.kind == KIND_GRAPH_DELTA] == ["s0", "s1", "s2"]

    memory = GraphitiMemory({}, _deps(server, enc, tmp_path))
    memory.restore(ck.units)
    result = memory.retrieve(question("Where did Alice travel?"))
    top = result.units[0]
    assert (top.text, top.session_key, top.turn_ids) == ("Alice spent a week in Lisbon, Portugal", "s1", ())
    assert {u.session_key for u in result.units} <= {"s0", "s1", "s2"}
    assert result.notes["source_ids"] == "session" and result.notes["recipe"] == "edge_hybrid_rrf"
    assert result.notes["search_usage"]["llm_calls"] == 0 and result.notes["search_usage"]["embed_calls"] == 1
    assert result.notes["state"] == "trusted"
    assert "Lisbon" in result.context
    cello = memory.retrieve(question("What instrument is Alice learning?"))
    assert cello.units[0].session_key == "s2"
    assert outbound == []  # nothing reached out: every call went to the proxy and the fake server


def test_json_object_schema_sends_graphitis_schemas_upstream_as_json_object(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path
) -> None:
    """``structured_output: json_object_schema``: graphiti asks json_schema, as by default (no schema pasted
    in its prompt); the proxy sends each schema upstream as json_object + schema (llama-cpp-python's
    grammar-constrained JSON). What graphiti stores and retrieves is unchanged."""
    from graphiti_core.prompts.extract_nodes import ExtractedEntities

    params = {"structured_output": "json_object_schema"}
    outcome = _ingest(_deps(server, enc, tmp_path), tmp_path, params)
    assert outcome.error is None and outcome.sessions_completed == 3
    assert stored(tmp_path) == EXPECTED
    formats = [r["response_format"] for r in server.requests]
    assert len(formats) == sum(CALLS_PER_SESSION) and {f["type"] for f in formats} == {"json_object"}
    titles = {f["schema"]["title"] for f in formats}
    assert titles == {"ExtractedEntities", "ExtractedEdges", "EdgeTimestamps", "EdgeDuplicate"}
    assert next(f["schema"] for f in formats if f["schema"]["title"] == "ExtractedEntities") == (
        ExtractedEntities.model_json_schema()
    )
    prompts = [m["content"] for r in server.requests for m in r["messages"]]
    assert not any("Respond with a JSON object in the following format" in p for p in prompts)  # json_object's paste
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    memory = GraphitiMemory(params, _deps(server, enc, tmp_path))
    memory.restore(ck.units)
    top = memory.retrieve(question("Where did Alice travel?")).units[0]
    assert (top.text, top.session_key) == ("Alice spent a week in Lisbon, Portugal", "s1")


def test_rerun_makes_no_upstream_call(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    (tmp_path / "ck.parquet").unlink()  # forget the checkpoint: every session is ingested again
    server.reset_counts()
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    assert server.request_count == 0  # every graphiti prompt answered by membench's cache
    assert stored(tmp_path) == EXPECTED


def test_product_exception_is_a_failed_unit(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    """Graphiti rejects a reply it cannot validate: the session fails with graphiti's own message."""
    server.rules[rule(server, "<CURRENT_MESSAGE>", 1)].reply = '{"facts": []}'  # not graphiti's schema
    failed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert failed.error is not None and failed.sessions_completed == 1
    assert "ingestion stopped at session 1" in failed.error
    assert "ValidationError" in failed.error and "ExtractedEdges" in failed.error


def test_resume_after_failure_mid_session(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    """Session 2's fact extraction fails upstream; a rerun resumes at session 2 only."""
    server.rules[rule(server, "<CURRENT_MESSAGE>", 1)].faults.append(Fault.server_error(500))
    failed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert failed.error is not None and failed.sessions_completed == 1
    assert "upstream LLM call failed" in failed.error and "HTTP 500" in failed.error
    shutil.rmtree(_live(tmp_path))  # a crash's live store cannot be trusted: the snapshot replaces it
    server.reset_counts()
    resumed = _ingest(_deps(server, enc, tmp_path), tmp_path)
    assert resumed.error is None and resumed.sessions_completed == 3 and resumed.resumed_from == 1
    # sessions 2 and 3 only (session 2's entity reply comes from membench's cache: it was answered before)
    assert server.request_count == sum(CALLS_PER_SESSION[1:]) - 1
    assert stored(tmp_path) == EXPECTED  # nothing lost, nothing twice


def test_kill_9_mid_session_then_rerun(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """A child process ingests; it is SIGKILLed while session 3's entity extraction is in flight."""
    hanging = server.rules[rule(server, "<CURRENT MESSAGE>", 2)]
    hanging.faults.append(Fault.hang(120))
    kill_9_then_rerun(server, hanging, tmp_path, "graphiti", 300)
    assert server.request_count == CALLS_PER_SESSION[2]  # only the killed session was sent again
    assert stored(tmp_path) == EXPECTED


def test_untrusted_state_without_snapshot_is_rebuilt(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    assert _ingest(_deps(server, enc, tmp_path), tmp_path).error is None
    root = _live(tmp_path).parent
    shutil.rmtree(root / "snap")
    (root / "STATE").write_text('{"k": 3, "clean": false}')
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    server.reset_counts()
    memory = GraphitiMemory({}, _deps(server, enc, tmp_path))
    memory.restore(ck.units)
    assert server.request_count == 0  # rebuilt from the checkpoint's graph deltas, no extraction call
    assert stored(tmp_path) == EXPECTED
    result = memory.retrieve(question("Where did Alice travel?"))
    assert result.notes["state"] == "rebuilt"
    assert (result.units[0].text, result.units[0].session_key) == ("Alice spent a week in Lisbon, Portugal", "s1")


def test_telemetry_is_off_outside_pytest() -> None:
    """graphiti disables its telemetry under pytest by itself: check in a plain interpreter."""
    code = (
        "import sys; from pipeline.products.graphiti_memory import _quiet_import; _quiet_import();"
        "from graphiti_core.telemetry import is_telemetry_enabled; import os;"
        "print(is_telemetry_enabled(), 'pytest' in sys.modules, os.environ['GRAPHITI_TELEMETRY_ENABLED'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "GRAPHITI_TELEMETRY_ENABLED"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False", "false"]


def test_missing_library_is_one_config_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = product_base.importlib.util.find_spec
    monkeypatch.setattr(product_base.importlib.util, "find_spec", lambda m: None if m == "kuzu" else real(m))
    expected = r"kind 'graphiti' needs the extra membench\[graphiti\] \(package graphiti-core\[kuzu\]==0.31.2, "
    expected += r"module 'kuzu'\)"
    with pytest.raises(ValueError, match=expected):
        GraphitiParams()


def test_yaml_kind_through_the_ingestion_and_retrieval_stages(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path
) -> None:
    path = tmp_path / "graphiti.yaml"
    config = {
        "results_dir": str(tmp_path / "results"),
        "datasets": [{"name": DATASET, "loader": "locomo", "path": "-"}],
        "memory_systems": [{"name": "graphiti-mmr", "kind": "graphiti", "params": {"recipe": "edge_hybrid_mmr"}}],
        "llm": {"base_url": server.base_url, "model": "fake-graphiti", "max_retries": 0},
    }
    path.write_text(yaml.safe_dump(config))
    load_config.cache_clear()
    cfg = load_config(str(path))
    store = ResultStore(results_dir=cfg.results_dir)
    questions = [question("Which city did Alice visit?", "q1", 0), question("What instrument?", "q2", 1, HAYSTACK_2)]
    write_toy_dataset(store, questions)
    llm = OpenAIChatClient.from_benchmark(cfg)
    bench = resolve_config(cfg)
    run = MemoryRun(store, bench, MemoryDeps(enc, llm=llm, state_dir=cfg.resolved_results_dir()))
    items = [WorkItem(q.partition_key, DATASET, q.question_id, tuple(units_for(bench)(DATASET))) for q in questions]
    ingested = {key: results[0] for key, results in ingestion_results(run, items)}
    assert {k: (r.status, r.payload["sessions_completed"]) for k, r in ingested.items()} == {
        "toy__q1": ("ok", 3),
        "toy__q2": ("ok", 2),
    }
    retrieved = {key: results[0] for key, results in retrieval_results(run, items)}
    top = retrieved["toy__q1"].payload["units"][0]
    assert (top["text"], top["session_key"], top["turn_ids"]) == ("Alice spent a week in Lisbon, Portugal", "s1", [])
    assert {u["session_key"] for u in retrieved["toy__q2"].payload["units"]} <= {"s1", "s2"}  # its own graph only
    notes = json.loads(retrieved["toy__q2"].payload["notes"])
    assert (notes["source_ids"], notes["recipe"]) == ("session", "edge_hybrid_mmr")
