"""The BEAM loader on its sample (a 100K-style tier and a 10M chat in plan parts) and on broken inputs."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipeline.config.model import DatasetConfig
from pipeline.core.records import ParsedRecord
from pipeline.datasets import LOADERS, DatasetFileError, convert_dataset
from pipeline.datasets.samples import SAMPLE_DIR
from pipeline.store.results import ResultStore

BEAM = SAMPLE_DIR / "beam"


def load(path: Path, dataset: str = "beam") -> list[ParsedRecord]:
    return list(LOADERS.get("beam")(path, dataset))


def quality(records: list[ParsedRecord]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for r in records:
        for issue in r.issues:
            counts[issue.kind] += issue.count
    return dict(counts)


def by_id(records: list[ParsedRecord]) -> dict[str, ParsedRecord]:
    return {r.question.question_id: r for r in records if r.question}


def texts(record: ParsedRecord) -> dict[str, str]:
    """message id as given -> text, over the record's sessions."""
    return {t.source_id or "": t.text for s in record.sessions for t in s.turns}


def gold_texts(record: ParsedRecord) -> list[str]:
    turns = {t.turn_id: t for s in record.sessions for t in s.turns}
    return [turns[e.unit_id].text for e in record.evidence if e.level == "turn"]


def test_tier_sample_counts_and_quirks() -> None:
    records = load(BEAM / "100K")
    questions = [r.question for r in records if r.question]
    assert len(questions) == 15 and not [r for r in records if r.failure]
    assert Counter(q.type_raw for q in questions)["event_ordering"] == 2
    assert all(q.type_name == q.type_raw for q in questions)
    assert sorted(q.question_id for q in questions if q.is_abstention) == ["100K-1-abstention-0", "100K-2-abstention-0"]
    assert {q.haystack_id for q in questions} == {"100K-1", "100K-2"}
    sessions = {s.session.session_key: s for r in records for s in r.sessions}
    assert len(sessions) == 4  # 3 batches of chat 1, the 1 batch of chat 2's truncated file
    assert sum(len(s.turns) for s in sessions.values()) == 28
    assert quality(records) == {
        "batch_time_from_message": 4,
        "position_marker": 12,
        "position_marker_malformed": 1,  # "->-> 2,N/A"
        "position_marker_index_mismatch": 1,
        "truncated_chat_used": 1,
        "no_reference_answer": 2,  # instruction and preference following
        "no_evidence": 1,  # a knowledge-update question without source_chat_ids
        "evidence_missing_message": 3,  # id 999, and two ids of the batch the truncated file drops
        "evidence_duplicate": 2,
        "evidence_id_string": 1,
        "difficulty_missing": 2,  # one empty, one absent
    }


def test_tier_sample_fields() -> None:
    records = by_id(load(BEAM / "100K"))
    deadline = records["100K-1-information_extraction-0"]
    q = deadline.question
    assert q is not None and q.answer == "May 31, 2024." and q.difficulty == "easy"
    assert q.rubric == ("LLM response should state: May 31, 2024",) and q.question_date is None
    (gold,) = gold_texts(deadline)
    assert gold.startswith("I'm starting a garden planner") and gold.endswith("->-> 1,1")  # the marker is kept
    first = deadline.sessions[0].session
    assert (first.source_session_id, first.datetime_raw, first.datetime.month) == ("batch-1", "March-04-2024", 3)
    assert [h.source_session_id for h in deadline.haystack] == ["batch-1", "batch-2", "batch-3"]
    contradiction = records["100K-1-contradiction_resolution-0"]
    assert [e.source_id for e in contradiction.evidence if e.level == "turn"] == [
        "first_statement:18",
        "second_statement:20",
    ]
    assert "never written any login code" in gold_texts(contradiction)[0]
    ordering = records["100K-1-event_ordering-0"].question
    assert ordering is not None and ordering.rubric == (
        "Garden and bed schema",
        "Sowing calendar",
        "Deployment to a VPS",
    )
    preference = records["100K-1-preference_following-0"].question
    assert preference is not None and preference.answer.startswith("Response should suggest")  # expected_compliance
    assert preference.difficulty == ""
    truncated = records["100K-2-information_extraction-0"]
    assert [s.session.source_session_id for s in truncated.sessions] == ["batch-1"]
    assert "600 km" in gold_texts(truncated)[0]  # "'3'" read as message 3


def test_10m_plan_parts_are_numbered_as_the_official_combination() -> None:
    records = by_id(load(BEAM / "10M"))
    assert len(records) == 10
    one = records["10M-1-temporal_reasoning-0"]
    assert [h.source_session_id for h in one.haystack] == [
        "plan-0/batch-1", "plan-0/batch-2", "plan-1/batch-1", "plan-1/batch-2",
    ]  # fmt: skip
    ids = [int(t.source_id or -1) for s in one.sessions for t in s.turns]
    assert ids == list(range(16))  # plan-1's ids 0.. shifted by plan-0's last id + 1
    assert "finished on April 20" in gold_texts(one)[0]
    assert quality(list(records.values()))["plan_ids_offset"] == 1
    assert by_id(load(BEAM / "10M" / "1")).keys() == records.keys()  # one chat folder: the same questions


def _combined(parts: list[Path]) -> list[dict]:
    """The official combination of plan parts (download_dataset.py): ``{"plan-<k+1>": batches}``, ids shifted."""
    out, last = [], 0
    for k, part in enumerate(parts):
        batches = json.loads(part.read_text(encoding="utf-8"))
        if last != 0:
            for b in batches:
                for turn in b["turns"]:
                    for m in turn:
                        m["id"] += last + 1
        last = batches[-1]["turns"][-1][-1]["id"]
        out.append({f"plan-{k + 1}": batches})
    return out


def test_10m_combined_chat_json_reads_like_its_parts(tmp_path: Path) -> None:
    chat = tmp_path / "10M" / "1"
    (chat / "probing_questions").mkdir(parents=True)
    shutil.copy(BEAM / "10M/1/probing_questions/probing_questions.json", chat / "probing_questions")
    parts = sorted((BEAM / "10M/1").glob("plan-*/chat.json"))
    (chat / "chat.json").write_text(json.dumps(_combined(parts)), encoding="utf-8")
    combined, from_parts = by_id(load(chat)), by_id(load(BEAM / "10M/1"))
    assert combined.keys() == from_parts.keys()
    for qid, record in combined.items():
        assert texts(record) == texts(from_parts[qid])
        assert gold_texts(record) == gold_texts(from_parts[qid])
    first = next(iter(combined.values()))
    assert first.haystack[2].source_session_id == "plan-2/batch-1"  # the combined file's own labels
    assert "plan_ids_offset" not in quality(list(combined.values()))  # ids already continue


def test_a_file_or_an_empty_folder_is_not_a_beam_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetFileError, match="field <layout>"):
        load(BEAM / "100K/1/chat.json")
    with pytest.raises(DatasetFileError, match="no BEAM chat folder"):
        load(tmp_path)
    with pytest.raises(DatasetFileError, match="folder not found"):
        load(tmp_path / "absent")


def _tier(tmp_path: Path) -> Path:
    tier = tmp_path / "100K"
    shutil.copytree(BEAM / "100K", tier)
    return tier


def _questions(tier: Path, chat: str) -> Path:
    return tier / chat / "probing_questions" / "probing_questions.json"


def test_bad_questions_fail_alone_naming_file_record_and_field(tmp_path: Path) -> None:
    tier = _tier(tmp_path)
    path = _questions(tier, "1")
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["information_extraction"][0]["rubric"]
    data["summarization"][0]["rubric"] = []
    path.write_text(json.dumps(data), encoding="utf-8")
    records = load(tier)
    failures = {r.failure.record_id: r.failure for r in records if r.failure}
    assert sorted(failures) == ["100K-1-information_extraction-0", "100K-1-summarization-0"]
    missing = failures["100K-1-information_extraction-0"]
    assert missing.partition_key == "beam__100K-1-information_extraction-0"
    assert missing.field == "information_extraction[0].rubric" and str(path) in missing.message
    assert "empty rubric" in failures["100K-1-summarization-0"].message
    assert len([r for r in records if r.question]) == 13


def test_a_broken_chat_fails_its_questions_and_no_other(tmp_path: Path) -> None:
    tier = _tier(tmp_path)
    chat = tier / "1" / "chat.json"
    batches = json.loads(chat.read_text(encoding="utf-8"))
    batches[1]["turns"][0][1]["id"] = 0  # a second message 0
    chat.write_text(json.dumps(batches), encoding="utf-8")
    (tier / "2" / "probing_questions" / "probing_questions.json").write_text("{not json", encoding="utf-8")
    records = load(tier)
    failed = [r.failure for r in records if r.failure]
    keyed = [f for f in failed if f.partition_key]
    assert len(keyed) == 10 and all("message id 0 occurs twice" in f.message and str(chat) in f.message for f in keyed)
    (unkeyed,) = [f for f in failed if not f.partition_key]
    assert unkeyed.record_id == "100K-2" and "not valid JSON" in unkeyed.message
    assert not [r for r in records if r.question]


def test_conversion_notices_an_edit_inside_the_folder(tmp_path: Path) -> None:
    tier = _tier(tmp_path)
    store = ResultStore(tmp_path / "results")
    ds = DatasetConfig(name="beam", loader="beam", path=str(tier))
    first = convert_dataset(ds, store, lambda _: None)
    assert (first.skipped, first.n_questions) == (False, 15)
    assert convert_dataset(ds, store, lambda _: None).skipped
    path = _questions(tier, "2")
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["event_ordering"]
    path.write_text(json.dumps(data), encoding="utf-8")
    again = convert_dataset(ds, store, lambda _: None)
    assert (again.skipped, again.n_questions) == (False, 14)
    questions = store.read_canonical("beam", "questions")
    assert questions is not None and set(questions.column("difficulty").to_pylist()) >= {"easy", "medium", "clear"}
    rubrics = dict(
        zip(questions.column("question_id").to_pylist(), questions.column("rubric").to_pylist(), strict=True)
    )
    assert rubrics["100K-1-event_ordering-0"] == ["Garden and bed schema", "Sowing calendar", "Deployment to a VPS"]


def test_an_empty_evidence_list_is_counted(tmp_path: Path) -> None:
    tier = _tier(tmp_path)
    path = _questions(tier, "1")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["summarization"][0]["source_chat_ids"] = []
    path.write_text(json.dumps(data), encoding="utf-8")
    records = by_id(load(tier))
    summary = records["100K-1-summarization-0"]
    assert summary.evidence == ()
    assert [(i.kind, i.raw_value) for i in summary.issues if i.kind == "no_evidence"] == [("no_evidence", "[]")]
