"""The end of every run: one summary line and a fresh report.

Why at the run's last step and not in each stage: a stage that raises stops every later stage of
the run, so one failed answer would leave 499 good answers unjudged. Stages record failures and go
on; the last step of the run (whichever asset the run selected comes last in pipeline order) reads
the run's questions back from the ``progress`` view, refreshes report.html when the run did not
include the report asset, and logs one line with the failed questions per stage, then why: one
line per failed dataset and per stage that failed questions for a reason of its own (its stop, or
its first error not copied from upstream), printed last in the terminal (assets/run_console.py).
The run fails through each stage's ``no_failed_units`` check step when questions failed
(assets/question_assets.py); this step fails it only when a dataset of the run failed to load.
A failed run is what makes Dagster show exactly the failed partitions as Failed
(assets/partition_status.py), and ``dagster job execute`` exit non-zero.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from assets.layout import PIPELINE_ORDER, REPORTS, STAGES, step_of
from assets.run_console import datasets_failed, say_at_exit
from pipeline.core.partitions import dataset_of
from pipeline.datasets.convert import dataset_failure_path
from pipeline.llm.protocol import DERIVED_ERROR_PATTERN, NOT_ATTEMPTED
from pipeline.provenance.run_end import refresh_run_end
from pipeline.report.refresh import refresh_report_files
from pipeline.run.status_index import stage_failures
from pipeline.store.results import ResultStore

PeerCheck = Callable[[dg.DagsterInstance, dg.DagsterRun, Path, dg.PartitionsDefinition], list[str]]
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"

# per stage: failed questions of the run; the first stop reason ("not attempted: <stage> stopped ...")
# and the first error of a unit's own (not copied from upstream), both outside the failed datasets
FAILED_SQL = """
SELECT stage, count(*) AS n, min(errors) AS example,
       min(errors) FILTER (WHERE starts_with(errors, $stop) AND dataset NOT IN (SELECT unnest($bad))) AS stop,
       min(errors) FILTER (WHERE NOT regexp_matches(errors, $derived) AND dataset NOT IN (SELECT unnest($bad))) AS own
FROM progress
WHERE status = 'failed' AND stage IN (SELECT unnest($stages)) AND partition_key IN (SELECT unnest($keys))
GROUP BY stage
"""
# progress's keys of keyless load failures and of failed datasets (LOAD_FAILURE_KEY_SQL, DATASET_FAILURE_KEY_SQL)
_PSEUDO_KEY = re.compile(r"__(#\d+|\*)$")
REASON_CHARS = 300  # an error in the run's summary is cut here (the run log and `membench failed` keep it whole)


@dataclass(frozen=True)
class StageFailures:
    """A stage's failed questions in this run, with one example error and the reason to show (if any)."""

    n: int
    example: str
    reason: str | None  # its stop reason, else its first error of its own; None: all copied from upstream


def _run_steps(context: dg.AssetExecutionContext) -> set[str]:
    """The pipeline steps of this run (its asset selection, or every asset of its job)."""
    prefix = next(iter(context.selected_asset_keys)).path[0]
    selection = context.run.asset_selection or context.job_def.asset_layer.executable_asset_keys
    return {step_of(k) for k in selection if k.path[0] == prefix and step_of(k) in PIPELINE_ORDER}


def is_last_step(context: dg.AssetExecutionContext) -> bool:
    """True when no step of this run comes after the current one in pipeline order."""
    steps = _run_steps(context)
    current = step_of(next(iter(context.selected_asset_keys)))
    return max(PIPELINE_ORDER.index(s) for s in steps) <= PIPELINE_ORDER.index(current)


def run_partition_keys(
    context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext, partitions_def: dg.PartitionsDefinition
) -> list[str]:
    """The question keys this run covers, from its tags (works in unpartitioned steps too)."""
    tags = context.run.tags
    if PARTITION_TAG in tags:
        return [tags[PARTITION_TAG]]
    if tags.get(RANGE_START_TAG) and tags.get(RANGE_END_TAG):
        rng = dg.PartitionKeyRange(tags[RANGE_START_TAG], tags[RANGE_END_TAG])
        return list(partitions_def.get_partition_keys_in_range(rng))
    return []


def failed_by_stage(
    store: ResultStore, stages: Sequence[str], keys: Sequence[str], bad_datasets: Sequence[str] = ()
) -> dict[str, StageFailures]:
    """stage -> its failed questions among ``keys``, from the progress view.

    The reason skips questions of ``bad_datasets`` (their dataset's line says why) and errors copied
    from an upstream stage (that stage's line says why).
    """
    if not stages or not keys:
        return {}
    if not bad_datasets and no_failed_rows(store, stages, keys):
        return {}
    # the catalog as last rebuilt: this step refreshed it after its writes
    with store.reader(as_written=True) as con:
        if "progress" not in {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}:
            return {}
        params = {"stages": list(stages), "keys": list(keys), "bad": list(bad_datasets), "stop": NOT_ATTEMPTED,
                  "derived": DERIVED_ERROR_PATTERN}  # fmt: skip
        rows = con.execute(FAILED_SQL, params).fetchall()
    out = {}
    for stage, n, example, stop, own in rows:
        reason = stop.removeprefix(NOT_ATTEMPTED) if stop else own
        out[stage] = StageFailures(int(n), str(example or "")[:REASON_CHARS], _short(reason) if reason else None)
    return out


def no_failed_rows(store: ResultStore, stages: Sequence[str], keys: Sequence[str]) -> bool:
    """True when no stored row of ``keys`` failed in any of ``stages`` (the stages' status indexes).

    Why: then ``progress`` calls none of these questions failed in these stages (a question fails
    a stage through a failed row of it, or as a load failure's pseudo key, which no run covers),
    and the run's end skips the view's query over every stage file (~3 s at 2,000 questions).
    Any failed row, or a key shaped like a pseudo key, leaves the answer to the view.
    """
    if any(_PSEUDO_KEY.search(k) for k in keys):
        return False
    return not any(stage_failures(store.parquet_root, stage, list(keys)) for stage in stages)


def _short(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def summary_line(
    n_keys: int, stages: Sequence[str], failed: dict[str, StageFailures], notes: Sequence[str] = ()
) -> str:
    """``run: 70 questions; failed questions per stage: ingestion 0, ..., judgments 3``, then the facts
    of the run a reader of its numbers needs (``notes``: which datasets no LLM judged)."""
    counts = ", ".join(f"{s} {failed[s].n if s in failed else 0}" for s in stages)
    line = f"run: {n_keys} questions; failed questions per stage: {counts or 'no per-question stage'}"
    return "; ".join([line, *notes])


def reason_lines(stages: Sequence[str], failed: dict[str, StageFailures]) -> list[str]:
    """One line per stage that failed questions for a reason of its own: ``answers: <why>``."""
    out = []
    for stage in stages:
        reason = failed[stage].reason if stage in failed else None
        if reason:
            out.append(reason if reason.startswith(f"{stage} ") else f"{stage}: {reason}")
    return out


def failed_datasets(
    store: ResultStore, datasets: Sequence[str], keys: Sequence[str], partitions_def: dg.PartitionsDefinition
) -> dict[str, str]:
    """name -> ``dataset <name> failed to load (...): <error>`` for each dataset of the run whose file failed.

    A dataset is in the run when one of its questions is, or when the run covers every question
    (a file that vanished after the definitions loaded has no question the run could name). Why:
    its questions are failed questions even when the stages went on with earlier tables, or when
    no question of it is known at all; the run must not end green.
    """
    covered = {dataset_of(k) for k in keys}
    whole = bool(keys) and len(keys) == len(partitions_def.get_partition_keys())
    out = {}
    for name in datasets:
        path = dataset_failure_path(store, name)
        if (name in covered or whole) and path.exists():
            rows = pq.read_table(path, columns=["message", "kept_earlier_tables"]).to_pylist()
            row = rows[0] if rows else {"message": str(path), "kept_earlier_tables": False}
            kept = "its earlier tables were used" if row["kept_earlier_tables"] else "no earlier tables"
            out[name] = f"dataset {name} failed to load ({kept}): {_short(str(row['message']))}"
    return out


def refresh_at_end(
    context: dg.AssetExecutionContext,
    store: ResultStore,
    partitions_def: dg.PartitionsDefinition,
    peers: PeerCheck | None = None,
) -> None:
    """The catalog, and unless ``peers`` are still running the manifest and the report, after a run
    whose last step is a stage (it has no report step to do it).

    Why the catalog here and not in the stage: the manifest writes two tables the catalog is built
    from, so a rebuild before it was rebuilt again after it (~8 s each at 2,000 questions); with the
    manifest and the report it is rebuilt once (pipeline/provenance/run_end.py). Whatever fails,
    the catalog is left current: the summary reads it, and a user opening it sees the run's results.
    """
    later = peers(context.instance, context.run, store.root, partitions_def) if peers else []
    if later:
        running = ", ".join(later)
        context.log.info(f"report left to the last run of this config to finish (still running: {running})")
        _refresh_catalog(context, store)
        return
    try:
        benchmark = getattr(context.resources, "benchmark", None)  # the stage's BenchmarkResource
        # the run's manifest follows the rows it re-ran (provenance/manifest.py)
        done = refresh_run_end(benchmark.resolved(), store) if benchmark is not None else refresh_report_files(store)
        context.log.info(f"report refreshed: {done}")
    except Exception as exc:  # the run's outcome is its questions; a report bug must not hide it
        context.log.error(f"report refresh failed ({type(exc).__name__}: {exc}); results are intact")
        _refresh_catalog(context, store)  # kept as it is when the refresh got as far as rebuilding it


def _refresh_catalog(context: dg.AssetExecutionContext, store: ResultStore) -> None:
    """Rebuild the catalog; a failure is logged, never raised.

    Why: the run's outcome is its questions, and the summary and failed-run verdict that follow
    read the stored rows, not the catalog; a rebuild that fails (a full disk, a results.duckdb the
    user replaced) must not turn a good run into a failed step without its summary.
    """
    try:
        store.refresh_catalog()
    except Exception as exc:
        context.log.error(
            f"catalog rebuild failed ({type(exc).__name__}: {exc}); {store.catalog_path} is left as it was "
            "and the next run rebuilds it; `membench sql` reads the results without it"
        )


def finish_run(
    context: dg.AssetExecutionContext,
    store: ResultStore,
    partitions_def: dg.PartitionsDefinition,
    datasets: Sequence[str] = (),
    peers: PeerCheck | None = None,
    judge_notes: Sequence[str] = (),
) -> None:
    """At the run's last step: summary line (with ``judge_notes`` when the run judged), report refresh, and
    a failed run if questions or datasets failed.

    ``peers`` (assets/run_peers.py): the other runs of the config still to finish; when there are
    any, the report refresh is left to the last of them.
    """
    if not is_last_step(context):
        return
    steps = _run_steps(context)
    if not steps & set(REPORTS) and steps & set(STAGES):
        refresh_at_end(context, store, partitions_def, peers)
    stages = [s for s in STAGES if s in steps]
    keys = run_partition_keys(context, partitions_def)
    bad_datasets = failed_datasets(store, datasets, keys, partitions_def)
    failed = failed_by_stage(store, stages, keys, list(bad_datasets))
    line = summary_line(len(keys), stages, failed, judge_notes if "judgments" in stages else ())
    details = [*bad_datasets.values(), *reason_lines(stages, failed)]
    report = str(store.root / "report.html") if (store.root / "report.html").exists() else None
    if bad_datasets:  # no question of such a dataset may be known: this step fails the run
        say_at_exit(line, report, details)
        raise datasets_failed(line, details, {f"failed_{s}": failed[s].n if s in failed else 0 for s in stages})
    if any(f.n for f in failed.values()):  # each stage's no_failed_units check step fails the run
        say_at_exit(line, report, details)
        context.log.warning("\n".join([line, *details]))
        return
    context.log.info(line)
