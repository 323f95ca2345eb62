"""The ``answers`` and ``judgments`` assets in a real Dagster run (offline reader, real MiniLM)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from assets.per_question import per_question
from pipeline.config import load_config
from pipeline.memory.systems import system_specs
from pipeline.partitions import QUESTION_PARTITIONS_NAME
from pipeline.resources_factory import build_resources
from resources.benchmark import BenchmarkResource
from tests.answer_fixtures import retrieval_payload, unit_row, write_canonical, write_stage
from tests.judge_fixtures import question

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
    [rag] = system_specs(cfg, "d")
    texts = ["Melanie: I painted a lake sunrise last year.", "Caroline: I went hiking in May."]
    write_stage(
        store, "retrievals", "d__q0", [unit_row("d__q0", "q0", "rag", rag.unit_hash, **retrieval_payload(texts))]
    )
    write_stage(store, "retrievals", "d__q1", [unit_row("d__q1", "q1", "rag", rag.unit_hash, "failed", "boom")])
    return res


def test_answers_then_judgments_offline(bench: BenchmarkResource, tmp_path: Path) -> None:
    resources = build_resources(bench.load())  # the real factory: benchmark, embeddings, llm
    store = bench.store()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(QUESTION_PARTITIONS_NAME, ["d__q0", "d__q1"])
        # unpartitioned runs (every question not yet done), one asset after the other
        assert dg.materialize([per_question], selection=["answers"], instance=instance, resources=resources).success
        result = dg.materialize([per_question], selection=["judgments"], instance=instance, resources=resources)
        assert result.success
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
        mats = [  # per question + the run's own
            m for m in result.asset_materializations_for_node("per_question") if m.asset_key == dg.AssetKey("judgments")
        ]
        [summary] = [m for m in mats if "judges_unavailable" in m.metadata]
        assert "locomo_llm_judge" in str(summary.metadata["judges_unavailable"].value)
        assert {m.partition for m in mats if m.partition} == {"d__q0"}  # q1's answer failed
        assert instance.get_materialized_partitions(dg.AssetKey("answers")) == {"d__q0"}

        # a partitioned run of a done question recomputes nothing
        assert dg.materialize(
            [per_question],
            selection=["answers", "judgments"],
            instance=instance,
            resources=resources,
            partition_key="d__q0",
        ).success
        # a second run computes nothing new: every ok unit is kept, failed ones are retried
        again = dg.materialize([per_question], selection=["answers"], instance=instance, resources=resources)
        assert again.success
        assert store.query("SELECT count(*) AS n FROM answers").column("n")[0].as_py() == 2
