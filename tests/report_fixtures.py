"""A small but complete results folder for the report tests: the test_report store (every
dataset kind, failures, exclusions) plus a LoCoMo token-F1 judge (a mean-score metric) and the
retrieval metric tables, built without Dagster (the report code only needs the files)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.judges.base import JUDGMENTS_PAYLOAD
from pipeline.metrics.retrieval import gold_protocol
from pipeline.report.retrieval_table import build_dataset_table, table_path
from pipeline.store.results import ResultStore
from tests.test_report import _judgment, _write_stage, build_store

# (question, F1 score) of the lme/bm25/gpt answers judged by a token-F1 judge; q4's judgment failed
F1_SCORES = {"q1": 0.5, "q2": 0.25, "q3_abs": 1.0}
LOADERS = {"lme": "longmemeval_s", "loco": "locomo", "mc": "locomo_mc10"}


def build_full_store(root: Path) -> ResultStore:
    store = build_store(root)
    rows = []
    for qid, score in F1_SCORES.items():
        row = _judgment("lme", qid, "bm25", "gpt", "f1", "locomo_f1", score >= 0.5)
        rows.append({**row, "score": score, "details": json.dumps({})})
    rows.append(_judgment("lme", "q4", "bm25", "gpt", "f1", "locomo_f1", None, error="JudgeFailed: boom"))
    # judgments are one file per question: merge with the file already holding the other judges
    existing = store.query("SELECT * FROM judgments WHERE dataset = 'lme'").to_pylist()
    _write_stage(store, "judgments", JUDGMENTS_PAYLOAD, existing + rows)
    with store.connect() as con:
        for ds, loader in LOADERS.items():
            store.write(table_path(store, ds), build_dataset_table(con, ds, gold_protocol(loader)))
    store.refresh_catalog()
    return store
