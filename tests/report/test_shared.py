"""Retrieval gold and metrics on the real LongMemEval oracle file (skipped without ../shared/datasets).

The expected gold is derived independently from the raw JSON, exactly as LongMemEval's
run_retrieval.py does (answer session ids, user turns only, has_answer), and compared with what
the canonical tables + pipeline.metrics.retrieval produce.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import pipeline.datasets.longmemeval  # noqa: F401 - registers the loader
from pipeline.config.model import DatasetConfig
from pipeline.datasets.convert import convert_dataset
from pipeline.memory.base import RETRIEVALS_PAYLOAD
from pipeline.metrics.retrieval import OUTCOME_EXCLUDED_ABSTENTION, OUTCOME_EXCLUDED_NO_GOLD, OUTCOME_SCORED
from pipeline.report.retrieval_table import build_dataset_table, load_gold
from pipeline.report.sql import query_rows
from pipeline.run.stage import stage_schema
from pipeline.store.results import ResultStore

pytestmark = pytest.mark.shared_data


def _raw_expectations(path: Path) -> Counter[tuple[str, str]]:
    """(question_type, outcome) counts straight from the raw file, LongMemEval's rules."""
    counts: Counter[tuple[str, str]] = Counter()
    for q in json.loads(path.read_text()):
        answer_ids = set(q["answer_session_ids"])
        gold = any(
            t["role"] == "user" and t.get("has_answer")
            for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True)
            if sid in answer_ids
            for t in session
        )
        if q["question_id"].endswith("_abs"):
            outcome = OUTCOME_EXCLUDED_ABSTENTION
        else:
            outcome = OUTCOME_SCORED if gold else OUTCOME_EXCLUDED_NO_GOLD
        counts[(q["question_type"], outcome)] += 1
    return counts


@pytest.fixture(scope="module")
def oracle_store(shared_datasets: Path, tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    store = ResultStore(results_dir=str(tmp_path_factory.mktemp("lme_oracle")))
    ds = DatasetConfig(name="lme", loader="longmemeval", path=str(shared_datasets / "longmemeval_oracle.json"))
    convert_dataset(ds, store, lambda _msg: None)
    return store


def _write_oracle_retrievals(store: ResultStore) -> None:
    """A perfect retriever: every haystack session as one unit, gold (answer) sessions ranked first."""
    with store.connect() as con:
        questions = query_rows(con, "SELECT partition_key, question_id, haystack_id FROM questions")
        haystacks = query_rows(con, "SELECT haystack_id, session_key FROM haystacks ORDER BY haystack_id, position")
        turns = query_rows(con, "SELECT session_key, turn_id FROM turns ORDER BY session_key, position")
        gold = load_gold(con, "lme", "longmemeval")
    by_haystack: dict[str, list[str]] = {}
    for h in haystacks:
        by_haystack.setdefault(h["haystack_id"], []).append(h["session_key"])
    turn_ids: dict[str, list[str]] = {}
    for t in turns:
        turn_ids.setdefault(t["session_key"], []).append(t["turn_id"])
    for q in questions:
        golds = gold[q["partition_key"]].sessions if q["partition_key"] in gold else frozenset()
        ranked = sorted(by_haystack[q["haystack_id"]], key=lambda s: s not in golds)
        units = [
            {"unit_id": s, "rank": i, "session_key": s, "turn_ids": turn_ids.get(s, []), "text": ""}
            for i, s in enumerate(ranked, start=1)
        ]
        row = {
            "partition_key": q["partition_key"], "dataset": "lme", "question_id": q["question_id"],
            "unit": "oracle", "unit_hash": "h", "status": "ok", "units": units, "trimmed_units": 0,
            "retrieval_latency_s": 0.001, "context_tokens": 0, "system_kind": "oracle",
        }  # fmt: skip
        table = pa.Table.from_pylist([row], schema=stage_schema(RETRIEVALS_PAYLOAD))
        store.write_partition("retrievals", q["partition_key"], table)


def test_lme_gold_matches_longmemeval_rules(oracle_store: ResultStore, shared_datasets: Path) -> None:
    _write_oracle_retrievals(oracle_store)
    with oracle_store.connect() as con:
        table = build_dataset_table(con, "lme", "longmemeval")
        types = dict(con.execute("SELECT partition_key, type_raw FROM questions").fetchall())
    rows = [r for r in table.to_pylist() if r["level"] == "session"]
    got = Counter((types[r["partition_key"]], r["outcome"]) for r in rows)
    expected = _raw_expectations(shared_datasets / "longmemeval_oracle.json")
    assert got == expected
    assert expected[("single-session-assistant", OUTCOME_EXCLUDED_NO_GOLD)] == 51
    assert sum(n for (_, o), n in expected.items() if o == OUTCOME_EXCLUDED_ABSTENTION) == 30
    scored = [r for r in table.to_pylist() if r["outcome"] == OUTCOME_SCORED]
    # a perfect retriever: all gold sessions first -> recall_all and ndcg 1 at k = 50, everything in context
    assert all(r["recall_all_at_50"] == 1.0 and r["ndcg_any_at_50"] == 1.0 for r in scored if r["level"] == "session")
    assert all(r["evidence_recall_context"] == 1.0 for r in scored)
