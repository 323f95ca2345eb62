"""Exact counts on the real datasets in ../shared/datasets (skipped when the folder is absent).

The expected numbers are the ones stated in ../shared/datasets/README.md (checked by hand
against the files); LongMemEval_S lacks two of the 500 questions (7e00a6cb, a
single-session-assistant question, and gpt4_7a0daae1, a temporal-reasoning one).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.config.model import DatasetConfig
from pipeline.core.records import ParsedRecord
from pipeline.datasets import LOADERS, convert_dataset
from pipeline.store.results import ResultStore

pytestmark = pytest.mark.shared_data

LME_TYPES_500 = {
    "temporal-reasoning": 133,
    "multi-session": 133,
    "knowledge-update": 78,
    "single-session-user": 70,
    "single-session-assistant": 56,
    "single-session-preference": 30,
}


def quality(records: list[ParsedRecord]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for r in records:
        for issue in r.issues:
            counts[issue.kind] += issue.count
    return dict(counts)


def test_locomo(shared_datasets: Path) -> None:
    records = list(LOADERS.get("locomo")(shared_datasets / "locomo10.json", "locomo"))
    questions = [r.question for r in records if r.question]
    assert len(questions) == 1986 and not [r for r in records if r.failure]
    assert Counter(q.type_raw for q in questions) == {"1": 282, "2": 321, "3": 96, "4": 841, "5": 446}
    assert sum(q.is_abstention for q in questions) == 446
    assert len({q.haystack_id for q in questions}) == 10
    sessions = {s.session.session_key: s for r in records for s in r.sessions}
    assert len(sessions) == 272
    assert sum(len(s.turns) for s in sessions.values()) == 5882
    assert sum(q.answer is None for q in questions) == 444
    assert quality(records) == {
        "adversarial_no_answer": 444,
        "integer_answer": 6,
        "answer_semicolon": 12,
        "date_without_session": 16,  # conv-26 sessions 20-35
        "no_evidence": 4,
        "evidence_semicolon_joined": 1,  # "D8:6; D9:17"
        "evidence_space_joined": 3,  # "D9:1 D4:4 D4:6" and two more in conv-49
        "evidence_extra_colon": 1,  # "D:11:26"
        "evidence_zero_padded": 1,  # "D30:05"
        "evidence_unparseable": 1,  # "D"
        "evidence_missing_turn": 2,  # D10:19 (conv-42), D4:36 (conv-47)
        "evidence_duplicate": 1,
        "image_caption": 1226,
    }


def test_longmemeval_oracle(shared_datasets: Path, tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path))
    ds = DatasetConfig(name="lme_oracle", loader="longmemeval", path=str(shared_datasets / "longmemeval_oracle.json"))
    stats = convert_dataset(ds, store, lambda _m: None)
    assert (stats.n_questions, stats.n_failures) == (500, 0)
    assert stats.rows["sessions"] == 948 and stats.rows["turns"] == 10960
    assert dict(stats.quality) == {"integer_answer": 32, "answer_session_no_has_answer": 94}
    questions = store.read_canonical("lme_oracle", "questions").to_pylist()
    assert Counter(q["type_raw"] for q in questions) == LME_TYPES_500
    assert sum(q["is_abstention"] for q in questions) == 30
    assert all(q["question_date"] is not None for q in questions)


@pytest.mark.slow
def test_longmemeval_s(shared_datasets: Path) -> None:
    path = shared_datasets / "longmemeval_s_cleaned_498of500.json.gz"
    questions, sessions, turns, haystack = [], set(), 0, 0
    counts: Counter[str] = Counter()
    for r in LOADERS.get("longmemeval")(path, "lme_s"):
        assert r.failure is None
        questions.append(r.question)
        haystack += len(r.haystack)
        for s in r.sessions:
            if s.session.session_key not in sessions:
                sessions.add(s.session.session_key)
                turns += len(s.turns)
        for issue in r.issues:
            counts[issue.kind] += issue.count
    expected = dict(LME_TYPES_500)
    expected["temporal-reasoning"] -= 1  # gpt4_7a0daae1
    expected["single-session-assistant"] -= 1  # 7e00a6cb
    assert len(questions) == 498
    assert Counter(q.type_raw for q in questions) == expected
    assert sum(q.is_abstention for q in questions) == 30
    # sessions are content+date keyed: the 23,744 haystack slots hold 23,744 distinct (date, turns)
    assert (haystack, len(sessions), turns) == (23744, 23744, 245625)
    assert dict(counts) == {
        "repeated_session_id": 13,
        "empty_turn": 12,
        "has_answer_missing": 234693,
        "integer_answer": 32,
        "answer_session_no_has_answer": 94,
    }


BEAM_ABILITY_COUNT = 10  # two questions per ability and chat


@pytest.mark.parametrize(
    ("tier", "chats", "sessions", "messages", "issues"),
    [
        ("100K", 20, 90, 5732, {"batch_time_from_message": 90, "position_marker": 2191, "position_marker_malformed": 8,
                                "evidence_duplicate": 15, "no_reference_answer": 80, "difficulty_missing": 1,
                                "no_evidence": 5}),
        ("500K", 35, 350, 38058, {"batch_time_from_message": 350, "position_marker": 14412,
                                  "position_marker_malformed": 177, "no_reference_answer": 140, "no_evidence": 1,
                                  "evidence_duplicate": 21}),
        ("1M", 9, 90, 16002, {"batch_time_from_message": 90, "position_marker": 6187, "position_marker_malformed": 70,
                              "no_reference_answer": 36, "evidence_duplicate": 10, "no_evidence": 2}),
    ],
)  # fmt: skip
def test_beam_tiers(shared_datasets: Path, tier: str, chats: int, sessions: int, messages: int, issues: dict) -> None:
    """BEAM as released (100K and 500K complete, 9 of the 35 1M chats): every question loads, every
    source_chat_ids entry points at a message; markers end 22,790 messages (255 more are malformed)."""
    records = list(LOADERS.get("beam")(shared_datasets / "beam" / "chats" / tier, f"beam_{tier}"))
    questions = [r.question for r in records if r.question]
    assert len(questions) == chats * 2 * BEAM_ABILITY_COUNT and not [r for r in records if r.failure]
    assert set(Counter(q.type_raw for q in questions).values()) == {chats * 2}
    found = {s.session.session_key: s for r in records for s in r.sessions}
    assert (len(found), sum(len(s.turns) for s in found.values())) == (sessions, messages)
    assert quality(records) == issues


def test_locomo_plus(shared_datasets: Path) -> None:
    """LoCoMo-Plus: 401 items, ~100 per relation type, in the ten LoCoMo conversations; 15 time gaps
    ("several months later" and the like) name no amount and give 0 days, as the official code."""
    records = list(LOADERS.get("locomo_plus")(shared_datasets / "locomo_plus" / "locomo_plus.json", "locomo_plus"))
    questions = [r.question for r in records if r.question]
    assert len(questions) == 401 and not [r for r in records if r.failure]
    assert Counter(q.type_raw for q in questions) == {"causal": 101, "state": 100, "goal": 100, "value": 100}
    assert Counter(q.question_id.split("_plus")[0] for q in questions)["conv-26"] == 41
    sessions = {s.session.session_key for r in records for s in r.sessions}
    assert len(sessions) == 272 + 401  # LoCoMo's sessions once, and one cue session per item
    assert quality(records) == {"date_without_session": 16, "image_caption": 1226, "time_gap_unparsed": 15}
