"""A renamed memory system through the real definitions (Dagster, in process, offline).

The LongMemEval oracle sample, two offline systems; the second's answers and judgments stored as
failed (what an endpoint outage leaves), then the system renamed in the config. The next run fails
on those questions and its check step names the old system and ``membench forget``; after
``membench forget old --yes`` the next run succeeds, and Dagster's partition status still equals
the ``progress`` view at every step.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.cli.main import main
from pipeline.config.model import load_config
from pipeline.definitions import build_defs, partition_keys
from pipeline.kinds.resolve import load_benchmark
from pipeline.store.results import ResultStore
from tests.support.dagster import status_mismatches
from tests.support.paths import PROJECT_ROOT

HINT = "`membench forget old` removes them"


def _config(tmp_path: Path, systems: tuple[str, ...]) -> Path:
    dataset = {
        "name": "lme",
        "loader": "longmemeval",
        "path": str(PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"),
    }
    cfg = {
        "results_dir": str(tmp_path / "res"),
        "datasets": [dataset],
        "memory_systems": [{"name": s, "kind": "full_context"} for s in systems],
    }
    path = tmp_path / "ren.yaml"
    path.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    load_benchmark.cache_clear()  # resolved once per path and process: the same file now says otherwise
    return path


def _fail_rows(store: ResultStore, stage: str, system: str) -> None:
    """Store ``system``'s rows of ``stage`` as failed (atomic rewrite, as a failed run leaves them)."""
    for path in sorted((store.parquet_root / stage).glob("*.parquet")):
        table = pq.read_table(path)
        mine = pc.starts_with(table.column("unit"), f"{system}/")
        status = pc.if_else(mine, pa.scalar("failed"), table.column("status"))
        error = pc.if_else(mine, pa.scalar("reader timed out"), table.column("error"))
        table = table.set_column(table.schema.get_field_index("status"), "status", status)
        table = table.set_column(table.schema.get_field_index("error"), "error", error)
        store.write_partition(stage, path.stem, table)


def _run(config: Path, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    return (
        build_defs(str(config))
        .resolve_job_def("full_benchmark")
        .execute_in_process(instance=instance, raise_on_error=False)
    )


def test_rename_then_forget_through_dagster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # forget --yes asks it for live runs: not the shell's
    config = _config(tmp_path, ("full", "old"))
    keys = partition_keys(load_config(str(config)))
    store = ResultStore(results_dir=str(tmp_path / "res"))
    with dg.instance_for_test() as instance:
        assert _run(config, instance).success
        for stage in ("answers", "judgments"):
            _fail_rows(store, stage, "old")
        config = _config(tmp_path, ("full", "new"))  # the rename

        renamed = _run(config, instance)
        assert not renamed.success
        failures = {f.step_key: f for f in renamed.get_step_failure_events()}
        assert set(failures) == {"ren__answers_no_failed_units", "ren__judgments_no_failed_units"}
        message = failures["ren__answers_no_failed_units"].step_failure_data.error.message  # type: ignore[union-attr]
        assert f"answers: {len(keys)} of {len(keys)} questions of this run failed" in message and HINT in message
        assert status_mismatches(instance, "ren", keys, store) == []

        assert main(["--config", str(config), "forget", "old", "--yes"]) == 0
        assert "removed" in capsys.readouterr().out
        again = _run(config, instance)
        assert again.success
        assert status_mismatches(instance, "ren", keys, store) == []
    failed = store.query("SELECT sum(failed) AS n FROM progress_summary").column("n")[0].as_py()
    assert failed == 0
