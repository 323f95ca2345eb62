"""LoCoMo's per-category and by-distance aggregates equal its own stats script on the real data.

tests/data/official/locomo_evaluation_stats.json holds what LoCoMo's ``evaluation_stats.py
analyze_acc`` computed on locomo10.json with a deterministic score per question (the header names
the commit, the inputs and the one input adaptation). Here the same scores go through membench: the
real loader builds the canonical questions / turns / haystacks, the scores become judgment rows,
and the views ``locomo_official_categories`` and ``locomo_official_by_distance`` must give the same
count and sum for every category and every (category, 1K-token bin).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from pipeline.catalog.official import locomo_official_by_distance_sql, locomo_official_categories_sql
from pipeline.datasets.locomo import load_locomo
from tests.support.paths import OFFICIAL_DIR

pytestmark = pytest.mark.shared_data

FIGURES = OFFICIAL_DIR / "locomo_evaluation_stats.json"


def score(question_id: str) -> float:
    """The score the figures were computed with: (index in the sample's qa list % 11) / 10."""
    return (int(question_id.rsplit("_q", 1)[1]) % 11) / 10


def _catalog(path: Path) -> duckdb.DuckDBPyConnection:
    questions, turns, haystacks, outcomes = [], [], [], []
    for rec in load_locomo(path, "locomo"):
        q = rec.question
        questions.append({"dataset": "locomo", "partition_key": q.partition_key, "haystack_id": q.haystack_id,
                          "evidence_raw": list(q.evidence_raw or [])})  # fmt: skip
        outcomes.append({"dataset": "locomo", "partition_key": q.partition_key, "question_id": q.question_id,
                         "type_raw": q.type_raw, "system": "s", "reader": "r", "judge": "j", "metric": "m",
                         "outcome": "scored", "correct": None, "score": score(q.question_id)})  # fmt: skip
        for h in rec.haystack:
            haystacks.append({"dataset": "locomo", "haystack_id": h.haystack_id, "session_key": h.session_key,
                              "source_session_id": h.source_session_id})  # fmt: skip
        for s in rec.sessions:
            turns += [{"dataset": "locomo", "session_key": t.session_key, "position": t.position,
                       "speaker": t.speaker, "text": t.text, "source_id": t.source_id} for t in s.turns]  # fmt: skip
    con = duckdb.connect()
    for name, rows in (("questions", questions), ("judgment_outcomes", outcomes), ("haystacks", haystacks)):
        con.register(f"{name}_arrow", pa.Table.from_pylist(rows))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    con.register("turns_arrow", pa.Table.from_pylist(turns))
    con.execute("CREATE TABLE turns AS SELECT DISTINCT * FROM turns_arrow")  # sessions repeat across questions
    return con


def test_locomo_stats_equal_the_official_script(shared_datasets: Path) -> None:
    doc = json.loads(FIGURES.read_text())
    path = shared_datasets / "locomo10.json"
    assert doc["header"]["dataset"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    samples = json.loads(path.read_text())
    scores = {f"{s['sample_id']}#{i}": score(f"x_q{i}") for s in samples for i in range(len(s["qa"]))}
    canonical = json.dumps(scores, sort_keys=True, separators=(",", ":")).encode()
    assert hashlib.sha256(canonical).hexdigest() == doc["header"]["inputs_sha256"]  # the same scores
    con = _catalog(path)
    con.execute(locomo_official_categories_sql(["m"]))
    con.execute(locomo_official_by_distance_sql(["m"]))
    sql = "SELECT category, n_scored, sum_score FROM locomo_official_categories WHERE aggregate = 'category'"
    cats = {c: (n, s) for c, n, s in con.execute(sql).fetchall()}
    assert set(cats) == set(doc["categories"])
    for c, (n, total) in doc["categories"].items():
        assert cats[c][0] == n and cats[c][1] == pytest.approx(total, abs=1e-9), c
    bins = {f"{c}/{b}": (n, s) for c, b, n, s in con.execute(
        "SELECT category, distance_bin, n_scored, sum_score FROM locomo_official_by_distance").fetchall()}  # fmt: skip
    assert set(bins) == set(doc["by_distance"])
    for key, (n, total) in doc["by_distance"].items():
        assert bins[key][0] == n and bins[key][1] == pytest.approx(total, abs=1e-9), key
    assert len(bins) == 80
