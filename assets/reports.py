"""Report assets: per-question retrieval metrics, and the aggregate benchmark report.

Why unpartitioned: a report aggregates over every question; it is cheap (DuckDB over Parquet,
seconds for thousands of questions) and is simply recomputed after each run.
"""

from collections import Counter
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext

from pipeline.metrics.retrieval import gold_protocol
from pipeline.report import html as report_html
from pipeline.report.build import REPORT_HTML, RESULTS_JSON, collect, write_html, write_json
from pipeline.report.retrieval_table import (
    build_dataset_table,
    fingerprint_path,
    input_fingerprint,
    outcome_counts,
    stored_table_if_current,
    table_path,
)
from pipeline.report.sql import view_names
from resources.benchmark import BenchmarkResource


def _markdown(rows: list[dict[str, Any]], cols: list[str], limit: int = 20) -> str:
    def cell(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in cols) + " |" for r in rows[:limit]]
    return "\n".join(lines)


PREVIEW_SQL = """
SELECT dataset, system, level, count(*) FILTER (WHERE outcome = 'scored') AS n_scored,
       avg(recall_any_at_10) AS recall_any_at_10, avg(recall_all_at_10) AS recall_all_at_10,
       avg(ndcg_any_at_10) AS ndcg_any_at_10
FROM retrieval_metrics GROUP BY ALL ORDER BY ALL
"""


@dg.asset(
    deps=[dg.AssetKey("retrievals"), dg.AssetKey("evidence")],
    description=(
        "Per (question, memory system, level) retrieval metrics (LongMemEval recall_any/recall_all/ndcg_any@k, "
        "LoCoMo evidence recall) -> retrieval_metrics table; aggregated by the retrieval_report view."
    ),
)
def retrieval_report(context: AssetExecutionContext, benchmark: BenchmarkResource) -> dg.MaterializeResult:
    cfg, store = benchmark.load(), benchmark.store()
    totals: Counter[str] = Counter()
    per_dataset: dict[str, Any] = {}
    with store.connect() as con:
        if "retrievals" not in view_names(con):
            raise dg.Failure(f"no retrievals under {store.parquet_root}: materialize the retrievals asset first")
        for ds in cfg.datasets:
            protocol = gold_protocol(ds.loader)
            fingerprint = input_fingerprint(store, ds.name, protocol)
            table = stored_table_if_current(store, ds.name, fingerprint)
            if table is None:
                table = build_dataset_table(con, ds.name, protocol)
                store.write(table_path(store, ds.name), table)
                fingerprint_path(store, ds.name).write_text(fingerprint)
            else:
                context.log.info(f"retrieval_report {ds.name}: inputs unchanged since the stored table; kept")
            counts = outcome_counts(table)
            totals.update(counts)
            per_dataset[ds.name] = {"protocol": protocol, "rows": table.num_rows, **counts}
            context.log.info(f"retrieval_report {ds.name} ({protocol}): {table.num_rows} rows, outcomes {counts}")
    store.refresh_catalog()
    preview = store.query(PREVIEW_SQL).to_pylist()
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
                        "recall_any_at_10",
                        "recall_all_at_10",
                        "ndcg_any_at_10",
                    ],
                )
            ),
            "query": "SELECT * FROM retrieval_report WHERE type_raw = '(all)'",
            "catalog": dg.MetadataValue.path(str(store.catalog_path)),
        }
    )


@dg.asset(
    deps=[dg.AssetKey("judgments"), dg.AssetKey("answers"), dg.AssetKey("retrieval_report")],
    description=(
        "Aggregate report: accuracy per dataset x system x reader x judge metric (Wilson 95 %, failures apart), "
        "by question type, MC confusion, paired McNemar comparisons, retrieval metrics -> DuckDB views, "
        "results.json and a self-contained report.html."
    ),
)
def benchmark_report(context: AssetExecutionContext, benchmark: BenchmarkResource) -> dg.MaterializeResult:
    store = benchmark.store()
    views = store.refresh_catalog()
    data = collect(store)
    if not data.rows("accuracy"):
        raise dg.Failure(
            f"no judgments under {store.parquet_root} (views: {', '.join(views)}): materialize answers and "
            "judgments first"
        )
    json_path = write_json(data, store.root / RESULTS_JSON)
    html_path = write_html(report_html.render(data), store.root / REPORT_HTML)
    context.log.info(f"benchmark report written to {html_path} (open it in a browser); data in {json_path}")
    acc = data.rows("accuracy")
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.path(str(html_path)),
            "results_json": dg.MetadataValue.path(str(json_path)),
            "catalog": dg.MetadataValue.path(str(store.catalog_path)),
            "rows": len(acc),
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
