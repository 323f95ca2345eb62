"""Dagster partition status equals the ``progress`` view after every run mode (issue 9).

The real definitions of a config (pipeline/definitions.py: static partitions read from the source
file, one asset per stage, the run gate) run on the LongMemEval oracle sample with an LLM reader
against the project's fake OpenAI-compatible server. Two questions' reader calls fail with a
non-retryable HTTP 400; every other call succeeds. Modes: the partition-less
``full_benchmark`` job (a run over the whole range), a range run of 4 questions, a single
partition, and a rerun after the faults stop. Status is read through the Dagster instance API.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from assets.run_gate import RANGE_END_TAG, RANGE_START_TAG
from pipeline.config.model import load_config
from pipeline.definitions import build_defs, partition_keys
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server
from pipeline.store.results import ResultStore
from resources.event_log import BATCH_SIZE_ENV, BatchingSqliteEventLogStorage
from tests.support.dagster import FAILING, FAILING_KEYS, status_config, status_mismatches

STAGES = ["ingestion", "retrievals", "answers", "judgments"]


@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="A golden retriever.") as srv:
        for text in FAILING:
            srv.add_rule(text, "unused", faults=[Fault.server_error(400)] * 50)
        yield srv


def _job(config: Path, name: str = "full_benchmark") -> dg.JobDefinition:
    return build_defs(str(config)).resolve_job_def(name)


def _stage_job(config: Path) -> dg.JobDefinition:
    defs = build_defs(str(config))
    stages = dg.AssetSelection.assets(*[dg.AssetKey(["status", s]) for s in STAGES])
    return dg.Definitions(
        assets=defs.assets, resources=defs.resources, jobs=[dg.define_asset_job("stages", selection=stages)]
    ).resolve_job_def("stages")


def _materialized(instance: dg.DagsterInstance, stage: str, run_id: str) -> set[str]:
    """The partitions of ``stage`` that run ``run_id`` materialized (read from the instance)."""
    records = instance.fetch_materializations(dg.AssetKey(["status", stage]), limit=1000).records
    return {r.partition_key for r in records if r.run_id == run_id and r.partition_key}


def _store(tmp_path: Path) -> ResultStore:
    return ResultStore(results_dir=str(tmp_path / "res"))


def _instance(storage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dg.DagsterInstance:
    """A test instance on Dagster's stock storage, or on the shipped one with batched event writes."""
    if storage == "stock":
        return dg.instance_for_test()
    monkeypatch.setenv(BATCH_SIZE_ENV, "1000")
    custom = {"module": "resources.event_log", "class": "MembenchSqliteStorage"}
    custom["config"] = {"base_dir": str(tmp_path / "dagster_storage")}  # type: ignore[assignment]
    return dg.instance_for_test(overrides={"storage": {"custom": custom}})


@pytest.mark.parametrize("storage", ["stock", "batched"])
def test_status_equals_progress_in_every_run_mode(
    tmp_path: Path, server: FakeOpenAIServer, storage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = status_config(tmp_path, server.base_url)
    keys = partition_keys(load_config(str(config)))
    assert len(keys) == 8 and set(keys) >= FAILING_KEYS
    store = _store(tmp_path)
    with _instance(storage, tmp_path, monkeypatch) as instance:
        if storage == "batched":
            assert type(instance.event_log_storage) is BatchingSqliteEventLogStorage
        # 1. the partition-less job: one run over every question; it fails because 2 questions did
        sweep = _job(config).execute_in_process(instance=instance, raise_on_error=False)
        assert not sweep.success
        assert sweep.dagster_run.tags["membench/config"] == "status"
        assert len(sweep.dagster_run.tags["membench/config_hash"]) == 12
        assert status_mismatches(instance, "status", keys, store) == []
        answers = instance.get_status_by_partition(
            dg.AssetKey(["status", "answers"]), keys, dg.StaticPartitionsDefinition(keys)
        )
        assert {k for k, v in answers.items() if v == dg.AssetPartitionStatus.FAILED} == FAILING_KEYS
        assert sum(v == dg.AssetPartitionStatus.MATERIALIZED for v in answers.values()) == 6
        # the failed steps are the checks of the stages that lost questions, not the report
        failures = {f.step_key: f for f in sweep.get_step_failure_events()}
        assert set(failures) == {"status__answers_no_failed_units", "status__judgments_no_failed_units"}
        message = failures["status__answers_no_failed_units"].step_failure_data.error.message  # type: ignore[union-attr]
        assert "answers: 2 of 8 questions of this run failed" in message
        # a failed question has no materialization in the run: its error is on its partition as an observation
        materialized = _materialized(instance, "answers", sweep.run_id)
        assert materialized == set(keys) - FAILING_KEYS
        [obs] = instance.fetch_observations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(["status", "answers"]), asset_partitions=["lme__5d1c2a7e"]),
            limit=1,
        ).records
        meta = obs.asset_observation.metadata  # type: ignore[union-attr]
        assert meta["status"].value == "failed" and "400" in str(meta["error"].value)

        # 2. a range run of 4 questions, one of which still fails
        rng = (keys[0], keys[3])
        ranged = _stage_job(config).execute_in_process(
            instance=instance, raise_on_error=False, tags={RANGE_START_TAG: rng[0], RANGE_END_TAG: rng[1]}
        )
        assert not ranged.success
        assert status_mismatches(instance, "status", keys, store) == []

        # 3. the faults stop; one failed question alone, then everything
        server.rules.clear()
        single = _stage_job(config).execute_in_process(instance=instance, partition_key="lme__5d1c2a7e")
        assert single.success
        assert status_mismatches(instance, "status", keys, store) == []
        rerun = _job(config).execute_in_process(instance=instance)
        assert rerun.success
        assert status_mismatches(instance, "status", keys, store) == []
        done = instance.get_status_by_partition(
            dg.AssetKey(["status", "judgments"]), keys, dg.StaticPartitionsDefinition(keys)
        )
        assert set(done.values()) == {dg.AssetPartitionStatus.MATERIALIZED}


def test_dead_endpoint_stops_the_stage_and_fails_the_run(tmp_path: Path) -> None:
    with running_fake_server() as srv:
        dead_url = srv.base_url  # the server stops at the end of the block: nothing listens there
    config = status_config(tmp_path, dead_url, stop_after_unreachable=3)
    keys = partition_keys(load_config(str(config)))
    store = _store(tmp_path)
    with dg.instance_for_test() as instance:
        result = _job(config).execute_in_process(instance=instance, raise_on_error=False)
        assert not result.success
        rows = store.query("SELECT partition_key, error FROM answers WHERE status = 'failed'").to_pylist()
        assert {r["partition_key"] for r in rows} == set(keys)  # every question failed, none dropped
        tried = [r for r in rows if not r["error"].startswith("not attempted")]
        assert len(tried) == 3 and all("connection error" in r["error"] for r in tried)
        # no failed question is materialized; the stage's check says why it stopped
        assert _materialized(instance, "answers", result.run_id) == set()
        [check] = [
            e.asset_check_evaluation_data
            for e in result.all_events
            if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
            and e.asset_check_evaluation_data.asset_key.path[-1] == "answers"
            and e.asset_check_evaluation_data.check_name == "no_failed_units"
        ]
        assert not check.passed and check.metadata["failed_questions"].value == len(keys)
        assert "stopped after 3 consecutive questions" in str(check.metadata["failed"].value)
        assert status_mismatches(instance, "status", keys, store) == []
