"""Hand-built results folders for the report tests, written without Dagster (the report code only
needs the files).

``build_store``: every dataset kind (LongMemEval, LoCoMo, LoCoMo MC10), failures, exclusions, with
the stage tables written with the real payload schemas (the row builders below make any other).
``build_full_store``: that store plus a LoCoMo token-F1 judge (a mean-score metric) and the
retrieval metric tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.core.records import (
    EVIDENCE_SCHEMA,
    QUESTIONS_SCHEMA,
    TURNS_SCHEMA,
    EvidenceRow,
    QuestionRow,
    TurnRow,
    rows_to_table,
)
from pipeline.judges.base import JUDGMENTS_PAYLOAD
from pipeline.memory.base import RETRIEVALS_PAYLOAD
from pipeline.metrics.retrieval import gold_protocol
from pipeline.readers.base import ANSWERS_PAYLOAD
from pipeline.report.retrieval_table import build_dataset_table, table_path
from pipeline.run.stage import stage_schema
from pipeline.store.results import ResultStore


def question_row(ds: str, qid: str, type_raw: str, type_name: str, *, choices: int | None = None) -> QuestionRow:
    """A question of dataset ``ds`` (key ``<ds>__<qid>``, haystack ``<ds>-h``); ``choices``: the
    correct index of ten options; a ``qid`` ending in ``_abs`` is an abstention question."""
    return QuestionRow(
        dataset=ds, question_id=qid, partition_key=f"{ds}__{qid}", record_index=0, type_raw=type_raw,
        type_name=type_name, question="q?", answer="a", adversarial_answer=None,
        choices=tuple(f"c{i}" for i in range(10)) if choices is not None else None,
        correct_choice_index=choices, question_date_raw=None, question_date=None,
        is_abstention=qid.endswith("_abs"), haystack_id=f"{ds}-h",
    )  # fmt: skip


def turn_row(ds: str, session: str, pos: int, role: str, has_answer: bool = False) -> TurnRow:
    """Turn ``<session>:<pos>`` of ``session`` (text ``text <session>:<pos>``)."""
    return TurnRow(ds, session, f"{session}:{pos}", pos, role, role, f"text {session}:{pos}", has_answer, None)


def evidence_row(ds: str, qid: str, level: str, unit: str) -> EvidenceRow:
    """Gold evidence of question ``qid`` at ``level`` (turn or session): unit ``unit``."""
    return EvidenceRow(ds, qid, f"{ds}__{qid}", level, unit, unit)


def status_row(ds: str, qid: str, unit: str, error: str | None = None) -> dict[str, Any]:
    """The status columns every stage row has: ok, or failed with ``error``."""
    return {
        "partition_key": f"{ds}__{qid}", "dataset": ds, "question_id": qid, "unit": unit, "unit_hash": "h",
        "status": "failed" if error else "ok", "error": error, "duration_s": 0.1, "finished_at": None,
    }  # fmt: skip


def retrieved_unit(session: str, turns: list[str], rank: int) -> dict[str, Any]:
    """A retrieved unit at ``rank`` holding ``turns`` of ``session``."""
    return {"unit_id": f"u{rank}-{session}", "rank": rank, "session_key": session, "turn_ids": turns, "text": "t"}


def retrieval_row(ds: str, qid: str, system: str, units: list[tuple[str, list[str]]], latency: float,
                  trimmed: int = 0, notes: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """A retrievals row of ``system`` for question ``qid``: ``units`` as (session, turn ids), best first."""
    return {
        **status_row(ds, qid, system), "system_kind": system, "haystack_id": f"{ds}-h",
        "units": [retrieved_unit(s, t, i) for i, (s, t) in enumerate(units, start=1)], "context": "ctx",
        "context_tokens": 100 * len(units), "trimmed_units": trimmed, "retrieval_latency_s": latency,
        "notes": json.dumps(notes or {}),
    }  # fmt: skip


def answer_row(ds: str, qid: str, system: str, reader: str, *, label: str, pred: int | None = None,
               invalid: bool = False, latency: float = 0.01, tokens: tuple[int, int] = (0, 0),
               cost: float | None = 0.0, cache_hit: bool = False,
               error: str | None = None) -> dict[str, Any]:  # fmt: skip
    """An answers row of ``system``/``reader`` (only the status columns when ``error`` is given)."""
    row = status_row(ds, qid, f"{system}/{reader}", error)
    if error:
        return row
    return {
        **row, "system": system, "reader": reader, "reader_kind": "k", "label": label, "model": "m",
        "prediction": "p", "predicted_index": pred, "invalid": invalid, "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1], "latency_s": latency, "cache_hit": cache_hit, "cost_usd": cost,
        "context_tokens": 1000 if system == "full" else 100,
    }  # fmt: skip


def judgment_row(ds: str, qid: str, system: str, reader: str, judge: str, metric: str, correct: bool | None,
                 error: str | None = None, details: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """A judgments row of ``system``/``reader``/``judge`` (only the status columns when ``error`` is given)."""
    row = status_row(ds, qid, f"{system}/{reader}/{judge}", error)
    if error:
        return row
    return {
        **row, "system": system, "reader": reader, "judge": judge, "metric": metric, "correct": correct,
        "score": None if correct is None else float(correct), "details": json.dumps(details or {}),
        "judge_prompt_tokens": 0, "judge_completion_tokens": 0, "judge_cache_hit": False,
    }  # fmt: skip


def write_stage(store: ResultStore, stage: str, payload: pa.Schema, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as ``stage`` partition files (one per question) with the stage's real schema."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_key.setdefault(r["partition_key"], []).append(r)
    for key, part in by_key.items():
        store.write_partition(stage, key, pa.Table.from_pylist(part, schema=stage_schema(payload)))


def build_store(root: Path) -> ResultStore:
    """The hand-built results folder at ``root``: datasets lme (LongMemEval), loco (LoCoMo) and mc
    (LoCoMo MC10), their canonical tables, retrievals, answers and judgments (every expected number of
    tests/dagster/test_report_assets.py is computed by hand from these)."""
    store = ResultStore(results_dir=str(root))
    questions = {
        "lme": [question_row("lme", "q1", "single-session-user", "single-session-user"),
                question_row("lme", "q2", "multi-session", "multi-session"),
                question_row("lme", "q3_abs", "single-session-user", "single-session-user"),
                question_row("lme", "q4", "single-session-assistant", "single-session-assistant")],
        "loco": [question_row("loco", "c1", "4", "single-hop")],
        "mc": [question_row("mc", "m1", "single_hop", "single-hop", choices=0),
               question_row("mc", "m2", "single_hop", "single-hop", choices=1),
               question_row("mc", "m3", "temporal_reasoning", "temporal", choices=2),
               question_row("mc", "m4", "temporal_reasoning", "temporal", choices=3),
               question_row("mc", "m5", "temporal_reasoning", "temporal", choices=0)],
    }  # fmt: skip
    turns = {
        "lme": [turn_row("lme", "S1", 0, "user", True), turn_row("lme", "S1", 1, "assistant"),
                turn_row("lme", "S2", 0, "user"), turn_row("lme", "S2", 1, "assistant"),
                turn_row("lme", "S3", 0, "user", True),
                turn_row("lme", "S4", 0, "user", True), turn_row("lme", "S4", 1, "assistant", True),
                turn_row("lme", "S5", 0, "user"), turn_row("lme", "S5", 1, "assistant", True)],
        "loco": [turn_row("loco", "L1", i, "user") for i in range(3)] + [turn_row("loco", "L2", 0, "user")],
        "mc": [turn_row("mc", "M1", 0, "user")],
    }  # fmt: skip
    evidence = {
        "lme": [evidence_row("lme", "q1", "session", "S1"), evidence_row("lme", "q1", "turn", "S1:0"),
                evidence_row("lme", "q2", "session", "S3"), evidence_row("lme", "q2", "session", "S4"),
                evidence_row("lme", "q2", "turn", "S3:0"), evidence_row("lme", "q2", "turn", "S4:0"),
                evidence_row("lme", "q2", "turn", "S4:1"),
                evidence_row("lme", "q3_abs", "session", "S1"), evidence_row("lme", "q3_abs", "turn", "S1:0"),
                evidence_row("lme", "q4", "session", "S5"), evidence_row("lme", "q4", "turn", "S5:1")],
        "loco": [evidence_row("loco", "c1", "turn", "L1:0"), evidence_row("loco", "c1", "turn", "L1:2"),
                 evidence_row("loco", "c1", "session", "L1")],
        "mc": [],
    }  # fmt: skip
    for ds in questions:
        store.write(store.canonical_path(ds, "questions"), rows_to_table(questions[ds], QUESTIONS_SCHEMA))
        store.write(store.canonical_path(ds, "turns"), rows_to_table(turns[ds], TURNS_SCHEMA))
        store.write(store.canonical_path(ds, "evidence"), rows_to_table(evidence[ds], EVIDENCE_SCHEMA))
    full_q2 = [("S1", ["S1:0"]), ("S1", ["S1:1"]), ("S2", ["S2:0"]), ("S3", ["S3:0"]), ("S4", ["S4:0"]),
               ("S4", ["S4:1"])]  # fmt: skip
    retrievals = [
        retrieval_row("lme", "q1", "bm25", [("S2", ["S2:0"]), ("S1", ["S1:0"]), ("S3", ["S3:0"])], 0.1, trimmed=1),
        retrieval_row("lme", "q2", "bm25", [("S4", ["S4:0", "S4:1"]), ("S2", ["S2:0"]), ("S3", ["S3:0"])], 0.3),
        retrieval_row("lme", "q3_abs", "bm25", [("S1", ["S1:0"])], 0.2),
        retrieval_row("lme", "q4", "bm25", [("S5", ["S5:1"])], 0.4),
        status_row("lme", "q1", "full", "RuntimeError: boom"),
        retrieval_row("lme", "q2", "full", full_q2, 0.05, trimmed=2, notes={"units_total": 8}),
        retrieval_row("lme", "q3_abs", "full", [("S1", ["S1:0"])], 0.05),
        retrieval_row("lme", "q4", "full", [("S5", ["S5:0"]), ("S5", ["S5:1"])], 0.05),
        retrieval_row("loco", "c1", "bm25", [("L1", ["L1:2"]), ("L2", ["L2:0"])], 0.1),
    ]
    write_stage(store, "retrievals", RETRIEVALS_PAYLOAD, retrievals)
    off = {"label": "offline"}
    answers = [
        answer_row("mc", "m1", "sysA", "extract", pred=0, **off),
        answer_row("mc", "m2", "sysA", "extract", pred=1, **off),
        answer_row("mc", "m3", "sysA", "extract", pred=None, invalid=True, **off),
        answer_row("mc", "m4", "sysA", "extract", error="RuntimeError: boom", **off),
        answer_row("mc", "m5", "sysA", "extract", pred=0, **off),
        *[answer_row("mc", q, "sysB", "extract", pred=p, **off) for q, p in
          [("m1", 1), ("m2", 1), ("m3", 2), ("m4", 3), ("m5", 0)]],
        answer_row("lme", "q1", "bm25", "gpt", label="llm", latency=1.0, tokens=(100, 10), cost=0.001),
        answer_row("lme", "q2", "bm25", "gpt", label="llm", latency=2.0, tokens=(200, 20), cost=0.002),
        answer_row("lme", "q3_abs", "bm25", "gpt", label="llm", latency=3.0, tokens=(300, 30), cost=None),
        answer_row("lme", "q4", "bm25", "gpt", label="llm", latency=0.001, tokens=(400, 40), cost=0.0, cache_hit=True),
        *[answer_row("lme", q, "full", "gpt", label="llm", latency=lat, tokens=(1000, 10), cost=0.01)
          for q, lat in [("q1", 5.0), ("q2", 6.0), ("q3_abs", 7.0), ("q4", 8.0)]],
    ]  # fmt: skip
    write_stage(store, "answers", ANSWERS_PAYLOAD, answers)
    mc = ("extract", "mc", "mc_accuracy")
    lme = ("gpt", "contains", "lme_contains_normalized")
    judgments = [
        judgment_row("mc", "m1", "sysA", *mc, True),
        judgment_row("mc", "m2", "sysA", *mc, True),
        judgment_row("mc", "m3", "sysA", *mc, False, details={"invalid": True}),
        judgment_row("mc", "m4", "sysA", *mc, None, error="answer failed: RuntimeError: boom"),
        judgment_row("mc", "m5", "sysA", *mc, None, error="JudgeFailed: no clear label"),
        *[judgment_row("mc", q, "sysB", *mc, c) for q, c in [("m1", False), ("m2", True), ("m3", True),
                                                            ("m4", True), ("m5", True)]],
        *[judgment_row("lme", q, "bm25", *lme, c) for q, c in [("q1", True), ("q2", False), ("q3_abs", True),
                                                              ("q4", None)]],
        *[judgment_row("lme", q, "full", *lme, c) for q, c in [("q1", True), ("q2", True), ("q3_abs", True),
                                                              ("q4", False)]],
    ]  # fmt: skip
    write_stage(store, "judgments", JUDGMENTS_PAYLOAD, judgments)
    return store


# (question, F1 score) of the lme/bm25/gpt answers judged by a token-F1 judge; q4's judgment failed
F1_SCORES = {"q1": 0.5, "q2": 0.25, "q3_abs": 1.0}
LOADERS = {"lme": "longmemeval_s", "loco": "locomo", "mc": "locomo_mc10"}


def build_full_store(root: Path) -> ResultStore:
    store = build_store(root)
    rows = []
    for qid, score in F1_SCORES.items():
        row = judgment_row("lme", qid, "bm25", "gpt", "f1", "locomo_f1", score >= 0.5)
        rows.append({**row, "score": score, "details": json.dumps({})})
    rows.append(judgment_row("lme", "q4", "bm25", "gpt", "f1", "locomo_f1", None, error="JudgeFailed: boom"))
    # judgments are one file per question: merge with the file already holding the other judges
    existing = store.query("SELECT * FROM judgments WHERE dataset = 'lme'").to_pylist()
    write_stage(store, "judgments", JUDGMENTS_PAYLOAD, existing + rows)
    with store.connect() as con:
        for ds, loader in LOADERS.items():
            store.write(table_path(store, ds), build_dataset_table(con, ds, gold_protocol(loader)))
    store.refresh_catalog()
    return store
