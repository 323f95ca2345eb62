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
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.reports import build_reports
from pipeline.config.model import load_config
from pipeline.core.records import (
    EVIDENCE_SCHEMA,
    LOAD_FAILURES_SCHEMA,
    QUESTIONS_SCHEMA,
    TURNS_SCHEMA,
    EvidenceRow,
    LoadFailure,
    QuestionRow,
    TurnRow,
    rows_to_table,
)
from pipeline.judges.base import JUDGMENTS_PAYLOAD
from pipeline.memory.base import RETRIEVALS_PAYLOAD
from pipeline.metrics.stats import wilson_interval
from pipeline.readers.base import ANSWERS_PAYLOAD
from pipeline.report.retrieval_table import table_path
from pipeline.report.summary import summarize_for_cli
from pipeline.run.stage import stage_schema
from pipeline.store.results import ResultStore, open_catalog
from resources.factory import build_resources

L3 = math.log2(3)


# ---- fixture builders ----------------------------------------------------------------------
def _q(ds: str, qid: str, type_raw: str, type_name: str, *, choices: int | None = None) -> QuestionRow:
    return QuestionRow(
        dataset=ds, question_id=qid, partition_key=f"{ds}__{qid}", record_index=0, type_raw=type_raw,
        type_name=type_name, question="q?", answer="a", adversarial_answer=None,
        choices=tuple(f"c{i}" for i in range(10)) if choices is not None else None,
        correct_choice_index=choices, question_date_raw=None, question_date=None,
        is_abstention=qid.endswith("_abs"), haystack_id=f"{ds}-h",
    )  # fmt: skip


def _t(ds: str, session: str, pos: int, role: str, has_answer: bool = False) -> TurnRow:
    return TurnRow(ds, session, f"{session}:{pos}", pos, role, role, f"text {session}:{pos}", has_answer, None)


def _ev(ds: str, qid: str, level: str, unit: str) -> EvidenceRow:
    return EvidenceRow(ds, qid, f"{ds}__{qid}", level, unit, unit)


def _status(ds: str, qid: str, unit: str, error: str | None = None) -> dict[str, Any]:
    return {
        "partition_key": f"{ds}__{qid}", "dataset": ds, "question_id": qid, "unit": unit, "unit_hash": "h",
        "status": "failed" if error else "ok", "error": error, "duration_s": 0.1, "finished_at": None,
    }  # fmt: skip


def _unit(session: str, turns: list[str], rank: int) -> dict[str, Any]:
    return {"unit_id": f"u{rank}-{session}", "rank": rank, "session_key": session, "turn_ids": turns, "text": "t"}


def _retrieval(ds: str, qid: str, system: str, units: list[tuple[str, list[str]]], latency: float,
               trimmed: int = 0, notes: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        **_status(ds, qid, system), "system_kind": system, "haystack_id": f"{ds}-h",
        "units": [_unit(s, t, i) for i, (s, t) in enumerate(units, start=1)], "context": "ctx",
        "context_tokens": 100 * len(units), "trimmed_units": trimmed, "retrieval_latency_s": latency,
        "notes": json.dumps(notes or {}),
    }  # fmt: skip


def _answer(ds: str, qid: str, system: str, reader: str, *, label: str, pred: int | None = None,
            invalid: bool = False, latency: float = 0.01, tokens: tuple[int, int] = (0, 0),
            cost: float | None = 0.0, cache_hit: bool = False, error: str | None = None) -> dict[str, Any]:  # fmt: skip
    row = _status(ds, qid, f"{system}/{reader}", error)
    if error:
        return row
    return {
        **row, "system": system, "reader": reader, "reader_kind": "k", "label": label, "model": "m",
        "prediction": "p", "predicted_index": pred, "invalid": invalid, "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1], "latency_s": latency, "cache_hit": cache_hit, "cost_usd": cost,
        "context_tokens": 1000 if system == "full" else 100,
    }  # fmt: skip


def _judgment(ds: str, qid: str, system: str, reader: str, judge: str, metric: str, correct: bool | None,
              error: str | None = None, details: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    row = _status(ds, qid, f"{system}/{reader}/{judge}", error)
    if error:
        return row
    return {
        **row, "system": system, "reader": reader, "judge": judge, "metric": metric, "correct": correct,
        "score": None if correct is None else float(correct), "details": json.dumps(details or {}),
        "judge_prompt_tokens": 0, "judge_completion_tokens": 0, "judge_cache_hit": False,
    }  # fmt: skip


def _write_stage(store: ResultStore, stage: str, payload: pa.Schema, rows: list[dict[str, Any]]) -> None:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_key.setdefault(r["partition_key"], []).append(r)
    for key, part in by_key.items():
        store.write_partition(stage, key, pa.Table.from_pylist(part, schema=stage_schema(payload)))


def build_store(root: Path) -> ResultStore:
    store = ResultStore(results_dir=str(root))
    questions = {
        "lme": [_q("lme", "q1", "single-session-user", "single-session-user"),
                _q("lme", "q2", "multi-session", "multi-session"),
                _q("lme", "q3_abs", "single-session-user", "single-session-user"),
                _q("lme", "q4", "single-session-assistant", "single-session-assistant")],
        "loco": [_q("loco", "c1", "4", "single-hop")],
        "mc": [_q("mc", "m1", "single_hop", "single-hop", choices=0),
               _q("mc", "m2", "single_hop", "single-hop", choices=1),
               _q("mc", "m3", "temporal_reasoning", "temporal", choices=2),
               _q("mc", "m4", "temporal_reasoning", "temporal", choices=3),
               _q("mc", "m5", "temporal_reasoning", "temporal", choices=0)],
    }  # fmt: skip
    turns = {
        "lme": [_t("lme", "S1", 0, "user", True), _t("lme", "S1", 1, "assistant"),
                _t("lme", "S2", 0, "user"), _t("lme", "S2", 1, "assistant"),
                _t("lme", "S3", 0, "user", True),
                _t("lme", "S4", 0, "user", True), _t("lme", "S4", 1, "assistant", True),
                _t("lme", "S5", 0, "user"), _t("lme", "S5", 1, "assistant", True)],
        "loco": [_t("loco", "L1", i, "user") for i in range(3)] + [_t("loco", "L2", 0, "user")],
        "mc": [_t("mc", "M1", 0, "user")],
    }  # fmt: skip
    evidence = {
        "lme": [_ev("lme", "q1", "session", "S1"), _ev("lme", "q1", "turn", "S1:0"),
                _ev("lme", "q2", "session", "S3"), _ev("lme", "q2", "session", "S4"),
                _ev("lme", "q2", "turn", "S3:0"), _ev("lme", "q2", "turn", "S4:0"), _ev("lme", "q2", "turn", "S4:1"),
                _ev("lme", "q3_abs", "session", "S1"), _ev("lme", "q3_abs", "turn", "S1:0"),
                _ev("lme", "q4", "session", "S5"), _ev("lme", "q4", "turn", "S5:1")],
        "loco": [_ev("loco", "c1", "turn", "L1:0"), _ev("loco", "c1", "turn", "L1:2"),
                 _ev("loco", "c1", "session", "L1")],
        "mc": [],
    }  # fmt: skip
    for ds in questions:
        store.write(store.canonical_path(ds, "questions"), rows_to_table(questions[ds], QUESTIONS_SCHEMA))
        store.write(store.canonical_path(ds, "turns"), rows_to_table(turns[ds], TURNS_SCHEMA))
        store.write(store.canonical_path(ds, "evidence"), rows_to_table(evidence[ds], EVIDENCE_SCHEMA))
    full_q2 = [("S1", ["S1:0"]), ("S1", ["S1:1"]), ("S2", ["S2:0"]), ("S3", ["S3:0"]), ("S4", ["S4:0"]),
               ("S4", ["S4:1"])]  # fmt: skip
    retrievals = [
        _retrieval("lme", "q1", "bm25", [("S2", ["S2:0"]), ("S1", ["S1:0"]), ("S3", ["S3:0"])], 0.1, trimmed=1),
        _retrieval("lme", "q2", "bm25", [("S4", ["S4:0", "S4:1"]), ("S2", ["S2:0"]), ("S3", ["S3:0"])], 0.3),
        _retrieval("lme", "q3_abs", "bm25", [("S1", ["S1:0"])], 0.2),
        _retrieval("lme", "q4", "bm25", [("S5", ["S5:1"])], 0.4),
        _status("lme", "q1", "full", "RuntimeError: boom"),
        _retrieval("lme", "q2", "full", full_q2, 0.05, trimmed=2, notes={"units_total": 8}),
        _retrieval("lme", "q3_abs", "full", [("S1", ["S1:0"])], 0.05),
        _retrieval("lme", "q4", "full", [("S5", ["S5:0"]), ("S5", ["S5:1"])], 0.05),
        _retrieval("loco", "c1", "bm25", [("L1", ["L1:2"]), ("L2", ["L2:0"])], 0.1),
    ]
    _write_stage(store, "retrievals", RETRIEVALS_PAYLOAD, retrievals)
    off = {"label": "offline"}
    answers = [
        _answer("mc", "m1", "sysA", "extract", pred=0, **off),
        _answer("mc", "m2", "sysA", "extract", pred=1, **off),
        _answer("mc", "m3", "sysA", "extract", pred=None, invalid=True, **off),
        _answer("mc", "m4", "sysA", "extract", error="RuntimeError: boom", **off),
        _answer("mc", "m5", "sysA", "extract", pred=0, **off),
        *[_answer("mc", q, "sysB", "extract", pred=p, **off) for q, p in
          [("m1", 1), ("m2", 1), ("m3", 2), ("m4", 3), ("m5", 0)]],
        _answer("lme", "q1", "bm25", "gpt", label="llm", latency=1.0, tokens=(100, 10), cost=0.001),
        _answer("lme", "q2", "bm25", "gpt", label="llm", latency=2.0, tokens=(200, 20), cost=0.002),
        _answer("lme", "q3_abs", "bm25", "gpt", label="llm", latency=3.0, tokens=(300, 30), cost=None),
        _answer("lme", "q4", "bm25", "gpt", label="llm", latency=0.001, tokens=(400, 40), cost=0.0, cache_hit=True),
        *[_answer("lme", q, "full", "gpt", label="llm", latency=lat, tokens=(1000, 10), cost=0.01)
          for q, lat in [("q1", 5.0), ("q2", 6.0), ("q3_abs", 7.0), ("q4", 8.0)]],
    ]  # fmt: skip
    _write_stage(store, "answers", ANSWERS_PAYLOAD, answers)
    mc = ("extract", "mc", "mc_accuracy")
    lme = ("gpt", "contains", "lme_contains_normalized")
    judgments = [
        _judgment("mc", "m1", "sysA", *mc, True),
        _judgment("mc", "m2", "sysA", *mc, True),
        _judgment("mc", "m3", "sysA", *mc, False, details={"invalid": True}),
        _judgment("mc", "m4", "sysA", *mc, None, error="answer failed: RuntimeError: boom"),
        _judgment("mc", "m5", "sysA", *mc, None, error="JudgeFailed: no clear label"),
        *[_judgment("mc", q, "sysB", *mc, c) for q, c in [("m1", False), ("m2", True), ("m3", True),
                                                         ("m4", True), ("m5", True)]],
        *[_judgment("lme", q, "bm25", *lme, c) for q, c in [("q1", True), ("q2", False), ("q3_abs", True),
                                                           ("q4", None)]],
        *[_judgment("lme", q, "full", *lme, c) for q, c in [("q1", True), ("q2", True), ("q3_abs", True),
                                                           ("q4", False)]],
    ]  # fmt: skip
    _write_stage(store, "judgments", JUDGMENTS_PAYLOAD, judgments)
    return store


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
    # lme and mc: by-type + vs-context plots; lme and loco: a recall@k plot
    assert len(images) == 6
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
    store.write(store.canonical_path("d", "questions"), rows_to_table([_q("d", "x", "t", "t")], QUESTIONS_SCHEMA))
    assert "no judgments yet" in summarize_for_cli(tmp_path)


def test_views_skip_until_tables_exist(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    store.write(store.canonical_path("d", "questions"), rows_to_table([_q("d", "x", "t", "t")], QUESTIONS_SCHEMA))
    views = store.refresh_catalog()
    assert "accuracy_report" not in views and "retrieval_report" not in views


def test_load_failures_count_as_questions_and_failures(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    store.write(store.canonical_path("d", "questions"), rows_to_table([_q("d", "ok", "t", "t")], QUESTIONS_SCHEMA))
    failure = LoadFailure("d", "f.json", 1, "bad", "d__bad", "question", "field question: missing")
    store.write(store.canonical_path("d", "load_failures"), rows_to_table([failure], LOAD_FAILURES_SCHEMA))
    broken = "canonical record invalid: field question: missing"
    answers = [
        _answer("d", "ok", "s", "r", label="offline"),
        _answer("d", "bad", "s", "r", label="offline", error=broken),
    ]
    _write_stage(store, "answers", ANSWERS_PAYLOAD, answers)
    judgments = [
        _judgment("d", "ok", "s", "r", "j", "mc_accuracy", True),
        _judgment("d", "bad", "s", "r", "j", "m", None, error=broken),
    ]
    _write_stage(store, "judgments", JUDGMENTS_PAYLOAD, judgments)
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
