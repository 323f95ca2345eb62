"""One run at a time over the same questions of a config.

Why: two ``full_benchmark`` runs started together on one config both ran every stage: every judge
prompt was sent twice, the embeddings computed twice. Waiting for or sharing the other run's work
would need a scheduler; refusing is immediate and costs nothing: the second run stops at its first
step, before it computes anything, with one line that names the run holding the config. Runs over
disjoint partition ranges (the chunks of a backfill, ``max_concurrent_runs`` > 1) still run side by
side: they share no question. The check and the claim (the run's process tags, assets/layout.py)
happen under one file lock in the results folder, so of two runs starting together exactly one wins.
"""

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import dagster as dg

from assets.layout import (
    CLAIM_LOCK,
    TAG_CONFIG,
    TAG_HEARTBEAT,
    TAG_HOST,
    TAG_PID,
    TAG_PID_STARTED,
    _process_gone,
    _process_tags,
    is_this_process,
    prefix_of,
    reap_dead_runs,
    run_process,
    run_tags,
)
from assets.run_console import HELD_MARK, refused
from assets.run_gate import PARTITION_TAG, RANGE_END_TAG, RANGE_START_TAG
from assets.run_heartbeat import Claim, claims, heartbeat_path, heartbeat_stopped, start_heartbeat, write_claim
from pipeline.config.model import BenchmarkConfig
from pipeline.util.filelock import file_lock

LIVE = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED)


def key_span(tags: Mapping[str, str], order: Mapping[str, int]) -> tuple[int, int] | None:
    """The run's questions as an index range of the config's keys; None = every question."""
    if PARTITION_TAG in tags:
        i = order.get(tags[PARTITION_TAG], -1)
        return (i, i)
    start, end = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
    if start and end:
        return (order.get(start, 0), order.get(end, len(order) - 1))
    return None


def overlaps(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is None or b is None or (a[0] <= b[1] and b[0] <= a[1])


def holding_run(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    config: str,
    key_order: Callable[[], Mapping[str, int]],
) -> dg.DagsterRun | None:
    """Another live run of ``config`` whose process claimed it (tagged) and shares a question with ``run``.

    ``key_order`` (key -> position in the config) is only computed when such a run exists.
    """
    others = instance.get_runs(filters=dg.RunsFilter(statuses=list(LIVE), tags={TAG_CONFIG: config}))
    order: Mapping[str, int] | None = None
    for other in others:
        tags = dict(other.tags)
        if other.run_id == run.run_id or TAG_PID not in tags or is_this_process(tags):
            continue  # not claimed yet, or a run of this very process (in-process test runs)
        if _process_gone(tags):
            continue
        order = key_order() if order is None else order
        if overlaps(key_span(run.tags, order), key_span(tags, order)):
            return other
    return None


def refusal(config: str, holder: dg.DagsterRun) -> str:
    return refusal_of(config, f"{holder.run_id} (pid {holder.tags.get(TAG_PID)}, {holder.job_name})")


def refusal_of(config: str, holder: str) -> str:
    """The one line a refused run prints; ``holder`` names the live run (its id, and what more is known)."""
    return (
        f"config {config!r} {HELD_MARK} {holder} over the same questions: "
        "wait for it to finish, or cancel it, then run again"
    )


def check_scope(context: dg.AssetExecutionContext, cfg: BenchmarkConfig) -> None:
    """Refuse a run whose resource config is not the config these assets were built for; tag the run."""
    prefix = prefix_of(context)
    if prefix != cfg.config_name:
        raise dg.Failure(
            f"these assets belong to config {prefix!r} but the benchmark resource loads {cfg.source} "
            f"(config {cfg.config_name!r}); choose a config with MEMBENCH_CONFIG=<file> before starting Dagster"
        )
    beat = heartbeat_path(cfg.resolved_results_dir(), context.run.run_id)
    wanted = run_tags(cfg) | _process_tags() | {TAG_HEARTBEAT: str(beat)}
    missing = {k: v for k, v in wanted.items() if context.run.tags.get(k) != v}
    with file_lock(cfg.resolved_results_dir() / CLAIM_LOCK):  # check and claim at once (assets/run_claim.py)
        refuse_colliding_run(context, cfg)
        # the file before the tag naming it: a tagged heartbeat file that is missing is never taken for dead
        write_claim(beat, _claim(context.run, cfg.config_name, wanted))
        if missing:
            context.instance.add_run_tags(context.run.run_id, missing)
    instance, run_id = context.instance, context.run.run_id
    start_heartbeat(beat, run_id, lambda: _has_ended(instance, run_id))
    reap_dead_runs(context.instance, exclude=context.run.run_id)


def _claim(run: dg.DagsterRun, config: str, process: Mapping[str, str]) -> Claim:
    """The run's claim in the shared results folder: its config, its questions and its process."""
    return Claim(
        run_id=run.run_id,
        config=config,
        host=process[TAG_HOST],
        pid=process[TAG_PID],
        pid_started=process[TAG_PID_STARTED],
        dagster_home=os.environ.get("DAGSTER_HOME", ""),
        tags={k: run.tags[k] for k in (PARTITION_TAG, RANGE_START_TAG, RANGE_END_TAG) if k in run.tags},
    )


def _has_ended(instance: dg.DagsterInstance, run_id: str) -> bool:
    run = instance.get_run_by_id(run_id)
    return run is None or run.is_finished


def refuse_colliding_run(context: dg.AssetExecutionContext, cfg: BenchmarkConfig) -> None:
    """Fail this step (nothing computed yet) when another live run of the config holds its questions."""
    from pipeline.datasets.keys import config_keys

    def key_order() -> dict[str, int]:
        keys = [k for ds in config_keys(cfg, cfg.resolved_results_dir() / "parquet") for k in ds.keys]
        return {k: i for i, k in enumerate(keys)}

    holder = holding_run(context.instance, context.run, cfg.config_name, key_order)
    message = refusal(cfg.config_name, holder) if holder is not None else None
    if message is None:
        claim = foreign_claim(context.instance, context.run, cfg, key_order)
        message = refusal_of(cfg.config_name, claim.describe()) if claim is not None else None
    if message is not None:
        cancel_refused(context, message)
        raise refused(message)


def foreign_claim(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    cfg: BenchmarkConfig,
    key_order: Callable[[], Mapping[str, int]],
) -> Claim | None:
    """A live claim in the results folder by a run this Dagster instance does not know, over a shared question.

    Why: two Dagster homes on one results folder (a second ``dagster dev``, another host's instance)
    see none of each other's runs; their claims in the shared folder are what they share.
    """

    def known(run_id: str) -> bool:  # this run, or one of this instance: holding_run judged it by its status
        return run_id == run.run_id or instance.get_run_by_id(run_id) is not None

    order: Mapping[str, int] | None = None
    for claim in live_claims(cfg.config_name, cfg.resolved_results_dir(), known):
        order = key_order() if order is None else order
        if overlaps(key_span(run.tags, order), key_span(claim.tags, order)):
            return claim
    return None


def live_claims(config: str, results: Path, known: Callable[[str], bool]) -> Iterator[Claim]:
    """The live claims of ``config`` in the results folder ``results`` by runs ``known`` does not know."""
    for path, claim in claims(results):
        if claim.config == config and _claim_alive(path, claim) and not known(claim.run_id):
            yield claim


def _claim_alive(path: Path, claim: Claim) -> bool:
    """Whether a claim's run may still be running: it beats, and on this host its process lives.

    A claim of a live process that stopped beating (its instance went away under it) is not alive.
    """
    process = {TAG_HOST: claim.host, TAG_PID: claim.pid, TAG_PID_STARTED: claim.pid_started}
    if is_this_process(process):
        return False  # a run of this very process (in-process test runs)
    return not heartbeat_stopped(path) and not _process_gone(process)


def cancel_refused(context: dg.AssetExecutionContext, message: str) -> None:
    """Have the refused run end CANCELED, not FAILURE.

    Why: Dagster shows Failed every partition a FAILED run planned and did not materialize, although
    the refused run computed nothing: questions the holding run had already finished read Failed
    until the next full run (39-52 of them, issue 38). A run canceled while its step fails ends
    CANCELED, whose unmaterialized partitions keep the status they had; a backfill still counts them
    as not done (its status is COMPLETED_FAILED) and the console still shows the refusal line.
    """
    context.instance.report_run_canceling(context.run, message=message)


def live_run_of(config: str, results: Path) -> str | None:
    """A live run of ``config`` (its process alive, or beating): on the Dagster instance of
    ``$DAGSTER_HOME``, or claimed in the results folder ``results`` by a run of another instance.

    Why: ``membench forget --yes`` rewrites the stage files a running run writes, which could bring
    removed rows back, and a whole-config run would ask again what a live run asks. Without an
    instance (``$DAGSTER_HOME`` unset or missing) only the folder's claims are asked.
    """
    home = os.environ.get("DAGSTER_HOME")
    if not home or not os.path.isdir(home):
        return next((c.describe() for c in live_claims(config, results, known=lambda _run_id: False)), None)
    instance = dg.DagsterInstance.get()
    try:
        runs = instance.get_runs(filters=dg.RunsFilter(statuses=list(LIVE), tags={TAG_CONFIG: config}))
        live = [r.run_id for r in runs if not _process_gone(run_process(r))]
        if live:
            return live[0]
        others = live_claims(config, results, known=lambda run_id: instance.get_run_by_id(run_id) is not None)
        return next((c.describe() for c in others), None)
    finally:
        instance.dispose()
