"""A tiny result store for the answers/judgments stages: canonical questions and sessions, and
``retrievals`` / ``answers`` partition files written with the real stage schemas."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig, LLMConfig
from pipeline.core.records import QUESTIONS_SCHEMA, SESSIONS_SCHEMA, QuestionRow, SessionRow, rows_to_table
from pipeline.judges.base import JUDGMENTS_PAYLOAD
from pipeline.kinds.resolve import resolve_config
from pipeline.memory.base import RETRIEVALS_PAYLOAD
from pipeline.memory.systems import system_specs
from pipeline.readers.base import ANSWERS_PAYLOAD
from pipeline.run.stage import UnitResult, WorkItem, stage_schema
from pipeline.store.results import ResultStore

SYSTEMS = (ComponentConfig(name="rag", kind="rag"), ComponentConfig(name="full", kind="full_context"))
SESSION = SessionRow("d", "s1", "session_1", "1:56 pm on 8 May, 2023", dt.datetime(2023, 5, 8, 13, 56), None, 2)


def config(
    tmp_path: Path, loader: str, *, readers: tuple[ComponentConfig, ...] = (), llm_url: str | None = None, **kw: Any
) -> BenchmarkConfig:
    llm = LLMConfig(base_url=llm_url, model="fake-judge", api_key_env="NO_SUCH_KEY_ENV") if llm_url else None
    return BenchmarkConfig(
        results_dir=str(tmp_path / "res"),
        datasets=(DatasetConfig(name="d", loader=loader, path="unused"),),
        memory_systems=SYSTEMS,
        readers=readers,
        llm=llm,
        **kw,
    )


def write_canonical(store: ResultStore, questions: list[QuestionRow]) -> None:
    store.write(store.canonical_path("d", "questions"), rows_to_table(questions, QUESTIONS_SCHEMA))
    store.write(store.canonical_path("d", "sessions"), rows_to_table([SESSION], SESSIONS_SCHEMA))


def unit_row(
    key: str, qid: str, unit: str, unit_hash: str, status: str = "ok", error: str | None = None, **payload: Any
) -> dict[str, Any]:
    return {
        "partition_key": key,
        "dataset": "d",
        "question_id": qid,
        "unit": unit,
        "unit_hash": unit_hash,
        "status": status,
        "error": error,
        "duration_s": 0.1,
        "finished_at": dt.datetime(2024, 1, 1),
        **payload,
    }


def retrieval_payload(texts: list[str], context_tokens: int = 30) -> dict[str, Any]:
    units = [
        {
            "unit_id": f"s1:{i}",
            "rank": i + 1,
            "session_key": "s1",
            "turn_ids": [f"s1:{i}"],
            "text": text,
            "semantic": 0.5,
            "bm25": None,
            "graph": None,
            "temporal": None,
            "fused": None,
            "rerank": None,
        }
        for i, text in enumerate(texts)
    ]
    return {
        "system_kind": "rag",
        "haystack_id": "h1",
        "units": units,
        "context": "[Session 1 | 2023-05-08 (Mon) 13:56]\n" + "\n".join(texts),
        "context_tokens": context_tokens,
        "trimmed_units": 0,
        "retrieval_latency_s": 0.01,
        "notes": "{}",
    }


def system_hashes(cfg: BenchmarkConfig) -> dict[str, str]:
    return {s.name: s.unit_hash for s in system_specs(resolve_config(cfg), "d")}


def write_stage(store: ResultStore, stage: str, key: str, rows: list[dict[str, Any]]) -> None:
    payload = {"retrievals": RETRIEVALS_PAYLOAD, "answers": ANSWERS_PAYLOAD, "judgments": JUDGMENTS_PAYLOAD}[stage]
    store.write_partition(stage, key, pa.Table.from_pylist(rows, schema=stage_schema(payload)))


def write_results(store: ResultStore, stage: str, item: WorkItem, results: list[UnitResult]) -> None:
    """What QuestionStage.record writes for ``results`` (status columns + payload)."""
    rows = [
        unit_row(item.partition_key, item.question_id, r.unit, r.unit_hash, r.status, r.error, **r.payload)
        for r in results
    ]
    write_stage(store, stage, item.partition_key, rows)
