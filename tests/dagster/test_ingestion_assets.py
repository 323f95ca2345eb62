"""The ``ingestion`` and ``retrievals`` assets through a real Dagster run (ephemeral instance)."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipeline.config.model import load_config
from pipeline.memory.base import INGESTION_PAYLOAD, RETRIEVALS_PAYLOAD
from pipeline.run.stage import stage_schema
from pipeline.store.results import ResultStore
from tests.support.dagster import run_stages
from tests.support.memory import DATASET, HAYSTACK_2, question, write_toy_dataset

QUESTIONS = [
    question("What is the name of Alice's dog?", "q1", 0),
    question("What musical instrument is Alice learning?", "q2", 1),
    question("Which city did Alice visit?", "q3", 2, haystack_id=HAYSTACK_2),
]
KEYS = [q.partition_key for q in QUESTIONS]


def write_config(tmp_path: Path, systems: list[dict]) -> Path:
    path = tmp_path / "bench.yaml"
    cfg = {
        "results_dir": str(tmp_path / "results"),
        "datasets": [{"name": DATASET, "loader": "toy", "path": "-"}],
        "memory_systems": systems,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


def materialize(config: Path, instance: dg.DagsterInstance, key: str) -> dg.ExecuteInProcessResult:
    load_config.cache_clear()
    return run_stages(config, KEYS, ["ingestion", "retrievals"], instance, partition_key=key)


@pytest.fixture
def instance() -> dg.DagsterInstance:
    return dg.DagsterInstance.ephemeral()


def test_assets_ingest_once_and_retrieve_per_question(tmp_path: Path, instance: dg.DagsterInstance) -> None:
    config = write_config(
        tmp_path,
        [
            {"name": "rag", "kind": "rag", "params": {"top_k": 2}},
            {"name": "full", "kind": "full_context", "params": {"token_budget": 500}},
        ],
    )
    store = ResultStore(results_dir=str(tmp_path / "results"))
    write_toy_dataset(store, QUESTIONS)

    first = materialize(config, instance, "toy__q1")
    assert first.success
    ingested = store.read_partition("ingestion", "toy__q1")
    assert ingested is not None and ingested.schema.equals(stage_schema(INGESTION_PAYLOAD))
    rows = {r["unit"]: r for r in ingested.to_pylist()}
    assert {u: (r["status"], r["sessions_completed"], r["next_session"]) for u, r in rows.items()} == {
        "rag": ("ok", 3, 3),
        "full": ("ok", 3, 3),
    }
    retrieved = store.read_partition("retrievals", "toy__q1")
    assert retrieved is not None and retrieved.schema.equals(stage_schema(RETRIEVALS_PAYLOAD))
    rag = {r["unit"]: r for r in retrieved.to_pylist()}["rag"]
    assert rag["status"] == "ok" and rag["units"][0]["unit_id"] == "s0:0" and rag["retrieval_latency_s"] > 0
    assert json.loads(rag["notes"])["top_k"] == 2

    second = materialize(config, instance, "toy__q2")  # same haystack: nothing re-ingested
    assert second.success
    q2 = {r["unit"]: r for r in store.read_partition("ingestion", "toy__q2").to_pylist()}  # type: ignore[union-attr]
    assert q2["rag"]["ingest_seconds"] == rows["rag"]["ingest_seconds"]  # the checkpoint's, unchanged
    q2r = {r["unit"]: r for r in store.read_partition("retrievals", "toy__q2").to_pylist()}  # type: ignore[union-attr]
    assert q2r["rag"]["units"][0]["unit_id"] == "s2:0"

    progress = store.query("SELECT stage, status FROM progress WHERE partition_key = 'toy__q2' ORDER BY stage")
    assert ("ingestion", "done") in set(zip(*progress.to_pydict().values(), strict=True))


def test_failed_ingestion_fails_the_partition_with_rows(tmp_path: Path, instance: dg.DagsterInstance) -> None:
    config = write_config(tmp_path, [{"name": "summ", "kind": "summaries"}])
    store = ResultStore(results_dir=str(tmp_path / "results"))
    write_toy_dataset(store, QUESTIONS, with_summaries=False)
    result = materialize(config, instance, "toy__q3")
    assert not result.success  # a failed unit fails the partition (Dagster status), after recording it
    row = store.read_partition("ingestion", "toy__q3").to_pylist()[0]  # type: ignore[union-attr]
    assert row["status"] == "failed" and "dataset has no session summaries" in row["error"]
    assert (row["sessions_completed"], row["sessions_total"], row["next_session"]) == (0, 2, 0)


def test_notes_without_llm_fails_the_run_before_any_question(tmp_path: Path, instance: dg.DagsterInstance) -> None:
    config = write_config(tmp_path, [{"name": "notes", "kind": "notes"}])
    store = ResultStore(results_dir=str(tmp_path / "results"))
    write_toy_dataset(store, QUESTIONS)
    result = materialize(config, instance, "toy__q1")
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert failure is not None and "needs an LLM" in failure.message
    assert store.read_partition("ingestion", "toy__q1") is None
