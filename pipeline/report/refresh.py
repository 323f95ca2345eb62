"""Rebuild the catalog and the report files from whatever results exist (no Dagster).

Why a plain function: the ``benchmark_report`` asset and the end of a run that did not include it
(a backfill of the per-question stages, one re-run question) must refresh report.html the same way.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.report import html as report_html
from pipeline.report.build import REPORT_HTML, RESULTS_JSON, ReportData, collect, write_html, write_json
from resources.storage import ResultStore


def write_report_files(store: ResultStore, data: ReportData) -> tuple[Path, Path]:
    """results.json and report.html of ``data`` under the results folder."""
    json_path = write_json(data, store.root / RESULTS_JSON)
    html_path = write_html(report_html.render(data), store.root / REPORT_HTML)
    return json_path, html_path


def refresh_report_files(store: ResultStore) -> str:
    """Refresh the catalog, then the report files when there are judgments; says what it did."""
    store.refresh_catalog()
    data = collect(store)
    if not data.rows("accuracy"):
        return f"catalog {store.catalog_path} (no judgments yet, so no report.html)"
    _, html_path = write_report_files(store, data)
    return str(html_path)
