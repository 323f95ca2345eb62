"""The bundled synthetic samples: reproducible, loadable with exact counts, every quirk counted."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.core.records import ParsedRecord
from pipeline.datasets import LOADERS
from pipeline.datasets.samples import (
    LOCOMO_FILE,
    LONGMEMEVAL_ORACLE_FILE,
    LONGMEMEVAL_S_FILE,
    MC10_FILE,
    SAMPLE_DIR,
    SAMPLE_FILES,
    render,
    write_samples,
)


def load(loader: str, name: str) -> list[ParsedRecord]:
    return list(LOADERS.get(loader)(SAMPLE_DIR / name, "sample"))


def quality(records: list[ParsedRecord]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for r in records:
        for issue in r.issues:
            counts[issue.kind] += issue.count
    return dict(counts)


def sessions(records: list[ParsedRecord]) -> dict:
    return {s.session.session_key: s for r in records for s in r.sessions}


def test_committed_samples_equal_regenerated(tmp_path: Path) -> None:
    written = write_samples(tmp_path)
    names = sorted(p.relative_to(tmp_path).as_posix() for p in written)
    assert set(SAMPLE_FILES) <= set(names) and any(n.startswith("beam/10M/1/plan-1/") for n in names)
    committed = sorted(p.relative_to(SAMPLE_DIR).as_posix() for p in SAMPLE_DIR.rglob("*") if p.is_file())
    assert committed == names, "sample files differ from the generator's: run python -m pipeline.datasets.samples"
    for name in names:
        fresh = (tmp_path / name).read_text(encoding="utf-8")
        assert (SAMPLE_DIR / name).read_text(encoding="utf-8") == fresh, f"{name} is stale: regenerate the samples"
    assert render() == {name: (tmp_path / name).read_text(encoding="utf-8") for name in names}


def test_locomo_sample_counts_and_quirks() -> None:
    records = load("locomo", LOCOMO_FILE)
    questions = [r.question for r in records if r.question]
    assert len(questions) == 27 and not [r for r in records if r.failure]
    assert Counter(q.type_raw for q in questions) == {"1": 4, "2": 6, "3": 3, "4": 10, "5": 4}
    assert Counter(q.type_name for q in questions)["adversarial"] == 4
    assert sum(q.is_abstention for q in questions) == 4
    found = sessions(records)
    assert len(found) == 12
    assert sum(len(s.turns) for s in found.values()) == 96
    assert {q.haystack_id for q in questions} == {"conv-1", "conv-2"}
    evidence = Counter(e.level for r in records for e in r.evidence)
    assert evidence == {"turn": 33, "session": 32}
    assert quality(records) == {
        "date_without_session": 2,
        "image_caption": 8,
        "adversarial_no_answer": 3,
        "integer_answer": 2,
        "answer_semicolon": 2,
        "evidence_semicolon_joined": 1,
        "evidence_space_joined": 1,
        "evidence_extra_colon": 1,
        "evidence_zero_padded": 1,
        "evidence_unparseable": 1,
        "evidence_missing_turn": 1,
        "evidence_duplicate": 1,
        "no_evidence": 1,
    }


def test_locomo_sample_fields() -> None:
    records = load("locomo", LOCOMO_FILE)
    by_id = {r.question.question_id: r for r in records if r.question}
    q0 = by_id["conv-1_q0"]
    turns = {t.turn_id: t for s in q0.sessions for t in s.turns}
    gold = [turns[e.unit_id] for e in q0.evidence if e.level == "turn"]
    assert [(t.source_id, t.speaker, t.role) for t in gold] == [("D2:1", "Priya", "user")]
    assert "half marathon" in gold[0].text and gold[0].caption and "finisher medal" in gold[0].caption
    assert [e.source_id for e in q0.evidence if e.level == "session"] == ["session_2"]
    assert by_id["conv-1_q6"].question.answer == "8"
    adversarial = by_id["conv-1_q7"].question
    assert adversarial.answer is None
    assert (adversarial.adversarial_answer, adversarial.type_name) == ("Biscuit", "adversarial")
    repaired = [e.source_id for e in by_id["conv-1_q10"].evidence if e.level == "turn"]
    assert repaired == ["D6:1"]  # "D:6:1"
    assert [e.source_id for e in by_id["conv-2_q5"].evidence if e.level == "turn"] == ["D1:2", "D1:4"]  # "D1:02"
    haystack = q0.haystack
    assert [h.source_session_id for h in haystack] == [f"session_{n}" for n in range(1, 7)]
    first = q0.sessions[0].session
    assert first.datetime_raw == "2:15 pm on 4 March, 2023" and first.datetime.month == 3
    assert first.summary and "Rise & Crumb" in first.summary


def test_mc10_sample_matches_locomo_and_uses_naive_labels() -> None:
    mc10 = load("locomo_mc10", MC10_FILE)
    locomo = {r.question.question_id: r.question for r in load("locomo", LOCOMO_FILE) if r.question}
    questions = [r.question for r in mc10 if r.question]
    assert len(questions) == 27 and quality(mc10) == {}
    naive = {"1": "single_hop", "2": "multi_hop", "3": "temporal_reasoning", "4": "open_domain", "5": "adversarial"}
    for q in questions:
        source = locomo[q.question_id]
        assert q.question == source.question
        assert q.type_raw == naive[source.type_raw]
        assert q.type_name == f"mc10:{q.type_raw}"
        assert q.choices is not None and len(q.choices) == 10 and "Not answerable" in q.choices
        assert q.choices[q.correct_choice_index] == q.answer
    found = sessions(mc10)
    assert len(found) == 12 and sum(len(s.turns) for s in found.values()) == 96
    assert len({q.haystack_id for q in questions}) == 2
    assert not [e for r in mc10 for e in r.evidence]


@pytest.mark.parametrize(
    ("name", "n_sessions", "n_turns", "haystack_rows", "issues"),
    [
        (
            LONGMEMEVAL_S_FILE,
            17,
            70,
            33,
            {"has_answer_missing": 90, "empty_turn": 3, "integer_answer": 1, "repeated_session_id": 1},
        ),
        (LONGMEMEVAL_ORACLE_FILE, 10, 40, 12, {"integer_answer": 1}),
    ],
)
def test_longmemeval_samples(name: str, n_sessions: int, n_turns: int, haystack_rows: int, issues: dict) -> None:
    records = load("longmemeval", name)
    questions = [r.question for r in records if r.question]
    assert len(questions) == 8
    assert Counter(q.type_raw for q in questions) == {
        "single-session-user": 2,
        "multi-session": 2,
        "single-session-assistant": 1,
        "single-session-preference": 1,
        "knowledge-update": 1,
        "temporal-reasoning": 1,
    }
    assert sorted(q.question_id for q in questions if q.is_abstention) == ["8e2d6f41_abs", "b5a0c9e2_abs"]
    found = sessions(records)
    assert (len(found), sum(len(s.turns) for s in found.values())) == (n_sessions, n_turns)
    assert sum(len(r.haystack) for r in records) == haystack_rows
    assert Counter(e.level for r in records for e in r.evidence) == {"session": 12, "turn": 12}
    assert quality(records) == issues


def test_longmemeval_sample_evidence_points_at_the_answer() -> None:
    records = {r.question.question_id: r for r in load("longmemeval", LONGMEMEVAL_S_FILE) if r.question}
    bread = records["9b7e3f10"]
    turns = {t.turn_id: t for s in bread.sessions for t in s.turns}
    gold = [turns[e.unit_id] for e in bread.evidence if e.level == "turn"]
    assert len(gold) == 1 and gold[0].role == "assistant" and "75%" in gold[0].text
    counting = records["7a2e51b3"].question
    assert counting.answer == "3" and counting.question_date_raw == "2023/07/04 (Tue) 20:15"
    update = records["e0f4c6d9"]
    kyoto = [h for h in update.haystack if h.source_session_id == "sharegpt_kyotoTrip_0"]
    assert len(kyoto) == 2 and kyoto[0].session_key != kyoto[1].session_key  # same id, other date
    dates = [s.session.datetime for s in update.sessions]
    assert dates == sorted(dates)
    shared = set(s.session.session_key for s in records["5d1c2a7e"].sessions)
    assert shared & set(s.session.session_key for s in records["8e2d6f41_abs"].sessions)
