"""A short text summary of a results folder for the CLI (``membench results``).

Why: after a run a person wants three things at once: where the results are, one query to start
from, and the headline numbers; this prints them from the live views (fresh even before the
``benchmark_report`` asset has rendered the HTML).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.report.build import EXAMPLE_SQL, REPORT_HTML, RESULTS_JSON
from pipeline.report.glossary import reader_display
from pipeline.report.sql import query_rows, view_names
from pipeline.store.results import ResultStore

HEADLINE_SQL = """
SELECT dataset, system, reader, reader_label, metric, headline_value, aggregate, ci_low, ci_high,
       n_scored, n_failed_answer, n_failed_judgment, n_invalid, n_excluded, n_missing,
       failures_as_wrong, n_failures_as_wrong
FROM accuracy_report ORDER BY dataset, metric, reader, headline_value DESC NULLS LAST, system
"""
HEADERS = (
    "dataset",
    "system",
    "reader",
    "metric",
    "value [95% CI]",
    "failures as wrong (n)",
    "scored",
    "failed a/j",
    "invalid",
    "excl",
    "miss",
)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _line(r: dict[str, Any]) -> tuple[str, ...]:
    value = _fmt(r["headline_value"])
    if r["ci_low"] is not None:  # Wilson for accuracies, bootstrap for mean scores
        value += f" [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
    return (
        r["dataset"], r["system"], reader_display(r["reader"], r["reader_label"]), r["metric"], value,
        f"{_fmt(r['failures_as_wrong'])} ({r['n_failures_as_wrong']})", str(r["n_scored"]),
        f"{r['n_failed_answer']}/{r['n_failed_judgment']}", str(r["n_invalid"]),
        str(r["n_excluded"]), str(r["n_missing"]),
    )  # fmt: skip


def text_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def headline_rows(store: ResultStore) -> list[dict[str, Any]] | None:
    """accuracy_report rows, or None when there are no judgments yet."""
    with store.connect() as con:
        if "accuracy_report" not in view_names(con):
            return None
        return query_rows(con, HEADLINE_SQL)


def summarize_for_cli(results_dir: str | Path) -> str:
    """Where the results are, one SQL query to run, and the headline table."""
    store = ResultStore(results_dir=str(results_dir))
    root = store.root
    html_path, json_path = root / REPORT_HTML, root / RESULTS_JSON
    out = [
        f"results: {root}",
        f"  report : {html_path}" + ("" if html_path.exists() else "  (not yet: materialize benchmark_report)"),
        f"  json   : {json_path}" + ("" if json_path.exists() else "  (not yet)"),
        f"  catalog: {store.catalog_path}",
        "",
        f'query it: membench sql "<query>"   or   cd {root} && duckdb {store.catalog_path.name}',
        f"  {EXAMPLE_SQL};",
        "",
    ]
    rows = headline_rows(store)
    if not rows:
        out.append("no judgments yet: run the full_benchmark job (progress: SELECT * FROM progress_summary)")
        return "\n".join(out)
    out.append(
        "headline (accuracy_report; failures are counted apart, never scored; 'failures as wrong' is the lower "
        "bound with every unscored question counted wrong, n of them in brackets):"
    )
    out.append(text_table(HEADERS, [_line(r) for r in rows]))
    return "\n".join(out)
