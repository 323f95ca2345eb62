"""The LoCoMo-Plus loader: the official stitching rules (time gaps, speakers, stable time order) and its sample."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.core.records import ParsedRecord
from pipeline.datasets import LOADERS, DatasetFileError
from pipeline.datasets.dates import format_locomo
from pipeline.datasets.locomo_plus import dialogue_lines, time_gap_days
from pipeline.datasets.samples import SAMPLE_DIR

PLUS = SAMPLE_DIR / "locomo_plus"


def load(path: Path) -> list[ParsedRecord]:
    return list(LOADERS.get("locomo_plus")(path, "plus"))


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("two months later", 60),
        ("about six weeks later", 42),
        ("a year after", 365),
        ("an month later", 30),
        ("Three Months Later", 90),
        ("12 weeks on", 84),
        ("one week later", 7),
        ("around eight months later", 240),
        ("several months later", None),  # no amount: the official code reads 0 days
        ("a weekend later", None),  # "week" must end the word
        ("", None),
    ],
)
def test_time_gap_days(text: str, days: int | None) -> None:
    assert time_gap_days(text) == days


def test_dialogue_lines_map_a_and_b_and_drop_the_rest() -> None:
    lines, dropped = dialogue_lines("  A: Hi there \n(laughs)\nB:Fine.\n\nC: who?\nA:", "Ann", "Bob")
    assert [(line.speaker, line.text) for line in lines] == [("Ann", "Hi there"), ("Bob", "Fine."), ("Ann", "")]
    assert dropped == 2


def test_sample_items_are_stitched_into_conversation_i_mod_n() -> None:
    records = load(PLUS)
    questions = [r.question for r in records if r.question]
    assert [q.question_id for q in questions] == ["conv-1_plus0", "conv-2_plus1", "conv-1_plus2", "conv-2_plus3"]
    assert Counter(q.type_name for q in questions) == {"causal": 1, "state": 1, "goal": 1, "value": 1}
    issues: Counter[str] = Counter()
    for r in records:
        for issue in r.issues:
            issues[issue.kind] += issue.count
    # the LoCoMo sample's own quirks, once per conversation, and the items'
    assert issues == {"date_without_session": 2, "image_caption": 8, "time_gap_unparsed": 1, "dialogue_line_dropped": 1}


def test_sample_item_fields_and_cue_placement() -> None:
    first = load(PLUS)[0]
    q = first.question
    assert q is not None
    assert q.question == 'Priya said, "I had to skip my morning runs this month and I keep waking up at 3 am."'
    assert q.answer == (
        "Priya\uff1aSince I started running before my shifts, I sleep much better.\n"
        "Marcus\uff1aExercise before work really does help with rest."
    )
    ids = [h.source_session_id for h in first.haystack]
    sessions = {s.session.session_key: s.session for s in first.sessions}
    last = max(s.datetime for s in sessions.values() if s.source_session_id != "cue")
    assert q.question_date == last + dt.timedelta(days=7)
    cue = next(s for s in sessions.values() if s.source_session_id == "cue")
    assert cue.datetime == q.question_date - dt.timedelta(days=60)  # "two months later"
    assert cue.datetime_raw == format_locomo(cue.datetime)
    before = [sessions[h.session_key].datetime for h in first.haystack[: ids.index("cue")]]
    after = [sessions[h.session_key].datetime for h in first.haystack[ids.index("cue") + 1 :]]
    assert all(t <= cue.datetime for t in before) and all(t > cue.datetime for t in after)
    assert [(e.level, e.source_id) for e in first.evidence] == [
        ("turn", "cue:0"),
        ("turn", "cue:1"),
        ("session", "cue"),
    ]
    cue_turns = next(s for s in first.sessions if s.session.source_session_id == "cue").turns
    assert [(t.speaker, t.role) for t in cue_turns] == [("Priya", "user"), ("Marcus", "assistant")]


def _write(tmp_path: Path, items: list[dict], dates: list[str]) -> Path:
    """A one-conversation locomo10.json (sessions at ``dates``) and a locomo_plus.json beside it."""
    conversation: dict = {"speaker_a": "Ann", "speaker_b": "Bob"}
    for n, date in enumerate(dates, start=1):
        conversation[f"session_{n}_date_time"] = date
        conversation[f"session_{n}"] = [{"speaker": "Ann", "dia_id": f"D{n}:1", "text": f"session {n}"}]
    (tmp_path / "locomo10.json").write_text(json.dumps([{"sample_id": "c", "conversation": conversation, "qa": []}]))
    (tmp_path / "locomo_plus.json").write_text(json.dumps(items))
    return tmp_path / "locomo_plus.json"


def _item(gap: str) -> dict:
    return {"relation_type": "goal", "cue_dialogue": "A: cue", "trigger_query": "B: query", "time_gap": gap}


def test_a_tie_keeps_the_session_before_the_cue_and_a_late_session_is_counted(tmp_path: Path) -> None:
    dates = ["1:00 pm on 1 May, 2023", "1:00 pm on 3 May, 2023", "1:00 pm on 2 May, 2023"]
    # query = last session (3rd, 2 May) + 7 days; "one week" puts the cue exactly at the 3rd session's time;
    # the 2nd session (3 May) sorts after both, as the official stable sort places it
    records = load(_write(tmp_path, [_item("one week later")], dates))
    (record,) = records
    assert [h.source_session_id for h in record.haystack] == ["session_1", "session_3", "cue", "session_2"]
    assert not record.issues  # 3 May is before the query (9 May)
    late = load(_write(tmp_path, [_item("one week later")], [*dates[:2], "1:00 pm on 1 April, 2023"]))[0]
    assert [i.kind for i in late.issues] == ["session_after_query"]


def test_gap_in_session_numbers_and_unparseable_dates(tmp_path: Path) -> None:
    path = _write(tmp_path, [_item("two weeks later")], ["1:00 pm on 1 May, 2023", "1:00 pm on 3 May, 2023"])
    data = json.loads((tmp_path / "locomo10.json").read_text())
    conv = data[0]["conversation"]
    conv["session_4"], conv["session_4_date_time"] = conv.pop("session_2"), conv.pop("session_2_date_time")
    (tmp_path / "locomo10.json").write_text(json.dumps(data))
    (record,) = load(path)
    assert [h.source_session_id for h in record.haystack] == ["cue", "session_1"]  # the cue predates session 1
    assert ("session_after_gap", 1) in [(i.kind, i.count) for i in record.issues]
    conv["session_1_date_time"] = "May 1st"
    (tmp_path / "locomo10.json").write_text(json.dumps(data))
    (failed,) = load(path)
    assert failed.failure is not None and "session_1_date_time" in failed.failure.field


def test_locomo10_is_found_beside_or_above_and_missing_is_a_file_error(tmp_path: Path) -> None:
    folder = tmp_path / "locomo_plus"
    folder.mkdir()
    path = _write(tmp_path, [_item("two weeks later")], ["1:00 pm on 1 May, 2023"])
    path.rename(folder / "locomo_plus.json")
    assert len(load(folder)) == 1  # locomo10.json in the parent folder
    (tmp_path / "locomo10.json").unlink()
    with pytest.raises(DatasetFileError, match=r"locomo10\.json not found"):
        load(folder / "locomo_plus.json")
