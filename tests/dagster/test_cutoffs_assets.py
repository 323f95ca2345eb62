"""Retrieval cut-offs through a real Dagster run: one memory read at depths 1 and 2 and in full,
answered (offline reader, real MiniLM) and judged as three systems, cached like any unit."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from pipeline.config.model import load_config
from pipeline.store.results import ResultStore
from tests.support.dagster import run_stages, stage_run_metadata
from tests.support.memory import DATASET, question, write_toy_dataset

QUESTIONS = [question("What is the name of Alice's puppy?", "q1", 0), question("Which tram did Alice take?", "q2", 1)]
KEYS = [q.partition_key for q in QUESTIONS]
STAGES = ["ingestion", "retrievals", "answers", "judgments"]


def test_cutoffs_are_read_and_judged_and_cached(tmp_path: Path) -> None:
    config = tmp_path / "cut.yaml"
    config.write_text(yaml.safe_dump({
        "results_dir": str(tmp_path / "res"),
        "datasets": [{"name": DATASET, "loader": "locomo", "path": "unused"}],
        "memory_systems": [{"name": "bm25", "kind": "flat_bm25", "params": {"roles": ["user", "assistant"]},
                            "cutoffs": [1, 2]}],
    }))  # fmt: skip
    load_config.cache_clear()
    store = ResultStore(results_dir=str(tmp_path / "res"))
    write_toy_dataset(store, QUESTIONS)
    with dg.instance_for_test() as instance:
        first = run_stages(config, KEYS, STAGES, instance)
        assert first.success
        units = store.query("SELECT DISTINCT unit FROM retrievals ORDER BY 1").column("unit").to_pylist()
        assert units == ["bm25", "bm25@1", "bm25@2"]
        answers = store.query("SELECT DISTINCT unit FROM answers ORDER BY 1").column("unit").to_pylist()
        assert answers == ["bm25/offline", "bm25@1/offline", "bm25@2/offline"]
        store.refresh_catalog()
        with store.connect() as con:
            rows = con.execute(
                "SELECT system, n_judgments, mean_context_tokens FROM accuracy_report "
                "WHERE metric = 'locomo_f1' ORDER BY mean_context_tokens"
            ).fetchall()
        assert [r[0] for r in rows] == ["bm25@1", "bm25@2", "bm25"] and {r[1] for r in rows} == {2}
        again = run_stages(config, KEYS, STAGES, instance)
        assert again.success
        for stage in ("retrievals", "answers", "judgments"):
            assert stage_run_metadata(again, stage)["computed"] == 0, stage
