"""Memory kind ``mcp``: the streamable-HTTP (``url``) transport against membench's own server
started over HTTP on 127.0.0.1, and a real ``kill -9`` in the middle of an ingestion whose server
stores a resent item again: the resumed run applies no session's tool calls twice and ends with the
same memory as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline.config.model import ComponentConfig
from pipeline.memory.checkpoint import checkpoint_path, load
from pipeline.store.results import ResultStore
from tests.support.mcp import DOG, HANG_AT, OWN, config, killed_system, memory_files, run_stage
from tests.support.memory import DATASET, HAYSTACK, question, write_toy_dataset
from tests.support.paths import PROJECT_ROOT

PROJECT = PROJECT_ROOT
SERVER_START_BOUND_S = 120  # a bound on a server that never comes up, not a timing assertion


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(data: Path, port: int) -> Iterator[subprocess.Popen[str]]:
    """membench's own MCP server over streamable HTTP, up when the block starts, gone after it."""
    argv = [sys.executable, "-m", "pipeline.agentic.mcp.server", "--data", str(data), "--faults", "--http",
            "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + SERVER_START_BOUND_S
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the HTTP MCP server never listened"
            time.sleep(0.2)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(60)


def test_url_transport_ingests_searches_and_a_dying_server_fails_its_unit(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "http-memory.json"
    url = f"http://127.0.0.1:{port}/mcp"
    params = {k: v for k, v in OWN.items() if k != "command"} | {"url": url}
    cfg = config(tmp_path, [ComponentConfig(name="http", kind="mcp", params=params)])
    died = question("#die What is the name of Alice's dog?", "q2", 1)
    after = question("Which city did Alice visit, Lisbon?", "q3", 2)
    questions = [DOG, died, after]
    write_toy_dataset(ResultStore(results_dir=cfg.results_dir), questions)
    with http_server(data, port) as proc:
        ingested = run_stage(cfg, "ingestion", [DOG])["toy__q1/http"]
        assert ingested.status == "ok", ingested.error
        assert ingested.payload["units"] == 11
        assert len(json.loads(data.read_text())) == 11  # stored by the server behind the URL
        assert memory_files(cfg) == []  # a URL server keeps its own memory: membench writes no file
        got = run_stage(cfg, "retrievals", [DOG, died])
        dog = got["toy__q1/http"]
        assert dog.status == "ok", dog.error
        top = dog.payload["units"][0]
        assert (top["unit_id"], top["session_key"], top["turn_ids"]) == ("s0:0", "s0", ["s0:0"])
        assert "Biscuit" in dog.payload["context"]
        failed = got["toy__q2/http"]
        assert failed.status == "failed" and f"MCP server '{url}': tool 'recall'" in str(failed.error)
        assert proc.wait(60) == 3  # the server really died in the middle of the unit
        gone = run_stage(cfg, "retrievals", [after])["toy__q3/http"]
        assert gone.status == "failed" and url in str(gone.error)  # nothing listens: that unit fails too
    with http_server(data, port):  # the server is back (same memory file): the next question is served
        back = run_stage(cfg, "retrievals", [after])["toy__q3/http"]
        assert back.status == "ok", back.error
        assert back.payload["units"][0]["unit_id"] == "s1:0"


# ---- kill -9 in mid-ingestion --------------------------------------------------------------------
CHILD = """
import sys
from pathlib import Path
from pipeline.config.model import ComponentConfig
from tests.support.mcp import DOG, config, killed_system, run_stage
row = run_stage(config(Path(sys.argv[1]), [killed_system()]), "ingestion", [DOG])["toy__q1/notes"]
print("RESULT", row.status, row.error)
"""


def stored(path: Path) -> list[tuple[str, str]]:
    return [(v["session"], v["text"]) for v in json.loads(path.read_text()).values()]


def uninterrupted(tmp_path: Path) -> list[tuple[str, str]]:
    cfg = config(tmp_path, [killed_system(hang=False)])
    write_toy_dataset(ResultStore(results_dir=cfg.results_dir), [DOG])
    row = run_stage(cfg, "ingestion", [DOG])["toy__q1/notes"]
    assert row.status == "ok", row.error
    [file] = memory_files(cfg)
    return stored(file)


def test_kill_9_mid_ingestion_then_resume_applies_no_session_twice(tmp_path: Path) -> None:
    expected = uninterrupted(tmp_path / "clean")
    assert len(expected) == 11 and len(set(expected)) == 11

    cfg = config(tmp_path, [killed_system()])
    store = ResultStore(results_dir=cfg.results_dir)
    write_toy_dataset(store, [DOG])
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], cwd=PROJECT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)  # fmt: skip
    server_pid = None
    try:
        deadline = time.monotonic() + 600  # a bound on a stuck child, not a timing assertion
        while not (markers := sorted((Path(cfg.results_dir) / "mcp").glob("*/*.hung"))):
            assert child.poll() is None, child.stdout.read() if child.stdout else ""
            assert time.monotonic() < deadline, "the server never reached its crash point"
            time.sleep(0.2)
        server_pid = int(markers[0].read_text())
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        if server_pid is not None:  # the orphaned server still hangs in its tool call
            os.kill(server_pid, signal.SIGKILL)
    ck = load(checkpoint_path(store, "notes", DATASET, HAYSTACK))
    assert ck is not None and ck.state.sessions_completed == 1  # session 0 persisted, session 1 begun
    [file] = [f for f in memory_files(cfg) if f.suffix == ".json"]  # not the .hung marker
    before = stored(file)
    assert len(before) == HANG_AT and before == expected[:HANG_AT]  # session 1's first turn was applied

    row: Any = run_stage(cfg, "ingestion", [DOG])["toy__q1/notes"]  # resume
    assert row.status == "ok", row.error
    assert row.payload["sessions_completed"] == 3
    assert stored(file) == expected  # session 1 applied once, from where it stood before it
    snapshots = [f.name for f in file.parent.glob("*.before.*")]
    assert snapshots == [f"{HAYSTACK}.json.before.s2"]  # only the last session's snapshot is kept
