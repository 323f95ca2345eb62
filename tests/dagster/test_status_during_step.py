"""Dagster shows a question done while its stage step is still running (issue 38 item 4).

A stage step may run for hours; its questions' partition events were logged when it ended, so the
UI showed no progress during it, and after a kill ``progress`` and Dagster disagreed. Here the fake
endpoint answers two questions at once and holds every other reply until the test releases it:
while the answers step is certainly still running (six replies held), Dagster must already show
the two answered questions materialized, as the ``progress`` view calls them done. No sleeps decide
anything: the test waits (bounded) for the status to change, and fails if the run ends first.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import dagster as dg

from pipeline.config.model import load_config
from pipeline.definitions import build_defs, partition_keys
from pipeline.llm.fake_server import FakeOpenAIServer
from pipeline.store.results import ResultStore
from tests.support.dagster import FAILING, FAILING_KEYS, status_config, status_mismatches

WAIT_S = 600.0  # a bound, not a timing: the status normally changes within seconds


def _answers_status(instance: dg.DagsterInstance, keys: list[str]) -> dict[str, dg.AssetPartitionStatus]:
    status = instance.get_status_by_partition(
        dg.AssetKey(["status", "answers"]), keys, dg.StaticPartitionsDefinition(keys)
    )
    return dict(status or {})


def _answers_step_ended(instance: dg.DagsterInstance) -> bool:
    [run] = instance.get_runs()
    ends = instance.all_logs(run.run_id, of_type={dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE})
    return any(e.step_key == "status__answers" for e in ends)


def _done_in_progress_view(store: ResultStore) -> set[str]:
    rows = store.query("SELECT partition_key FROM progress WHERE stage = 'answers' AND status = 'done'").to_pylist()
    return {r["partition_key"] for r in rows}


def test_answered_questions_read_materialized_while_the_step_runs(tmp_path: Path) -> None:
    server = FakeOpenAIServer(default_reply="A golden retriever.", default_delay_s=3600).start()
    release = threading.Event()
    server.stopping = release  # every reply but the two below waits on this event
    for text in FAILING:  # these two questions are answered at once
        server.add_rule(text, "A golden retriever.")
    result: list[dg.ExecuteInProcessResult] = []
    try:
        config = status_config(tmp_path, server.base_url, max_concurrency=8, timeout_s=3600)
        keys = partition_keys(load_config(str(config)))
        store = ResultStore(results_dir=str(tmp_path / "res"))
        with dg.instance_for_test() as instance:
            job = build_defs(str(config)).resolve_job_def("full_benchmark")
            runner = threading.Thread(
                target=lambda: result.append(job.execute_in_process(instance=instance, raise_on_error=False))
            )
            runner.start()
            deadline = time.monotonic() + WAIT_S
            status: dict[str, dg.AssetPartitionStatus] = {}
            while time.monotonic() < deadline and runner.is_alive():
                status = _answers_status(instance, keys)
                if all(status.get(k) == dg.AssetPartitionStatus.MATERIALIZED for k in FAILING_KEYS):
                    break
                release.wait(0.1)
            assert runner.is_alive(), "the run ended before the replies were released"
            assert not _answers_step_ended(instance)  # the held replies keep it running
            assert {k for k, v in status.items() if v == dg.AssetPartitionStatus.MATERIALIZED} == FAILING_KEYS
            assert _done_in_progress_view(store) == FAILING_KEYS  # Dagster says what progress says
            assert server.request_count < len(keys) * 2  # the other replies are still held: the step runs
            release.set()
            runner.join(timeout=WAIT_S)
            assert not runner.is_alive() and result and result[0].success
            assert status_mismatches(instance, "status", keys, store) == []
    finally:
        release.set()
        server.stop()
