"""Collect the report from the catalog views and write results.json and report.html.

Why read the views (not recompute in Python): the views are what a user queries in DuckDB; the
files rendered here are snapshots of exactly those numbers, so the three never disagree.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pipeline.catalog.official import OFFICIAL_VIEWS
from pipeline.report.glossary import REPORT_DEFINITIONS, judge_metric_definitions
from pipeline.report.questions import QuestionView, dataset_questions
from pipeline.report.sql import query_rows, view_names
from pipeline.store.results import ResultStore

RESULTS_JSON = "results.json"
REPORT_HTML = "report.html"
EXAMPLE_SQL = (
    "SELECT dataset, system, reader, metric, round(headline_value, 3) AS value, ci_low, ci_high, ci_method, "
    "n_scored, n_failed_answer, n_failed_judgment FROM accuracy_report ORDER BY dataset, metric, value DESC"
)

# section of the report -> the view it is read from
SECTIONS: dict[str, str] = {
    "accuracy": "accuracy_report",
    "accuracy_by_type": "accuracy_by_type",
    "paired_comparisons": "paired_comparisons",
    "mc_confusion": "mc_confusion",
    "retrieval": "retrieval_report",
    "integrity_flags": "integrity_flags",  # pipeline/provenance/manifest.py: shown beside the numbers they qualify
    "product_usage": "product_usage",  # pipeline/catalog/products.py
    "judge_agreement": "judge_agreement",
    "wrong_answer_causes": "wrong_answer_causes",  # pipeline/catalog/losses.py
    "judge_probe_rates": "judge_probe_rates",  # membench judge-probe (pipeline/catalog/probes.py)
    **{view: view for view in (*OFFICIAL_VIEWS, "repeat_report", "judge_repeat_report")},  # catalog official, repeats
}


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows: rows of each view plus definitions and provenance."""

    generated_at: str
    results_dir: str
    catalog: str
    example_sql: str
    sections: dict[str, list[dict[str, Any]]]
    definitions: dict[str, str]
    judge_metrics: dict[str, str]
    datasets: list[str] = field(default_factory=list)
    comparisons: list[str] = field(default_factory=list)  # compare/*.html pages (membench compare --html)

    def rows(self, section: str) -> list[dict[str, Any]]:
        return self.sections.get(section, [])


def _clean(value: Any) -> Any:
    """JSON-safe value: NaN/inf -> None, Decimal/numpy scalars -> float/int."""
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item"):
        return _clean(value.item())
    try:
        return _clean(float(value))
    except (TypeError, ValueError):
        return str(value)


# sections read with their own query (not SELECT * of a view): section -> (view needed, SQL)
QUERIES: dict[str, tuple[str, str]] = {
    "failures": (
        "progress",
        "SELECT dataset, partition_key, question_id, stage, errors FROM progress WHERE status = 'failed' "
        "ORDER BY dataset, partition_key, stage",
    ),
}


def _fetch(
    con: duckdb.DuckDBPyConnection, view: str, present: set[str], sql: str | None = None
) -> list[dict[str, Any]]:
    if view not in present:
        return []
    rows = query_rows(con, sql or f'SELECT * FROM "{view}"')
    return [{k: _clean(v) for k, v in r.items()} for r in rows]


def collect(store: ResultStore, con: duckdb.DuckDBPyConnection | None = None) -> ReportData:
    """Read every report view (in-memory connection: never blocked by a user holding the catalog).

    ``con``: a ``store.snapshot()`` connection to read from (default: one opened here).
    """
    with contextlib.ExitStack() as stack:
        con = con or stack.enter_context(store.snapshot())
        present = view_names(con)
        sections = {name: _fetch(con, view, present) for name, view in SECTIONS.items()}
        sections.update({name: _fetch(con, view, present, sql) for name, (view, sql) in QUERIES.items()})
        datasets = (
            [r[0] for r in con.execute("SELECT DISTINCT dataset FROM questions ORDER BY 1").fetchall()]
            if "questions" in present
            else []
        )
    return ReportData(
        generated_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        results_dir=str(store.root),
        catalog=str(store.catalog_path),
        example_sql=EXAMPLE_SQL,
        sections=sections,
        definitions=dict(REPORT_DEFINITIONS),
        judge_metrics=judge_metric_definitions(),
        datasets=datasets,
        comparisons=sorted(p.relative_to(store.root).as_posix() for p in (store.root / "compare").glob("*.html")),
    )


def write_json(data: ReportData, path: Path) -> Path:
    """results.json: the report's rows and definitions (strict JSON: no NaN)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(asdict(data), indent=1, allow_nan=False, sort_keys=False))
    tmp.replace(path)
    return path


def collect_questions(
    store: ResultStore, datasets: list[str], con: duckdb.DuckDBPyConnection | None = None
) -> dict[str, list[QuestionView]]:
    """The per-question drill-down of every dataset (pipeline.report.questions)."""
    with contextlib.ExitStack() as stack:
        con = con or stack.enter_context(store.snapshot())
        return {d: dataset_questions(con, d) for d in datasets}


def write_pages(pages: dict[str, str], root: Path, subdir: str = "report") -> list[Path]:
    """Write the report pages (relative path -> HTML) and drop stale pages of an earlier run."""
    written = [write_html(text, root / rel) for rel, text in pages.items()]
    keep = {p.resolve() for p in written}
    for old in (root / subdir).rglob("*.html") if (root / subdir).is_dir() else []:
        if old.resolve() not in keep:
            old.unlink()
    return written


def write_html(html: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    return path
