"""Report assets: per-question retrieval metrics, and the aggregate benchmark report.

Why unpartitioned: a report aggregates over every question; it is cheap (DuckDB over Parquet,
seconds for thousands of questions) and is simply recomputed after each run. Being the last steps
of a run, they also end it (assets/run_gate.py): summary line, and a failed run if questions failed.
"""

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext

from assets.layout import key
from assets.run_claim import check_scope
from assets.run_gate import finish_run
from pipeline.catalog.report import present_metric_columns
from pipeline.judges.select import judged_datasets, without_llm_judge
from pipeline.metrics.retrieval import gold_protocol
from pipeline.provenance.manifest import write_manifest
from pipeline.report import agentic as agentic_metrics
from pipeline.report.build import REPORT_HTML, RESULTS_JSON
from pipeline.report.refresh import build_report
from pipeline.report.retrieval_table import (
    build_dataset_table,
    fingerprint_path,
    input_fingerprint,
    outcome_counts,
    stored_table_if_current,
    table_path,
)
from resources.benchmark import BenchmarkResource, ResultStoreResource


def _markdown(rows: list[dict[str, Any]], cols: list[str], limit: int = 20) -> str:
    def cell(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in cols) + " |" for r in rows[:limit]]
    return "\n".join(lines)


PREVIEW_COLUMNS = ("recall_any_at_10", "recall_all_at_10", "ndcg_any_at_10")


def preview_sql(present: Sequence[str]) -> str:
    """The preview's query: the @10 metrics, NULL where the config's retrieval_k has no 10."""
    avgs = ", ".join(f"avg({c}) AS {c}" if c in present else f"NULL::DOUBLE AS {c}" for c in PREVIEW_COLUMNS)
    return (
        f"SELECT dataset, system, level, count(*) FILTER (WHERE outcome = 'scored') AS n_scored, {avgs} "
        "FROM retrieval_metrics GROUP BY ALL ORDER BY ALL"
    )


def retrieval_report(
    context: AssetExecutionContext, benchmark: BenchmarkResource, results: ResultStoreResource
) -> dg.MaterializeResult:
    cfg, store = benchmark.load(), results.store()
    check_scope(context, cfg)
    if not any((store.parquet_root / "retrievals").glob("*.parquet")):
        raise dg.Failure(f"no retrievals under {store.parquet_root}: materialize the retrievals asset first")
    totals: Counter[str] = Counter()
    per_dataset: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        # views created only if a table must be rebuilt (~6 s on configs/shared.yaml), and only the
        # base tables' (the table reads retrievals, questions, evidence, turns and haystacks)
        con = None
        for ds in cfg.datasets:
            protocol = gold_protocol(ds.loader)
            fingerprint = input_fingerprint(store, ds.name, protocol, cfg.retrieval_k)
            table = stored_table_if_current(store, ds.name, fingerprint)
            if table is None:
                con = con or stack.enter_context(store.connect(report_views=False))
                table = build_dataset_table(con, ds.name, protocol, cfg.retrieval_k)
                store.write(table_path(store, ds.name), table)
                fingerprint_path(store, ds.name).write_text(fingerprint)
            else:
                context.log.info(f"retrieval_report {ds.name}: inputs unchanged since the stored table; kept")
            counts = outcome_counts(table)
            totals.update(counts)
            per_dataset[ds.name] = {"protocol": protocol, "rows": table.num_rows, **counts}
            context.log.info(f"retrieval_report {ds.name} ({protocol}): {table.num_rows} rows, outcomes {counts}")
    store.refresh_catalog()
    with store.reader() as con:
        preview = con.sql(preview_sql(present_metric_columns(con))).to_arrow_table().to_pylist()
    return dg.MaterializeResult(
        metadata={
            "pairs_by_outcome (session level)": dg.MetadataValue.json(dict(totals)),
            "datasets": dg.MetadataValue.json(per_dataset),
            "preview": dg.MetadataValue.md(
                _markdown(
                    preview,
                    [
                        "dataset",
                        "system",
                        "level",
                        "n_scored",
                        *PREVIEW_COLUMNS,
                    ],
                )
            ),
            "query": "SELECT * FROM retrieval_report WHERE type_raw = '(all)'",
            "catalog": dg.MetadataValue.path(str(store.catalog_path)),
        }
    )


def benchmark_report(
    context: AssetExecutionContext, benchmark: BenchmarkResource, results: ResultStoreResource
) -> dg.MaterializeResult:
    store = results.store()
    check_scope(context, benchmark.load())
    agentic_metrics.write_tables(store, benchmark.load())  # agentic readers' retrieval metrics (if any)
    views = store.refresh_catalog()
    manifest, changed = write_manifest(benchmark.resolved(), store)  # pipeline/provenance/manifest.py
    if changed:
        views = store.refresh_catalog()  # its run_manifest / integrity_flags tables changed
    judged = judged_datasets(benchmark.resolved())
    data, rewritten = build_report(store, without_judgments=not judged)
    if not data.rows("accuracy") and judged:
        raise dg.Failure(
            f"no judgments under {store.parquet_root} (views: {', '.join(views)}): materialize answers and "
            "judgments first"
        )
    json_path, html_path = store.root / RESULTS_JSON, store.root / REPORT_HTML
    if rewritten:
        context.log.info(f"benchmark report written to {html_path} (open it in a browser); data in {json_path}")
    else:
        context.log.info(f"benchmark report {html_path}: inputs unchanged since it was written; kept")
    acc = data.rows("accuracy")
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.path(str(html_path)),
            "results_json": dg.MetadataValue.path(str(json_path)),
            "catalog": dg.MetadataValue.path(str(store.catalog_path)),
            "manifest": dg.MetadataValue.path(str(manifest)),
            "rows": len(acc),
            "rewritten": rewritten,
            "failed_answers": sum(r["n_failed_answer"] or 0 for r in acc),
            "failed_judgments": sum(r["n_failed_judgment"] or 0 for r in acc),
            "headline": dg.MetadataValue.md(
                _markdown(
                    acc,
                    [
                        "dataset",
                        "system",
                        "reader",
                        "reader_label",
                        "metric",
                        "headline_value",
                        "wilson_low",
                        "wilson_high",
                        "n_scored",
                        "n_failed_answer",
                        "n_failed_judgment",
                    ],
                )
            ),
        }
    )


RETRIEVAL_REPORT_DESCRIPTION = (
    "Per (question, memory system, level) retrieval metrics (LongMemEval recall_any/recall_all/ndcg_any@k, "
    "LoCoMo evidence recall) -> retrieval_metrics table; aggregated by the retrieval_report view."
)
BENCHMARK_REPORT_DESCRIPTION = (
    "Aggregate report: accuracy per dataset x system x reader x judge metric (Wilson 95 %, failures apart), "
    "by question type, MC confusion, paired McNemar comparisons, retrieval metrics -> DuckDB views, "
    "results.json and a self-contained report.html."
)


def _gated(
    fn: Callable[[AssetExecutionContext, BenchmarkResource, ResultStoreResource], dg.MaterializeResult],
    partitions_def: dg.PartitionsDefinition,
) -> Callable[[AssetExecutionContext, BenchmarkResource, ResultStoreResource], Iterator[dg.MaterializeResult]]:
    """``fn``, then the end-of-run gate when this report is the run's last step."""

    def run(
        context: AssetExecutionContext, benchmark: BenchmarkResource, store: ResultStoreResource
    ) -> Iterator[dg.MaterializeResult]:
        yield fn(context, benchmark, store)
        notes = [n for n in (without_llm_judge(benchmark.resolved()),) if n]
        names = [d.name for d in benchmark.load().datasets]
        finish_run(context, store.store(), partitions_def, names, judge_notes=notes)

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def build_reports(prefix: str, partitions_def: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    """retrieval_report and benchmark_report of config ``prefix``."""
    group = f"{prefix}_reports"
    retrieval = dg.asset(
        key=key(prefix, "retrieval_report"),
        deps=[key(prefix, "retrievals"), key(prefix, "evidence")],
        group_name=group,
        description=RETRIEVAL_REPORT_DESCRIPTION,
    )(_gated(retrieval_report, partitions_def))
    benchmark = dg.asset(
        key=key(prefix, "benchmark_report"),
        deps=[key(prefix, "judgments"), key(prefix, "answers"), key(prefix, "retrieval_report")],
        group_name=group,
        description=BENCHMARK_REPORT_DESCRIPTION,
    )(_gated(benchmark_report, partitions_def))
    return [retrieval, benchmark]
