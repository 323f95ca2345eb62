"""A run is tagged with its run worker's process, not with the process of one of its steps (issue 38 item 1).

Dagster's multiprocess executor, the default of the implicit asset job that UI backfills run,
starts each step in a ``multiprocessing`` spawn child that exits when the step ends. The run's
process tag named that child, so the next step of any other run reaped the live run as "gone
(killed)". Here a real spawn child (how the executor starts a step) takes the tags; after it
exits, the run's process must still be alive. A run killed between RUN_START and its first step's
claim (STARTED, no process tag) is reaped by its creator, and ``membench forget`` no longer sees
it as running (items 6).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from assets.layout import TAG_PID, _process_gone, _process_tags, reap_dead_runs, run_worker_pid
from assets.run_claim import live_run_of
from tests.support.dagster import lme_sample_config
from tests.support.paths import PROJECT_ROOT


def _tags_in_child(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put((_process_tags(), os.getpid()))


def test_a_step_child_tags_the_run_worker_which_outlives_the_step() -> None:
    ctx = multiprocessing.get_context("spawn")  # the executor's default start method
    queue = ctx.Queue()
    child = ctx.Process(target=_tags_in_child, args=(queue,))
    child.start()
    tags, child_pid = queue.get(timeout=120)
    child.join(timeout=120)
    assert child.exitcode == 0
    assert tags[TAG_PID] == str(os.getpid()) != str(child_pid)
    assert not _process_gone(tags)  # the step ended; the run's process did not


def test_in_process_runs_are_their_own_worker() -> None:
    assert run_worker_pid() == os.getpid()
    assert _process_tags()[TAG_PID] == str(os.getpid())


START_AND_DIE = """
import os, signal, sys
import dagster as dg
from dagster._core.events import DagsterEvent, DagsterEventType
from pipeline.definitions import build_defs
job = build_defs(sys.argv[1]).resolve_job_def("full_benchmark")
with dg.DagsterInstance.get() as instance:
    run = instance.create_run_for_job(job, tags=job.run_tags)
    instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_START.value, job_name=run.job_name), run.run_id)
    print(run.run_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_run_killed_after_run_start_before_its_claim_is_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "configs" / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    env = {**os.environ, "DAGSTER_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    config = lme_sample_config(tmp_path, "reap", memory_systems=[{"name": "full", "kind": "full_context"}])
    proc = subprocess.run(
        [sys.executable, "-c", START_AND_DIE, str(config)],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    run_id = proc.stdout.strip()
    with dg.DagsterInstance.get() as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.STARTED and TAG_PID not in run.tags
        assert live_run_of("reap", tmp_path / "res") is None  # membench forget --yes is not refused by a dead run
        assert reap_dead_runs(instance, exclude="") == [run_id]
        reaped = instance.get_run_by_id(run_id)
        assert reaped is not None and reaped.status == dg.DagsterRunStatus.FAILURE
