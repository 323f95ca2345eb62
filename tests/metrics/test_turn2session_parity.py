"""Turn->session parity at every k and for ANY ranking (issue 25), against stored official figures.

tests/data/official/longmemeval_s_turn2session_any_ranking.json holds, for every non-abstention
question of LongMemEval_S, what LongMemEval's own ``evaluate_retrieval_turn2session`` and
``evaluate_retrieval`` returned on two rankings of the official turn corpus: a seeded random one and
the reversed corpus order (the header names the commit and how the figures were produced). Here the
same rankings go through membench: the real loader parses each record, every official corpus entry
becomes a one-turn unit of its canonical session, the gold comes from canonical evidence and the
sessions' haystack ids, and the pinned metric functions score levels ``session`` and ``turn``.
Requirement: 0 differences at k in {1, 3, 5, 10, 30, 50}. The variant level ``session_keyed``
(sessions by membench's key) is shown to differ only on haystacks that repeat a session id.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.partitions import KeyRegistry
from pipeline.datasets.base import RecordContext
from pipeline.datasets.longmemeval import parse_record
from pipeline.metrics.retrieval import (
    LEVEL_SESSION,
    LEVEL_SESSION_KEYED,
    LEVEL_TURN,
    UnitRef,
    lme_gold,
    ndcg_any_at_k,
    ranking_at,
    recall_all_at_k,
    recall_any_at_k,
)
from tests.support.paths import OFFICIAL_DIR

pytestmark = pytest.mark.shared_data

FIGURES = OFFICIAL_DIR / "longmemeval_s_turn2session_any_ranking.json"
S_FILE = "longmemeval_s_cleaned_498of500.json.gz"
RANKINGS = ("random", "reversed")


def rankings(qid: str, n: int) -> dict[str, list[int]]:
    """The two rankings of the official turn corpus the figures were computed on (see the header)."""
    order = list(range(n))
    random.Random(qid).shuffle(order)
    return {"random": order, "reversed": list(range(n - 1, -1, -1))}


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        yield from enumerate(json.load(f))


def _scores(ranking: Any, gold_ids: frozenset[str], k: int) -> tuple[float, float, float]:
    return (
        recall_any_at_k(ranking, gold_ids, k),
        recall_all_at_k(ranking, gold_ids, k),
        ndcg_any_at_k(ranking, gold_ids, k),
    )


def _units(raw: dict[str, Any], parsed: Any, ranking: list[int]) -> list[UnitRef]:
    """One unit per official corpus entry (a user turn, haystack order), ranked as ``ranking``."""
    by_position = {h.position: h.session_key for h in parsed.haystack}
    turns = {s.session.session_key: s.turns for s in parsed.sessions}
    entries: list[tuple[str, str]] = []
    for position, _ in enumerate(raw["haystack_session_ids"]):
        key = by_position[position]
        entries += [(key, t.turn_id) for t in turns[key] if t.role == "user"]
    return [UnitRef(rank, entries[i][0], (entries[i][1],)) for rank, i in enumerate(ranking, start=1)]


def compare(shared: Path) -> dict[str, Any]:
    doc = json.loads(FIGURES.read_text())
    ks = doc["k_values"]
    expected = {q["question_id"]: q for q in doc["questions"]}
    counts: dict[str, Any] = {"compared": 0, "values": 0, "differences": 0, "excluded_no_gold": set(),
                              "keyed_differs": set(), "repeated_ids": set()}  # fmt: skip
    keys = KeyRegistry("lme")
    path = shared / S_FILE
    for index, raw in _records(path):
        qid = raw["question_id"]
        if qid.endswith("_abs"):
            continue
        parsed = parse_record(RecordContext("lme", str(path), index, f"#{index}"), raw, keys)
        turns_by_session = {s.session.session_key: s.turns for s in parsed.sessions}
        source_ids = {h.session_key: h.source_session_id for h in parsed.haystack}
        gold = lme_gold(list(parsed.evidence), turns_by_session, source_ids)
        official = expected.pop(qid)
        if len(set(raw["haystack_session_ids"])) < len(raw["haystack_session_ids"]):
            counts["repeated_ids"].add(qid)
        if not gold.turns:  # membench excludes (and counts) a question without gold turns
            assert official["n_correct"] == 0, qid
            counts["excluded_no_gold"].add(qid)
            continue
        for name, ranking in rankings(qid, official["n_corpus"]).items():
            units = _units(raw, parsed, ranking)
            for level, field in ((LEVEL_SESSION, "session"), (LEVEL_TURN, "turn")):
                ranked = ranking_at(level, units, gold)
                for k, want in zip(ks, official[name][field], strict=True):
                    got = _scores(ranked, gold.at(level), k)
                    counts["values"] += 3
                    counts["differences"] += sum(abs(a - b) > 1e-12 for a, b in zip(got, want, strict=True))
            keyed = ranking_at(LEVEL_SESSION_KEYED, units, gold)
            for k, want in zip(ks, official[name]["session"], strict=True):
                got = _scores(keyed, gold.at(LEVEL_SESSION_KEYED), k)
                if any(abs(a - b) > 1e-12 for a, b in zip(got, want, strict=True)):
                    counts["keyed_differs"].add(qid)
        counts["compared"] += 1
    assert not expected, f"questions in the figures but not in the dataset: {sorted(expected)[:5]}"
    return counts


def inputs_digest(obj: Any) -> str:
    """sha256 of the canonical JSON of the inputs (the header's ``inputs_sha256``)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def test_figures_are_for_this_dataset_file_and_these_rankings(shared_datasets: Path) -> None:
    header = json.loads(FIGURES.read_text())["header"]
    assert header["format"] == "membench-official-figures/1"
    assert header["official_commit"] == "9e0b455f4ef0e2ab8f2e582289761153549043fc"
    digest = hashlib.sha256((shared_datasets / S_FILE).read_bytes()).hexdigest()
    assert header["dataset"] == {"file": S_FILE, "sha256": digest}
    inputs = {}
    for _, raw in _records(shared_datasets / S_FILE):
        if not raw["question_id"].endswith("_abs"):
            n_user = sum(t["role"] == "user" for s in raw["haystack_sessions"] for t in s)
            inputs[raw["question_id"]] = rankings(raw["question_id"], n_user)
    assert inputs_digest(inputs) == header["inputs_sha256"]


def test_turn2session_equals_official_at_every_k_for_any_ranking(shared_datasets: Path) -> None:
    counts = compare(shared_datasets)
    # 468 non-abstention questions = 418 scored + 50 without a gold user turn (official: no correct doc)
    assert counts["compared"] == 418 and len(counts["excluded_no_gold"]) == 50
    assert counts["values"] == 418 * 2 * 2 * 6 * 3
    assert counts["differences"] == 0
    # the keyed variant departs from the official figures only where a haystack repeats a session id
    assert counts["keyed_differs"] <= counts["repeated_ids"]
    assert counts["keyed_differs"] == {"1e043500", "d23cf73b"}  # on these two rankings
