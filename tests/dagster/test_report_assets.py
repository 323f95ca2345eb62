"""Reports end to end on a small hand-built result store (Parquet files with the contract columns).

The stage tables are written with the real payload schemas of the retrievals / answers / judgments
stages; every expected number below is computed by hand in the comments.
"""

from __future__ import annotations

import base64
import json
import math
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import dagster as dg
import duckdb
import pyarrow.parquet as pq
import pytest

from assets.reports import build_reports
from pipeline.config.model import load_config
from pipeline.core.records import LOAD_FAILURES_SCHEMA, QUESTIONS_SCHEMA, LoadFailure, rows_to_table
from pipeline.judges.base import JUDGMENTS_PAYLOAD
from pipeline.metrics.stats import wilson_interval
from pipeline.readers.base import ANSWERS_PAYLOAD
from pipeline.report.retrieval_table import table_path
from pipeline.report.summary import summarize_for_cli
from pipeline.store.results import ResultStore, open_catalog
from resources.factory import build_resources
from tests.support.report import answer_row, build_store, judgment_row, question_row, write_stage

L3 = math.log2(3)


CONFIG = """
results_dir: {root}
datasets:
  - {{name: lme, loader: longmemeval_s, path: unused.json}}
  - {{name: loco, loader: locomo, path: unused.json}}
  - {{name: mc, loader: locomo_mc10, path: unused.json}}
"""


def report_assets(cfg: Path) -> list[dg.AssetsDefinition]:
    """retrieval_report and benchmark_report of the test config (the definitions' own factory)."""
    load_config.cache_clear()
    return build_reports(load_config(str(cfg)).config_name, dg.StaticPartitionsDefinition(["unused"]))


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    root = tmp_path_factory.mktemp("report")
    store = build_store(root / "results")
    cfg = root / "config.yaml"
    cfg.write_text(CONFIG.format(root=store.root))
    result = dg.materialize(report_assets(cfg), resources=build_resources(load_config(str(cfg))))
    assert result.success
    return store


def _metrics(con: duckdb.DuckDBPyConnection, system: str, qid: str, level: str) -> dict[str, Any]:
    sql = f"SELECT * FROM retrieval_metrics WHERE system = '{system}' AND question_id = '{qid}' AND level = '{level}'"
    return _one(con, sql)


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, Any]:
    rows = con.sql(sql).to_arrow_table().to_pylist()
    assert len(rows) == 1, (sql, rows)
    return rows[0]


@pytest.fixture(scope="module")
def catalog(materialized: ResultStore) -> duckdb.DuckDBPyConnection:
    return open_catalog(materialized.catalog_path)


# ---- retrieval ------------------------------------------------------------------------------
def test_retrieval_metric_rows(catalog: duckdb.DuckDBPyConnection) -> None:
    rows = catalog.execute(
        "SELECT system, question_id, level, outcome FROM retrieval_metrics WHERE dataset = 'lme' ORDER BY ALL"
    ).fetchall()
    outcomes = {(s, q, lv): o for s, q, lv, o in rows}
    assert len(rows) == 32  # 4 questions x 2 systems x 4 levels (turn, session, session_keyed, session_dedup)
    assert outcomes[("bm25", "q3_abs", "session")] == "excluded_abstention"
    assert outcomes[("bm25", "q4", "turn")] == "excluded_no_gold"  # assistant-only has_answer: not gold
    assert outcomes[("full", "q1", "session")] == "retrieval_failed"
    assert outcomes[("full", "q2", "turn")] == "scored"
    q2 = _metrics(catalog, "bm25", "q2", "turn")
    # ranking S4:0 S4:1 S2:0 S3:0, gold {S3:0, S4:0} (S4:1 is an assistant turn)
    assert q2["n_gold"] == 2 and q2["n_ranked"] == 4
    assert (q2["recall_any_at_1"], q2["recall_all_at_3"], q2["recall_all_at_5"]) == (1.0, 0.0, 1.0)
    assert q2["ndcg_any_at_3"] == pytest.approx(0.5)  # dcg 1 / ideal 2
    assert q2["ndcg_any_at_5"] == pytest.approx(0.75)  # (1 + 1/log2 4) / 2
    assert q2["evidence_recall_at_3"] == 0.5
    q1 = _metrics(catalog, "bm25", "q1", "turn")
    assert q1["n_context_units"] == 2 and q1["evidence_recall_context"] == 1.0
    full = _metrics(catalog, "full", "q2", "turn")
    assert full["n_context_units"] == 6  # units_total 8 = 6 listed + 2 trimmed: listed = context
    assert full["ndcg_any_at_5"] == pytest.approx((0.5 + 1 / math.log2(5)) / 2)
    loco = _one(catalog, "SELECT * FROM retrieval_metrics WHERE dataset = 'loco' AND level = 'turn'")
    assert loco["gold_protocol"] == "evidence" and loco["evidence_recall_at_1"] == 0.5


def test_retrieval_report_view(catalog: duckdb.DuckDBPyConnection) -> None:
    bm25 = _one(
        catalog,
        "SELECT * FROM retrieval_report WHERE dataset = 'lme' AND system = 'bm25' AND level = 'session' "
        "AND type_raw = '(all)'",
    )
    assert (bm25["n_questions"], bm25["n_scored"], bm25["n_excluded"]) == (4, 2, 2)
    assert (bm25["n_excluded_abstention"], bm25["n_excluded_no_gold"], bm25["n_failed"]) == (1, 1, 0)
    assert bm25["recall_any_at_1"] == 0.5  # q1 miss at 1 (S2 first), q2 hit
    assert bm25["recall_all_at_3"] == 1.0
    assert bm25["ndcg_any_at_10"] == pytest.approx((1.0 + (1 + 1 / L3) / 2) / 2)
    assert bm25["retrieval_latency_p50_s"] == pytest.approx(0.25)
    assert bm25["retrieval_latency_p95_s"] == pytest.approx(0.385)
    full = _one(
        catalog,
        "SELECT * FROM retrieval_report WHERE dataset = 'lme' AND system = 'full' AND level = 'session' "
        "AND type_raw = '(all)'",
    )
    assert (full["n_scored"], full["n_failed"], full["n_excluded"]) == (1, 1, 2)
    # LongMemEval's turn->session conversion: labels S1 S1 S2 S3 S4 noans:S4 (S4:1 is not a gold turn of the
    # answer session S4); k = 5 widens to 6 to cover 5 distinct labels; hits at ranks 4, 5; ideal = 2 gold turns
    assert full["ndcg_any_at_5"] == pytest.approx((0.5 + 1 / math.log2(5)) / 2)
    dedup = _one(
        catalog,
        "SELECT * FROM retrieval_report WHERE dataset = 'lme' AND system = 'full' AND level = 'session_dedup' "
        "AND type_raw = '(all)'",
    )
    assert dedup["ndcg_any_at_5"] == pytest.approx((1 / L3 + 0.5) / 2)  # variant: sessions S1 S2 S3 S4, each once
    by_type = catalog.execute(
        "SELECT type_raw, n_questions, n_scored FROM retrieval_report WHERE dataset = 'lme' AND system = 'bm25' "
        "AND level = 'turn' AND type_raw <> '(all)' ORDER BY 1"
    ).fetchall()
    assert by_type == [("multi-session", 1, 1), ("single-session-assistant", 1, 0), ("single-session-user", 2, 1)]


# ---- accuracy ---------------------------------------------------------------------------------
def test_accuracy_report_failures_apart(catalog: duckdb.DuckDBPyConnection) -> None:
    a = _one(catalog, "SELECT * FROM accuracy_report WHERE dataset = 'mc' AND system = 'sysA'")
    # m1, m2 correct; m3 invalid (scored wrong); m4 answer failed; m5 judgment failed
    assert (a["n_judgments"], a["n_scored"], a["n_correct"]) == (5, 3, 2)
    assert (a["n_failed_answer"], a["n_failed_judgment"], a["n_invalid"], a["n_excluded"]) == (1, 1, 1, 0)
    assert a["accuracy"] == pytest.approx(2 / 3) and a["headline_value"] == pytest.approx(2 / 3)
    assert (a["wilson_low"], a["wilson_high"]) == pytest.approx(wilson_interval(2, 3), abs=1e-12)
    assert a["reader_label"] == "offline" and a["metric"] == "mc_accuracy"
    assert (a["n_dataset_questions"], a["n_missing"]) == (5, 0)
    b = _one(catalog, "SELECT * FROM accuracy_report WHERE dataset = 'mc' AND system = 'sysB'")
    assert (b["n_scored"], b["n_correct"], b["accuracy"]) == (5, 4, pytest.approx(0.8))


def test_accuracy_report_costs_latency_retrieval(catalog: duckdb.DuckDBPyConnection) -> None:
    r = _one(catalog, "SELECT * FROM accuracy_report WHERE dataset = 'lme' AND system = 'bm25'")
    assert (r["n_scored"], r["n_correct"], r["n_excluded"]) == (3, 2, 1)  # q4: judge not applicable
    # latency over non-cache-hit answers [1, 2, 3]: p50 2.0, p95 2 + 0.9 * 1
    assert r["latency_p50_s"] == pytest.approx(2.0) and r["latency_p95_s"] == pytest.approx(2.9)
    assert r["mean_prompt_tokens"] == 250 and r["mean_completion_tokens"] == 25
    assert r["cost_per_question_usd"] == pytest.approx(0.001)  # mean of 0.001, 0.002, 0.0; one unknown
    assert r["n_cost_unknown"] == 1 and r["cache_hit_rate"] == 0.25
    assert r["retr_session_recall_any_at_5"] == 1.0
    assert r["retr_session_ndcg_any_at_10"] == pytest.approx((1.0 + (1 + 1 / L3) / 2) / 2)
    assert r["reader_label"] == "llm"


def test_accuracy_by_type(catalog: duckdb.DuckDBPyConnection) -> None:
    rows = catalog.execute(
        "SELECT type_raw, type_name, n_scored, n_correct, n_failed_answer, n_failed_judgment, n_invalid, "
        "n_type_questions FROM accuracy_by_type WHERE dataset = 'mc' AND system = 'sysA' ORDER BY type_raw"
    ).fetchall()
    assert rows == [
        ("single_hop", "single-hop", 2, 2, 0, 0, 0, 2),
        ("temporal_reasoning", "temporal", 1, 0, 1, 1, 1, 3),  # m3 invalid; m4, m5 failed apart
    ]


def test_paired_comparisons(catalog: duckdb.DuckDBPyConnection) -> None:
    mc = _one(catalog, "SELECT * FROM paired_comparisons WHERE dataset = 'mc'")
    # both scored on m1 (A right, B wrong), m2 (both right), m3 (A invalid, B right)
    assert (mc["system_a"], mc["system_b"], mc["n_paired"]) == ("sysA", "sysB", 3)
    assert (mc["n_both_correct"], mc["n_only_a_correct"], mc["n_only_b_correct"], mc["n_both_wrong"]) == (1, 1, 1, 0)
    assert mc["mcnemar_p"] == pytest.approx(1.0)
    lme = _one(catalog, "SELECT * FROM paired_comparisons WHERE dataset = 'lme'")
    assert (lme["n_paired"], lme["n_only_a_correct"], lme["n_only_b_correct"]) == (3, 0, 1)


def test_mc_confusion(catalog: duckdb.DuckDBPyConnection) -> None:
    rows = catalog.execute(
        "SELECT gold_index, predicted, n FROM mc_confusion WHERE system = 'sysA' ORDER BY 1, 2"
    ).fetchall()
    assert rows == [(0, "0", 2), (1, "1", 1), (2, "invalid", 1), (3, "failed", 1)]


# ---- files -----------------------------------------------------------------------------------
class _Checker(HTMLParser):
    VOID: ClassVar[set[str]] = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.images: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        elif tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


def test_html_report(materialized: ResultStore) -> None:
    """report.html (overview) + report/<dataset>.html + question pages: well-formed, plots valid."""
    pages = [materialized.root / "report.html", *sorted((materialized.root / "report").rglob("*.html"))]
    names = {p.relative_to(materialized.root).as_posix() for p in pages}
    assert {"report/lme.html", "report/loco.html", "report/mc.html", "report/mc/questions-1.html"} <= names
    images: list[str] = []
    for path in pages:
        checker = _Checker()
        checker.feed(path.read_text())
        assert checker.errors == [] and checker.stack == [], path
        images += checker.images
    # lme and mc: by-type + vs-context plots; lme and loco: a recall@k plot; the overview's first screen:
    # the vs-context plots of lme and mc again
    assert len(images) == 8
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = (materialized.root / "report.html").read_text()
    assert "offline (no LLM)" in text
    for name in ("recall_any@k", "ndcg_any@k", "accuracy", "wilson_95", "mcnemar_p", "mc_accuracy"):
        assert f"<code>{name}</code>" in text
    assert "SELECT dataset, system, reader" in text
    assert "no by-type plot" in (materialized.root / "report" / "loco.html").read_text()


def test_results_json(materialized: ResultStore) -> None:
    data = json.loads((materialized.root / "results.json").read_text())
    acc = {(r["dataset"], r["system"]): r for r in data["sections"]["accuracy"]}
    assert set(acc) == {("mc", "sysA"), ("mc", "sysB"), ("lme", "bm25"), ("lme", "full")}
    assert acc[("mc", "sysA")]["n_failed_answer"] == 1
    assert data["definitions"]["accuracy"].startswith("n_correct / n_scored")
    assert {"accuracy_by_type", "paired_comparisons", "mc_confusion", "retrieval"} <= set(data["sections"])
    assert data["datasets"] == ["lme", "loco", "mc"]


def test_summarize_for_cli(materialized: ResultStore) -> None:
    text = summarize_for_cli(materialized.root)
    assert str(materialized.root / "report.html") in text and "FROM accuracy_report" in text
    assert "extract [offline (no LLM)]" in text
    assert "0.667 [" in text  # sysA: 2 of 3 scored


def test_summary_without_judgments(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    store.write(
        store.canonical_path("d", "questions"), rows_to_table([question_row("d", "x", "t", "t")], QUESTIONS_SCHEMA)
    )
    assert "no judgments yet" in summarize_for_cli(tmp_path)


def test_views_skip_until_tables_exist(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    store.write(
        store.canonical_path("d", "questions"), rows_to_table([question_row("d", "x", "t", "t")], QUESTIONS_SCHEMA)
    )
    views = store.refresh_catalog()
    assert "accuracy_report" not in views and "retrieval_report" not in views


def test_load_failures_count_as_questions_and_failures(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    store.write(
        store.canonical_path("d", "questions"), rows_to_table([question_row("d", "ok", "t", "t")], QUESTIONS_SCHEMA)
    )
    failure = LoadFailure("d", "f.json", 1, "bad", "d__bad", "question", "field question: missing")
    store.write(store.canonical_path("d", "load_failures"), rows_to_table([failure], LOAD_FAILURES_SCHEMA))
    broken = "canonical record invalid: field question: missing"
    answers = [
        answer_row("d", "ok", "s", "r", label="offline"),
        answer_row("d", "bad", "s", "r", label="offline", error=broken),
    ]
    write_stage(store, "answers", ANSWERS_PAYLOAD, answers)
    judgments = [
        judgment_row("d", "ok", "s", "r", "j", "mc_accuracy", True),
        judgment_row("d", "bad", "s", "r", "j", "m", None, error=broken),
    ]
    write_stage(store, "judgments", JUDGMENTS_PAYLOAD, judgments)
    views = store.refresh_catalog()
    assert {"accuracy_report", "accuracy_by_type", "paired_comparisons"} <= set(views)
    con = open_catalog(store.catalog_path)
    r = _one(con, "SELECT * FROM accuracy_report")
    assert (r["n_dataset_questions"], r["n_missing"], r["n_failed_answer"], r["n_scored"]) == (2, 0, 1, 1)
    types = con.execute("SELECT type_raw, n_failed_answer FROM accuracy_by_type ORDER BY 1").fetchall()
    assert types == [("(unknown)", 1), ("t", 0)]


def test_retrieval_report_keeps_a_table_whose_inputs_did_not_change(tmp_path: Path) -> None:
    """An immediate re-run reuses the metric tables; a replaced retrieval file rebuilds its dataset's."""
    store = build_store(tmp_path / "results")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG.format(root=store.root))
    resources = build_resources(load_config(str(cfg)))

    def run() -> dict[str, int]:
        assert dg.materialize(report_assets(cfg)[:1], resources=resources).success
        return {ds: table_path(store, ds).stat().st_mtime_ns for ds in ("lme", "loco", "mc")}

    first = run()
    assert run() == first  # nothing rewritten
    lme_file = next((store.parquet_root / "retrievals").glob("lme__*.parquet"))
    pq.write_table(pq.read_table(lme_file), lme_file)  # same rows, a new file: inputs changed
    third = run()
    assert third["lme"] != first["lme"] and third["loco"] == first["loco"]
    with store.connect() as con:
        assert con.sql("SELECT count(*) FROM retrieval_metrics WHERE dataset = 'lme'").fetchall()[0][0] > 0
