"""The four per-question stages as four partitioned assets with real lineage.

ingestion -> retrievals -> answers -> judgments, each its own asset and step, each partitioned by
question (static partitions of the config, known when the definitions load: see
pipeline/datasets/keys.py), each with two asset checks: ``stage_rows`` (the rows written in this
run satisfy pipeline/run/row_checks.py) and ``no_failed_units`` (a step of its own after the stage:
lists the failed questions with their errors and fails the run when there are any). A step yields
its output for the whole partition range, then materializes each question that ended ok with its
own metadata and leaves each failed question unmaterialized with an observation carrying its error
(assets/partition_status.py). The run's last step logs the run's summary (assets/run_gate.py).
The stage logic lives in pipeline/; the runners in assets/ingestion.py, retrieval.py, answers.py,
judgments.py wire resources to it.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pyarrow as pa

from assets.answers import run_answers
from assets.clients import StageClients
from assets.ingestion import run_ingestion
from assets.judgments import run_judgments
from assets.layout import key
from assets.partition_status import OUTPUT_MARKER, QuestionReporter, reporting, run_keys
from assets.retrieval import run_retrievals
from assets.run_claim import check_scope
from assets.run_console import questions_failed
from assets.run_gate import finish_run, run_partition_keys
from assets.run_peers import peers_still_running
from pipeline.judges.select import without_llm_judge
from pipeline.kinds.resolve import ResolvedConfig
from pipeline.run.stage import StageOutcome
from pipeline.run.stale import explain_failures
from pipeline.run.status_index import stage_failures
from pipeline.store.results import ResultStore
from resources.benchmark import BenchmarkResource, ResultStoreResource
from resources.embeddings import EmbeddingResource
from resources.llm import LLMResource

StageRunner = Callable[..., tuple[StageOutcome, dict[str, Any]]]
CHECK_ROWS = "stage_rows"
CHECK_NO_FAILED = "no_failed_units"
MAX_LISTED = 50


@dataclass(frozen=True)
class StageDef:
    """One per-question stage: its upstream assets, what it stores, and the function that runs it."""

    name: str
    deps: tuple[str, ...]
    description: str
    runner: StageRunner


STAGE_DEFS = (
    StageDef(
        "ingestion",
        ("questions", "haystacks", "turns", "embeddings"),
        "Memory systems ingest each question's haystack session by session (once per system and haystack, "
        "resumable at the session where a run stopped); one row per (question, system) with "
        "sessions_completed / sessions_total / next_session.",
        run_ingestion,
    ),
    StageDef(
        "retrievals",
        ("ingestion", "evidence"),
        "Per (question, memory system): ranked units with channel / fused / rerank scores, the context handed "
        "to the reader and its token count (regex_word_punct), latency.",
        run_retrievals,
    ),
    StageDef(
        "answers",
        ("retrievals",),
        "Per (question, memory system, reader): the reader's answer from the retrieved context; label 'offline' "
        "or 'llm'; MC replies that do not parse are invalid (counted apart); tokens, latency, cache hit, cost.",
        run_answers,
    ),
    StageDef(
        "judgments",
        ("answers",),
        "Per (question, system, reader, judge): correct / score under a pinned metric; a failed answer gives a "
        "failed judgment, never a wrong one.",
        run_judgments,
    ),
)


def question_partitions(keys: list[str]) -> dg.StaticPartitionsDefinition:
    """The config's questions as static partitions (dataset-prefixed keys, file order)."""
    return dg.StaticPartitionsDefinition(keys)


def _markdown(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "none"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")).replace("|", "/")[:160] for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def _rows_check(outcome: StageOutcome, asset_key: dg.AssetKey) -> dg.AssetCheckResult:
    """The ``stage_rows`` check over the rows this run wrote: the status columns of the tables as
    written, which the stage driver kept (``StageOutcome.written_status``).

    Why not read the files back: one Parquet read per question written (2,000 answers files: ~1 s
    CPU in a stage that is otherwise waiting on its endpoint); the files hold exactly those tables.
    Only the checked columns: the payload (contexts, answers) is never part of the check.
    """
    if not outcome.written_status:
        return dg.AssetCheckResult(asset_key=asset_key, check_name=CHECK_ROWS, passed=True, metadata={"rows": 0})
    from pipeline.run.row_checks import CHECKED_COLUMNS, check_rows  # pandera (0.2 s): only when rows were written

    df = pa.concat_tables(outcome.written_status).select(CHECKED_COLUMNS).to_pandas()
    cases = check_rows(df)
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=CHECK_ROWS,
        passed=cases is None,
        metadata={
            "rows": len(df),
            "questions": len(outcome.written),
            **({"failure_cases": dg.MetadataValue.md(cases)} if cases else {}),
        },
    )


def failed_questions(store: ResultStore, stage: str, keys: list[str]) -> list[tuple[str, str]]:
    """(key, error) of the run's questions that the progress view calls failed in ``stage``.

    Read from the stage's files (pipeline/run/status_index.py ``stage_failures``), not from the
    catalog: a stage that is not its run's last step leaves the catalog to that step.
    """
    return stage_failures(store.parquet_root, stage, keys) if keys else []


def build_failed_check(prefix: str, sd: StageDef, partitions_def: dg.PartitionsDefinition) -> dg.AssetChecksDefinition:
    """The stage's ``no_failed_units`` check: its own step, after the stage, failing when questions failed.

    Why a step of its own: a run with failed questions must fail (Dagster then shows exactly those
    partitions Failed, a backfill ends COMPLETED_FAILED, ``dagster job execute`` exits 1), and the
    failed step should be the stage that lost them, not the report. A stage step that raised would
    stop every later stage of the run; this check step fails alone, later stages go on.
    """

    # a generator check (its result is recorded, then the step fails); Dagster's hint names a single result
    @dg.asset_check(  # type: ignore[arg-type]
        asset=key(prefix, sd.name),
        name=CHECK_NO_FAILED,
        description=f"no question of the run failed in {sd.name} (fails the run, lists the failed questions)",
    )
    def _check(context: dg.AssetCheckExecutionContext, store: ResultStoreResource) -> Iterator[dg.AssetCheckResult]:
        keys = run_partition_keys(context, partitions_def)
        failed = explain_failures(
            store.store(), store.benchmark.load(), sd.name, failed_questions(store.store(), sd.name, keys)
        )
        listed = [{"question": k, "error": e} for k, e in failed[:MAX_LISTED]]
        yield dg.AssetCheckResult(
            passed=not failed,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "questions": len(keys),
                "failed_questions": len(failed),
                "failed": dg.MetadataValue.md(_markdown(listed)),
            },
        )
        if failed:
            raise questions_failed(sd.name, len(keys), failed)

    return _check


def _metadata(outcome: StageOutcome, store: ResultStore, extra: dict[str, Any]) -> dict[str, Any]:
    o = outcome
    meta: dict[str, Any] = {
        "questions": o.keys_total,
        "already_done": o.keys_already_done,
        "computed": o.keys_computed,
        "units_ok": o.units_ok,
        "units_failed": o.units_failed,
        "failed_questions": len(o.failed),
        "failed_examples": ", ".join(sorted(o.failed)[:20]) or "none",
        "seconds": round(o.seconds, 2),
        "catalog": dg.MetadataValue.path(str(store.catalog_path)),
        **extra,
    }
    if o.stopped:
        meta["stopped"] = o.stopped
    if o.preview:
        meta["preview"] = dg.MetadataValue.md(_markdown(o.preview))
    return meta


def build_stage_asset(
    prefix: str, sd: StageDef, partitions_def: dg.PartitionsDefinition, backfill_policy: dg.BackfillPolicy
) -> dg.AssetsDefinition:
    """One stage's asset under config ``prefix``."""
    asset_key = key(prefix, sd.name)

    @dg.asset(
        key=asset_key,
        deps=[key(prefix, d) for d in sd.deps],
        partitions_def=partitions_def,
        backfill_policy=backfill_policy,
        group_name=f"{prefix}_per_question",
        description=sd.description,
        check_specs=[
            dg.AssetCheckSpec(CHECK_ROWS, asset=asset_key, description="rows written in this run: status/error rules"),
        ],
    )
    def _stage(
        context: dg.AssetExecutionContext,
        benchmark: BenchmarkResource,
        store: ResultStoreResource,
        embeddings: EmbeddingResource,
        llm: LLMResource,
        judge_llm: LLMResource,
    ):
        bench: ResolvedConfig = benchmark.resolved()  # resolved once per process, passed down
        check_scope(context, bench.config)
        results = store.store()
        keys = run_keys(context)
        reporter = QuestionReporter(context, asset_key)
        with reporting(reporter):  # each question's partition event, logged as the stage records it
            outcome, extra = sd.runner(context, bench, results, keys, StageClients(embeddings, llm, judge_llm))
            materialized, failed = reporter.finish(keys)
        checks = [_rows_check(outcome, asset_key)]
        # the output marks its asset events as logged here: per question, ok ones materialized, failed ones not
        yield dg.MaterializeResult(
            metadata={**_metadata(outcome, results, extra), **OUTPUT_MARKER}, check_results=checks
        )
        context.log.info(f"{sd.name}: {materialized} questions materialized, {failed} failed (not materialized)")
        if outcome.stopped:
            context.log.error(outcome.stopped)
        notes = [n for n in (without_llm_judge(bench),) if n]
        names = [d.name for d in bench.config.datasets]
        # at the run's last step: the catalog, the manifest and the report (assets/run_gate.py)
        finish_run(context, results, partitions_def, names, peers_still_running, notes)

    return _stage


def build_stage_assets(
    prefix: str, partitions_def: dg.PartitionsDefinition, backfill_policy: dg.BackfillPolicy
) -> list[dg.AssetsDefinition]:
    """The four stage assets of config ``prefix``, in pipeline order, then their ``no_failed_units`` checks."""
    assets = [build_stage_asset(prefix, sd, partitions_def, backfill_policy) for sd in STAGE_DEFS]
    return [*assets, *(build_failed_check(prefix, sd, partitions_def) for sd in STAGE_DEFS)]
