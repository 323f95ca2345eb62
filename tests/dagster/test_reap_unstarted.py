"""A run killed before RUN_START is reaped like a killed started run (issue 24 item 4).

``dagster job execute`` creates its run (NOT_STARTED, with the planned materializations of every
partition) and only then starts it. A ``kill -9`` in between left the run NOT_STARTED for ever
and its partitions IN_PROGRESS until another run materialized them. Here a real process loads
the definitions, creates the run the way the CLI does (the job's tags), and is killed; a later
membench step's reaper (``reap_dead_runs``, called by every step) must mark it failed, while a
NOT_STARTED run whose process is alive is left alone.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from assets.layout import reap_dead_runs
from pipeline.config.model import load_config
from pipeline.definitions import partition_keys
from tests.support.dagster import lme_sample_config
from tests.support.paths import PROJECT_ROOT

CREATE_AND_DIE = """
import os, signal, sys
import dagster as dg
from pipeline.definitions import build_defs
job = build_defs(sys.argv[1]).resolve_job_def("full_benchmark")
with dg.DagsterInstance.get() as instance:
    run = instance.create_run_for_job(job, tags=job.run_tags)
    print(run.run_id, flush=True)
    if sys.argv[2] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()  # stay alive until the test closes stdin
"""


def _config(tmp_path: Path) -> Path:
    return lme_sample_config(tmp_path, "reap", memory_systems=[{"name": "full", "kind": "full_context"}])


def _spawn(config: Path, env: dict[str, str], mode: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CREATE_AND_DIE, str(config), mode],
        cwd=PROJECT_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert run_id, "the child did not create a run"
    return proc, run_id


def test_a_run_killed_before_run_start_is_reaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "configs" / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    env = {**os.environ, "DAGSTER_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    config = _config(tmp_path)
    keys = partition_keys(load_config(str(config)))
    dead, dead_id = _spawn(config, env, "die")
    assert dead.wait(timeout=300) == -signal.SIGKILL
    alive, alive_id = _spawn(config, env, "live")
    try:
        with dg.DagsterInstance.get() as instance:
            run = instance.get_run_by_id(dead_id)
            assert run is not None and run.status == dg.DagsterRunStatus.NOT_STARTED
            answers = dg.AssetKey(["reap", "answers"])
            before = instance.get_status_by_partition(answers, keys, dg.StaticPartitionsDefinition(keys)) or {}
            assert set(before.values()) == {dg.AssetPartitionStatus.IN_PROGRESS}

            assert reap_dead_runs(instance, exclude="") == [dead_id]

            reaped = instance.get_run_by_id(dead_id)
            assert reaped is not None and reaped.status == dg.DagsterRunStatus.FAILURE
            live = instance.get_run_by_id(alive_id)
            assert live is not None and live.status == dg.DagsterRunStatus.NOT_STARTED  # its process is alive
            instance.report_run_failed(live, "test: done with the live run")  # ends the other in-progress run
            after = instance.get_status_by_partition(answers, keys, dg.StaticPartitionsDefinition(keys)) or {}
            assert dg.AssetPartitionStatus.IN_PROGRESS not in set(after.values()), after
    finally:
        assert alive.stdin is not None
        alive.stdin.close()
        alive.wait(timeout=60)
