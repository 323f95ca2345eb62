"""Memory kind ``agent`` in tests: one system on the toy dataset's first question, its config with
the fake OpenAI server as the agent's LLM, and its ingestion run without Dagster.

Shared by tests/agentic/test_agent_memory.py and by the child process it kills in the middle of a
session (which imports ``config`` and ``ingest`` from here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig, LLMConfig
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.ingest import MemoryRun, ingestion_results, units_for
from pipeline.run.stage import WorkItem
from pipeline.store.results import ResultStore
from tests.support.memory import DATASET, question

QUESTIONS = [question("What is the name of Alice's dog?", "q1", 0)]
AGENT = ComponentConfig(name="agent-mem", kind="agent", params={"top_k": 3})


def config(tmp_path: Path, base_url: str) -> BenchmarkConfig:
    return BenchmarkConfig(
        results_dir=str(tmp_path / "results"),
        datasets=(DatasetConfig(name=DATASET, loader="toy", path="-"),),
        memory_systems=(AGENT,),
        llm=LLMConfig(base_url=base_url, model="fake-agent", api_key_env="NO_SUCH_KEY_ENV"),
    )


def llm_for(base_url: str, results: Path) -> OpenAIChatClient:
    return OpenAIChatClient(base_url=base_url, model="fake-agent", cache_dir=str(results / "llm_cache"), max_retries=0,
                       timeout_s=900)  # fmt: skip


def items(cfg: BenchmarkConfig) -> list[WorkItem]:
    return [
        WorkItem(q.partition_key, DATASET, q.question_id, tuple(units_for(resolve_config(cfg))(DATASET)))
        for q in QUESTIONS
    ]


def ingest(cfg: BenchmarkConfig, enc: Encoder) -> dict[str, Any]:
    store = ResultStore(results_dir=cfg.results_dir)
    assert cfg.llm is not None
    run = MemoryRun(store, resolve_config(cfg), MemoryDeps(enc, llm_for(cfg.llm.base_url, Path(cfg.results_dir))))
    [(_, [result])] = list(ingestion_results(run, items(cfg)))
    return {"status": result.status, "error": result.error, **result.payload}
