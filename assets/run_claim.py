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
from collections.abc import Callable, Mapping

import dagster as dg

from assets.layout import (
    CLAIM_LOCK,
    TAG_CONFIG,
    TAG_PID,
    _process_gone,
    _process_tags,
    prefix_of,
    reap_dead_runs,
    run_process,
    run_tags,
    run_worker_pid,
)
from assets.run_console import HELD_MARK, refused
from assets.run_gate import PARTITION_TAG, RANGE_END_TAG, RANGE_START_TAG
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
    my_pid: str,
) -> dg.DagsterRun | None:
    """Another live run of ``config`` whose process claimed it (tagged) and shares a question with ``run``.

    ``key_order`` (key -> position in the config) is only computed when such a run exists.
    """
    others = instance.get_runs(filters=dg.RunsFilter(statuses=list(LIVE), tags={TAG_CONFIG: config}))
    order: Mapping[str, int] | None = None
    for other in others:
        tags = dict(other.tags)
        if other.run_id == run.run_id or TAG_PID not in tags or tags[TAG_PID] == my_pid:
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
    wanted = run_tags(cfg) | _process_tags()
    missing = {k: v for k, v in wanted.items() if context.run.tags.get(k) != v}
    with file_lock(cfg.resolved_results_dir() / CLAIM_LOCK):  # check and claim at once (assets/run_claim.py)
        refuse_colliding_run(context, cfg)
        if missing:
            context.instance.add_run_tags(context.run.run_id, missing)
    reap_dead_runs(context.instance, exclude=context.run.run_id)


def refuse_colliding_run(context: dg.AssetExecutionContext, cfg: BenchmarkConfig) -> None:
    """Fail this step (nothing computed yet) when another live run of the config holds its questions."""
    from pipeline.datasets.keys import config_keys

    def key_order() -> dict[str, int]:
        keys = [k for ds in config_keys(cfg, cfg.resolved_results_dir() / "parquet") for k in ds.keys]
        return {k: i for i, k in enumerate(keys)}

    holder = holding_run(context.instance, context.run, cfg.config_name, key_order, str(run_worker_pid()))
    if holder is not None:
        raise refused(refusal(cfg.config_name, holder))


def live_run_of(config: str) -> str | None:
    """The id of a live run of ``config`` (its process alive) on the Dagster instance of ``$DAGSTER_HOME``.

    Why: ``membench forget --yes`` rewrites the stage files a running run writes, which could bring
    removed rows back. Without an instance (``$DAGSTER_HOME`` unset or missing) there is nothing to
    ask: None.
    """
    home = os.environ.get("DAGSTER_HOME")
    if not home or not os.path.isdir(home):
        return None
    instance = dg.DagsterInstance.get()
    try:
        runs = instance.get_runs(filters=dg.RunsFilter(statuses=list(LIVE), tags={TAG_CONFIG: config}))
    finally:
        instance.dispose()
    live = [r.run_id for r in runs if not _process_gone(run_process(r))]
    return live[0] if live else None
