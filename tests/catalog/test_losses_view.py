"""wrong_answer_causes on the hand-built store (tests/support/report.py), counted by hand."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store.results import ResultStore, open_catalog
from tests.support.report import build_full_store


@pytest.fixture(scope="module")
def causes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str, str], tuple[int, ...]]:
    store: ResultStore = build_full_store(tmp_path_factory.mktemp("losses") / "results")
    # lme q1 (bm25): the gold is contained in the answer (lme_contains_normalized right), the F1 judge says wrong
    path = store.partition_path("judgments", "lme__q1")
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        if r["unit"] == "bm25/gpt/f1":
            r["correct"] = False
    store.write_partition("judgments", "lme__q1", pa.Table.from_pylist(rows, schema=pq.read_schema(path)))
    store.refresh_catalog()
    con = open_catalog(store.catalog_path)
    out = con.execute(
        "SELECT dataset, system, metric, type_raw, n_wrong, n_evidence_not_retrieved, n_retrieved_answered_wrong, "
        "n_string_right_judged_wrong, n_evidence_unknown FROM wrong_answer_causes"
    ).fetchall()
    return {tuple(r[:4]): tuple(r[4:]) for r in out}


def test_every_wrong_verdict_has_one_cause(causes: dict[tuple[str, str, str, str], tuple[int, ...]]) -> None:
    for key, (n, *split) in causes.items():
        assert n == sum(split), key


def test_causes_by_hand(causes: dict[tuple[str, str, str, str], tuple[int, ...]]) -> None:
    # bm25 + lme_contains_normalized: q2 wrong with its gold turns in the context
    assert causes[("lme", "bm25", "lme_contains_normalized", "(all)")] == (1, 0, 1, 0, 0)
    # bm25 + F1: q1 right by the string metric, wrong by F1; q2 wrong (F1 0.25) with evidence in the context
    assert causes[("lme", "bm25", "locomo_f1", "(all)")] == (2, 0, 1, 1, 0)
    assert causes[("lme", "bm25", "locomo_f1", "single-session-user")] == (1, 0, 0, 1, 0)
    # full + contains: q4 has no scored evidence at turn level
    assert causes[("lme", "full", "lme_contains_normalized", "(all)")] == (1, 0, 0, 0, 1)
    # multiple choice: no evidence to look for
    assert causes[("mc", "sysA", "mc_accuracy", "(all)")] == (1, 0, 0, 0, 1)


def test_report_section_per_system(tmp_path_factory: pytest.TempPathFactory) -> None:
    from pipeline.report.build import collect
    from pipeline.report.losses_html import loss_section

    store = build_full_store(tmp_path_factory.mktemp("losses_html") / "results")
    html = "".join(loss_section(collect(store), "lme", "lme_contains_normalized"))
    assert "<h3>bm25 / gpt</h3>" in html and "<h3>full / gpt</h3>" in html
    # bm25: one wrong answer, lost by the reader (its evidence was in the context)
    assert "<tr><td><b>all</b></td><td class=num>1</td><td class=num>0<span class=sub>0 %</span></td>" in html
    assert loss_section(collect(store), "lme", "no_such_metric") == []
