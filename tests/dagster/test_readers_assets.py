"""The ``answers`` and ``judgments`` assets in a real Dagster run (offline reader, real MiniLM)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from pipeline.config.model import load_config
from pipeline.kinds.resolve import resolve_config
from pipeline.memory.systems import system_specs
from resources.benchmark import BenchmarkResource
from tests.support.answers import retrieval_payload, unit_row, write_canonical, write_stage
from tests.support.dagster import run_stages, stage_run_metadata, status_mismatches
from tests.support.judges import question

CONFIG = """
results_dir: {results}
datasets: [{{name: d, loader: locomo, path: unused}}]
memory_systems: [{{name: rag, kind: rag}}]
"""


@pytest.fixture()
def bench(tmp_path: Path) -> BenchmarkResource:
    path = tmp_path / "bench.yaml"
    path.write_text(CONFIG.format(results=tmp_path / "res"))
    load_config.cache_clear()
    res = BenchmarkResource(config_path=str(path))
    cfg, store = res.load(), res.store()
    write_canonical(
        store,
        [
            question(
                dataset="d", question_id="q0", type_raw="4", text="What did Melanie paint?", answer="A lake sunrise"
            ),
            question(dataset="d", question_id="q1", type_raw="5", text="What did Melanie adopt?", answer=None),
        ],
    )
    [rag] = system_specs(resolve_config(cfg), "d")
    texts = ["Melanie: I painted a lake sunrise last year.", "Caroline: I went hiking in May."]
    write_stage(
        store, "retrievals", "d__q0", [unit_row("d__q0", "q0", "rag", rag.unit_hash, **retrieval_payload(texts))]
    )
    write_stage(store, "retrievals", "d__q1", [unit_row("d__q1", "q1", "rag", rag.unit_hash, "failed", "boom")])
    return res


KEYS = ["d__q0", "d__q1"]


def test_answers_then_judgments_offline(bench: BenchmarkResource, tmp_path: Path) -> None:
    store = bench.store()
    config = Path(bench.config_path)
    with dg.instance_for_test() as instance:
        # runs over the whole range (as full_benchmark), one asset after the other
        first = run_stages(config, KEYS, ["answers"], instance)
        assert not first.success  # q1's retrieval failed, so its answer failed: the run says so
        result = run_stages(config, KEYS, ["judgments"], instance)
        assert not result.success
        rows = store.query(
            "SELECT partition_key, unit, status, error, label, prediction FROM answers ORDER BY 1"
        ).to_pylist()
        assert [(r["unit"], r["status"]) for r in rows] == [("rag/offline", "ok"), ("rag/offline", "failed")]
        assert rows[0]["label"] == "offline" and rows[0]["prediction"] == "I painted a lake sunrise last year."
        assert rows[1]["error"] == "upstream retrieval failed: boom"

        j = store.query("SELECT partition_key, unit, status, error, metric, score FROM judgments ORDER BY 1, 2")
        judged = j.to_pylist()
        assert {r["metric"] for r in judged if r["status"] == "ok"} == {
            "locomo_f1",
            "locomo_exact_match",
            "locomo_keyword_overlap",
        }
        assert all(r["status"] == "failed" and r["error"].startswith("answer failed:") for r in judged[3:])
        records = instance.fetch_materializations(dg.AssetKey(["bench", "judgments"]), limit=100).records
        # only the question that ended ok is materialized, with its own metadata; the run's is on the step output
        assert [r.partition_key for r in records if r.run_id == result.run_id] == ["d__q0"]
        summary = stage_run_metadata(result, "judgments")
        assert "locomo_llm_judge" in str(summary["judges_unavailable"])
        assert summary["failed_questions"] == 1
        answers_key = dg.AssetKey(["bench", "answers"])
        assert instance.get_materialized_partitions(answers_key) == {"d__q0"}  # q1 failed: never materialized
        status = instance.get_status_by_partition(answers_key, KEYS, dg.StaticPartitionsDefinition(KEYS))
        assert status == {"d__q0": dg.AssetPartitionStatus.MATERIALIZED, "d__q1": dg.AssetPartitionStatus.FAILED}
        assert status_mismatches(instance, "bench", KEYS, store, ["answers", "judgments"]) == []

        # a partitioned run of a done question recomputes nothing and succeeds
        assert run_stages(config, KEYS, ["answers", "judgments"], instance, partition_key="d__q0").success
        # a second range run computes nothing new: every ok unit is kept, failed ones are retried
        again = run_stages(config, KEYS, ["answers"], instance)
        assert not again.success
        assert store.query("SELECT count(*) AS n FROM answers").column("n")[0].as_py() == 2
        assert status_mismatches(instance, "bench", KEYS, store, ["answers", "judgments"]) == []
