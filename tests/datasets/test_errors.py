"""Bad input: file-level errors stop the load of that file with a message naming file, record and
field; record-level errors (key conflicts and unreadable JSON Lines lines included) fail only the
affected question(s)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipeline.config.model import DatasetConfig
from pipeline.core.records import ParsedRecord
from pipeline.datasets import LOADERS, DatasetFileError, convert_dataset
from pipeline.datasets.base import KeyConflictFailure
from pipeline.datasets.samples import LOCOMO_FILE, MC10_FILE, SAMPLE_DIR, build_longmemeval
from pipeline.datasets.sources import COMPRESSION_FIELD
from pipeline.store.results import ResultStore


def lme_records() -> list[dict[str, Any]]:
    return build_longmemeval(oracle=True)[:3]


def locomo_records() -> list[dict[str, Any]]:
    return json.loads((SAMPLE_DIR / LOCOMO_FILE).read_text())


def mc10_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (SAMPLE_DIR / MC10_FILE).read_text().splitlines()[:3]]


def write_json(path: Path, records: Any) -> Path:
    path.write_text(json.dumps(records))
    return path


def load(loader: str, path: Path) -> list[ParsedRecord]:
    return list(LOADERS.get(loader)(path, "ds"))


def file_error(loader: str, path: Path) -> DatasetFileError:
    with pytest.raises(DatasetFileError) as info:
        load(loader, path)
    assert str(path) in str(info.value)
    return info.value


# ---- file-level ---------------------------------------------------------------------------
@pytest.mark.parametrize("loader", ["longmemeval", "locomo", "locomo_mc10"])
def test_not_json(tmp_path: Path, loader: str) -> None:
    err = file_error(loader, (tmp_path / "x.json").resolve())
    assert "file not found" in str(err)
    path = tmp_path / "x.json"
    path.write_text("this is not json")
    err = file_error(loader, path)
    assert "not JSON" in str(err) and err.field == "<json>"
    path.write_text("")
    assert "empty" in str(file_error(loader, path))


def test_json_error_names_the_record_where_it_happened(tmp_path: Path) -> None:
    records = lme_records()
    text = json.dumps(records)
    cut = text.index('"question_id": "' + records[2]["question_id"])
    path = tmp_path / "lme.json"
    path.write_text(text[:cut] + '"question_id": }')
    err = file_error("longmemeval", path)
    assert (err.record_index, err.field) == (2, "<json>")
    assert "record 2" in str(err) and "not valid JSON" in str(err)


def test_jsonl_bad_line_fails_only_that_record(tmp_path: Path) -> None:
    lines = (SAMPLE_DIR / MC10_FILE).read_text().splitlines()[:3]
    path = tmp_path / "mc.jsonl"
    path.write_text("\n".join([lines[0], "", lines[1][:50], lines[2]]) + "\n")
    loaded = load("locomo_mc10", path)
    bad = only_failure(loaded).failure
    assert bad is not None
    assert (bad.record_index, bad.record_id, bad.partition_key, bad.field) == (1, "#1", None, "<json>")
    assert bad.message.startswith(f"{path}: record 1 (id #1), field <json>: line 3 is not valid JSON")
    assert [r.question.question_id for r in loaded if r.question] == ["conv-1_q0", "conv-1_q2"]


def test_jsonl_non_utf8_line_fails_only_that_record(tmp_path: Path) -> None:
    lines = [line.encode() for line in (SAMPLE_DIR / MC10_FILE).read_text().splitlines()[:3]]
    cut = lines[2].index(b'"question"')
    lines[2] = lines[2][:cut] + b'"note": "caf\xe9", ' + lines[2][cut:]
    path = tmp_path / "mc.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    bad = only_failure(load("locomo_mc10", path)).failure
    assert bad is not None and bad.record_index == 2 and bad.field == "<json>"
    assert "line 3 is not UTF-8: byte 0xe9" in bad.message


def test_jsonl_without_any_readable_line_is_a_file_error(tmp_path: Path) -> None:
    path = tmp_path / "mc.jsonl"
    path.write_text("{not json\n{neither\n")
    err = file_error("locomo_mc10", path)
    assert "no readable JSON line" in str(err) and "line 1" in str(err)


def test_non_utf8_byte_in_json_array_is_a_file_error_naming_the_record(tmp_path: Path) -> None:
    records = lme_records()
    data = json.dumps(records).encode()
    cut = data.index(records[1]["question"].encode())
    path = tmp_path / "lme.json"
    path.write_bytes(data[:cut] + b"\xff" + data[cut:])
    err = file_error("longmemeval", path)
    assert (err.record_index, err.field) == (1, "<json>")
    assert "non-UTF-8 byte" in str(err) and "\n" not in str(err)


def test_not_gzip(tmp_path: Path) -> None:
    path = write_json(tmp_path / "lme.json.gz", lme_records())
    err = file_error("longmemeval", path)
    assert "not gzip" in str(err)
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(gzip.compress(json.dumps(lme_records()).encode())[:-200])
    message = str(file_error("longmemeval", truncated))
    assert "corrupt" in message or "not valid JSON" in message


@pytest.mark.parametrize("damage", ["deflate", "crc", "length"])
def test_damaged_gzip_names_the_file_and_its_bytes(tmp_path: Path, damage: str) -> None:
    """Each kind of damage below JSON is a file error on the compressed bytes, not a crash."""
    packed = bytearray(gzip.compress(json.dumps(lme_records()).encode()))
    if damage == "deflate":  # a run of zero bytes inside the deflate stream
        packed[40:90] = bytes(50)
    else:  # the trailer: CRC-32, then the uncompressed length
        at = -8 if damage == "crc" else -4
        packed[at] ^= 0xFF
    path = tmp_path / "lme.json.gz"
    path.write_bytes(bytes(packed))
    err = file_error("longmemeval", path)
    assert err.field == COMPRESSION_FIELD, str(err)  # file_error checked the path is named
    assert "corrupt or truncated" in str(err)


def test_gzip_of_several_members_is_read_whole(tmp_path: Path) -> None:
    """A file of concatenated gzip members (``cat a.gz b.gz``, bgzip) holds the bytes of all of them."""
    data = json.dumps(lme_records()).encode()
    path = tmp_path / "lme.json.gz"
    path.write_bytes(b"".join(gzip.compress(data[i : i + 700]) for i in range(0, len(data), 700)))
    assert len([r for r in load("longmemeval", path) if r.question]) == 3


def test_gzip_is_read(tmp_path: Path) -> None:
    path = tmp_path / "lme.json.gz"
    path.write_bytes(gzip.compress(json.dumps(lme_records()).encode()))
    assert len([r for r in load("longmemeval", path) if r.question]) == 3


@pytest.mark.parametrize("loader", ["longmemeval", "locomo"])
def test_top_level_must_be_an_array(tmp_path: Path, loader: str) -> None:
    err = file_error(loader, write_json(tmp_path / "x.json", {"data": []}))
    assert "top level" in str(err) and err.field == "<top level>"


def test_duplicate_question_id_fails_the_later_record(tmp_path: Path) -> None:
    records = lme_records()
    records[2]["question_id"] = records[0]["question_id"]
    loaded = load("longmemeval", write_json(tmp_path / "dup.json", records))
    bad = only_failure(loaded).failure
    assert isinstance(bad, KeyConflictFailure)
    qid = records[0]["question_id"]
    assert (bad.record_index, bad.record_id, bad.field, bad.partition_key) == (2, qid, "question_id", None)
    assert bad.conflict_key == f"ds__{qid}"
    assert "duplicate question_id" in bad.message and "record 2" in bad.message


@pytest.mark.parametrize(("first", "second"), [("a.b", "a-b"), ("café", "cafè")])
def test_partition_key_collision_fails_the_later_record(tmp_path: Path, first: str, second: str) -> None:
    records = lme_records()
    records[0]["question_id"], records[1]["question_id"] = first, second
    loaded = load("longmemeval", write_json(tmp_path / "clash.json", records))
    bad = only_failure(loaded).failure
    assert isinstance(bad, KeyConflictFailure)
    assert (bad.record_index, bad.record_id, bad.field) == (1, second, "question_id")
    assert f"{second!r} and {first!r} both sanitize to partition key {bad.conflict_key!r}" in bad.message
    assert len([r for r in loaded if r.question]) == 2


def test_locomo_duplicate_sample_id_fails_its_questions(tmp_path: Path) -> None:
    records = locomo_records()
    records[1]["sample_id"] = records[0]["sample_id"]
    loaded = load("locomo", write_json(tmp_path / "dup.json", records))
    failed = [r.failure for r in loaded if r.failure]
    assert len(failed) == len(records[1]["qa"]) and {f.record_index for f in failed} == {1}
    assert failed[0].record_id == "conv-1_q0" and failed[0].partition_key is None
    assert len([r for r in loaded if r.question]) == len(records[0]["qa"])


@pytest.mark.parametrize("kind", ["duplicate", "collision"])
def test_convert_fails_every_record_of_a_conflicting_key(tmp_path: Path, kind: str) -> None:
    records = lme_records()
    if kind == "duplicate":
        records[2]["question_id"] = records[0]["question_id"]
    else:
        records[0]["question_id"], records[2]["question_id"] = "q\u00e9", "q\u00e8"
    key = "ds__" + records[0]["question_id"].replace("\u00e9", "-")
    store = ResultStore(results_dir=str(tmp_path / "results"))
    path = write_json(tmp_path / "lme.json", records)
    stats = convert_dataset(DatasetConfig(name="ds", loader="longmemeval", path=str(path)), store, lambda _m: None)
    assert (stats.n_questions, stats.n_failures) == (1, 2)
    questions = pq.read_table(store.canonical_path("ds", "questions")).to_pylist()
    assert [q["question_id"] for q in questions] == [records[1]["question_id"]]
    evidence = pq.read_table(store.canonical_path("ds", "evidence")).column("partition_key").to_pylist()
    assert key not in evidence and evidence
    failures = pq.read_table(store.canonical_path("ds", "load_failures")).to_pylist()
    assert sorted((f["record_index"], f["partition_key"]) for f in failures) == [(0, key), (2, None)]
    withdrawn = next(f for f in failures if f["record_index"] == 0)
    assert "withdrawn: record 2" in withdrawn["message"] and withdrawn["field"] == "question_id"
    with store.connect() as con:
        canonical = con.execute(
            "SELECT partition_key, status FROM progress WHERE stage = 'canonical' ORDER BY 1"
        ).fetchall()
    assert canonical == sorted([(key, "failed"), ("ds__#2", "failed"), (f"ds__{records[1]['question_id']}", "done")])


# ---- record-level -------------------------------------------------------------------------
def only_failure(records: list[ParsedRecord]) -> ParsedRecord:
    failed = [r for r in records if r.failure is not None]
    assert len(failed) == 1, failed
    return failed[0]


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda r: r.pop("question"), "question", "missing required field"),
        (lambda r: r.update(answer=["x"]), "answer", "expected string or integer or number, got array"),
        (lambda r: r.update(haystack_dates=[*r["haystack_dates"][:-1], 7]), None, "expected string, got integer"),
        (lambda r: r.update(haystack_dates=[]), "haystack_dates", "items but haystack_session_ids has"),
        (lambda r: r["haystack_sessions"][0][1].update(role="system"), "haystack_sessions[0][1].role", "'system'"),
        (
            lambda r: r["haystack_sessions"][0][0].update(has_answer="yes"),
            "haystack_sessions[0][0].has_answer",
            "expected boolean, got string",
        ),
    ],
)
def test_longmemeval_bad_record_fails_only_that_question(
    tmp_path: Path, mutate: Any, field: str | None, message: str
) -> None:
    records = lme_records()
    mutate(records[1])
    path = write_json(tmp_path / "lme.json", records)
    loaded = load("longmemeval", path)
    bad = only_failure(loaded).failure
    assert bad is not None
    qid = records[1]["question_id"]
    assert (bad.record_index, bad.record_id, bad.partition_key) == (1, qid, f"ds__{qid}")
    if field is not None:
        assert bad.field == field
    assert message in bad.message
    assert bad.message.startswith(f"{path}: record 1 (id {qid}), field {bad.field}: ")
    loaded_ids = [r.question.question_id for r in loaded if r.question]
    assert loaded_ids == [records[0]["question_id"], records[2]["question_id"]]


def test_record_that_is_not_an_object(tmp_path: Path) -> None:
    records: list[Any] = lme_records()
    records[1] = ["not", "an", "object"]
    bad = only_failure(load("longmemeval", write_json(tmp_path / "lme.json", records))).failure
    assert bad is not None
    assert (bad.record_index, bad.record_id, bad.partition_key, bad.field) == (1, "#1", None, "<record>")


def test_locomo_bad_qa_item_fails_only_that_question(tmp_path: Path) -> None:
    records = locomo_records()
    records[0]["qa"][2]["category"] = "two"
    del records[1]["qa"][3]["question"]
    loaded = load("locomo", write_json(tmp_path / "lo.json", records))
    failures = {r.failure.record_id: r.failure for r in loaded if r.failure}
    assert set(failures) == {"conv-1_q2", "conv-2_q3"}
    assert failures["conv-1_q2"].field == "qa[2].category" and failures["conv-1_q2"].record_index == 0
    assert failures["conv-2_q3"].field == "qa[3].question" and failures["conv-2_q3"].record_index == 1
    assert failures["conv-2_q3"].partition_key == "ds__conv-2_q3"
    assert len([r for r in loaded if r.question]) == 25


def test_locomo_broken_conversation_fails_its_questions(tmp_path: Path) -> None:
    records = locomo_records()
    records[1]["conversation"]["session_3"][2] = {"speaker": "Omar", "dia_id": "D3:3"}
    loaded = load("locomo", write_json(tmp_path / "lo.json", records))
    failed = [r.failure for r in loaded if r.failure]
    assert len(failed) == 13 and {f.field for f in failed} == {"conversation.session_3[2].text"}
    assert {f.record_id for f in failed} == {f"conv-2_q{i}" for i in range(13)}
    assert len([r for r in loaded if r.question]) == 14


def test_locomo_unknown_category(tmp_path: Path) -> None:
    records = locomo_records()
    records[0]["qa"][0]["category"] = 9
    bad = only_failure(load("locomo", write_json(tmp_path / "lo.json", records))).failure
    assert bad is not None and bad.field == "qa[0].category" and "unknown category 9" in bad.message


def test_mc10_bad_records(tmp_path: Path) -> None:
    records = mc10_records()
    records[0]["correct_choice_index"] = 12
    records[2]["choices"] = "A or B"
    path = tmp_path / "mc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = load("locomo_mc10", path)
    failures = {r.failure.record_index: r.failure for r in loaded if r.failure}
    assert failures[0].field == "correct_choice_index" and "outside 0..9" in failures[0].message
    assert failures[2].field == "choices" and "expected array, got string" in failures[2].message
    assert [r.question.question_id for r in loaded if r.question] == ["conv-1_q1"]


def test_mc10_json_array_and_quirks(tmp_path: Path) -> None:
    records = mc10_records()
    quirky = copy.deepcopy(records[1])
    quirky |= {"question_id": "conv-1_q99", "answer": 8, "num_sessions": 3}
    quirky["haystack_sessions"][0][0]["role"] = "Priya"
    quirky["haystack_sessions"][0][1]["role"] = "Marcus"
    loaded = load("locomo_mc10", write_json(tmp_path / "mc.json", [*records, quirky]))
    questions = {r.question.question_id: r.question for r in loaded if r.question}
    assert len(questions) == 4
    kinds = {i.kind for r in loaded for i in r.issues}
    assert {"integer_answer", "num_sessions_mismatch", "answer_not_in_choices", "speaker_as_role"} <= kinds
    assert questions["conv-1_q99"].answer == "8"


def test_convert_records_failed_question_and_keeps_the_rest(tmp_path: Path) -> None:
    records = lme_records()
    del records[1]["answer"]
    store = ResultStore(results_dir=str(tmp_path / "results"))
    ds = DatasetConfig(name="ds", loader="longmemeval", path=str(write_json(tmp_path / "lme.json", records)))
    stats = convert_dataset(ds, store, lambda _m: None)
    assert (stats.n_questions, stats.n_failures) == (2, 1)
    qid = records[1]["question_id"]
    assert stats.partition_keys == tuple(f"ds__{r['question_id']}" for r in records)
    failures = pq.read_table(store.canonical_path("ds", "load_failures")).to_pylist()
    assert [(f["record_id"], f["field"], f["record_index"]) for f in failures] == [(qid, "answer", 1)]
    with store.connect() as con:
        rows = con.execute("SELECT partition_key, stage, status FROM progress WHERE stage = 'canonical'").fetchall()
    assert sorted(rows) == sorted(
        [(f"ds__{r['question_id']}", "canonical", "done") for r in (records[0], records[2])]
        + [(f"ds__{qid}", "canonical", "failed")]
    )
