"""Which other runs of this config, over other questions, are still to finish (backfill chunks).

Why: the report is computed from every result of the folder. K concurrent runs of a backfill each
refreshed it at their end, K copies of the slowest step of a run queueing on a small machine. A run
that knows another chunk of the same config is still running leaves the refresh to it: the last
run to finish refreshes once, over everything. Each run notes that it reached its end under one
file lock in the results folder, so of two runs ending together exactly one sees no peer left.
A peer whose process is gone (killed) is not waited for; a killed last run leaves the report as it
was, and the next run refreshes it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.layout import TAG_CONFIG, _process_gone, is_this_process
from assets.run_claim import key_span, overlaps
from pipeline.util.filelock import file_lock

PEERS_LOCK = ".run_ends.lock"
ENDED_DIR = ".run_ends"  # <results>/.run_ends/<run id>: the run reached its end (its results are written)
UNFINISHED = (
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
)


def peers_still_running(
    instance: dg.DagsterInstance, run: dg.DagsterRun, results: Path, partitions_def: dg.PartitionsDefinition
) -> list[str]:
    """Mark ``run`` as ended; the ids of the other unfinished runs of its config that have not ended yet.

    Only runs over other questions count (an overlapping run is refused at its first step: it
    never computes anything), and not runs of this very process (in-process test runs).
    """
    with file_lock(results / PEERS_LOCK):
        (results / ENDED_DIR).mkdir(parents=True, exist_ok=True)
        (results / ENDED_DIR / run.run_id).touch()
        return _pending_peers(instance, run, results, partitions_def, forget_ended=True)


def peers_running(
    instance: dg.DagsterInstance, run: dg.DagsterRun, results: Path, partitions_def: dg.PartitionsDefinition
) -> list[str]:
    """The other runs of the config still to end (as ``peers_still_running``), ``run`` not marked ended."""
    with file_lock(results / PEERS_LOCK):
        return _pending_peers(instance, run, results, partitions_def, forget_ended=False)


def _pending_peers(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    results: Path,
    partitions_def: dg.PartitionsDefinition,
    forget_ended: bool,
) -> list[str]:
    run = instance.get_run_by_id(run.run_id) or run  # the step's context.run is the launch-time snapshot
    config = run.tags.get(TAG_CONFIG)
    if not config:
        return []
    ended = results / ENDED_DIR
    unfinished = instance.get_runs(filters=dg.RunsFilter(statuses=list(UNFINISHED)))
    others = [o for o in unfinished if of_config(o, config)]
    if forget_ended and ended.is_dir():
        live = {o.run_id for o in others}
        for mark in ended.iterdir():  # ends of runs that are over: no longer needed
            if mark.name not in live and mark.name != run.run_id:
                mark.unlink(missing_ok=True)
    order: dict[str, int] | None = None
    pending = []
    for other in others:
        tags = dict(other.tags)
        if other.run_id == run.run_id or (ended / other.run_id).exists():
            continue
        if is_this_process(tags) or _process_gone(tags):
            continue
        order = order or {k: i for i, k in enumerate(partitions_def.get_partition_keys())}
        if not overlaps(key_span(run.tags, order), key_span(tags, order)):
            pending.append(other.run_id)
    return pending


def of_config(run: dg.DagsterRun, config: str) -> bool:
    """Whether ``run`` is a run of ``config``: tagged so, or (not claimed yet) selecting its assets.

    Why the selection: a backfill's runs are Dagster's implicit asset job, created without membench's
    tags; the tag arrives with the run's first step. A queued chunk is a peer all the same.
    """
    if TAG_CONFIG in run.tags:
        return run.tags[TAG_CONFIG] == config
    return any(k.path[0] == config for k in run.asset_selection or ())
