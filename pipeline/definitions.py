"""Dagster definitions of one benchmark config: its assets, checks, jobs and resources.

The config is ``$MEMBENCH_CONFIG`` (default configs/sample.yaml). Every asset is scoped to it by a
key prefix (``sample/answers``; assets/layout.py), and its questions are static partitions read
when the definitions load (pipeline/datasets/keys.py), so:

- ``dagster job execute -j full_benchmark`` is a run over the whole partition range (the job
  carries the range tags): every question not yet done is computed, in one run, with each stage
  its own step (raw -> canonical -> embeddings -> ingestion -> retrievals -> answers -> judgments
  -> reports in the UI graph);
- a UI backfill is split into runs of at most ``$MEMBENCH_BACKFILL_CHUNK`` questions (default 500)
  that may run concurrently (``max_concurrent_runs`` in dagster.yaml);
- ``dagster asset materialize --select ... --partition <key>`` re-runs one question.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings

import dagster as dg

from assets.canonical import build_canonical, raw_dataset_specs
from assets.embeddings import build_embeddings
from assets.layout import REPORTS, STAGES, creator_tags, key, run_tags
from assets.question_assets import build_stage_assets, question_partitions
from assets.reports import build_reports
from assets.run_claim import live_run_of, refusal_of
from assets.run_gate import RANGE_END_TAG, RANGE_START_TAG
from pipeline.config.entry_errors import exit_on_config_error, in_dagster_run_command, in_whole_config_job_execute
from pipeline.config.model import BenchmarkConfig, load_config
from pipeline.datasets.keys import config_keys
from pipeline.kinds.resolve import check_config
from pipeline.util.heap import keep_out_of_collections, limit_arenas, release_and_report
from resources.factory import build_resources

# Dagster 1.13's own InitResourceContext.replace_config reads its deprecated ``dagster_run`` property:
# the notice (printed at the end of every failed run) is about Dagster's code, which nothing of ours
# calls into differently; it read as a problem with the run. Only that module's notices are ignored.
DAGSTER_INTERNAL_NOTICES = r"dagster\._core\.execution\.context\.init"
warnings.filterwarnings("ignore", category=DeprecationWarning, module=DAGSTER_INTERNAL_NOTICES)

BACKFILL_CHUNK_ENV = "MEMBENCH_BACKFILL_CHUNK"
DEFAULT_BACKFILL_CHUNK = 500


def backfill_policy() -> dg.BackfillPolicy:
    """Backfills split into runs of at most N questions (each run a partition range)."""
    chunk = int(os.environ.get(BACKFILL_CHUNK_ENV) or DEFAULT_BACKFILL_CHUNK)
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=max(chunk, 1))


def partition_keys(cfg: BenchmarkConfig) -> list[str]:
    """Every question key of the config, datasets in config order (duplicates across datasets impossible)."""
    parquet_root = cfg.resolved_results_dir() / "parquet"
    return [k for ds in config_keys(cfg, parquet_root) for k in ds.keys]


def _job_tags(cfg: BenchmarkConfig, keys: list[str]) -> dict[str, str]:
    tags = run_tags(cfg) | creator_tags()  # a run killed before RUN_START is reaped by its creator
    if keys:
        tags |= {RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}
    return tags


@dg.success_hook(name="release_freed_memory")
def _release_after_step_ok(context: dg.HookContext) -> None:
    """Freed heap pages back to the OS after each step, so the next step starts low (pipeline/util/heap.py).

    The RSS before and after is logged: a run's memory profile is then read from its event log.
    """
    context.log.info(release_and_report())


@dg.failure_hook(name="release_freed_memory_on_failure")
def _release_after_step_failed(context: dg.HookContext) -> None:
    context.log.info(release_and_report())


def build_defs(config_path: str | None = None) -> dg.Definitions:
    """Definitions bound to one benchmark config (tests pass their own)."""
    with warnings.catch_warnings():  # backfill_policy on @asset is "beta" in Dagster 1.13; we rely on it knowingly
        warnings.simplefilter("ignore", dg.BetaWarning)
        return _build_defs(load_config(config_path))


def _build_defs(cfg: BenchmarkConfig) -> dg.Definitions:
    check_config(cfg)  # every config mistake fails here, at load, naming file, entry and key
    prefix = cfg.config_name
    keys = partition_keys(cfg)
    parts = question_partitions(keys)
    raw = raw_dataset_specs(prefix, cfg)
    assets: list[dg.AssetsDefinition | dg.AssetSpec] = [  # declared: the inferred join is a Dagster internal
        *raw,
        build_canonical(prefix, keys, [r.key for r in raw]),
        build_embeddings(prefix),
        *build_stage_assets(prefix, parts, backfill_policy()),
        *build_reports(prefix, parts),
    ]
    tags = _job_tags(cfg, keys)
    everything = dg.AssetSelection.assets(*[k for a in assets if isinstance(a, dg.AssetsDefinition) for k in a.keys])
    answering = [key(prefix, n) for n in ("answers", "judgments", REPORTS[1])]
    release = {_release_after_step_ok, _release_after_step_failed}
    full_benchmark = dg.define_asset_job(
        "full_benchmark",
        selection=everything,
        tags=tags,
        description=(
            f"Config {prefix} ({cfg.source}) end to end: canonical tables, embeddings, memory ingestion, retrieval, "
            "answers, judgments, reports, over every question (a run over the whole partition range; questions "
            "already done are skipped)."
        ),
        executor_def=dg.in_process_executor,
        hooks=release,
    )
    retrieval_benchmark = dg.define_asset_job(
        "retrieval_benchmark",
        selection=everything - dg.AssetSelection.assets(*answering),
        tags=tags,
        description="Retrieval only (no reader, no judge): canonical, embeddings, ingestion, retrieval, its report.",
        executor_def=dg.in_process_executor,
        hooks=release,
    )
    question_stages = dg.define_asset_job(
        "question_stages",
        selection=dg.AssetSelection.assets(*[key(prefix, s) for s in STAGES]),
        tags=tags,
        description=(
            "The four per-question stages only (no canonical, embeddings or reports), over every question or "
            'the range given by --tags \'{"dagster/asset_partition_range_start": A, "..._end": B}\'.'
        ),
        executor_def=dg.in_process_executor,
        hooks=release,
    )
    return dg.Definitions(
        assets=assets,
        jobs=[full_benchmark, retrieval_benchmark, question_stages],
        resources=build_resources(cfg),
    )


@dg.definitions
def defs() -> dg.Definitions:
    """What workspace.yaml and ``dagster job execute -m pipeline.definitions`` load.

    A function (Dagster calls it when it loads the module's definitions), so importing this module
    runs nothing: no config is read and no process-wide setting changes until a Dagster entry
    point asks for the definitions.
    """
    if in_dagster_run_command():
        return _run_command_defs()
    return _loaded_defs()


@functools.cache
def _run_command_defs() -> dg.Definitions:
    """The definitions of a ``dagster job execute`` (or sibling) process, built at its first load only.

    Why once: Dagster calls ``defs`` each time it reconstructs the repository, five times before the
    first step of a ``dagster job execute`` run (the job's origin, its load data, the argument
    checks, the run's plan), and each call built everything again: the config read and checked,
    the partition keys, assets, jobs and resources, and ``_exit_if_held``'s instance, ~0.07 s of
    CPU a call (docs/design/speed.md, pass 9). Such a process runs one command of one config, whose
    run is created from these definitions after the first load's check; the later loads get the
    same object. Code servers and tests build on every call, as before (a failed build is not kept).
    """
    return _loaded_defs()


def _loaded_defs() -> dg.Definitions:
    limit_arenas()  # every step runs in this process (in-process executor): see pipeline/util/heap.py
    loaded = exit_on_config_error(build_defs)  # one line, not a traceback, under `dagster job execute`
    _exit_if_held()
    keep_out_of_collections()  # imports and definitions live as long as the process: see pipeline/util/heap.py
    return loaded


def _exit_if_held() -> None:
    """Under ``dagster job execute`` of a whole config: a live run of the config ends the command in one
    line with exit status 2, before a run is created.

    Why here and not only at the run's first step (which still checks, under a lock, for the runs
    that start together and for question ranges): a run refused there is a failed run, and Dagster
    showed the partitions it had planned as Failed although ``progress`` calls them done.
    """
    if not in_whole_config_job_execute():
        return
    cfg = load_config()
    holder = live_run_of(cfg.config_name, cfg.resolved_results_dir())
    if holder is not None:
        sys.stderr.write(f"membench: {refusal_of(cfg.config_name, holder)}\n")
        raise SystemExit(2)
