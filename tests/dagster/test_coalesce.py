"""Work over a whole results folder is not repeated by concurrent runs (issue 27 target 2).

Counted, not timed: K requesters that arrive while the work lock is held cost one rebuild; the run
that ends while other chunks of its config still run leaves the report to the last of them.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from assets.layout import TAG_CONFIG, TAG_HOST, TAG_PID, TAG_PID_STARTED
from assets.run_gate import RANGE_END_TAG, RANGE_START_TAG
from assets.run_peers import peers_running, peers_still_running
from pipeline.store.results import CATALOG_WORK, ResultStore, open_catalog
from pipeline.util.coalesce import CoalesceCounts, Coalescer
from pipeline.util.filelock import file_lock

K = 4


def _all_waiting(coalescer: Coalescer, n: int, threads: list[threading.Thread]) -> None:
    """Block until ``n`` tickets were issued (every requester is past its writes and waits for the lock)."""
    done = threading.Event()
    while not done.wait(0.01):  # a poll on a counter, not a timing assumption
        if (coalescer.root / f".{coalescer.name}.tickets").exists() and coalescer._issued() >= n:
            done.set()
        if not any(t.is_alive() for t in threads):
            raise AssertionError("a requester ended while the lock was held")


def _requesters_behind_a_held_lock(coalescer: Coalescer, request: Callable[[int], object]) -> list[object]:
    """K threads call ``request(i)`` while the test holds the work lock; then the lock is let go."""
    results: list[object] = [None] * K
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            results[i] = request(i)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(K)]
    issued_before = coalescer._issued()  # tickets of earlier requests (a first refresh) are not these K
    with file_lock(coalescer.root / f".{coalescer.name}.lock"):  # another process rebuilding, say
        for t in threads:
            t.start()
        _all_waiting(coalescer, issued_before + K, threads)
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def test_requests_that_wait_together_cost_one_run_of_the_work(tmp_path: Path) -> None:
    coalescer = Coalescer(tmp_path, "work")
    runs: list[int] = []

    def work() -> str:
        runs.append(1)
        return "fresh"

    results = _requesters_behind_a_held_lock(coalescer, lambda i: coalescer.run(work, lambda: "reused"))
    assert len(runs) == 1
    assert sorted(map(str, results)) == ["fresh"] + ["reused"] * (K - 1)
    assert coalescer.counts() == CoalesceCounts(done=1, skipped=K - 1)
    # a request after that (new writes) runs the work again: its ticket is not covered
    assert coalescer.run(work, lambda: "reused") == "fresh"
    assert coalescer.counts() == CoalesceCounts(done=2, skipped=K - 1)


def test_work_is_done_again_when_its_result_cannot_be_reused(tmp_path: Path) -> None:
    coalescer = Coalescer(tmp_path, "work")
    results = _requesters_behind_a_held_lock(coalescer, lambda i: coalescer.run(lambda: "fresh", lambda: None))
    assert results == ["fresh"] * K
    assert coalescer.counts() == CoalesceCounts(done=K, skipped=0)


def _questions(keys: list[str]) -> pa.Table:
    return pa.table({"dataset": ["d"] * len(keys), "partition_key": keys, "question_id": keys})


def test_k_runs_refreshing_the_catalog_together_rebuild_it_once_with_all_their_files(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    store.write(store.canonical_path("d0", "questions"), _questions(["d0__q"]))
    store.refresh_catalog()
    before = Coalescer(store.root, CATALOG_WORK).counts()

    def run(i: int) -> list[str]:
        store.write(store.canonical_path(f"d{i + 1}", "questions"), _questions([f"d{i + 1}__q"]))  # its results
        return store.refresh_catalog()

    results = _requesters_behind_a_held_lock(Coalescer(store.root, CATALOG_WORK), run)
    after = Coalescer(store.root, CATALOG_WORK).counts()
    assert (after.done - before.done, after.skipped - before.skipped) == (1, K - 1)
    assert all("questions" in views for views in results)  # type: ignore[operator]
    con = open_catalog(store.catalog_path)
    try:
        assert con.execute("SELECT count(*) FROM questions").fetchone() == (K + 1,)
    finally:
        con.close()


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as inst:
        yield inst


KEYS = [f"lme__q{i}" for i in range(8)]
PARTS = dg.StaticPartitionsDefinition(KEYS)


def _run(instance: dg.DagsterInstance, first: int, last: int, **tags: str) -> dg.DagsterRun:
    """A STARTED run of config ``bench`` over KEYS[first..last], its process alive on this host."""
    process = {TAG_HOST: socket.gethostname(), TAG_PID: "1", TAG_PID_STARTED: _pid1_started()}
    tags = {TAG_CONFIG: "bench", RANGE_START_TAG: KEYS[first], RANGE_END_TAG: KEYS[last], **process, **tags}
    run = dg.DagsterRun(
        job_name="full_benchmark", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED, tags=tags
    )
    return instance.add_run(run)


def _pid1_started() -> str:
    import psutil

    return f"{psutil.Process(1).create_time():.3f}"


def test_only_the_last_chunk_of_a_backfill_to_end_refreshes_the_report(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    runs = [_run(instance, 2 * i, 2 * i + 1) for i in range(K)]
    overlapping = _run(instance, 0, 7)  # refused at its first step: never waited for
    other_config = _run(instance, 0, 1, **{TAG_CONFIG: "other"})
    assert other_config.tags[TAG_CONFIG] == "other" and overlapping.run_id
    refreshers = []
    for i, run in enumerate(runs):  # the chunks end one after the other
        later = peers_still_running(instance, run, tmp_path, PARTS)
        assert sorted(later) == sorted(r.run_id for r in runs[i + 1 :])
        if not later:
            refreshers.append(run.run_id)
    assert refreshers == [runs[-1].run_id]


def test_a_killed_chunk_is_not_waited_for(tmp_path: Path, instance: dg.DagsterInstance) -> None:
    mine = _run(instance, 0, 3)
    _run(instance, 4, 7, **{TAG_PID: "999999999"})  # no such process on this host
    assert peers_still_running(instance, mine, tmp_path, PARTS) == []


def test_asking_mid_run_does_not_mark_the_run_ended(tmp_path: Path, instance: dg.DagsterInstance) -> None:
    first, second = _run(instance, 0, 3), _run(instance, 4, 7)
    assert peers_running(instance, first, tmp_path, PARTS) == [second.run_id]  # first's catalog refresh waits
    assert peers_running(instance, second, tmp_path, PARTS) == [first.run_id]  # first has not ended
    assert peers_still_running(instance, first, tmp_path, PARTS) == [second.run_id]
    assert peers_running(instance, second, tmp_path, PARTS) == []  # first ended: second is the last


def _backfill_chunk(instance: dg.DagsterInstance, first: int, last: int, status: dg.DagsterRunStatus) -> dg.DagsterRun:
    """A chunk of a UI backfill: Dagster's implicit asset job, created with no membench tag at all."""
    run = dg.DagsterRun(
        job_name="__ASSET_JOB",
        run_id=str(uuid.uuid4()),
        status=status,
        tags={RANGE_START_TAG: KEYS[first], RANGE_END_TAG: KEYS[last]},
        asset_selection=frozenset({dg.AssetKey(["bench", "answers"])}),
    )
    return instance.add_run(run)


def _claimed(instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    """What a chunk's first step does (check_scope): tag the run with its config and process."""
    process = {TAG_HOST: socket.gethostname(), TAG_PID: "1", TAG_PID_STARTED: _pid1_started()}
    instance.add_run_tags(run.run_id, {TAG_CONFIG: "bench", **process})


def test_backfill_chunks_tagged_after_launch_still_leave_the_report_to_the_last(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    """Issue 38 item 2: each step holds the launch-time snapshot of its run, without the config tag its
    first step added, and the other chunks are untagged until they start; every chunk then refreshed.
    """
    started = [_backfill_chunk(instance, 2 * i, 2 * i + 1, dg.DagsterRunStatus.STARTED) for i in range(K - 1)]
    # not started yet (the UI shows it queued; a QUEUED test run would need a code location origin)
    queued = _backfill_chunk(instance, 2 * (K - 1), 2 * K - 1, dg.DagsterRunStatus.NOT_STARTED)
    other_config = _backfill_chunk(instance, 0, 1, dg.DagsterRunStatus.NOT_STARTED)
    instance.add_run_tags(other_config.run_id, {TAG_CONFIG: "other"})
    for run in started:
        _claimed(instance, run)
    snapshots = [*started, queued]  # as each step's context.run holds them: no membench tag
    assert all(TAG_CONFIG not in r.tags for r in snapshots)

    assert sorted(peers_running(instance, started[0], tmp_path, PARTS)) == sorted(
        r.run_id for r in snapshots[1:]
    )  # the queued chunk, not claimed yet, is a peer; the other config's run is not
    refreshers = []
    for i, run in enumerate(snapshots):  # the chunks end one after the other
        if run is queued:
            _claimed(instance, run)
        later = peers_still_running(instance, run, tmp_path, PARTS)
        assert sorted(later) == sorted(r.run_id for r in snapshots[i + 1 :])
        if not later:
            refreshers.append(run.run_id)
    assert refreshers == [queued.run_id]
