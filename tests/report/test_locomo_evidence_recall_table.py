"""LoCoMo evidence recall in the report, official beside repaired (issue 10 item 3).

The questions' raw evidence goes through the real conversion of pipeline/sample_data/
locomo_sample.json (``questions.evidence_raw``), retrievals are written with hand-chosen contexts,
and the metric table builder gives ``evidence_recall_official_context`` (LoCoMo's own number) next
to the repaired ``evidence_recall_context``. Values below are checked by hand against the raw
evidence strings of conv-1 (6 sessions of 8 turns, D<s>:<t> with t in 1..8).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pipeline.datasets.locomo  # registers the loader
import pipeline.datasets.longmemeval  # noqa: F401 - registers the loader
from pipeline.config.model import DatasetConfig
from pipeline.datasets.convert import convert_dataset
from pipeline.memory.base import RETRIEVALS_PAYLOAD
from pipeline.metrics.retrieval import OUTCOME_EXCLUDED_NO_GOLD, OUTCOME_RETRIEVAL_FAILED, OUTCOME_SCORED
from pipeline.report.retrieval_table import build_dataset_table, table_path
from pipeline.report.sql import query_rows
from pipeline.run.stage import stage_schema
from pipeline.store.results import ResultStore
from tests.support.paths import PROJECT_ROOT

SAMPLES = PROJECT_ROOT / "pipeline" / "sample_data"
OFFICIAL, REPAIRED = "evidence_recall_official_context", "evidence_recall_context"

# (question, raw evidence as in the file, context: D ids as turn units / S<n> session units, trimmed
#  units, status, official, repaired outcome, repaired value)
CASES: list[tuple[str, list[str], list[str], int, str, float | None, str, float | None]] = [
    # one raw string naming two turns: never equal to a dialogue id officially; both found repaired
    ("conv-1_q3", ["D1:4; D4:7"], ["D1:4", "D4:7"], 0, "ok", 0.0, OUTCOME_SCORED, 1.0),
    # D6:40 points nowhere (sessions have 8 turns): 1 of 2 officially; dropped when repaired
    ("conv-1_q13", ["D5:7", "D6:40"], ["D5:7", "D1:1"], 0, "ok", 0.5, OUTCOME_SCORED, 1.0),
    # no evidence: 1 officially, excluded (counted) when repaired
    ("conv-1_q5", [], ["D1:1"], 0, "ok", 1.0, OUTCOME_EXCLUDED_NO_GOLD, None),
    # the same id twice: 2/2 officially; one gold turn repaired
    ("conv-1_q12", ["D5:4", "D5:4"], ["D5:4"], 0, "ok", 1.0, OUTCOME_SCORED, 1.0),
    ("conv-1_q9", ["D3:5", "D4:1"], ["D4:1", "D1:1"], 0, "ok", 0.5, OUTCOME_SCORED, 0.5),
    # extra colon: the raw 'D:6:1' is no dialogue id; repaired to D6:1
    ("conv-1_q10", ["D:6:1"], ["D6:1"], 0, "ok", 0.0, OUTCOME_SCORED, 1.0),
    # D3:1 ranked second and trimmed by the token budget: not in the reader's context
    ("conv-1_q2", ["D3:1"], ["D1:1", "D3:1"], 1, "ok", 0.0, OUTCOME_SCORED, 0.0),
    # nothing retrieved: 0 both ways
    ("conv-1_q0", ["D2:1"], [], 0, "ok", 0.0, OUTCOME_SCORED, 0.0),
    # session units without turns (summaries): the official session rule reads '1' out of 'D1:5 D6:6'
    ("conv-1_q8", ["D1:5 D6:6"], ["S1", "S6"], 0, "ok", 1.0, OUTCOME_SCORED, 0.0),
    # a failed retrieval: no value either way (counted in n_failed)
    ("conv-1_q1", ["D1:4"], [], 0, "failed", None, OUTCOME_RETRIEVAL_FAILED, None),
]


_CONV1_KEYS = "SELECT session_key FROM haystacks WHERE haystack_id = 'conv-1'"
_CONV1_SESSIONS = "SELECT source_session_id, session_key FROM haystacks WHERE haystack_id = 'conv-1'"


def _convert(root: Path, name: str, loader: str, file: str) -> ResultStore:
    store = ResultStore(results_dir=str(root))
    convert_dataset(DatasetConfig(name=name, loader=loader, path=str(SAMPLES / file)), store, lambda _msg: None)
    return store


@pytest.fixture(scope="module")
def locomo_store(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    store = _convert(tmp_path_factory.mktemp("loco_evidence"), "loco", "locomo", "locomo_sample.json")
    with store.connect() as con:
        keys = dict(con.execute("SELECT question_id, partition_key FROM questions").fetchall())
        # dialogue ids repeat across conversations: every case is in conv-1
        sessions = dict(con.execute(_CONV1_SESSIONS).fetchall())
        conv1 = con.execute(f"SELECT source_id, turn_id, session_key FROM turns WHERE session_key IN ({_CONV1_KEYS})")
        turns, turn_session = {}, {}
        for source_id, turn_id, session_key in conv1.fetchall():
            turns[source_id], turn_session[turn_id] = turn_id, session_key
    for qid, _, context, trimmed, status, *_ in CASES:
        units: list[dict[str, Any]] = []
        for rank, cid in enumerate(context, start=1):
            if cid.startswith("S"):
                units.append(_unit(rank, sessions[f"session_{cid[1:]}"], []))
            else:
                units.append(_unit(rank, turn_session[turns[cid]], [turns[cid]]))
        row = {
            "partition_key": keys[qid], "dataset": "loco", "question_id": qid, "unit": "hand",
            "unit_hash": "h", "status": status, "units": units, "trimmed_units": trimmed,
            "retrieval_latency_s": 0.001, "context_tokens": 0, "system_kind": "hand",
            "error": None if status == "ok" else "boom",
        }  # fmt: skip
        store.write_partition(
            "retrievals", keys[qid], pa.Table.from_pylist([row], schema=stage_schema(RETRIEVALS_PAYLOAD))
        )
    return store


def _unit(rank: int, session_key: str, turn_ids: list[str]) -> dict[str, Any]:
    return {"unit_id": f"u{rank}", "rank": rank, "session_key": session_key, "turn_ids": turn_ids, "text": ""}


@pytest.fixture(scope="module")
def metric_rows(locomo_store: ResultStore) -> dict[tuple[str, str], dict[str, Any]]:
    with locomo_store.connect() as con:
        table = build_dataset_table(con, "loco", "evidence")
    locomo_store.write(table_path(locomo_store, "loco"), table)
    locomo_store.refresh_catalog()
    return {(r["question_id"], r["level"]): r for r in table.to_pylist()}


def test_raw_evidence_stored_as_given(locomo_store: ResultStore) -> None:
    with locomo_store.connect() as con:
        stored = dict(con.execute("SELECT question_id, evidence_raw FROM questions").fetchall())
    for qid, raw, *_ in CASES:
        assert stored[qid] == raw
    data = json.loads((SAMPLES / "locomo_sample.json").read_text())
    expected = {f"{s['sample_id']}_q{i}": qa["evidence"] for s in data for i, qa in enumerate(s["qa"])}
    assert stored == expected


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_official_beside_repaired(
    metric_rows: dict[tuple[str, str], dict[str, Any]],
    case: tuple[str, list[str], list[str], int, str, float | None, str, float | None],
) -> None:
    qid, _, _, _, _, official, outcome, repaired = case
    turn = metric_rows[(qid, "turn")]
    assert (turn[OFFICIAL], turn["outcome"], turn[REPAIRED]) == (official, outcome, repaired)
    # the official number is a turn-level context metric only
    assert metric_rows[(qid, "session")][OFFICIAL] is None
    assert metric_rows[(qid, "session_dedup")][OFFICIAL] is None


def test_retrieval_report_averages_both(
    locomo_store: ResultStore, metric_rows: dict[tuple[str, str], dict[str, Any]]
) -> None:
    with locomo_store.connect() as con:
        (row,) = query_rows(
            con, "SELECT * FROM retrieval_report WHERE level = 'turn' AND type_raw = '(all)' AND system = 'hand'"
        )
    # official: every successful retrieval (9), the no-evidence question included:
    # (0 + .5 + 1 + 1 + .5 + 0 + 0 + 0 + 1) / 9 = 4/9; repaired: the 8 scored, (1+1+1+.5+1+0+0+0) / 8 = 4.5/8
    assert row[OFFICIAL] == pytest.approx(4 / 9)
    assert row[REPAIRED] == pytest.approx(4.5 / 8)
    assert (row["n_scored"], row["n_excluded_no_gold"], row["n_failed"]) == (8, 1, 1)


def test_longmemeval_has_no_raw_evidence(tmp_path: Path) -> None:
    store = _convert(tmp_path, "lme", "longmemeval", "longmemeval_oracle_sample.json")
    with store.connect() as con:
        assert con.execute("SELECT count(*) FILTER (WHERE evidence_raw IS NOT NULL) FROM questions").fetchone() == (0,)


@pytest.mark.shared_data
def test_raw_evidence_of_all_locomo10_questions(shared_datasets: Path, tmp_path: Path) -> None:
    path = shared_datasets / "locomo10.json"
    store = ResultStore(results_dir=str(tmp_path))
    convert_dataset(DatasetConfig(name="locomo", loader="locomo", path=str(path)), store, lambda _msg: None)
    with store.connect() as con:
        stored = dict(con.execute("SELECT question_id, evidence_raw FROM questions").fetchall())
    expected = {
        f"{s['sample_id']}_q{i}": qa["evidence"] for s in json.loads(path.read_text()) for i, qa in enumerate(s["qa"])
    }
    assert len(expected) == 1986
    assert stored == expected
