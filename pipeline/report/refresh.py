"""Rebuild the catalog and the report files from whatever results exist (no Dagster).

Why a plain function: the ``benchmark_report`` asset and the end of a run that did not include it
(a backfill of the per-question stages, one re-run question) must refresh report.html the same way.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.report import html as report_html
from pipeline.report.build import (
    REPORT_HTML,
    RESULTS_JSON,
    ReportData,
    collect,
    collect_questions,
    write_json,
    write_pages,
)
from pipeline.store import ResultStore


def write_report_files(store: ResultStore, data: ReportData) -> tuple[Path, Path]:
    """results.json, report.html and its pages (report/<dataset>.html, question drill-downs)."""
    json_path = write_json(data, store.root / RESULTS_JSON)
    pages = report_html.render_pages(data, collect_questions(store, data.datasets))
    write_pages(pages, store.root, report_html.REPORT_DIR)
    return json_path, store.root / REPORT_HTML


def refresh_report_files(store: ResultStore) -> str:
    """Refresh the catalog, then the report files when there are judgments; says what it did."""
    store.refresh_catalog()
    data = collect(store)
    if not data.rows("accuracy"):
        return f"catalog {store.catalog_path} (no judgments yet, so no report.html)"
    _, html_path = write_report_files(store, data)
    return str(html_path)
