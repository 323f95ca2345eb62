"""The four per-question stages as four partitioned assets with real lineage.

ingestion -> retrievals -> answers -> judgments, each its own asset and step, each partitioned by
question (static partitions of the config, known when the definitions load: see
pipeline/datasets/keys.py), each with two asset checks: ``stage_rows`` (the rows written in this
run satisfy pipeline/row_checks.py) and ``no_failed_units`` (WARN; its metadata lists the failed
questions and their errors). A step yields its output for the whole partition range, then marks
the questions that failed (assets/partition_status.py); the run's last step fails the run when any
question failed (assets/run_gate.py). The stage logic lives in pipeline/; the runners in
assets/ingestion.py, retrieval.py, answers.py, judgments.py wire resources to it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pyarrow.dataset as pads

from assets.answers import run_answers
from assets.clients import StageClients
from assets.ingestion import run_ingestion
from assets.judgments import run_judgments
from assets.layout import key
from assets.partition_status import mark_failed, run_keys
from assets.retrieval import run_retrievals
from assets.run_claim import check_scope
from assets.run_gate import finish_run, is_last_step
from assets.run_peers import peers_running, peers_still_running
from pipeline.config_resolve import ResolvedConfig
from pipeline.question_driver import StageOutcome
from pipeline.row_checks import CHECKED_COLUMNS, check_rows
from pipeline.store import ResultStore
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


def _rows_check(store: ResultStore, stage: str, asset_key: dg.AssetKey, written: list[str]) -> dg.AssetCheckResult:
    # only the checked columns: the retrievals' contexts (184 MB of Parquet on configs/shared.yaml) are not
    # loaded; one dataset scan, not a read per file (2,984 answers files: 3.5 s -> 1.4 s)
    paths = [str(p) for p in (store.partition_path(stage, k) for k in written) if p.exists()]
    if not paths:
        return dg.AssetCheckResult(asset_key=asset_key, check_name=CHECK_ROWS, passed=True, metadata={"rows": 0})
    df = pads.dataset(paths, format="parquet").to_table(columns=CHECKED_COLUMNS).to_pandas()
    cases = check_rows(df)
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=CHECK_ROWS,
        passed=cases is None,
        metadata={
            "rows": len(df),
            "questions": len(written),
            **({"failure_cases": dg.MetadataValue.md(cases)} if cases else {}),
        },
    )


def _failed_check(asset_key: dg.AssetKey, outcome: StageOutcome) -> dg.AssetCheckResult:
    listed = [{"question": k, "error": e} for k, e in sorted(outcome.failed.items())[:MAX_LISTED]]
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=CHECK_NO_FAILED,
        passed=not outcome.failed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "failed_questions": len(outcome.failed),
            "failed": dg.MetadataValue.md(_markdown(listed)),
            **({"stopped": outcome.stopped} if outcome.stopped else {}),
        },
    )


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


def refresh_catalog_unless_peers(
    context: dg.AssetExecutionContext, results: ResultStore, partitions_def: dg.PartitionsDefinition
) -> None:
    """Refresh the catalog after a stage, unless this is not the run's last step and other runs of the
    config (backfill chunks) are still running: the last of them refreshes it over everything.

    Why: each of K concurrent runs rebuilt the catalog after each of its stages (4 K rebuilds over
    every result of the folder); the run's last step still refreshes it, its summary reads it.
    """
    if not is_last_step(context):
        later = peers_running(context.instance, context.run, results.root, partitions_def)
        if later:
            context.log.info(f"catalog refresh left to the runs of this config still running ({len(later)})")
            return
    results.refresh_catalog()


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
            dg.AssetCheckSpec(CHECK_NO_FAILED, asset=asset_key, description="no question of the run failed (WARN)"),
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
        outcome, extra = sd.runner(context, bench, results, keys, StageClients(embeddings, llm, judge_llm))
        refresh_catalog_unless_peers(context, results, partitions_def)
        checks = [_rows_check(results, sd.name, asset_key, outcome.written), _failed_check(asset_key, outcome)]
        yield dg.MaterializeResult(metadata=_metadata(outcome, results, extra), check_results=checks)
        mark_failed(context, asset_key, sorted(outcome.failed))
        if outcome.stopped:
            context.log.error(outcome.stopped)
        finish_run(context, results, partitions_def, [d.name for d in bench.config.datasets], peers_still_running)

    return _stage


def build_stage_assets(
    prefix: str, partitions_def: dg.PartitionsDefinition, backfill_policy: dg.BackfillPolicy
) -> list[dg.AssetsDefinition]:
    """The four stage assets of config ``prefix``, in pipeline order."""
    return [build_stage_asset(prefix, sd, partitions_def, backfill_policy) for sd in STAGE_DEFS]
