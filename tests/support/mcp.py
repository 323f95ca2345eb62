"""Memory kind ``mcp`` in tests: membench's own MCP server as a memory system, a toy-dataset config
around it, and its ingestion/retrieval run without Dagster.

Shared by the MCP test modules and by the child process that tests/agentic/test_mcp_transport_resume.py
kills in the middle of an ingestion (``killed_system``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig, LLMConfig
from pipeline.kinds.resolve import resolve_config
from pipeline.memory.base import MemoryDeps
from pipeline.memory.ingest import MemoryRun, ingestion_results, units_for
from pipeline.memory.retrieve import retrieval_results
from pipeline.run.stage import UnitResult, WorkItem
from pipeline.store.results import ResultStore
from tests.support.memory import DATASET, question

OWN_SERVER = ["{python}", "-m", "pipeline.agentic.mcp.server", "--data", "{data_file}", "--faults"]
OWN = {
    "command": OWN_SERVER,
    "ingest": "turn",
    "ingest_tool": "remember",
    "ingest_args": {"text": "{text}", "key": "{key}", "session": "{session}"},
    "search_tool": "recall",
    "search_args": {"query": "{query}", "k": "{k}"},
    "top_k": 3,
    "timeout_s": 20,
}


def config(tmp_path: Path, systems: list[ComponentConfig], llm_url: str | None = None) -> BenchmarkConfig:
    llm = LLMConfig(base_url=llm_url, model="fake-agent", api_key_env="NO_SUCH_KEY_ENV") if llm_url else None
    return BenchmarkConfig(
        results_dir=str(tmp_path / "results"),
        datasets=(DatasetConfig(name=DATASET, loader="toy", path="-"),),
        memory_systems=tuple(systems),
        llm=llm,
    )


def run_stage(cfg: BenchmarkConfig, stage: str, questions: list[Any], llm: Any = None) -> dict[str, UnitResult]:
    store = ResultStore(results_dir=cfg.results_dir)
    run = MemoryRun(store, resolve_config(cfg), MemoryDeps(None, llm, data_dir=str(Path(cfg.results_dir) / "mcp")))
    items = [
        WorkItem(q.partition_key, DATASET, q.question_id, tuple(units_for(resolve_config(cfg))(DATASET)))
        for q in questions
    ]
    compute = ingestion_results if stage == "ingestion" else retrieval_results
    return {f"{key}/{r.unit}": r for key, results in compute(run, items) for r in results}


def memory_files(cfg: BenchmarkConfig) -> list[Path]:
    """The servers' memory files (not the snapshots kept beside them: ``<file>.before.<session>``)."""
    return sorted(p for p in (Path(cfg.results_dir) / "mcp").glob("*/*") if ".before." not in p.name)


DOG = question("What is the name of Alice's dog?", "q1", 0)


# ---- kill -9 in mid-ingestion --------------------------------------------------------------------
NOTES = {  # `note` appends: a resent turn would be stored twice
    **OWN,
    "ingest_tool": "note",
    "ingest_args": {"text": "{text}", "session": "{session}"},
    "timeout_s": 900,
}
HANG_AT = 5  # session 0 has 4 turns: the server hangs on session 1's second turn


def killed_system(hang: bool = True) -> ComponentConfig:
    command = [*OWN_SERVER, "--hang-at", str(HANG_AT)] if hang else OWN_SERVER
    return ComponentConfig(name="notes", kind="mcp", params={**NOTES, "command": command})
