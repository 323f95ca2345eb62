"""The report is rebuilt only when what it shows could have changed (pipeline/report/refresh.py).

Built from a small complete results folder (tests/support/report.py): a second build with the same
inputs keeps the files (and returns the same rows); a replaced judgments file, a deleted
report.html, a changed code file, a new comparison page or a damaged results.json each rebuild it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.report import refresh
from pipeline.report.build import REPORT_HTML, RESULTS_JSON
from pipeline.report.refresh import REPORT_INPUTS, build_report, refresh_report_files
from pipeline.store.results import ResultStore
from tests.support.report import build_full_store


@pytest.fixture()
def store(tmp_path: Path) -> ResultStore:
    store = build_full_store(tmp_path / "results")
    store.refresh_catalog()
    return store


def _bump(path: Path) -> None:
    """Replace ``path`` by a copy with a later mtime, as a stage's atomic rewrite does."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_unchanged_inputs_keep_the_report(store: ResultStore) -> None:
    first, rewritten = build_report(store)
    assert rewritten and (store.root / REPORT_INPUTS).exists()
    html_mtime = (store.root / REPORT_HTML).stat().st_mtime_ns
    again, rewritten = build_report(store)
    assert not rewritten
    assert again == first  # the same rows, definitions and generation time, read back from results.json
    assert (store.root / REPORT_HTML).stat().st_mtime_ns == html_mtime
    assert "inputs unchanged" in refresh_report_files(store)


def _judgment_file(store: ResultStore) -> Path:
    return sorted((store.parquet_root / "judgments").glob("*.parquet"))[0]


def _new_code_file(store: ResultStore, monkeypatch: pytest.MonkeyPatch) -> None:
    code = store.root.parent / "code"
    code.mkdir()
    (code / "views.py").write_text("VERSION = 1\n")
    monkeypatch.setattr(refresh, "pipeline_code_files", lambda: sorted(code.rglob("*.py")))
    build_report(store)
    (code / "views.py").write_text("VERSION = 22\n")


def _comparison_page(store: ResultStore) -> None:
    (store.root / "compare").mkdir()
    (store.root / "compare" / "a_b.html").write_text("<html></html>")


CHANGES = {
    "judgment file replaced": lambda s, m: _bump(_judgment_file(s)),
    "report.html deleted": lambda s, m: (s.root / REPORT_HTML).unlink(),
    "comparison page added": lambda s, m: _comparison_page(s),
    "results.json damaged": lambda s, m: (s.root / RESULTS_JSON).write_text("{"),
    "code file changed": _new_code_file,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changed_inputs_rebuild_it(store: ResultStore, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    build_report(store)
    CHANGES[change](store, monkeypatch)
    _, rewritten = build_report(store)
    assert rewritten
    assert (store.root / REPORT_HTML).exists()
    _, rewritten = build_report(store)
    assert not rewritten


def test_embeddings_do_not_count(store: ResultStore) -> None:
    build_report(store)
    cache = store.parquet_root / "embeddings" / "extra.parquet"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(b"not read by the report")
    assert build_report(store)[1] is False
