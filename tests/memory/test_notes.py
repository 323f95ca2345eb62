"""The ``notes`` memory against a real local OpenAI-compatible server (pipeline/llm/fake_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.checkpoint import load
from pipeline.memory.ingest import MemoryRun, ingest_haystack, ingestion_results, units_for
from pipeline.memory.notes import NOTES_SYSTEM_PROMPT, NotesMemory, parse_notes
from pipeline.memory.params import MemoryConfigError
from pipeline.memory.retrieve import retrieval_results
from pipeline.memory.systems import SystemSpec
from pipeline.run.stage import WorkItem
from pipeline.store.results import ResultStore
from tests.support.memory import (
    DATASET,
    HAYSTACK,
    HAYSTACK_2,
    build_haystack,
    encoder,
    question,
    write_toy_dataset,
)

REPLIES = {
    "golden retriever": (
        "[turns: 0] 2023-05-06: Alice adopted a golden retriever puppy named Biscuit.\n"
        "[turns: 3] 2023-05-08: Bob trains every morning for the Boston marathon."
    ),
    "Lisbon": (
        "- [turns: 0] 2023-06: Alice spent a week in Lisbon, Portugal.\n"
        "- [turns: 1, 2] 2023-06: Alice ate custard tarts at a bakery in Belem."
    ),
    "cello": (
        "[turns: 0] 2023-07: Alice takes cello lessons on Tuesday evenings.\n"
        "[turns: 3, 99] 2023-07-19: Bob cooked vegetable curry for his neighbours."
    ),
}


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="NONE") as srv:
        yield srv


def llm_for(srv: FakeOpenAIServer, cache: Path) -> OpenAIChatClient:
    return OpenAIChatClient(base_url=srv.base_url, model="fake-notes-model", cache_dir=str(cache), max_retries=0)


def spec() -> SystemSpec:
    return SystemSpec.from_class(ComponentConfig(name="notes", kind="notes"), NotesMemory, "hash-notes", None)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("NONE", []),
        ("none.", []),
        ("[turns: 0] A fact.", [("A fact.", ("t0",))]),
        ("- [turns: 1, 0, 1] Two turns.", [("Two turns.", ("t1", "t0"))]),
        ("1. [turn 7] Unknown turn cited.", [("Unknown turn cited.", ())]),
        ("Untagged fact.\n\n* [Turns: 2] Tagged.", [("Untagged fact.", ()), ("Tagged.", ("t2",))]),
    ],
)
def test_parse_notes(reply: str, expected: list[tuple[str, tuple[str, ...]]]) -> None:
    assert parse_notes(reply, {0: "t0", 1: "t1", 2: "t2"}) == expected


def test_notes_without_llm_is_a_config_error(enc: Encoder) -> None:
    with pytest.raises(MemoryConfigError, match="needs an LLM, but the benchmark config has no `llm:` block"):
        NotesMemory({}, MemoryDeps(enc, llm=None))


def test_notes_ingest_and_retrieve(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    for match, reply in REPLIES.items():
        server.add_rule(match, reply)
    m = NotesMemory({"top_k": 2}, MemoryDeps(enc, llm=llm_for(server, tmp_path)))
    units = [u for hs in build_haystack() for u in m.ingest_session(HAYSTACK, hs)]
    assert server.request_count == 3  # one call per session
    first = server.requests[0]["messages"]
    assert first[0] == {"role": "system", "content": NOTES_SYSTEM_PROMPT}
    assert "Session date: 1:56 PM on 8 May, 2023" in first[1]["content"]
    assert "[0] Alice: I adopted a golden retriever puppy" in first[1]["content"]
    assert [(u.unit_id, u.kind, u.turn_ids) for u in units] == [
        ("s0#note0", "note", ("s0:0",)),
        ("s0#note1", "note", ("s0:3",)),
        ("s1#note0", "note", ("s1:0",)),
        ("s1#note1", "note", ("s1:1", "s1:2")),
        ("s2#note0", "note", ("s2:0",)),
        ("s2#note1", "note", ("s2:3",)),  # turn 99 does not exist in the session: dropped
    ]
    r = m.retrieve(question("What is the name of Alice's dog?"))
    assert r.units[0].unit_id == "s0#note0"
    assert r.context.startswith("[Session 1 | 2023-05-08 (Mon) 13:56]\n2023-05-06: Alice adopted")


def test_notes_llm_failure_stops_ingestion_at_that_session_and_resumes(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path
) -> None:
    server.add_rule("golden retriever", REPLIES["golden retriever"])
    server.add_rule("Lisbon", REPLIES["Lisbon"], faults=[Fault.server_error(400)])  # not retryable
    server.add_rule("cello", REPLIES["cello"])
    llm = llm_for(server, tmp_path / "llm")
    path = tmp_path / "memory.parquet"
    sessions = build_haystack()

    def build() -> NotesMemory:
        return NotesMemory({}, MemoryDeps(enc, llm=llm))

    first = ingest_haystack(spec(), build, HAYSTACK, sessions, path)
    assert first.error is not None
    assert "ingestion stopped at session 1 ('session_2') of 3" in first.error and "HTTP 400" in first.error
    assert (first.sessions_completed, first.sessions_total, first.units) == (1, 3, 2)
    saved = load(path)
    assert saved is not None and saved.state.sessions_completed == 1

    server.reset_counts()
    second = ingest_haystack(spec(), build, HAYSTACK, sessions, path)
    assert second.error is None and second.resumed_from == 1
    assert [m["messages"][1]["content"].count("Lisbon") > 0 for m in server.requests] == [True, False]
    assert server.request_count == 2  # session 0 was not asked again

    other = tmp_path / "uninterrupted.parquet"
    clean = ingest_haystack(spec(), build, HAYSTACK, sessions, other)
    done, reference = load(path), load(other)
    assert clean.error is None and done is not None and reference is not None
    assert done.units == reference.units and len(done.units) == 6


def test_notes_stage_ingests_haystacks_in_parallel(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    """Two haystacks sharing two sessions, two worker threads: 3 LLM calls in all (cache), rows ok."""
    for match, reply in REPLIES.items():
        server.add_rule(match, reply)
    cfg = BenchmarkConfig(
        results_dir=str(tmp_path / "results"),
        datasets=(DatasetConfig(name=DATASET, loader="toy", path="-"),),
        memory_systems=(ComponentConfig(name="notes", kind="notes", params={"top_k": 1}),),
    )
    store = ResultStore(results_dir=cfg.results_dir)
    questions = [
        question("What is the name of Alice's dog?", "q1", 0),
        question("Which city did Alice visit?", "q2", 1, haystack_id=HAYSTACK_2),
    ]
    write_toy_dataset(store, questions)
    run = MemoryRun(store, resolve_config(cfg), MemoryDeps(enc, llm=llm_for(server, tmp_path / "llm")), workers=2)
    units = tuple(units_for(resolve_config(cfg))(DATASET))
    items = [WorkItem(q.partition_key, DATASET, q.question_id, units) for q in questions]

    rows = {key: results[0] for key, results in ingestion_results(run, items)}
    assert {k: (r.status, r.payload["sessions_completed"], r.payload["units"]) for k, r in rows.items()} == {
        "toy__q1": ("ok", 3, 6),
        "toy__q2": ("ok", 2, 4),
    }
    assert server.request_count == 3  # the shared sessions were asked once (LLM cache)
    retrieved = {key: results[0] for key, results in retrieval_results(run, items)}
    assert retrieved["toy__q2"].payload["units"][0]["unit_id"] == "s1#note0"
    assert retrieved["toy__q2"].payload["units"][0]["turn_ids"] == ["s1:0"]
