"""Retrieval metrics: table-driven, hand-computed cases (LongMemEval eval_utils.py definitions)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from pipeline.core.records import LEVEL_SESSION, EvidenceRow, TurnRow
from pipeline.metrics.retrieval import (
    EVIDENCE_RECALL_CONTEXT,
    LEVEL_SESSION_DEDUP,
    LEVEL_SESSION_KEYED,
    METRIC_COLUMNS,
    OUTCOME_EXCLUDED_ABSTENTION,
    OUTCOME_EXCLUDED_NO_GOLD,
    PROTOCOL_EVIDENCE,
    PROTOCOL_LONGMEMEVAL,
    Gold,
    Ranked,
    UnitRef,
    context_units,
    dcg,
    effective_k,
    evidence_gold,
    evidence_recall,
    evidence_recall_at_k,
    exclusion,
    gold_protocol,
    lme_gold_sessions,
    lme_gold_turns,
    ndcg_any_at_k,
    ranking_at,
    recall_all_at_k,
    recall_any_at_k,
    score_ranking,
    session_ranking,
    turn2session_ranking,
    turn_ranking,
)

L3 = math.log2(3)  # discount of 1-based rank 3 in LongMemEval's dcg()

# ranking, gold, k, recall_any, recall_all, ndcg_any, evidence_recall
CASES = [
    (["a", "b", "c"], {"a"}, 1, 1.0, 1.0, 1.0, 1.0),
    (["b", "a", "c"], {"a"}, 1, 0.0, 0.0, 0.0, 0.0),
    # LongMemEval dcg: rank 2 weighs 1/log2(2) = 1, as much as rank 1 -> ndcg 1.0 (textbook: 0.631)
    (["b", "a", "c"], {"a"}, 2, 1.0, 1.0, 1.0, 1.0),
    (["b", "c", "a"], {"a"}, 3, 1.0, 1.0, (1 / L3) / 1.0, 1.0),
    # two gold, one found at rank 1: dcg 1, ideal 1 + 1 = 2
    (["a", "x", "y"], {"a", "b"}, 3, 1.0, 0.0, 0.5, 0.5),
    # two gold at ranks 1 and 3: dcg 1 + 1/log2(3), ideal 2
    (["a", "x", "b"], {"a", "b"}, 3, 1.0, 1.0, (1 + 1 / L3) / 2, 1.0),
    # ideal capped at k: 3 gold, k = 1, hit at rank 1 -> 1.0
    (["a", "b", "c"], {"a", "b", "c"}, 1, 1.0, 0.0, 1.0, 1 / 3),
    # k beyond the ranking length: scored on what was returned
    (["x", "a"], {"a", "b"}, 50, 1.0, 0.0, 1.0 / 2, 0.5),
    (["x", "y"], {"a"}, 10, 0.0, 0.0, 0.0, 0.0),
    # four gold, hits at ranks 2 and 4 of k = 5: dcg 1 + 1/log2(4) = 1.5; ideal 1 + 1 + 1/log2(3) + 1/2
    (["x", "a", "y", "b", "z"], {"a", "b", "c", "d"}, 5, 1.0, 0.0, 1.5 / (2.5 + 1 / L3), 0.5),
]


@pytest.mark.parametrize(("ranking", "gold", "k", "r_any", "r_all", "ndcg", "ev"), CASES)
def test_ranked_metrics(
    ranking: list[str], gold: set[str], k: int, r_any: float, r_all: float, ndcg: float, ev: float
) -> None:
    assert recall_any_at_k(ranking, gold, k) == r_any
    assert recall_all_at_k(ranking, gold, k) == r_all
    assert ndcg_any_at_k(ranking, gold, k) == pytest.approx(ndcg, abs=1e-12)
    assert evidence_recall_at_k(ranking, gold, k) == pytest.approx(ev)


@pytest.mark.parametrize(
    ("relevances", "expected"),
    [([], 0.0), ([1], 1.0), ([0, 1], 1.0), ([1, 1], 2.0), ([0, 0, 1], 1 / L3), ([1, 0, 0, 1], 1.5)],
)
def test_dcg_is_longmemevals(relevances: list[int], expected: float) -> None:
    assert dcg(relevances) == pytest.approx(expected)


@pytest.mark.parametrize("fn", [recall_any_at_k, recall_all_at_k, ndcg_any_at_k, evidence_recall_at_k])
def test_no_gold_is_an_error_not_a_zero(fn: Callable[..., float]) -> None:
    with pytest.raises(ValueError, match="without gold"):
        fn(["a"], set(), 1)


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="k must be"):
        recall_any_at_k(["a"], {"a"}, 0)


UNITS = [
    UnitRef(3, "S1", ("S1:4",)),
    UnitRef(1, "S2", ("S2:0", "S2:1")),
    UnitRef(2, "S1", ("S1:0", "S2:1")),
    UnitRef(4, "S3", ()),
]


def test_rankings_follow_rank_and_dedup_first_appearance() -> None:
    assert session_ranking(UNITS) == ["S2", "S1", "S3"]
    assert turn_ranking(UNITS) == ["S2:0", "S2:1", "S1:0", "S1:4"]


@pytest.mark.parametrize(
    ("trimmed", "units_total", "expected_ranks"),
    [(0, None, [1, 2, 3, 4]), (1, None, [1, 2, 3]), (4, None, []), (9, None, []), (2, 6, [1, 2, 3, 4]), (2, 7, [1, 2])],
)
def test_context_units(trimmed: int, units_total: int | None, expected_ranks: list[int]) -> None:
    assert [u.rank for u in context_units(UNITS, trimmed, units_total)] == expected_ranks


def _turn(session: str, pos: int, role: str, has_answer: bool) -> TurnRow:
    return TurnRow("lme", session, f"{session}:{pos}", pos, role, role, "text", has_answer, None)


def _ev(level: str, unit_id: str) -> EvidenceRow:
    return EvidenceRow("lme", "q", "lme__q", level, unit_id, unit_id)


LME_TURNS = {
    "A": [_turn("A", 0, "user", True), _turn("A", 1, "assistant", True)],
    "B": [_turn("B", 0, "user", False), _turn("B", 1, "assistant", True)],  # assistant-only answer
    "C": [_turn("C", 0, "user", False), _turn("C", 1, "user", True)],
}


@pytest.mark.parametrize(
    ("sessions", "gold_sessions", "gold_turns"),
    [
        (["A"], {"A"}, {"A:0"}),
        (["B"], set(), set()),  # single-session-assistant style: not gold in LongMemEval
        (["A", "B", "C"], {"A", "C"}, {"A:0", "C:1"}),
        (["Z"], set(), set()),  # an answer session id with no turns
        ([], set(), set()),
    ],
)
def test_lme_gold(sessions: list[str], gold_sessions: set[str], gold_turns: set[str]) -> None:
    # turn-level canonical evidence (incl. the assistant has_answer turns) must not widen the gold
    evidence = [_ev("session", s) for s in sessions] + [_ev("turn", "B:1"), _ev("turn", "A:1")]
    assert lme_gold_sessions(evidence, LME_TURNS) == gold_sessions
    assert lme_gold_turns(evidence, LME_TURNS) == gold_turns


def test_evidence_gold_takes_rows_as_given() -> None:
    gold = evidence_gold([_ev("turn", "S1:2"), _ev("turn", "S1:5"), _ev("session", "S1")])
    assert gold.turns == {"S1:2", "S1:5"} and gold.sessions == {"S1"}


@pytest.mark.parametrize(
    ("protocol", "qid", "gold", "expected"),
    [
        (PROTOCOL_LONGMEMEVAL, "abc_abs", {"x"}, OUTCOME_EXCLUDED_ABSTENTION),
        (PROTOCOL_LONGMEMEVAL, "abc_abs", set(), OUTCOME_EXCLUDED_ABSTENTION),
        (PROTOCOL_LONGMEMEVAL, "abc", set(), OUTCOME_EXCLUDED_NO_GOLD),
        (PROTOCOL_LONGMEMEVAL, "abc", {"x"}, None),
        (PROTOCOL_EVIDENCE, "conv-26_q3_abs", {"x"}, None),  # the _abs rule is LongMemEval's only
        (PROTOCOL_EVIDENCE, "conv-26_q3", set(), OUTCOME_EXCLUDED_NO_GOLD),
    ],
)
def test_exclusion(protocol: str, qid: str, gold: set[str], expected: str | None) -> None:
    assert exclusion(protocol, qid, gold) == expected


@pytest.mark.parametrize(
    ("loader", "protocol"),
    [("longmemeval", PROTOCOL_LONGMEMEVAL), ("longmemeval_s", PROTOCOL_LONGMEMEVAL), ("locomo", PROTOCOL_EVIDENCE),
     ("locomo_mc10", PROTOCOL_EVIDENCE)],
)  # fmt: skip
def test_gold_protocol(loader: str, protocol: str) -> None:
    assert gold_protocol(loader) == protocol


def test_score_ranking_fills_every_column() -> None:
    scores = score_ranking(["a", "x", "b"], ["a"], {"a", "b"})
    assert set(scores) == set(METRIC_COLUMNS)
    assert scores["recall_all_at_1"] == 0.0 and scores["recall_all_at_3"] == 1.0
    assert scores["ndcg_any_at_3"] == pytest.approx((1 + 1 / L3) / 2)
    assert scores[EVIDENCE_RECALL_CONTEXT] == 0.5
    assert evidence_recall([], {"a"}) == 0.0


# ---- session level of a turn ranking: LongMemEval's turn2session (issue 10) --------------------------
# Answer sessions A (gold turns A:0, A:2; A:1 not gold -> label noans:A) and N (no gold turn at all:
# every turn noans:N, N not a gold session); X and Y are ordinary sessions.
T2S_GOLD = Gold(turns=frozenset({"A:0", "A:2"}), sessions=frozenset({"A"}), answer_sessions=frozenset({"A", "N"}))


def _turn_units(turn_ids: list[str]) -> list[UnitRef]:
    return [UnitRef(r, t.split(":")[0], (t,)) for r, t in enumerate(turn_ids, start=1)]


@pytest.mark.parametrize(
    ("turns", "k", "r_any", "r_all", "ndcg", "dedup_r_any"),
    [
        # A:1 is not gold: label noans:A is a miss (the dedup variant counts it as a hit on A)
        (["A:1", "X:0", "A:0"], 1, 0.0, 0.0, 0.0, 1.0),
        # k = 2 covers labels noans:A, X -> miss; dedup: A first -> hit
        (["A:1", "X:0", "A:0"], 2, 0.0, 0.0, 0.0, 1.0),
        # k = 3: labels noans:A X A -> hit at rank 3: dcg 1/log2(3); ideal min(2 gold turns, 3) = 2
        (["A:1", "X:0", "A:0"], 3, 1.0, 1.0, (1 / L3) / 2, 1.0),
        # k = 1: one distinct label at entry 1, no widening; dcg 1 / ideal min(2 gold turns, 1) = 1
        (["A:0", "A:2", "X:0"], 1, 1.0, 1.0, 1.0, 1.0),
        # k = 2: A X already 2 distinct labels, no widening; the 2nd gold turn (rank 3) is out:
        # dcg 1 / ideal min(2, 2) = 2 -> 0.5
        (["A:0", "X:0", "A:2"], 2, 1.0, 1.0, 0.5, 1.0),
        # k = 2 widens to 3 over A A X: dcg = 1 + 1 (rank 2 weighs 1) = 2 / ideal 2
        (["A:0", "A:2", "X:0", "Y:0"], 2, 1.0, 1.0, 1.0, 1.0),
        # N is an answer session without gold turns: noans:N is never a hit
        (["N:0", "Y:0", "X:0"], 3, 0.0, 0.0, 0.0, 0.0),
        # ranking shorter than k: the cut runs past the end, scored on what was returned
        (["X:0", "A:2"], 10, 1.0, 1.0, 1.0 / 2, 1.0),
    ],
)
def test_turn2session_is_longmemevals(
    turns: list[str], k: int, r_any: float, r_all: float, ndcg: float, dedup_r_any: float
) -> None:
    units = _turn_units(turns)
    official = ranking_at(LEVEL_SESSION, units, T2S_GOLD)
    assert isinstance(official, Ranked)
    assert recall_any_at_k(official, T2S_GOLD.sessions, k) == r_any
    assert recall_all_at_k(official, T2S_GOLD.sessions, k) == r_all
    assert ndcg_any_at_k(official, T2S_GOLD.sessions, k) == pytest.approx(ndcg, abs=1e-12)
    dedup = ranking_at(LEVEL_SESSION_DEDUP, units, T2S_GOLD)
    assert recall_any_at_k(dedup, T2S_GOLD.sessions, k) == dedup_r_any


# ---- issue 25: sessions identified as the official code does ---------------------------------------
# X1 and X2 are two canonical sessions (another date each) that the haystack names with ONE id "x";
# A is the answer session (gold turn A:0). Official level: x is one session; session_keyed: two.
REPEATED_GOLD = Gold(
    turns=frozenset({"A:0"}),
    sessions=frozenset({"A"}),
    answer_sessions=frozenset({"A"}),
    source_ids={"X1": "x", "X2": "x", "A": "answer_a"},
)


@pytest.mark.parametrize(
    ("turns", "k", "official_any", "keyed_any"),
    [
        # official labels x x answer_a: k = 2 widens to 3 -> hit; keyed X1 X2 A: 2 labels at 2 -> miss
        (["X1:0", "X2:0", "A:0"], 2, 1.0, 0.0),
        (["X1:0", "X2:0", "A:0"], 1, 0.0, 0.0),
        (["X1:0", "X2:0", "A:0"], 3, 1.0, 1.0),
        (["A:0", "X1:0", "X2:0"], 1, 1.0, 1.0),
        # the same id twice with another session between: official x Y x A -> k=3 covers x Y A
        (["X1:0", "Y:0", "X2:0", "A:0"], 3, 1.0, 0.0),
    ],
)
def test_session_level_identifies_sessions_by_haystack_id(
    turns: list[str], k: int, official_any: float, keyed_any: float
) -> None:
    units = _turn_units(turns)
    assert REPEATED_GOLD.at(LEVEL_SESSION) == {"answer_a"} and REPEATED_GOLD.at(LEVEL_SESSION_KEYED) == {"A"}
    official = ranking_at(LEVEL_SESSION, units, REPEATED_GOLD)
    keyed = ranking_at(LEVEL_SESSION_KEYED, units, REPEATED_GOLD)
    assert recall_any_at_k(official, REPEATED_GOLD.at(LEVEL_SESSION), k) == official_any
    assert recall_any_at_k(keyed, REPEATED_GOLD.at(LEVEL_SESSION_KEYED), k) == keyed_any


def test_session_ranking_is_named_by_haystack_id_at_the_official_level() -> None:
    units = [UnitRef(1, "X1", ("X1:0", "X1:1")), UnitRef(2, "A", ("A:0", "A:1")), UnitRef(3, "X2", ("X2:0", "X2:1"))]
    assert ranking_at(LEVEL_SESSION, units, REPEATED_GOLD) == ["x", "answer_a", "x"]  # one corpus entry each
    assert ranking_at(LEVEL_SESSION_KEYED, units, REPEATED_GOLD) == ["X1", "A", "X2"]


@pytest.mark.parametrize(
    ("ids", "k", "expected"),
    [
        (["a", "a", "b", "c"], 1, 1),
        (["a", "a", "b", "c"], 2, 3),
        (["a", "a", "b", "c"], 3, 4),
        (["a", "a", "b"], 3, 4),  # fewer distinct ids than k: one past the end, as the official loop
        (["a", "b"], 5, 5),  # k already past the end: unchanged
    ],
)
def test_effective_k(ids: list[str], k: int, expected: int) -> None:
    assert effective_k(ids, k) == expected


def test_session_ranking_of_session_units_is_not_converted() -> None:
    # units spanning several turns (whole sessions, chunks, notes) are LongMemEval's session corpus
    units = [UnitRef(1, "A", ("A:1", "A:0")), UnitRef(2, "X", ("X:0",))]
    assert ranking_at(LEVEL_SESSION, units, T2S_GOLD) == ["A", "X"]
    assert ranking_at(LEVEL_SESSION, _turn_units(["A:1"])) == ["A"]  # no gold given: plain session order


def test_turn2session_ranked_counts_sessions() -> None:
    ranked = turn2session_ranking(_turn_units(["A:0", "A:1", "A:2", "X:0"]), T2S_GOLD)
    assert ranked.ids == ("A", "noans:A", "A", "X")
    assert len(ranked) == 3 and ranked.n_relevant == 2
    assert evidence_recall(ranked, T2S_GOLD.sessions) == 1.0


def test_effective_k_equals_the_official_loop_on_random_rankings() -> None:
    """The incremental set gives the cut-off of LongMemEval's loop (a fresh set per step), whatever the ids."""
    import random

    def official(ids: list[str], k: int) -> int:
        ek = k
        while ek <= len(ids) and len(set(ids[:ek])) < k:
            ek += 1
        return ek

    rng = random.Random(7)
    for _ in range(500):
        ids = [rng.choice("abcdefghij") for _ in range(rng.randrange(0, 40))]
        k = rng.randrange(1, 15)
        assert effective_k(ids, k) == official(ids, k), (ids, k)
