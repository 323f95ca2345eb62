"""Catalog views: intervals by metric kind, keys on failed rows, relative paths, documentation."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from pipeline.catalog.docs import VIEW_DOCS, catalog_columns, column_doc, markdown
from pipeline.config.model import PROJECT_ROOT
from pipeline.metrics.stats import bootstrap_mean_ci, wilson_interval
from pipeline.store.catalog_files import CATALOG_FILES_DIR
from pipeline.store.results import ResultStore, open_catalog
from tests.support.report import F1_SCORES, build_full_store

VIEWS_DOC = PROJECT_ROOT / "docs" / "views.md"
DUCKDB_SHELL = Path(shutil.which("duckdb") or PROJECT_ROOT / ".venv" / "bin" / "duckdb")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    return build_full_store(tmp_path_factory.mktemp("views") / "results")


@pytest.fixture(scope="module")
def con(store: ResultStore) -> duckdb.DuckDBPyConnection:
    return open_catalog(store.catalog_path)


def _row(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, object]:
    rows = con.sql(sql).to_arrow_table().to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


def test_mean_metric_gets_bootstrap_not_wilson(con: duckdb.DuckDBPyConnection) -> None:
    r = _row(con, "SELECT * FROM accuracy_report WHERE metric = 'locomo_f1'")
    scores = [F1_SCORES[q] for q in sorted(F1_SCORES)]  # ordered by partition key, as the view
    assert r["aggregate"] == "mean_score" and r["ci_method"] == "bootstrap_percentile_95"
    assert (r["wilson_low"], r["wilson_high"]) == (None, None)
    assert r["headline_value"] == pytest.approx(sum(scores) / 3)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(bootstrap_mean_ci(scores))
    assert (r["n_scored"], r["n_failed_judgment"]) == (3, 1)


def test_binary_metric_gets_wilson(con: duckdb.DuckDBPyConnection) -> None:
    r = _row(con, "SELECT * FROM accuracy_report WHERE metric = 'mc_accuracy' AND system = 'sysB'")
    assert r["ci_method"] == "wilson_95"
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(wilson_interval(r["n_correct"], r["n_scored"]))
    assert (r["wilson_low"], r["wilson_high"]) == (r["ci_low"], r["ci_high"])


def test_by_type_intervals_follow_the_metric_kind(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "SELECT DISTINCT aggregate, ci_method, wilson_low IS NULL FROM accuracy_by_type WHERE n_scored > 0 ORDER BY 1"
    ).fetchall()
    assert rows == [("accuracy", "wilson_95", False), ("mean_score", "bootstrap_percentile_95", True)]


def test_failed_rows_carry_their_keys(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "SELECT system, reader, judge, metric FROM judgments WHERE status = 'failed' ORDER BY ALL"
    ).fetchall()
    assert ("bm25", "gpt", "f1", "locomo_f1") in rows
    assert ("sysA", "extract", "mc", "mc_accuracy") in rows
    assert all(None not in r for r in rows)
    answers = con.execute("SELECT system, reader FROM answers WHERE status = 'failed'").fetchall()
    assert answers == [("sysA", "extract")]


def test_paired_comparisons_bootstrap_for_means(con: duckdb.DuckDBPyConnection) -> None:
    r = _row(con, "SELECT * FROM paired_comparisons WHERE dataset = 'mc'")
    assert r["aggregate"] == "accuracy" and r["score_diff_ci_low"] is None and r["mcnemar_p"] is not None


def test_copied_results_folder_reads_its_own_files(store: ResultStore, tmp_path: Path) -> None:
    copy = tmp_path / "moved"
    shutil.copytree(store.root, copy)
    con = open_catalog(copy / "results.duckdb")
    views = {r[0]: r[1] for r in con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert not any(str(store.root) in sql for sql in views.values())  # no absolute path to the original
    # the copy answers from its own files (the fixed set its catalog was built over, copied along):
    # remove a judgment there and the count drops
    before = con.execute("SELECT count(*) FROM judgments").fetchone()
    [own] = (copy / CATALOG_FILES_DIR).glob("*/parquet/judgments/mc__m1.parquet")
    own.unlink()
    after = con.execute("SELECT count(*) FROM judgments").fetchone()
    assert before is not None and after is not None and after[0] < before[0]
    assert con.execute("SELECT count(*) FROM accuracy_report").fetchone() == (5,)


@pytest.mark.skipif(not DUCKDB_SHELL.exists(), reason="duckdb shell (pip package duckdb-cli) not installed")
def test_duckdb_shell_opens_the_catalog(store: ResultStore) -> None:
    """README: ``cd results/<config> && duckdb results.duckdb`` (the shell is duckdb-cli 1.5)."""
    proc = subprocess.run(
        [str(DUCKDB_SHELL), "results.duckdb", "-csv", "-c", "SELECT metric, ci_method FROM accuracy_report "
         "WHERE metric = 'locomo_f1'"],
        cwd=store.root, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "locomo_f1,bootstrap_percentile_95" in proc.stdout


def test_every_view_and_column_is_commented(con: duckdb.DuckDBPyConnection) -> None:
    columns = catalog_columns(con)
    assert {"accuracy_report", "retrieval_report", "judgments", "progress", "paired_comparisons"} <= set(columns)
    views = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
    assert all(views[v] for v in columns), [v for v in columns if not views[v]]
    undocumented = con.execute(
        "SELECT table_name || '.' || column_name FROM duckdb_columns() WHERE NOT internal AND comment IS NULL"
    ).fetchall()
    assert undocumented == []


def test_metric_columns_documented_for_any_k() -> None:
    assert column_doc("retrieval_report", "recall_any_at_7") == "recall_any@7: 1 if any gold unit is in the top k"
    assert column_doc("accuracy_report", "retr_session_ndcg_any_at_10") is not None
    assert column_doc("no_such_view", "no_such_column") is None


def _views_doc_table() -> str:
    text = VIEWS_DOC.read_text()
    m = re.search(r"<!-- schema:begin -->\n(.*?)\n<!-- schema:end -->", text, re.S)
    assert m, "docs/views.md has no generated schema block"
    return m.group(1)


def test_views_doc_table_matches_the_source(con: duckdb.DuckDBPyConnection) -> None:
    """docs/views.md's table is ``membench schema --markdown`` of a full catalog: every row it has
    must equal what the source renders for that view, and every view of a catalog must be in it."""
    block = _views_doc_table()
    rows = {m.group(1): line for line in block.splitlines() if (m := re.match(r"\| `([a-z_0-9]+)` \|", line))}
    columns = catalog_columns(con)
    assert set(columns) <= set(rows), sorted(set(columns) - set(rows))
    assert set(rows) <= set(VIEW_DOCS)
    for view, line in rows.items():
        names = re.findall(r"`([a-z_0-9<>]+)`: ", line.split(" | ", 2)[2])
        expected = markdown({view: [n.replace("<k>", "10") for n in names]}).splitlines()[2]
        assert line == expected, view
