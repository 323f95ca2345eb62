"""accuracy_report / accuracy_by_type: the failures-as-wrong bound and cost per correct answer, by hand.

Expected numbers come from the hand-built store of tests/support/report.py (its docstrings list the rows).
"""

from __future__ import annotations

import duckdb
import pytest

from pipeline.metrics.bounds import failures_as_wrong, per_correct
from pipeline.store.results import ResultStore, open_catalog
from tests.support.report import build_full_store


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    store: ResultStore = build_full_store(tmp_path_factory.mktemp("bounds") / "results")
    return open_catalog(store.catalog_path)


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, object]:
    rows = con.sql(sql).to_arrow_table().to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize(
    ("where", "credit", "n_scored", "n_unscored"),
    [
        # sysA: m1, m2 right, m3 invalid (wrong), m4 answer failed, m5 judgment failed
        ("dataset = 'mc' AND system = 'sysA'", 2, 3, 2),
        ("dataset = 'mc' AND system = 'sysB'", 4, 5, 0),
        # q4's verdict is NULL (excluded): out of both the headline and the bound
        ("metric = 'lme_contains_normalized' AND system = 'bm25'", 2, 3, 0),
        # token F1 0.5 + 0.25 + 1.0; q4's judgment failed and scores 0 in the bound
        ("metric = 'locomo_f1'", 1.75, 3, 1),
    ],
)
def test_failures_as_wrong_column(
    con: duckdb.DuckDBPyConnection, where: str, credit: float, n_scored: int, n_unscored: int
) -> None:
    r = _one(con, f"SELECT * FROM accuracy_report WHERE {where}")
    assert r["n_failures_as_wrong"] == n_unscored and r["n_scored"] == n_scored
    assert r["failures_as_wrong"] == pytest.approx(failures_as_wrong(credit, n_scored, n_unscored))
    assert r["failures_as_wrong"] <= r["headline_value"]  # type: ignore[operator]


def test_by_type_bound_counts_the_types_failures(con: duckdb.DuckDBPyConnection) -> None:
    r = _one(
        con,
        "SELECT * FROM accuracy_by_type WHERE dataset = 'mc' AND system = 'sysA' AND type_raw = 'temporal_reasoning'",
    )
    # m3 invalid (scored wrong), m4 answer failed, m5 judgment failed
    assert (r["n_scored"], r["n_correct"], r["n_failures_as_wrong"]) == (1, 0, 2)
    assert r["failures_as_wrong"] == 0.0


def test_cost_per_correct_answer(con: duckdb.DuckDBPyConnection) -> None:
    bm25 = _one(con, "SELECT * FROM accuracy_report WHERE metric = 'lme_contains_normalized' AND system = 'bm25'")
    # tokens 110 + 220 + 330 + 440 over 2 correct; q3 has no price -> no dollars per correct answer
    assert bm25["tokens_per_correct"] == pytest.approx(per_correct(1100, 2))
    assert bm25["usd_per_correct"] is None and bm25["n_cost_unknown"] == 1
    # reader: uncached latencies 1, 2, 3 s (q4 a cache hit, counted at their mean 2 s) + retrieval 0.1+0.3+0.2+0.4 s
    assert bm25["seconds_per_correct"] == pytest.approx(per_correct(4 * 2.0 + 1.0, 2))
    full = _one(con, "SELECT * FROM accuracy_report WHERE metric = 'lme_contains_normalized' AND system = 'full'")
    assert full["tokens_per_correct"] == pytest.approx(4 * 1010 / 3)
    assert full["usd_per_correct"] == pytest.approx(0.04 / 3)
    # q1's retrieval failed: only the three ok retrievals (0.05 s each) count
    assert full["seconds_per_correct"] == pytest.approx((4 * 6.5 + 0.15) / 3)


def test_offline_reader_has_no_tokens_per_correct(con: duckdb.DuckDBPyConnection) -> None:
    r = _one(con, "SELECT * FROM accuracy_report WHERE dataset = 'mc' AND system = 'sysB'")
    # the fixture's offline answers report 0 tokens and cost 0.0 (a real number), no retrievals for mc
    assert r["tokens_per_correct"] == 0.0 and r["usd_per_correct"] == 0.0
