"""Reader kind ``agentic`` over a real ingested memory (rag + MiniLM on the toy haystack), the fake
OpenAI server scripted to call ``search_memory``: answer rows, failures, cache replay, metrics,
SQL views, and the same through a real Dagster run of ingestion -> retrievals -> answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pytest

import pipeline.report  # noqa: F401  (registers the report views, agentic ones included)
from pipeline.agentic.search import MemoryAccess
from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig, LLMConfig, load_config
from pipeline.core.records import CANONICAL_SCHEMAS, EvidenceRow, rows_to_table
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, tool_call
from pipeline.memory.base import RETRIEVALS_PAYLOAD, Encoder, MemoryDeps
from pipeline.memory.checkpoint import checkpoint_path
from pipeline.memory.ingest import MemoryRun, ingestion_results, units_for
from pipeline.memory.retrieve import retrieval_results
from pipeline.metrics.retrieval import EVIDENCE_RECALL_CONTEXT, PROTOCOL_EVIDENCE, Gold
from pipeline.readers.base import ANSWERS_PAYLOAD, ReaderCallFailed, ReaderDeps, ReadInput
from pipeline.readers.run import AnswerRun, build_readers
from pipeline.report.agentic import answer_metric_rows, write_tables
from pipeline.report.html import question_block
from pipeline.report.questions import dataset_questions
from pipeline.run.stage import UnitResult, WorkItem, stage_schema
from pipeline.store.results import ResultStore
from tests.support.dagster import run_stages
from tests.support.memory import DATASET, HAYSTACK, question, write_toy_dataset
from tests.support.memory import encoder as make_encoder

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)

DOG = "What is the name of Alice's dog?"
CELLO = "What musical instrument is Alice learning?"
QUESTIONS = [question(DOG, "q1", 0), question(CELLO, "q2", 1)]
AGENT = ComponentConfig(name="agent", kind="agentic", params={"max_steps": 3, "default_k": 2})


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return make_encoder(Path(tmp_path_factory.mktemp("emb")))


def toy_config(tmp_path: Path, base_url: str) -> BenchmarkConfig:
    return BenchmarkConfig(
        results_dir=str(tmp_path / "results"),
        datasets=(DatasetConfig(name=DATASET, loader="toy", path="-"),),
        memory_systems=(ComponentConfig(name="rag", kind="rag", params={"top_k": 3}),),
        readers=(AGENT,),
        llm=LLMConfig(base_url=base_url, model="fake-judge", api_key_env="NO_SUCH_KEY_ENV"),
    )


def write_rows(store: ResultStore, stage: str, item: WorkItem, results: list[UnitResult]) -> None:
    payload = {"retrievals": RETRIEVALS_PAYLOAD, "answers": ANSWERS_PAYLOAD}[stage]
    key = {"partition_key": item.partition_key, "dataset": item.dataset, "question_id": item.question_id}
    rows = [
        {
            **key,
            "unit": r.unit,
            "unit_hash": r.unit_hash,
            "status": r.status,
            "error": r.error,
            "duration_s": r.duration_s,
            **r.payload,
        }
        for r in results
    ]
    store.write_partition(stage, item.partition_key, pa.Table.from_pylist(rows, schema=stage_schema(payload)))


def ingest_and_retrieve(store: ResultStore, cfg: BenchmarkConfig, enc: Encoder) -> None:
    run = MemoryRun(store, resolve_config(cfg), MemoryDeps(enc))
    items = [
        WorkItem(q.partition_key, DATASET, q.question_id, tuple(units_for(resolve_config(cfg))(DATASET)))
        for q in QUESTIONS
    ]
    for _ in ingestion_results(run, items):
        pass
    by_key = {i.partition_key: i for i in items}
    for key, results in retrieval_results(run, items):
        write_rows(store, "retrievals", by_key[key], results)


def ingested_toy(tmp_path: Path, base_url: str, enc: Encoder) -> tuple[BenchmarkConfig, ResultStore]:
    """The toy dataset ingested into ``rag`` and retrieved (the agentic reader's memory)."""
    cfg = toy_config(tmp_path, base_url)
    store = ResultStore(results_dir=cfg.results_dir)
    write_toy_dataset(store, QUESTIONS)
    ingest_and_retrieve(store, cfg, enc)
    return cfg, store


def answer(store: ResultStore, cfg: BenchmarkConfig, enc: Encoder, llm: OpenAIChatClient) -> dict[str, UnitResult]:
    memory = MemoryAccess(store, resolve_config(cfg), MemoryDeps(enc))
    run = AnswerRun(
        store, resolve_config(cfg), build_readers(resolve_config(cfg), ReaderDeps(encoder=enc, llm=llm, memory=memory))
    )
    items = [WorkItem(q.partition_key, DATASET, q.question_id, tuple(run.units_for(DATASET))) for q in QUESTIONS]
    out = {}
    for key, results in run.compute(items):
        item = next(i for i in items if i.partition_key == key)
        write_rows(store, "answers", item, results)
        [out[key]] = results
    return out


def script_questions(server: FakeOpenAIServer) -> None:
    server.add_script(DOG, [{"tool_calls": [tool_call("search_memory", {"query": "Alice dog name"}, "c1")]},
                            {"tool_calls": [tool_call("search_memory", {"query": "yellow tram", "k": 1}, "c2")]},
                            {"content": "Biscuit"}], final_reply="Biscuit")  # fmt: skip
    server.add_script(CELLO, [{"tool_calls": [tool_call("recall", {"query": "instrument"}, "c9")]}], repeat_last=True)


def test_agentic_answers_search_the_real_memory_and_record_every_step(
    server: FakeOpenAIServer, llm: OpenAIChatClient, enc: Encoder, tmp_path: Path
) -> None:
    cfg, store = ingested_toy(tmp_path, server.base_url, enc)
    script_questions(server)

    out = answer(store, cfg, enc, llm)
    dog = out["toy__q1"]
    assert dog.status == "ok" and dog.unit == "rag/agent", dog.error
    p = dog.payload
    assert (p["prediction"], p["reader_kind"], p["tool_calls"], p["llm_calls"], p["capped"]) == (
        "Biscuit", "agentic", 2, 3, False,
    )  # fmt: skip
    # the search really ran on the ingested rag memory: the turn naming the dog, with its session date
    tool_reply = server.requests[1]["messages"][-1]["content"]
    assert tool_reply.startswith("[1] (1:56 PM on 8 May, 2023) Alice: I adopted a golden retriever puppy")
    assert len(tool_reply.splitlines()) == 2  # default_k = 2
    trace = json.loads(p["agent_trace"])
    queries = [c["query"] for s in trace["steps"] for c in s["tool_calls"]]
    assert queries == ["Alice dog name", "yellow tram"] and trace["capped"] is False
    assert trace["steps"][0]["tool_calls"][0]["unit_ids"][0] == "s0:0" and trace["steps"][1]["tool_calls"][0]["k"] == 1
    assert trace["first_query"][0]["unit_id"] == "s0:0" and len(trace["first_query"]) == 2
    union = [u["unit_id"] for u in trace["union"]]
    assert union[0] == "s0:0" and len(union) == len(set(union)) and union[-1] == "s1:2"  # the tram turn
    per_step = [s["prompt_tokens"] for s in trace["steps"]]
    assert p["prompt_tokens"] == sum(per_step) and per_step == sorted(per_step)
    # the unknown tool, called again and again: a failed unit with a clear error, never a crash
    cello = out["toy__q2"]
    assert cello.status == "failed"
    assert cello.error == (
        "ReaderCallFailed: agentic reader: 3 bad tool calls in a row "
        "(last at step 2: unknown tool 'recall' (available: search_memory))"
    )

    # a rerun: the answered question replays from the cache (0 requests); the failed one replays its
    # first two steps and asks again only for the reply that failed it (discarded from the cache)
    server.reset_counts()
    again = answer(store, cfg, enc, llm)
    assert again["toy__q1"].payload["cache_hit"] is True and again["toy__q1"].payload["prediction"] == "Biscuit"
    assert server.request_count == 1 and again["toy__q2"].error == cello.error

    # SQL: steps and tool calls per question
    with store.connect() as con:
        calls = con.execute(
            "SELECT partition_key, step, tool, query, n_units, error FROM agentic_tool_calls ORDER BY ALL"
        ).fetchall()
        report = con.execute(
            "SELECT n_answers, n_failed, n_capped, mean_tool_calls, mean_llm_calls FROM agentic_report"
        ).fetchall()
    assert calls == [
        ("toy__q1", 0, "search_memory", "Alice dog name", 2, None),
        ("toy__q1", 1, "search_memory", "yellow tram", 1, None),
    ]  # a failed answer has no trace: its error is in the answers row
    assert report == [(2, 1, 0, 2.0, 3.0)]

    # the report's drill-down: the agentic answer lists its steps and tool calls
    with store.connect() as con:
        [dog_view, cello_view] = dataset_questions(con, DATASET)
    [dog_answer] = dog_view.systems[0].answers
    assert dog_answer["agent_steps"] == [
        "2 tool calls, 3 LLM calls",
        "step 0: search_memory('Alice dog name', k=2) -> 2 units",
        "step 1: search_memory('yellow tram', k=1) -> 1 units",
    ]
    html = question_block(dog_view, set())
    assert "agent steps:</span><br>2 tool calls, 3 LLM calls<br>step 0: search_memory(&#x27;Alice dog" in html
    assert cello_view.systems[0].answers[0]["agent_steps"] == []  # failed: its error is shown instead

    # retrieval metrics of the agentic answer: union and first query, scored like a retrievals row
    row = {"partition_key": "toy__q1", "question_id": "q1", "system": "rag", "reader": "agent", "status": "ok",
           "error": None, "agent_trace": p["agent_trace"]}  # fmt: skip
    gold = Gold(turns=frozenset({"s0:0", "s1:2"}), sessions=frozenset({"s0", "s1"}))
    metrics = answer_metric_rows(row, None, gold, PROTOCOL_EVIDENCE, DATASET, ks=(1, 2))
    turn = {r["ranking"]: r for r in metrics if r["level"] == "turn"}
    assert turn["union"][EVIDENCE_RECALL_CONTEXT] == 1.0
    assert turn["first_query"][EVIDENCE_RECALL_CONTEXT] == 0.5  # the first search did not find the tram turn
    assert turn["first_query"]["evidence_recall_at_1"] == 0.5 and turn["union"]["n_ranked"] == len(union)

    # the same through the stored table (written by the benchmark_report asset) and the report view
    evidence = [EvidenceRow(DATASET, "q1", "toy__q1", level, unit, None) for level, unit in
                [("turn", "s0:0"), ("turn", "s1:2"), ("session", "s0"), ("session", "s1")]]  # fmt: skip
    store.write(store.canonical_path(DATASET, "evidence"), rows_to_table(evidence, CANONICAL_SCHEMAS["evidence"]))
    assert write_tables(store, cfg) == 2 * 2 * 4  # 2 answers x 2 rankings x 4 levels (retrieval LEVELS)
    store.refresh_catalog()
    with store.connect() as con:
        stored = con.execute(
            "SELECT partition_key, ranking, outcome, evidence_recall_context FROM agentic_retrieval_metrics "
            "WHERE level = 'turn' ORDER BY ALL"
        ).fetchall()
        recall = con.execute("SELECT union_evidence_recall, first_query_evidence_recall FROM agentic_report").fetchall()
    assert stored == [
        ("toy__q1", "first_query", "scored", 0.5),
        ("toy__q1", "union", "scored", 1.0),
        ("toy__q2", "first_query", "excluded_no_gold", None),
        ("toy__q2", "union", "excluded_no_gold", None),
    ]
    assert recall == [(1.0, 0.5)]


def test_a_memory_that_cannot_be_searched_fails_the_answer(
    server: FakeOpenAIServer, llm: OpenAIChatClient, enc: Encoder, tmp_path: Path
) -> None:
    cfg, store = ingested_toy(tmp_path, server.base_url, enc)
    shutil.rmtree(checkpoint_path(store, "rag", DATASET, HAYSTACK).parent)  # memory gone after retrieval
    script_questions(server)
    out = answer(store, cfg, enc, llm)
    assert out["toy__q1"].status == "failed"
    assert "agentic reader: ingestion of 'rag' for haystack 'toy-haystack': no ingestion checkpoint" in str(
        out["toy__q1"].error
    )
    reader = build_readers(
        resolve_config(cfg),
        ReaderDeps(encoder=enc, llm=llm, memory=MemoryAccess(store, resolve_config(cfg), MemoryDeps(enc))),
    )
    retrieval: Any = None
    with pytest.raises(ReaderCallFailed, match="memory system 'nope' is not configured for dataset 'toy'"):
        reader["agent"].answer(ReadInput(QUESTIONS[0], retrieval, {}, system="nope"))


CONFIG = """
results_dir: {results}
datasets: [{{name: toy, loader: locomo, path: unused}}]
memory_systems: [{{name: rag, kind: rag, params: {{top_k: 3}}}}]
readers: [{{name: agent, kind: agentic, params: {{max_steps: 2, max_tool_errors: 2}}}}]
llm: {{base_url: "{url}", model: fake-judge, api_key_env: NO_SUCH_KEY_ENV, max_retries: 0}}
"""


def test_agentic_reader_in_a_dagster_run(server: FakeOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(CONFIG.format(results=tmp_path / "res", url=server.base_url))
    load_config.cache_clear()
    store = ResultStore(results_dir=str(load_config(str(path)).resolved_results_dir()))
    write_toy_dataset(store, QUESTIONS)
    script_questions(server)
    keys = [q.partition_key for q in QUESTIONS]
    with dg.instance_for_test() as instance:
        result = run_stages(path, keys, ["ingestion", "retrievals", "answers"], instance)
    assert not result.success  # the cello question's answer failed: the run says so
    with store.connect() as con:
        rows = con.execute(
            "SELECT partition_key, status, prediction, tool_calls, capped, error FROM answers ORDER BY 1"
        ).fetchall()
        progress = con.execute(
            "SELECT partition_key, status FROM progress WHERE stage = 'answers' ORDER BY 1"
        ).fetchall()
    assert rows[0][:5] == ("toy__q1", "ok", "Biscuit", 2, True)  # max_steps=2: the third step was forced text
    assert rows[1][:2] == ("toy__q2", "failed") and "2 bad tool calls in a row" in rows[1][5]
    assert progress == [("toy__q1", "done"), ("toy__q2", "failed")]
