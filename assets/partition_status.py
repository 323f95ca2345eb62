"""Per-question Dagster partition status and metadata from a stage's outcome.

Why by hand: in Dagster 1.13 a step's output covers its whole partition range, and yielding it
materializes every partition of the range with the same (whole-run) metadata; there is no public
way to report that some partitions of a range failed (dagster-io/dagster#17836). A failed
question would then read "Materialized" on its partition page, and a backfill whose runs left
questions failed would end ``COMPLETED_SUCCESS``: the backfill daemon counts as failed only the
partitions its failed runs planned and did not materialize.

So a stage step yields its output (later stages of the run need it) with Dagster's own marker
for "this step logged its asset events itself", and logs them itself as its questions are
recorded, in batches (``QuestionReporter``):

- each question that ended ok: a materialization of its partition with that question's metadata;
- each failed question: no materialization, and an observation of its partition carrying its
  status and error. The run's planned event for that partition stays without materialization;
  the run's last step fails the run (assets/run_gate.py), so Dagster shows exactly those
  partitions Failed ("Run ... failed, and did not materialize this asset" on the partition page),
  and a backfill ends ``COMPLETED_FAILED``.

The next run that succeeds for a question materializes it. The private names come from
resources/dagster_internals.py. ``status_mismatches`` checks the result: the partition status
Dagster shows against the ``progress`` view of the results folder.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

import dagster as dg

from assets.layout import STAGES
from pipeline.run.stage import StageOutcome
from pipeline.store.results import ResultStore
from resources.dagster_internals import (
    EVENTS_LOGGED_BY_STEP,
    DagsterEvent,
    DagsterEventBatchMetadata,
    generate_event_batch_id,
)

MAX_ERROR_CHARS = 4000
BATCH_S = 2.0  # a question's partition event is logged at most this long after it was recorded
MAX_BATCH = 500  # or at once when this many are waiting
MAX_TICKS = 100_000_000  # a bound on the timer's loop; a step ends long before

# the output metadata that stops Dagster from materializing the whole range on its own
OUTPUT_MARKER: Mapping[str, Any] = {EVENTS_LOGGED_BY_STEP: True}


def question_metadata(key: str, outcome: StageOutcome) -> dict[str, Any]:
    """What the partition page of question ``key`` shows for this stage and run."""
    ok, failed = outcome.units_by_key.get(key, (0, 0))
    error = outcome.failed.get(key)
    meta: dict[str, Any] = {
        "status": "failed" if error is not None else "ok",
        "question": key,
        "computed_in_this_run": key in outcome.units_by_key,
        "units_ok": ok,
        "units_failed": failed,
        "run_questions": outcome.keys_total,
    }
    if error is not None:
        meta["error"] = dg.MetadataValue.text(error[:MAX_ERROR_CHARS])
        meta["next_step"] = "retried by the next run; `membench failed` lists it with the command that re-runs it"
    return meta


class QuestionReporter:
    """Logs each question's partition event soon after its stage recorded it, in batches.

    Why not at the step's end: a stage step may run for hours, and Dagster showed none of its
    progress until it ended; after a kill, the questions done in the killed step read missing in
    Dagster although ``progress`` calls them done (issue 38 item 4). Each question is logged once,
    with the others recorded since the last batch, every BATCH_S (by a timer thread, so a slow
    question does not hold back the ones before it) or at once when MAX_BATCH are waiting; the rest
    at the step's end (``finish``). Logging goes through Dagster's logger, whose handlers take their
    own locks; the reporter's lock keeps one batch at a time.
    """

    def __init__(self, context: dg.AssetExecutionContext, asset_key: dg.AssetKey) -> None:
        self._step = context.get_step_execution_context()
        self._asset_key = asset_key
        self._outcome = StageOutcome(asset_key.path[-1])
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._reported: set[str] = set()
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._tick, name="membench-question-events", daemon=True)
        self.materialized = 0
        self.failed = 0

    def __enter__(self) -> QuestionReporter:
        self._timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        """What was recorded is logged even when the stage raised."""
        self._close()

    def watch(self, outcome: StageOutcome) -> None:
        """The stage's outcome, filled as it records questions: each event's metadata comes from it."""
        self._outcome = outcome

    def recorded(self, key: str) -> None:
        """The stage recorded ``key`` (done, failed or already done): queue its event."""
        with self._lock:
            self._pending.append(key)
            if len(self._pending) >= MAX_BATCH:
                self._flush()

    def finish(self, keys: Sequence[str]) -> tuple[int, int]:
        """Log every key of ``keys`` not logged yet; (materialized, failed) over the whole step."""
        with self._lock:
            self._pending += keys  # _flush skips the keys already logged
        self._close()
        return self.materialized, self.failed

    def _close(self) -> None:
        """Stop the timer, then log what is still pending."""
        self._stop.set()
        self._timer.join()
        with self._lock:
            self._flush()

    def _tick(self) -> None:
        for _ in range(MAX_TICKS):
            if self._stop.wait(BATCH_S):
                return
            with self._lock:
                self._flush()

    def _flush(self) -> None:
        """Log the pending keys as one batch: materialized when ok, observed with the error when failed."""
        keys = [k for k in dict.fromkeys(self._pending) if k not in self._reported]
        self._pending = []
        if not keys:
            return
        batch_id = generate_event_batch_id()
        for i, key in enumerate(keys):
            meta = question_metadata(key, self._outcome)
            batch = DagsterEventBatchMetadata(batch_id, i == len(keys) - 1)
            if key in self._outcome.failed:
                observation = dg.AssetObservation(
                    self._asset_key, partition=key, metadata=meta, description="question failed"
                )
                DagsterEvent.asset_observation(self._step, observation, batch)
                self.failed += 1
            else:
                materialization = dg.AssetMaterialization(self._asset_key, partition=key, metadata=meta)
                DagsterEvent.asset_materialization(self._step, materialization, batch)
                self.materialized += 1
            self._reported.add(key)


_CURRENT: ContextVar[QuestionReporter | None] = ContextVar("membench_question_reporter", default=None)


@contextlib.contextmanager
def reporting(reporter: QuestionReporter) -> Iterator[QuestionReporter]:
    """Make ``reporter`` the one the step's stage driver reports its questions to (``current_reporter``)."""
    token = _CURRENT.set(reporter)
    try:
        with reporter:
            yield reporter
    finally:
        _CURRENT.reset(token)


def current_reporter() -> QuestionReporter | None:
    """The reporter of the stage step running in this context; None outside a stage step."""
    return _CURRENT.get()


def run_keys(context: dg.AssetExecutionContext) -> list[str]:
    """The run's partition keys; a per-question stage never runs without them."""
    if context.has_partition_key or context.has_partition_key_range:
        return list(context.partition_keys)
    raise dg.Failure(
        "per-question stages run for partitions: use `dagster job execute -j full_benchmark` (every "
        "question of the config), a backfill, or `dagster asset materialize ... --partition <key>`"
    )


# the partition status Dagster should show for each status of a (stage, question) in the `progress` view
STATUS_OF_PROGRESS: Mapping[str, dg.AssetPartitionStatus | None] = {
    "done": dg.AssetPartitionStatus.MATERIALIZED,
    "failed": dg.AssetPartitionStatus.FAILED,
    "missing": None,  # never run: no status at all
}


def status_mismatches(
    instance: dg.DagsterInstance,
    prefix: str,
    keys: Sequence[str],
    store: ResultStore,
    stages: Sequence[str] = STAGES,
) -> list[tuple[str, str, str, dg.AssetPartitionStatus | None]]:
    """Where Dagster's partition status disagrees with the ``progress`` view of ``store``.

    For each stage of ``stages`` (asset ``<prefix>/<stage>``) and each question key of ``keys``,
    Dagster's status (read from ``instance``) must be the one STATUS_OF_PROGRESS gives for the
    question's ``progress`` status (``missing`` when the view has no row). Returns (stage, key,
    progress status, Dagster status) for every pair that disagrees: empty when the two agree.
    """
    progress = {
        (r["stage"], r["partition_key"]): r["status"]
        for r in store.query("SELECT stage, partition_key, status FROM progress").to_pylist()
    }
    parts = dg.StaticPartitionsDefinition(list(keys))
    bad: list[tuple[str, str, str, dg.AssetPartitionStatus | None]] = []
    for stage in stages:
        status = instance.get_status_by_partition(dg.AssetKey([prefix, stage]), list(keys), parts) or {}
        for key in keys:
            want = STATUS_OF_PROGRESS[progress.get((stage, key), "missing")]
            if status.get(key) != want:
                bad.append((stage, key, progress.get((stage, key), "missing"), status.get(key)))
    return bad
