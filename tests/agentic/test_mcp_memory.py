"""Memory kind ``mcp`` against two real MCP servers started by the test: membench's own (official
``mcp`` SDK, pipeline/agentic/mcp/server.py) and ``@modelcontextprotocol/server-memory`` from the
npm registry (installed by scripts/setup.sh, run with node). Direct and agent-driven ingestion,
retrieval mapped back to turns, per-(system, haystack) memory files, and servers that die, hang or
return tool errors: each fails its own question only, and the next question gets a fresh server."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from pipeline.agentic.mcp.memory import NPM_SERVERS
from pipeline.config.model import ComponentConfig, load_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import running_fake_server, tool_call
from pipeline.store.results import ResultStore
from tests.support.dagster import run_stages
from tests.support.mcp import DOG, OWN, config, memory_files, run_stage
from tests.support.memory import HAYSTACK, HAYSTACK_2, question, write_toy_dataset

NPM_SERVER = NPM_SERVERS / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
NPM = {
    "command": ["node", "{npm_servers}/@modelcontextprotocol/server-memory/dist/index.js"],
    "env": {"MEMORY_FILE_PATH": "{data_file}"},
    "data_suffix": ".jsonl",
    "ingest": "session",
    "ingest_tool": "create_entities",
    "ingest_args": {"entities": [{"name": "{key}", "entityType": "session", "observations": ["{text}"]}]},
    "search_tool": "search_nodes",
    "results": "knowledge_graph",
    "timeout_s": 60,
}


def test_own_server_direct_ingestion_retrieval_and_faults(tmp_path: Path) -> None:
    cfg = config(tmp_path, [ComponentConfig(name="own", kind="mcp", params=OWN)])
    faulty = [
        question("#die What is the name of Alice's dog?", "q2", 1),
        question("Which city did Alice visit, Lisbon?", "q3", 2),
        question("#hang anything", "q4", 3),
        question("#error anything", "q5", 4),
        question("What instrument: the cello?", "q6", 5, haystack_id=HAYSTACK_2),
    ]
    questions = [DOG, *faulty]
    write_toy_dataset(ResultStore(results_dir=cfg.results_dir), questions)
    ingested = run_stage(cfg, "ingestion", questions)
    assert {r.status for r in ingested.values()} == {"ok"}, [r.error for r in ingested.values()]
    assert ingested["toy__q1/own"].payload["units"] == 11
    # one memory file per (system, haystack), written by the server itself
    files = memory_files(cfg)
    assert [f.name for f in files] == [f"{HAYSTACK_2}.json", f"{HAYSTACK}.json"]
    assert len(json.loads(files[1].read_text())) == 11 and len(json.loads(files[0].read_text())) == 7

    got = run_stage(cfg, "retrievals", questions)
    dog = got["toy__q1/own"]
    assert dog.status == "ok", dog.error
    top = dog.payload["units"][0]
    assert (top["unit_id"], top["session_key"], top["turn_ids"]) == ("s0:0", "s0", ["s0:0"])  # mapped back
    assert "Biscuit" in dog.payload["context"]
    died = got["toy__q2/own"]
    assert died.status == "failed" and "tool 'recall' failed" in str(died.error)
    assert "membench-memory: dying on request" in str(died.error)  # the server's own last words
    assert got["toy__q3/own"].status == "ok"  # a fresh server, same memory file
    assert got["toy__q3/own"].payload["units"][0]["unit_id"] == "s1:0"
    assert got["toy__q5/own"].status == "failed"
    assert "tool 'recall' returned an error: Error executing tool recall: recall failed on request" in str(
        got["toy__q5/own"].error
    )
    assert got["toy__q6/own"].status == "ok"
    hang = got["toy__q4/own"]
    assert hang.status == "failed" and "no reply to tool 'recall' within 20" in str(hang.error)


def test_npm_reference_server_direct_session_ingestion(tmp_path: Path) -> None:
    assert NPM_SERVER.exists(), f"{NPM_SERVER} missing: run scripts/setup.sh (npm ci)"
    cfg = config(tmp_path, [ComponentConfig(name="kg", kind="mcp", params=NPM)])
    biscuit = question("Biscuit", "q1", 0)
    write_toy_dataset(ResultStore(results_dir=cfg.results_dir), [biscuit])
    ingested = run_stage(cfg, "ingestion", [biscuit])
    assert ingested["toy__q1/kg"].status == "ok", ingested["toy__q1/kg"].error
    [file] = memory_files(cfg)
    entities = [json.loads(line) for line in file.read_text().splitlines()]
    assert [e["name"] for e in entities] == ["s0", "s1", "s2"] and entities[0]["entityType"] == "session"
    got = run_stage(cfg, "retrievals", [biscuit])["toy__q1/kg"]
    assert got.status == "ok", got.error
    [unit] = got.payload["units"]  # search_nodes matches the substring in session s0's observation
    assert unit["unit_id"] == "s0" and unit["session_key"] == "s0" and len(unit["turn_ids"]) == 4


def test_agent_driven_ingestion_with_the_servers_own_tools(tmp_path: Path) -> None:
    with running_fake_server(default_reply="DONE") as server:
        remember = {"text": "Alice's dog is Biscuit.", "key": "dog", "session": "s0"}
        server.add_script("golden retriever puppy", [{"tool_calls": [tool_call("remember", remember, "r1")]}],
                          final_reply="DONE")  # fmt: skip
        server.add_script("week in Lisbon", [{"tool_calls": [tool_call("forget", {"key": "x"}, "r2")]}],
                          final_reply="DONE")  # fmt: skip
        agent = {**OWN, "ingest": "agent", "max_steps": 2}
        cfg = config(tmp_path, [ComponentConfig(name="own-agent", kind="mcp", params=agent)], server.base_url)
        write_toy_dataset(ResultStore(results_dir=cfg.results_dir), [DOG])
        llm = OpenAIChatClient(base_url=server.base_url, model="fake-agent", cache_dir=str(tmp_path / "llm"),
                          max_retries=0)  # fmt: skip
        row = run_stage(cfg, "ingestion", [DOG], llm)["toy__q1/own-agent"]
        assert row.status == "ok", row.error
        # the agent saw the server's tools (listed over MCP) and its call reached the server
        offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
        assert offered == ["remember", "note", "recall"]
        [file] = memory_files(cfg)
        assert json.loads(file.read_text()) == {"dog": {"text": "Alice's dog is Biscuit.", "session": "s0"}}
        lisbon = [r for r in server.requests if "week in Lisbon" in r["messages"][1]["content"]]
        assert "error: unknown tool 'forget' (available: note, recall, remember)" in json.dumps(lisbon[-1]["messages"])


DAGSTER_CONFIG = """
results_dir: {results}
datasets: [{{name: toy, loader: locomo, path: unused}}]
memory_systems:
  - name: own
    kind: mcp
    params:
      command: ["{{python}}", "-m", "pipeline.agentic.mcp.server", "--data", "{{data_file}}"]
      ingest: session
      ingest_tool: remember
      ingest_args: {{text: "{{text}}", key: "{{key}}"}}
      search_tool: recall
      search_args: {{query: "{{query}}", k: 2}}
"""


def test_mcp_memory_in_a_dagster_run(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(DAGSTER_CONFIG.format(results=tmp_path / "res"))
    load_config.cache_clear()
    store = ResultStore(results_dir=str(load_config(str(path)).resolved_results_dir()))
    write_toy_dataset(store, [DOG])
    with dg.instance_for_test() as instance:
        result = run_stages(path, [DOG.partition_key], ["ingestion", "retrievals"], instance)
    assert result.success
    # the run's memory files live under its results folder, one per (system, haystack)
    [file] = sorted((store.parquet_root / "mcp_memory").glob("*/*.json"))
    assert file.name == f"{HAYSTACK}.json" and sorted(json.loads(file.read_text())) == ["s0", "s1", "s2"]
    with store.connect() as con:
        [(status, units)] = con.execute("SELECT status, units FROM retrievals WHERE unit = 'own'").fetchall()
    assert status == "ok" and units[0]["unit_id"] == "s0" and len(units[0]["turn_ids"]) == 4
