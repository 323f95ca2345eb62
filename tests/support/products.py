"""What the product-kind tests share (mem0, langmem): a YAML config naming one product entry, the
ingestion and retrieval stages run on the toy dataset, the missing-library check at config load,
and a child ingestion killed (SIGKILL) while its last session's extraction call is in flight."""

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
import yaml

from pipeline.config.model import load_config
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.ingest import MemoryRun, ingestion_results, units_for
from pipeline.memory.params import MemoryConfigError
from pipeline.memory.retrieve import retrieval_results
from pipeline.products import base as product_base
from pipeline.run.stage import WorkItem
from pipeline.store.results import ResultStore
from tests.support.memory import DATASET, HAYSTACK_2, question, write_toy_dataset
from tests.support.paths import PROJECT_ROOT

PROJECT = PROJECT_ROOT


def yaml_config(tmp_path: Path, server: FakeOpenAIServer, entry: dict[str, Any], model: str) -> Path:
    path = tmp_path / "products.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "results_dir": str(tmp_path / "results"),
                "datasets": [{"name": DATASET, "loader": "locomo", "path": "-"}],
                "memory_systems": [entry],
                "llm": {"base_url": server.base_url, "model": model, "max_retries": 0},
            }
        )
    )
    load_config.cache_clear()
    return path


def run_stages(config: Path, enc: Encoder) -> tuple[dict[str, Any], dict[str, Any]]:
    """Ingestion and retrieval results (partition key -> UnitResult) of two toy questions:
    toy__q1 on the 3-session haystack, toy__q2 on the 2-session one."""
    cfg = load_config(str(config))
    store = ResultStore(results_dir=cfg.results_dir)
    questions = [question("Which city did Alice visit?", "q1", 0), question("What instrument?", "q2", 1, HAYSTACK_2)]
    write_toy_dataset(store, questions)
    llm = OpenAIChatClient.from_benchmark(cfg)
    run = MemoryRun(store, resolve_config(cfg), MemoryDeps(enc, llm=llm, state_dir=cfg.resolved_results_dir()))
    units = tuple(units_for(resolve_config(cfg))(DATASET))
    items = [WorkItem(q.partition_key, DATASET, q.question_id, units) for q in questions]
    ingested = {key: results[0] for key, results in ingestion_results(run, items)}
    retrieved = {key: results[0] for key, results in retrieval_results(run, items)}
    return ingested, retrieved


def check_toy_stages(config: Path, enc: Encoder) -> None:
    """Both stages through the config's product entry; the scripted facts come back with their sessions."""
    ingested, retrieved = run_stages(config, enc)
    assert {k: (r.status, r.payload["sessions_completed"]) for k, r in ingested.items()} == {
        "toy__q1": ("ok", 3),
        "toy__q2": ("ok", 2),
    }
    top = retrieved["toy__q1"].payload["units"][0]
    assert (top["text"], top["session_key"], top["turn_ids"]) == ("Alice spent a week in Lisbon, Portugal", "s1", [])
    assert retrieved["toy__q2"].payload["units"][0]["session_key"] == "s2"
    assert json.loads(retrieved["toy__q2"].payload["notes"])["source_ids"] == "session"


def missing_library_message(config: Path, module: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The config-load error when ``module`` is not installed (one line, or the test fails)."""
    real = product_base.importlib.util.find_spec
    monkeypatch.setattr(product_base.importlib.util, "find_spec", lambda m: None if m == module else real(m))
    cfg = load_config(str(config))
    with pytest.raises(MemoryConfigError) as exc:
        resolve_config(cfg)
    message = str(exc.value)
    assert "\n" not in message
    return message


def kill_during_session(server: FakeOpenAIServer, work: Path, kind: str, requests: int) -> None:
    """Start tests.support.products_worker for ``kind``; SIGKILL it once the server has seen ``requests``
    requests (the last one is made to hang by the caller)."""
    cmd = [sys.executable, "-m", "tests.support.products_worker", server.base_url, str(work), kind]
    child = subprocess.Popen(cmd, cwd=PROJECT)
    try:
        deadline = time.monotonic() + 300  # generous bound on a loaded machine: not a timing assertion
        while server.request_count < requests and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.request_count == requests, "the child never reached the session to kill"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
