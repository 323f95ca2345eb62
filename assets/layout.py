"""Asset keys and pipeline order: one place that names every asset of a config.

Why a key prefix per config: the same dataset name (``locomo``) appears in several configs with
different systems and results folders. Dagster keys partition status by (asset key, partition
key), so without a scope one config's runs would fill another config's partitions. Every asset of
a config lives under ``<config name>/`` (``sample/answers``), which makes each config its own set
of assets with its own partition status, exactly as each has its own results folder.
"""

import multiprocessing
import os
import socket
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import psutil

from assets.run_heartbeat import heartbeat_stopped
from pipeline.config.model import BenchmarkConfig
from pipeline.core.records import CANONICAL_ASSET_TABLES

CANONICAL_TABLES = CANONICAL_ASSET_TABLES  # declared in pipeline.core.records
STAGES = ("ingestion", "retrievals", "answers", "judgments")
REPORTS = ("retrieval_report", "benchmark_report")
# execution order of every step of a run (tables of one multi-asset share a position)
PIPELINE_ORDER = ("canonical", "embeddings", *STAGES, *REPORTS)

TAG_CONFIG = "membench/config"
TAG_CONFIG_HASH = "membench/config_hash"
TAG_CONFIG_PATH = "membench/config_path"
TAG_HOST = "membench/host"
TAG_PID = "membench/pid"
TAG_PID_STARTED = "membench/pid_started"
TAG_HEARTBEAT = "membench/heartbeat"  # the run's heartbeat file in the shared results folder (assets/run_heartbeat.py)
# the process that loaded the definitions and so created the run (``dagster job execute``): a run it
# created but never started (killed before RUN_START) has no step-process tags to be reaped by
TAG_CREATOR = "membench/creator"
CLAIM_LOCK = ".run_claim.lock"  # in the results folder: serialises the collision check of runs (check_scope)
_ALIVE_STATUSES = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING)


def key(prefix: str, name: str) -> dg.AssetKey:
    """The asset key of ``name`` (a table, stage or report) in config ``prefix``."""
    return dg.AssetKey([prefix, name])


def step_of(asset_key: dg.AssetKey) -> str:
    """The pipeline step an asset belongs to (the canonical tables are one step)."""
    name = asset_key.path[-1]
    return "canonical" if name in CANONICAL_TABLES else name


def prefix_of(context: dg.AssetExecutionContext) -> str:
    """The config scope of the assets this step materializes."""
    return next(iter(context.selected_asset_keys)).path[0]


def run_tags(cfg: BenchmarkConfig) -> dict[str, str]:
    """Tags naming the config a run ran: set on every job and added to every other run."""
    return {TAG_CONFIG: cfg.config_name, TAG_CONFIG_HASH: cfg.config_hash, TAG_CONFIG_PATH: cfg.source}


def run_worker_pid() -> int:
    """The pid of the process this run lives in: the run worker, not a step's own process.

    Why: Dagster's multiprocess executor (the default of the implicit asset job that backfills
    run) starts each step in a child process that exits when the step ends. Tagging that child made
    the next step of any other run reap the live run as "gone (killed)". A step child is a
    ``multiprocessing`` child of the run worker (every start method records its creator), so its
    parent is the process that lives as long as the run; in-process runs are their own worker.
    """
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid is not None else os.getpid()


def is_this_process(tags: Mapping[str, str]) -> bool:
    """Whether the tagged process is this run worker (in-process runs of one process: pytest, a notebook).

    Why the host as well as the pid: every Celery solo worker, container or pod may be pid 1 of its
    own host; comparing pids alone took another host's runs for this process's own, so a dead
    host's runs were never reaped and a live one's questions were not held (issue 38).
    """
    return tags.get(TAG_HOST) == socket.gethostname() and tags.get(TAG_PID) == str(run_worker_pid())


def _process_tags() -> dict[str, str]:
    """Where this run lives (its run worker): lets a later run tell that a killed run's process is gone."""
    worker = psutil.Process(run_worker_pid())
    return {TAG_HOST: socket.gethostname(), TAG_PID: str(worker.pid), TAG_PID_STARTED: f"{worker.create_time():.3f}"}


def creator_tags() -> dict[str, str]:
    """``host:pid:start time`` of this process, as the job tag naming who creates its runs."""
    tags = _process_tags()
    return {TAG_CREATOR: f"{tags[TAG_HOST]}:{tags[TAG_PID]}:{tags[TAG_PID_STARTED]}"}


def _creator_process(tags: dict[str, str]) -> dict[str, str]:
    """The creator tag split back into (host, pid, start time) tags; {} when absent or malformed."""
    host, _, rest = tags.get(TAG_CREATOR, "").partition(":")
    pid, _, started = rest.partition(":")
    return {TAG_HOST: host, TAG_PID: pid, TAG_PID_STARTED: started} if pid and started else {}


def _process_gone(tags: dict[str, str]) -> bool:
    """True when the tagged process no longer exists (pid reuse checked by start time), or, on
    another host, when the run's heartbeat in the shared results folder went stale (a dead host)."""
    if TAG_PID not in tags:
        return False
    if tags.get(TAG_HOST) != socket.gethostname():
        return heartbeat_stopped(tags.get(TAG_HEARTBEAT))
    try:
        proc = psutil.Process(int(tags[TAG_PID]))
        return f"{proc.create_time():.3f}" != tags.get(TAG_PID_STARTED)
    except (psutil.NoSuchProcess, ValueError):
        return True


def run_process(run: dg.DagsterRun) -> dict[str, str]:
    """The process a run lives in: its worker once a step claimed the run, else its creator.

    Why the creator until the first claim: a run killed before RUN_START (NOT_STARTED) or between
    RUN_START and its first step's claim (STARTED, no pid tag yet) has no other trace of its process.
    For ``dagster job execute`` the creator is the run's own process. A run launched from the UI is
    created by the code server, which outlives the run: such a run is then never reaped here, which
    errs on the safe side (the daemon's run monitoring watches launched runs).
    """
    tags = dict(run.tags)
    if run.status == dg.DagsterRunStatus.NOT_STARTED or TAG_PID not in tags:
        return _creator_process(tags)
    return tags


def reap_dead_runs(instance: dg.DagsterInstance, exclude: str) -> list[str]:
    """Mark failed the unfinished runs whose process is gone (``kill -9``) or whose host died.

    Why: a run killed outside a run launcher stays STARTED for ever (NOT_STARTED when killed before
    RUN_START), and with a run queue of one it blocks every later run. The daemon's run monitoring
    (configs/dagster.yaml) covers launched runs on their own host; this covers ``dagster job execute``
    runs, which no daemon watches, and runs of a worker host that died (its heartbeat went stale),
    which Dagster's Celery launcher cannot tell from live ones.
    """
    reaped = []
    statuses = [*_ALIVE_STATUSES, dg.DagsterRunStatus.NOT_STARTED]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=statuses)):
        process = run_process(run)
        if run.run_id != exclude and not is_this_process(process) and _process_gone(process):
            instance.report_run_failed(run, f"membench: {_why_dead(process)}; run {run.run_id} marked failed")
            if process.get(TAG_HEARTBEAT):
                Path(process[TAG_HEARTBEAT]).unlink(missing_ok=True)
            reaped.append(run.run_id)
    return reaped


def _why_dead(process: dict[str, str]) -> str:
    if process.get(TAG_HOST) == socket.gethostname():
        return f"its process {process.get(TAG_PID)} is gone (killed)"
    return f"its host {process.get(TAG_HOST)} stopped beating (dead or cut off) in the shared results folder"
