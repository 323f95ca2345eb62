"""Memory kind ``agent``: an LLM agent (the fake OpenAI server, scripted) maintains its store with
add/update/delete/search tools per session; retrieval, the tool-call log view, restore, and a
real ``kill -9`` in the middle of a session followed by a resume that applies no call twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import pipeline.report  # noqa: F401  (registers the report views, agent_memory_log included)
from pipeline.agentic.agent_memory import KIND_OP, AgentMemory
from pipeline.config.model import BenchmarkConfig
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server, tool_call
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.checkpoint import checkpoint_path, load
from pipeline.memory.ingest import MemoryRun
from pipeline.memory.retrieve import retrieval_results
from pipeline.store.results import ResultStore, open_catalog
from tests.support.agent_memory import AGENT, QUESTIONS, config, ingest, items, llm_for
from tests.support.memory import DATASET, HAYSTACK, write_toy_dataset
from tests.support.memory import encoder as make_encoder
from tests.support.paths import PROJECT_ROOT

PROJECT = PROJECT_ROOT
DONE = {"content": "DONE"}

# (text that identifies the session's prompt, the agent's replies for that session)
SCRIPTS: list[tuple[str, list[dict[str, Any]]]] = [
    ("golden retriever puppy", [
        {"tool_calls": [tool_call("add_memory", {"text": "2023-05-08: Alice adopted a puppy named Biscuit."}, "a1")]},
        {"tool_calls": [tool_call("add_memory", {"text": "Bob trains for the Boston marathon."}, "a2")]},
        DONE,
    ]),
    ("week in Lisbon", [
        {"tool_calls": [tool_call("search_memory", {"query": "Alice dog"}, "b1")]},
        {"tool_calls": [tool_call("add_memory", {"text": "2023-06: Alice spent a week in Lisbon."}, "b2"),
                        tool_call("update_memory", {"memory_id": "m1", "text": "Alice's dog is Biscuit, a golden "
                                                    "retriever puppy adopted 2023-05."}, "b3")]},
        DONE,
    ]),
    ("cello lessons", [
        {"tool_calls": [tool_call("delete_memory", {"memory_id": "m2"}, "c1"),
                        tool_call("update_memory", {"memory_id": "m99", "text": "x"}, "c2")]},
        {"tool_calls": [tool_call("add_memory", {"text": "Alice takes cello lessons on Tuesdays."}, "c3")]},
        DONE,
    ]),
]  # fmt: skip


def script(server: FakeOpenAIServer, hang_in_session_1: bool = False) -> None:
    for i, (match, replies) in enumerate(SCRIPTS):
        faults = [None, Fault.hang(600)] if hang_in_session_1 and i == 1 else []
        server.add_script(match, replies, final_reply="DONE", faults=faults)


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return make_encoder(Path(tmp_path_factory.mktemp("emb")))


def memories(store: ResultStore, enc: Encoder, cfg: BenchmarkConfig) -> dict[str, str]:
    ck = load(checkpoint_path(store, AGENT.name, DATASET, HAYSTACK))
    assert ck is not None
    assert cfg.llm is not None
    system = AgentMemory(AGENT.params, MemoryDeps(enc, llm_for(cfg.llm.base_url, Path(cfg.results_dir))))
    system.restore(list(ck.units))
    assert system.store is not None
    return {m: s.text for m, s in system.store.memories.items()}


EXPECTED = {
    "m1": "Alice's dog is Biscuit, a golden retriever puppy adopted 2023-05.",
    "m3": "2023-06: Alice spent a week in Lisbon.",
    "m4": "Alice takes cello lessons on Tuesdays.",
}


def test_the_agent_maintains_its_store_and_retrieval_searches_it(enc: Encoder, tmp_path: Path) -> None:
    with running_fake_server() as server:
        cfg = config(tmp_path, server.base_url)
        store = ResultStore(results_dir=cfg.results_dir)
        write_toy_dataset(store, QUESTIONS)
        script(server)
        row = ingest(cfg, enc)
        assert row["status"] == "ok", row["error"]
        assert (row["sessions_completed"], row["units"]) == (3, 8)  # 8 tool calls logged
        assert server.request_count == 9
        # the search ran on the store as it stood: m1 (the dog), with its id for a later update
        assert server.requests[4]["messages"][-1]["content"].startswith("[m1] 2023-05-08: Alice adopted a puppy")
        # update of an unknown id: told to the agent, logged, nothing changed
        told = [m["content"] for m in server.requests[7]["messages"] if m["role"] == "tool"]
        assert told[-2:] == [
            "deleted m2",
            "error: update_memory: no memory 'm99' (ids are shown by search_memory and add_memory)",
        ]
        assert memories(store, enc, cfg) == EXPECTED

        run = MemoryRun(store, resolve_config(cfg), MemoryDeps(enc, llm_for(server.base_url, Path(cfg.results_dir))))
        [(_, [retrieved])] = list(retrieval_results(run, items(cfg)))
        assert retrieved.status == "ok", retrieved.error
        units = retrieved.payload["units"]
        assert units[0]["unit_id"] == "m1" and units[0]["session_key"] == "s1"  # last written in session 1
        assert {u["unit_id"] for u in units} == set(EXPECTED) and units[0]["text"] == EXPECTED["m1"]

        store.refresh_catalog()
        log_sql = (
            "SELECT system, dataset, session_key, op_index, step, tool, memory_id, error "
            "FROM agent_memory_log ORDER BY session_position, op_index"
        )
        with store.connect() as con:
            log = con.execute(log_sql).fetchall()
        assert [r[2:7] for r in log] == [
            ("s0", 0, 0, "add_memory", "m1"),
            ("s0", 1, 1, "add_memory", "m2"),
            ("s1", 0, 0, "search_memory", None),
            ("s1", 1, 1, "add_memory", "m3"),
            ("s1", 2, 1, "update_memory", "m1"),
            ("s2", 0, 0, "delete_memory", "m2"),
            ("s2", 1, 0, "update_memory", None),
            ("s2", 2, 1, "add_memory", "m4"),
        ]
        assert {r[:2] for r in log} == {("agent-mem", DATASET)}
        assert [r[7] is not None for r in log].count(True) == 1
        # the catalog's log reads the checkpoints it was built over, not the live file a later run replaces
        live = checkpoint_path(store, "agent-mem", DATASET, HAYSTACK)
        live.unlink()
        with open_catalog(store.catalog_path) as con:
            assert con.execute(log_sql).fetchall() == log


CHILD = """
import sys
from pathlib import Path
from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig, LLMConfig
from tests.support.agent_memory import config, ingest
from tests.support.memory import encoder
cfg = config(Path(sys.argv[1]), sys.argv[2])
row = ingest(cfg, encoder(Path(sys.argv[3])))
print("RESULT", row["status"], row["sessions_completed"])
"""


def test_kill_9_in_a_session_then_resume_applies_no_call_twice(enc: Encoder, tmp_path: Path) -> None:
    emb = tmp_path / "emb"
    with running_fake_server() as server:
        cfg = config(tmp_path, server.base_url)
        store = ResultStore(results_dir=cfg.results_dir)
        write_toy_dataset(store, QUESTIONS)
        script(server, hang_in_session_1=True)  # session 1's second LLM call never returns
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path), server.base_url, str(emb)],
            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 600  # a bound on a stuck child, not a timing assertion
            while not (server.request_count == 5 and server.in_flight == 1):  # 3 for session 0, then 2
                assert child.poll() is None, child.stdout.read() if child.stdout else ""
                assert time.monotonic() < deadline, "the child never reached session 1's second call"
                time.sleep(0.2)
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(60) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
        ck = load(checkpoint_path(store, AGENT.name, DATASET, HAYSTACK))
        assert ck is not None and ck.state.sessions_completed == 1  # session 0 persisted, session 1 lost
        assert [u.role for u in ck.units] == ["add_memory", "add_memory"]

        # resume (a new process would do the same: everything comes from the checkpoint and the cache)
        server.reset_counts()
        row = ingest(cfg, enc)
        assert row["status"] == "ok" and row["sessions_completed"] == 3, row["error"]
        assert server.request_count == 2 + 3  # session 1: its first call replayed from the cache
        assert memories(store, enc, cfg) == EXPECTED
        ck = load(checkpoint_path(store, AGENT.name, DATASET, HAYSTACK))
        assert ck is not None
        ops = [(u.session_key, u.role, json.loads(u.text).get("memory_id")) for u in ck.units if u.kind == KIND_OP]
        assert ops == [
            ("s0", "add_memory", "m1"), ("s0", "add_memory", "m2"),
            ("s1", "search_memory", None), ("s1", "add_memory", "m3"), ("s1", "update_memory", "m1"),
            ("s2", "delete_memory", "m2"), ("s2", "update_memory", None), ("s2", "add_memory", "m4"),
        ]  # fmt: skip
