"""A backfill of failed partitions launched the way the UI launches it, read back the way the UI reads
it: a real ``dagster dev`` (webserver + daemon, the project's dagster.yaml) on a free port and its
GraphQL API.

Two questions' reader calls fail (HTTP 400 from the project's fake OpenAI-compatible server), so the
first run leaves them Failed. One recovers before the backfill, the other still fails in it:

- the backfill must not end ``COMPLETED_SUCCESS`` (issue 28 item 1);
- the failed question's partition page (the UI's own query) shows no materialization, the failed
  run as its latest run, and the question's status and error (item 2); the recovered one is
  Materialized with its own metadata, not the whole run's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from pipeline.config.model import load_config
from pipeline.definitions import build_defs, partition_keys
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server
from tests.support.dagster import lme_sample_config
from tests.support.paths import PROJECT_ROOT

STILL_FAILING = ("What breed is the dog I adopted?", "lme__5d1c2a7e")
RECOVERS = ("Where do I work now?", "lme__e0f4c6d9")
TERMINAL = {"COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED", "COMPLETED"}

LAUNCH = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidStepError { invalidStepKey }
    ... on UnauthorizedError { message }
  }
}"""
BACKFILL = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status numPartitions runs(limit: 20) { id status } }
  }
}"""
# the fields of the UI's partition page query (AssetPartitionDetailQuery) this test reads
PARTITION_PAGE = """
query($key: AssetKeyInput!, $partition: String!) {
  assetOrError(assetKey: $key) {
    ... on Asset {
      definition { latestRunForPartition(partition: $partition) { id status } }
      assetEventHistory(partitions: [$partition], limit: 100,
                        eventTypeSelectors: [MATERIALIZATION, OBSERVATION, FAILED_TO_MATERIALIZE]) {
        results {
          __typename
          ... on MaterializationEvent { runId metadataEntries { label ...V } }
          ... on ObservationEvent { runId metadataEntries { label ...V } }
        }
      }
    }
  }
}
fragment V on MetadataEntry {
  ... on TextMetadataEntry { text }
  ... on IntMetadataEntry { intValue }
  ... on BoolMetadataEntry { boolValue }
}"""
STATUSES = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode { assetPartitionStatuses {
      ... on DefaultPartitionStatuses { materializedPartitions failedPartitions } } }
  }
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gql(port: int, query: str, **variables: Any) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        out = json.loads(resp.read())
    assert "errors" not in out, out
    return out["data"]


def _wait(what: str, fn: Any, timeout: float, proc: subprocess.Popen[bytes]) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, f"dagster dev exited while waiting for {what}"
        try:
            value = fn()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def _dagster_dev(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """A real ``dagster dev`` (webserver, daemon, code server) on a free port; all of it ended after."""
    port = _free_port()
    proc = subprocess.Popen(
        [str(PROJECT_ROOT / ".venv/bin/dagster"), "dev", "-h", "127.0.0.1", "-p", str(port)],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "dagster_dev.log").open("wb"),
        start_new_session=True,
    )
    try:
        yield port, proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # dagster dev and the webserver, daemon and code server it started
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="A golden retriever.") as srv:
        for text in (STILL_FAILING[0], RECOVERS[0]):
            srv.add_rule(text, "unused", faults=[Fault.server_error(400)] * 500)
        yield srv


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "configs" / "dagster.yaml", home / "dagster.yaml")
    return home


def _entries(event: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for e in event["metadataEntries"]:
        out[e["label"]] = next((e[k] for k in ("text", "intValue", "boolValue") if k in e), None)
    return out


def test_backfill_with_failed_questions_is_not_a_success(
    tmp_path: Path, server: FakeOpenAIServer, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = {"base_url": server.base_url, "model": "fake-model", "api_key_env": "MEMBENCH_TEST_KEY", "max_retries": 0}
    config = lme_sample_config(
        tmp_path,
        "bf",
        memory_systems=[{"name": "full", "kind": "full_context"}],
        readers=[{"name": "llm", "kind": "llm"}],
        judges=[{"name": "contains", "kind": "lme_contains_normalized"}],
        llm=llm,
    )
    keys = partition_keys(load_config(str(config)))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("MEMBENCH_CONFIG", str(config))
    with dg.DagsterInstance.get() as instance:  # the first run, as `dagster job execute` would do it
        first = (
            build_defs(str(config))
            .resolve_job_def("full_benchmark")
            .execute_in_process(instance=instance, raise_on_error=False)
        )
    assert not first.success
    with server.lock:  # one of the two failed questions recovers; the other still fails
        server.rules[:] = [r for r in server.rules if r.match == STILL_FAILING[0]]

    env = {**os.environ, "DAGSTER_HOME": str(home), "MEMBENCH_CONFIG": str(config)}
    with _dagster_dev(tmp_path, env) as (port, proc):
        stage_keys = [{"path": ["bf", s]} for s in ("answers", "judgments")]
        _wait("the code location", lambda: _gql(port, STATUSES, key=stage_keys[0])["assetNodeOrError"], 300, proc)
        failed = set(
            _gql(port, STATUSES, key=stage_keys[0])["assetNodeOrError"]["assetPartitionStatuses"]["failedPartitions"]
        )
        assert failed == {STILL_FAILING[1], RECOVERS[1]}

        # the UI's "backfill failed partitions" of answers and judgments
        params = {"partitionNames": sorted(failed), "assetSelection": stage_keys, "fromFailure": False}
        launched = _gql(port, LAUNCH, params=params)["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        backfill_id = launched["backfillId"]

        def done() -> dict[str, Any] | None:
            b = _gql(port, BACKFILL, id=backfill_id)["partitionBackfillOrError"]
            return b if b["status"] in TERMINAL else None

        backfill = _wait("the backfill to end", done, 900, proc)
        # two runs (the two partitions are not one range): the recovered question's succeeds, the other's fails
        assert sorted(r["status"] for r in backfill["runs"]) == ["FAILURE", "SUCCESS"], backfill
        assert backfill["status"] == "COMPLETED_FAILED", backfill  # not COMPLETED_SUCCESS

        statuses = _gql(port, STATUSES, key=stage_keys[0])["assetNodeOrError"]["assetPartitionStatuses"]
        assert statuses["failedPartitions"] == [STILL_FAILING[1]]
        assert set(statuses["materializedPartitions"]) == set(keys) - {STILL_FAILING[1]}

        page = _gql(port, PARTITION_PAGE, key=stage_keys[0], partition=STILL_FAILING[1])["assetOrError"]
        events = page["assetEventHistory"]["results"]
        assert not [e for e in events if e["__typename"] == "MaterializationEvent"]  # no "Materialized" badge
        assert page["definition"]["latestRunForPartition"]["status"] == "FAILURE"  # the "Run ... failed" banner
        latest = _entries(next(e for e in events if e["__typename"] == "ObservationEvent"))
        assert latest["status"] == "failed" and "400" in latest["error"]
        assert latest["question"] == STILL_FAILING[1]

        page = _gql(port, PARTITION_PAGE, key=stage_keys[0], partition=RECOVERS[1])["assetOrError"]
        [mat] = [e for e in page["assetEventHistory"]["results"] if e["__typename"] == "MaterializationEvent"]
        meta = _entries(mat)
        assert meta["status"] == "ok" and meta["question"] == RECOVERS[1] and meta["units_failed"] == 0


def test_concurrent_backfill_runs_all_succeed(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 38 item 1, for real: a UI backfill of the four per-question stages in chunks of 2
    questions, 3 runs at a time, under ``dagster dev``. Backfill runs are the implicit asset job
    with Dagster's multiprocess executor (each step its own process); every run must succeed and
    every partition be materialized. Before, the first step of one run reaped another run whose
    tagged process (a step that had ended) was gone: runs ended failed with their questions done.
    """
    config = lme_sample_config(
        tmp_path,
        "cbf",
        memory_systems=[{"name": "full", "kind": "full_context"}],
        readers=[{"name": "offline", "kind": "offline"}],
    )
    keys = partition_keys(load_config(str(config)))
    yaml_text = (home / "dagster.yaml").read_text().replace("max_concurrent_runs: 1", "max_concurrent_runs: 3")
    (home / "dagster.yaml").write_text(yaml_text)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("MEMBENCH_CONFIG", str(config))
    with dg.DagsterInstance.get() as instance:  # canonical and embeddings first, as a first run would
        first = build_defs(str(config)).resolve_job_def("full_benchmark").execute_in_process(instance=instance)
    assert first.success

    env = {**os.environ, "DAGSTER_HOME": str(home), "MEMBENCH_CONFIG": str(config), "MEMBENCH_BACKFILL_CHUNK": "2"}
    with _dagster_dev(tmp_path, env) as (port, proc):
        stage_keys = [{"path": ["cbf", s]} for s in ("ingestion", "retrievals", "answers", "judgments")]
        _wait("the code location", lambda: _gql(port, STATUSES, key=stage_keys[0])["assetNodeOrError"], 300, proc)
        params = {"partitionNames": sorted(keys), "assetSelection": stage_keys, "fromFailure": False}
        launched = _gql(port, LAUNCH, params=params)["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        backfill_id = launched["backfillId"]

        def done() -> dict[str, Any] | None:
            b = _gql(port, BACKFILL, id=backfill_id)["partitionBackfillOrError"]
            return b if b["status"] in TERMINAL and len(b["runs"]) == len(keys) // 2 else None

        backfill = _wait("the backfill to end", done, 1500, proc)
        assert [r["status"] for r in backfill["runs"]] == ["SUCCESS"] * (len(keys) // 2), backfill
        assert backfill["status"] == "COMPLETED_SUCCESS", backfill
        for key in stage_keys:
            statuses = _gql(port, STATUSES, key=key)["assetNodeOrError"]["assetPartitionStatuses"]
            assert statuses["failedPartitions"] == [] and set(statuses["materializedPartitions"]) == set(keys)
