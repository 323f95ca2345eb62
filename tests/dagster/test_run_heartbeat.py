"""A run's claim and heartbeat in the shared results folder (issue 38 items 3 and 8).

A worker host that dies leaves its run STARTED; the dead-run check saw only processes of its own
host, so the run stayed STARTED for good and refused its questions to every rerun. Here a run of
another host (its host tag names no process here) with a stale heartbeat is reaped and refuses
nothing, while one that still beats is left alone and still holds its questions. The heartbeat
thread renews the file while the run lives and removes it once the run has ended.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest

from assets import run_heartbeat
from assets.layout import TAG_CONFIG, TAG_HEARTBEAT, TAG_HOST, TAG_PID, TAG_PID_STARTED, reap_dead_runs
from assets.run_claim import holding_run, live_run_of
from assets.run_gate import RANGE_END_TAG, RANGE_START_TAG
from assets.run_heartbeat import (
    STALE_ENV,
    Claim,
    heartbeat_path,
    heartbeat_stopped,
    read_claim,
    start_heartbeat,
    write_claim,
)

KEYS = [f"lme__q{i}" for i in range(8)]
OTHER_HOST = "worker-host-that-died"


def _beat_at(path: Path, seconds_ago: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    then = time.time() - seconds_ago
    os.utime(path, (then, then))
    return path


@pytest.mark.parametrize(
    ("age_s", "stale_env", "stopped"),
    [
        (None, "", False),  # no file: not claimed yet, or ended and removed: not known dead
        (1.0, "", False),  # fresh
        (119.0, "", False),  # under the default limit of 120 s
        (180.0, "", True),  # stale: the host stopped beating
        (20.0, "10", True),  # the limit is $MEMBENCH_RUN_STALE_S
        (120.0, "600", False),
    ],
)
def test_a_heartbeat_is_stopped_once_older_than_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, age_s: float | None, stale_env: str, stopped: bool
) -> None:
    monkeypatch.setenv(STALE_ENV, stale_env)
    path = tmp_path / "beat.json"
    if age_s is not None:
        _beat_at(path, age_s)
    assert heartbeat_stopped(path) is stopped


def test_no_heartbeat_tag_is_not_known_dead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STALE_ENV, "not a number")
    assert heartbeat_stopped(None) is False
    with pytest.raises(ValueError, match=STALE_ENV):  # a bad setting names itself
        heartbeat_stopped("/no/such/file")


@pytest.fixture
def instance() -> dg.DagsterInstance:
    with dg.instance_for_test() as inst:
        yield inst


def _other_host_run(instance: dg.DagsterInstance, beat: Path | None, pid: str = "4242") -> dg.DagsterRun:
    """A STARTED run of config ``bench`` over every KEY, claimed by process ``pid`` of another host."""
    tags = {
        TAG_CONFIG: "bench",
        RANGE_START_TAG: KEYS[0],
        RANGE_END_TAG: KEYS[-1],
        TAG_HOST: OTHER_HOST,
        TAG_PID: pid,
        TAG_PID_STARTED: "1.000",
        **({TAG_HEARTBEAT: str(beat)} if beat is not None else {}),
    }
    run = dg.DagsterRun(job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED, tags=tags)
    return instance.add_run(run)


def _rerun(instance: dg.DagsterInstance) -> dg.DagsterRun:
    run = dg.DagsterRun(
        job_name="__ASSET_JOB",
        run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED,
        tags={TAG_CONFIG: "bench", RANGE_START_TAG: KEYS[2], RANGE_END_TAG: KEYS[3]},
    )
    return instance.add_run(run)


def _order() -> dict[str, int]:
    return {k: i for i, k in enumerate(KEYS)}


@pytest.mark.parametrize("pid", ["4242", "this process's pid"])
def test_a_run_of_a_dead_host_is_reaped_and_holds_no_question(
    tmp_path: Path, instance: dg.DagsterInstance, pid: str
) -> None:
    """Also when its pid is this process's (every solo Celery worker, container or pod may be pid 1)."""
    beat = _beat_at(heartbeat_path(tmp_path, "dead"), seconds_ago=3600)
    dead = _other_host_run(instance, beat, str(os.getpid()) if pid == "this process's pid" else pid)
    rerun = _rerun(instance)
    assert holding_run(instance, rerun, "bench", _order) is None
    assert reap_dead_runs(instance, exclude=rerun.run_id) == [dead.run_id]
    reaped = instance.get_run_by_id(dead.run_id)
    assert reaped is not None and reaped.status == dg.DagsterRunStatus.FAILURE
    assert not beat.exists()  # the dead run's claim is gone with it
    failure = instance.all_logs(dead.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    assert OTHER_HOST in (failure[0].message or "")  # the UI says which host stopped beating


def test_a_run_of_a_live_host_is_left_alone_and_still_holds(tmp_path: Path, instance: dg.DagsterInstance) -> None:
    live = _other_host_run(instance, _beat_at(heartbeat_path(tmp_path, "live"), seconds_ago=1), str(os.getpid()))
    unknown = _other_host_run(instance, None)  # claimed without a heartbeat tag: nothing says it died
    rerun = _rerun(instance)
    holder = holding_run(instance, rerun, "bench", _order)
    assert holder is not None and holder.run_id in {live.run_id, unknown.run_id}
    assert reap_dead_runs(instance, exclude=rerun.run_id) == []


def test_the_heartbeat_renews_the_claim_until_the_run_ends_then_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_heartbeat, "BEAT_S", 0.01)
    path = heartbeat_path(tmp_path, "run-1")
    claim = Claim("run-1", "bench", OTHER_HOST, "4242", "1.000", "/home", {RANGE_START_TAG: KEYS[0]})
    write_claim(path, claim)
    assert read_claim(path) == claim
    _beat_at(path, seconds_ago=3600)
    ended = threading.Event()
    asked = threading.Semaphore(0)

    def run_ended() -> bool:
        asked.release()
        return ended.is_set()

    start_heartbeat(path, "run-1", run_ended)
    start_heartbeat(path, "run-1", run_ended)  # a second step of the run in this process: one thread
    assert asked.acquire(timeout=60) and asked.acquire(timeout=60)  # two beats asked: the first renewed the file
    assert not heartbeat_stopped(path)
    assert len([t for t in threading.enumerate() if t.name.startswith("membench-heartbeat-run-1")]) == 1
    ended.set()
    for _ in range(6000):  # bounded: the thread sees the end on its next beat
        if not path.exists():
            break
        time.sleep(0.01)
    assert not path.exists()


def test_a_claim_in_the_folder_is_seen_without_this_instance_knowing_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 8's check for ``membench forget`` and a whole-config run: another Dagster home's live run."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    path = heartbeat_path(tmp_path, "elsewhere")
    write_claim(path, Claim("elsewhere", "bench", OTHER_HOST, "4242", "1.000", "/other/home", {}))
    assert "elsewhere" in (live_run_of("bench", tmp_path) or "")
    assert live_run_of("other-config", tmp_path) is None
    _beat_at(path, seconds_ago=3600)
    assert live_run_of("bench", tmp_path) is None  # stopped beating: dead
