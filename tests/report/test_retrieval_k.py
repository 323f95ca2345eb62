"""Configurable retrieval cut-offs (``retrieval_k``): metric table, fingerprint, views, plots."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config.model import BenchmarkConfig, DatasetConfig
from pipeline.metrics.retrieval import K_VALUES, metric_columns, score_ranking
from pipeline.report.plots import ks_in
from pipeline.report.retrieval_table import build_dataset_table, input_fingerprint, table_path
from pipeline.store.results import ResultStore, open_catalog
from tests.support.report import build_store

DS = (DatasetConfig(name="d", loader="locomo", path="x.json"),)


@pytest.mark.parametrize(
    ("ks", "error"),
    [((1, 3, 5, 10, 30, 50), False), ((2, 7), False), ((100,), False), ((), True), ((0, 5), True), ((5, 5), True)],
)
def test_config_retrieval_k(ks: tuple[int, ...], error: bool) -> None:
    if error:
        with pytest.raises(ValueError):
            BenchmarkConfig(datasets=DS, retrieval_k=ks)
    else:
        assert BenchmarkConfig(datasets=DS, retrieval_k=ks).retrieval_k == ks


def test_default_k_unchanged() -> None:
    assert BenchmarkConfig(datasets=DS).retrieval_k == K_VALUES == (1, 3, 5, 10, 30, 50)


# ranking, gold, ks -> expected recall_any / recall_all at each k (hand-checked)
SCORES = [
    (["a", "b", "c", "d"], {"c"}, (2, 3), {"recall_any_at_2": 0.0, "recall_any_at_3": 1.0}),
    (["a", "b", "c", "d"], {"a", "d"}, (1, 4, 7), {"recall_all_at_1": 0.0, "recall_all_at_4": 1.0,
                                                  "recall_all_at_7": 1.0, "evidence_recall_at_1": 0.5}),
]  # fmt: skip


@pytest.mark.parametrize(("ranking", "gold", "ks", "expected"), SCORES)
def test_score_ranking_at_configured_k(
    ranking: list[str], gold: set[str], ks: tuple[int, ...], expected: dict[str, float]
) -> None:
    scores = score_ranking(ranking, ranking, gold, ks)
    assert set(scores) == set(metric_columns(ks))
    assert {k: scores[k] for k in expected} == expected


def test_table_views_and_plots_follow_k(tmp_path: Path) -> None:
    store = build_store(tmp_path / "results")
    with store.connect() as con:
        for ds, protocol in (("lme", "longmemeval"), ("loco", "evidence")):
            store.write(table_path(store, ds), build_dataset_table(con, ds, protocol, ks=(2, 7)))
    store.refresh_catalog()
    con = open_catalog(store.catalog_path)
    cols = {r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE retrieval_report)").fetchall()}
    assert {"recall_any_at_2", "recall_any_at_7", "ndcg_any_at_7", "evidence_recall_at_2"} <= cols
    assert not any(c.endswith("_at_10") for c in cols)
    rows_10 = con.execute("SELECT DISTINCT retr_session_recall_any_at_10 FROM accuracy_report").fetchall()
    assert rows_10 == [(None,)]  # the headline k=10 column is NULL, not an error, when k=10 is not computed
    rows = con.sql("SELECT * FROM retrieval_report WHERE dataset = 'lme'").to_arrow_table().to_pylist()
    assert ks_in(rows, "recall_any") == [2, 7]


def test_fingerprint_covers_k(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    assert input_fingerprint(store, "d", "evidence") == input_fingerprint(store, "d", "evidence", K_VALUES)
    assert input_fingerprint(store, "d", "evidence", (2, 7)) != input_fingerprint(store, "d", "evidence")
