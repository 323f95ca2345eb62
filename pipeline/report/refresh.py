"""Rebuild the catalog and the report files from whatever results exist (no Dagster).

Why a plain function: the ``benchmark_report`` asset and the end of a run that did not include it
(a backfill of the per-question stages, one re-run question) must refresh report.html the same way.

Why a fingerprint: collecting every view and rendering a drill-down page per question takes ~10 s
on the shared benchmark, most of an otherwise free rerun. The report is a function of the stored
results and the code, so when neither changed (same Parquet files by path, size and mtime -- files
are only ever replaced by atomic rename, the rule ``make`` relies on -- same code files, same judge
metric definitions, same comparison pages) the files already written are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

import duckdb

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
from pipeline.report.glossary import judge_metric_definitions
from pipeline.store.results import ResultStore, Snapshot
from pipeline.util.coalesce import Coalescer
from pipeline.util.fingerprint import parquet_files, pipeline_code_files, update_with_files

REPORT_INPUTS = ".report_inputs"  # under the results folder: fingerprint of what the report files show
REPORT_WORK = "report"  # coalesced refreshes: .report.tickets / .report.lock / .report.coalesce
UNREAD_STAGES = frozenset({"embeddings", "_index"})  # Parquet the report never reads


def report_fingerprint(store: ResultStore, parquet: Path | None = None) -> str:
    """Hash of everything the report is computed from (see the module docstring).

    ``parquet``: a snapshot's hard links of the results' ``parquet/`` (``Snapshot.parquet``): its
    files hashed under their names in the results folder (a link has its file's size and mtime), so
    the hash is the one the live files had when the snapshot was made, whatever was written since.
    """
    h = hashlib.sha256(json.dumps(judge_metric_definitions(), sort_keys=True).encode())
    update_with_files(h, pipeline_code_files())
    base = parquet or store.parquet_root
    update_with_files(h, parquet_files(base, UNREAD_STAGES), base, store.parquet_root)
    update_with_files(h, sorted((store.root / "compare").glob("*.html")))
    return h.hexdigest()


def current_report(store: ResultStore, fingerprint: str) -> ReportData | None:
    """The report data already written from exactly these inputs, or None (then rebuild)."""
    mark, json_path = store.root / REPORT_INPUTS, store.root / RESULTS_JSON
    if not (mark.exists() and json_path.exists() and (store.root / REPORT_HTML).exists()):
        return None
    if mark.read_text().strip() != fingerprint:
        return None
    try:
        return ReportData(**json.loads(json_path.read_text()))
    except (ValueError, TypeError):  # an older or damaged results.json: rebuild it
        return None


def write_report_files(
    store: ResultStore,
    data: ReportData,
    fingerprint: str | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[Path, Path]:
    """results.json, report.html and its pages (report/<dataset>.html, question drill-downs).

    ``fingerprint`` (taken before ``data`` was collected) is recorded after the files are written,
    so a crash in between, or inputs that changed meanwhile, only cost a rebuild next time.
    ``con``: the ``store.snapshot()`` connection ``data`` was collected from (default: a new one).
    """
    mark = store.root / REPORT_INPUTS
    mark.unlink(missing_ok=True)
    json_path = write_json(data, store.root / RESULTS_JSON)
    pages = report_html.render_pages(data, collect_questions(store, data.datasets, con))
    write_pages(pages, store.root, report_html.REPORT_DIR)
    if fingerprint is not None:
        mark.write_text(fingerprint)
    return json_path, store.root / REPORT_HTML


def build_report(
    store: ResultStore, without_judgments: bool = False, snap: Snapshot | None = None
) -> tuple[ReportData, bool]:
    """(report data, whether the files were rewritten): rebuilt only when its inputs changed.

    ``snap``: the ``store.pinned_snapshot()`` to read (default: one opened when the report is not
    current); its inputs are then the files it reads.

    Call after ``store.refresh_catalog()``. With no judgments yet, nothing is written, unless
    ``without_judgments``: a run no judge scores (BEAM or LoCoMo-Plus without an LLM) still gets
    its report of retrieval and answers. Coalesced
    across processes like the catalog (pipeline/util/coalesce.py): a caller that waited while another
    process refreshed it from a state that held this caller's results takes those files.
    """
    return Coalescer(store.root, REPORT_WORK).run(
        lambda: _build_report_now(store, without_judgments, snap), lambda: _written_report(store)
    )


def _written_report(store: ResultStore) -> tuple[ReportData, bool] | None:
    """The report files as last written (not rewritten now), None when there are none to read."""
    if not (store.root / REPORT_HTML).exists():
        return None
    try:
        return ReportData(**json.loads((store.root / RESULTS_JSON).read_text())), False
    except (FileNotFoundError, ValueError, TypeError):
        return None


def _build_report_now(
    store: ResultStore, without_judgments: bool, snap: Snapshot | None = None
) -> tuple[ReportData, bool]:
    fingerprint = report_fingerprint(store, snap.parquet if snap else None)
    kept = current_report(store, fingerprint)
    if kept is not None:
        return kept, False
    with contextlib.ExitStack() as stack:  # one copy of the many-times-read tables for the views and the pages
        con = snap.con if snap else stack.enter_context(store.snapshot())
        data = collect(store, con)
        if not data.rows("accuracy") and not without_judgments:
            return data, False
        write_report_files(store, data, fingerprint, con)
    return data, True


def refresh_report_files(store: ResultStore) -> str:
    """Refresh the catalog, then the report files when there are judgments; says what it did."""
    store.refresh_catalog()
    data, rewritten = build_report(store)
    return report_outcome(store, data, rewritten)


def report_outcome(store: ResultStore, data: ReportData, rewritten: bool) -> str:
    """What a report refresh did, in words (the run's log line)."""
    if not data.rows("accuracy"):
        return f"catalog {store.catalog_path} (no judgments yet, so no report.html)"
    html = store.root / REPORT_HTML
    return str(html) if rewritten else f"{html} (inputs unchanged since it was written; kept)"
