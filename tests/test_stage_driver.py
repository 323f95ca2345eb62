"""The per-question stage driver: resume, failure rows, Dagster partition status."""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest
from dagster import AssetExecutionContext

from pipeline.config import load_config
from pipeline.partitions import QUESTION_PARTITIONS_NAME, question_partitions
from pipeline.stage import QuestionStage, UnitResult, UnitSpec, WorkItem, timed
from resources.benchmark import BenchmarkResource

PAYLOAD = pa.schema([("value", pa.int64())])
CALLS: list[str] = []
FAIL: set[str] = set()


def _units(_dataset: str) -> list[UnitSpec]:
    return [UnitSpec("sys_a", "h1"), UnitSpec("sys_b", "h2")]


def _compute(items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
    for item in items:
        results = []
        for spec in item.units:
            CALLS.append(f"{item.partition_key}/{spec.unit}")

            def work(key: str = item.partition_key) -> dict[str, int]:
                if key in FAIL:
                    raise RuntimeError("boom")
                return {"value": len(key)}

            results.append(timed(work, spec))
        yield item.partition_key, results


@dg.asset(partitions_def=question_partitions, backfill_policy=dg.BackfillPolicy.single_run())
def answers(context: AssetExecutionContext, benchmark: BenchmarkResource) -> dg.MaterializeResult:
    stage = QuestionStage(
        context, benchmark.store(), benchmark.load(), stage="answers", payload_schema=PAYLOAD, units_for=_units
    )
    return stage.run(_compute)


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[BenchmarkResource, Path]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"results_dir: {tmp_path / 'res'}\ndatasets: [{{name: d, loader: locomo, path: x}}]\n")
    res = BenchmarkResource(config_path=str(cfg))
    store = res.store()
    keys = [f"d__q{i}" for i in range(4)]
    store.write(
        store.canonical_path("d", "questions"),
        pa.table({"dataset": ["d"] * 4, "partition_key": keys, "question_id": [f"q{i}" for i in range(4)]}),
    )
    store.write(
        store.canonical_path("d", "load_failures"),
        pa.table(
            {
                "dataset": ["d"],
                "file": ["x"],
                "record_index": [4],
                "record_id": ["q4"],
                "partition_key": ["d__q4"],
                "field": ["question"],
                "message": ["x record 4 (q4): missing field 'question'"],
            }
        ),
    )
    CALLS.clear()
    FAIL.clear()
    load_config.cache_clear()
    return res, tmp_path


def test_failures_recorded_resumed_and_status_exact(setup: tuple[BenchmarkResource, Path]) -> None:
    res, _ = setup
    store = res.store()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(QUESTION_PARTITIONS_NAME, [f"d__q{i}" for i in range(5)])
        FAIL.add("d__q2")
        result = dg.materialize([answers], instance=instance, resources={"benchmark": res})
        assert result.success
        assert len(CALLS) == 8  # 4 loadable questions x 2 units; q4 never reaches compute
        rows = store.query("SELECT partition_key, unit, status, error FROM answers ORDER BY ALL").to_pylist()
        assert len(rows) == 10
        failed = {(r["partition_key"], r["unit"]) for r in rows if r["status"] == "failed"}
        assert failed == {("d__q2", "sys_a"), ("d__q2", "sys_b"), ("d__q4", "sys_a"), ("d__q4", "sys_b")}
        assert any("missing field 'question'" in (r["error"] or "") for r in rows)
        assert instance.get_materialized_partitions(dg.AssetKey("answers")) == {"d__q0", "d__q1", "d__q3"}

        # second run: only the failed question is recomputed; no duplicate rows
        FAIL.clear()
        CALLS.clear()
        assert dg.materialize([answers], instance=instance, resources={"benchmark": res}).success
        assert CALLS == ["d__q2/sys_a", "d__q2/sys_b"]
        counts = store.query("SELECT partition_key, count(*) AS n FROM answers GROUP BY 1").to_pylist()
        assert all(c["n"] == 2 for c in counts)
        progress = store.query("SELECT partition_key, status FROM progress WHERE stage='answers' ORDER BY 1")
        assert progress.column("status").to_pylist() == ["done", "done", "done", "done", "failed"]


def test_partitioned_run_of_a_failing_question_fails_the_run(setup: tuple[BenchmarkResource, Path]) -> None:
    res, _ = setup
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(QUESTION_PARTITIONS_NAME, [f"d__q{i}" for i in range(5)])
        FAIL.add("d__q1")
        result = dg.materialize(
            [answers],
            instance=instance,
            resources={"benchmark": res},
            partition_key="d__q1",
            raise_on_error=False,
        )
        assert not result.success
        FAIL.clear()
        ok = dg.materialize([answers], instance=instance, resources={"benchmark": res}, partition_key="d__q1")
        assert ok.success
        assert "d__q1" in instance.get_materialized_partitions(dg.AssetKey("answers"))
