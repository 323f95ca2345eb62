"""Per-question Dagster partition status and metadata from a stage's outcome.

Why by hand: in Dagster 1.13 a step's output covers its whole partition range, and yielding it
materializes every partition of the range with the same (whole-run) metadata; there is no public
way to report that some partitions of a range failed (dagster-io/dagster#17836). A failed
question would then read "Materialized" on its partition page, and a backfill whose runs left
questions failed would end ``COMPLETED_SUCCESS``: the backfill daemon counts as failed only the
partitions its failed runs planned and did not materialize.

So a stage step yields its output (later stages of the run need it) with Dagster's own marker
for "this step logged its asset events itself", and logs them itself, as one batch:

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

from collections.abc import Mapping, Sequence
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
        "run_failed_questions": len(outcome.failed),
    }
    if error is not None:
        meta["error"] = dg.MetadataValue.text(error[:MAX_ERROR_CHARS])
        meta["next_step"] = "retried by the next run; `membench failed` lists it with the command that re-runs it"
    return meta


def report_questions(
    context: dg.AssetExecutionContext, asset_key: dg.AssetKey, keys: Sequence[str], outcome: StageOutcome
) -> tuple[int, int]:
    """Log one materialization per ok question and one observation per failed question, in one batch.

    Returns (materialized, failed). Called after the step yielded its output with OUTPUT_MARKER.
    """
    step = context.get_step_execution_context()
    batch_id = generate_event_batch_id()
    last = len(keys) - 1
    for i, key in enumerate(keys):
        meta = question_metadata(key, outcome)
        batch = DagsterEventBatchMetadata(batch_id, i == last)
        if key in outcome.failed:
            observation = dg.AssetObservation(asset_key, partition=key, metadata=meta, description="question failed")
            DagsterEvent.asset_observation(step, observation, batch)
        else:
            DagsterEvent.asset_materialization(
                step, dg.AssetMaterialization(asset_key, partition=key, metadata=meta), batch
            )
    failed = sum(k in outcome.failed for k in keys)
    return len(keys) - failed, failed


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
