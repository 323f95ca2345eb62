"""convert_dataset: canonical tables with pinned schemas, dedup, limit, incremental skip, atomicity."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.config.model import DatasetConfig
from pipeline.core.records import CANONICAL_SCHEMAS, TurnRow
from pipeline.core.schemas import CANONICAL_PANDERA
from pipeline.datasets import DatasetFileError, convert_dataset
from pipeline.datasets.convert import MANIFEST, STAGING_DIR, TABLES
from pipeline.datasets.samples import LOCOMO_FILE, LONGMEMEVAL_S_FILE, MC10_FILE, SAMPLE_DIR
from pipeline.datasets.sessions import TurnSpec
from pipeline.store.corpus import Corpus
from pipeline.store.results import ResultStore


def dataset(name: str, loader: str, path: Path, limit: int | None = None) -> DatasetConfig:
    return DatasetConfig(name=name, loader=loader, path=str(path), limit=limit)


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    return ResultStore(results_dir=str(tmp_path / "results"))


def snapshot(store: ResultStore, name: str) -> dict[str, bytes]:
    folder = store.parquet_root / "canonical" / name
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_convert_longmemeval_sample(store: ResultStore) -> None:
    logs: list[str] = []
    stats = convert_dataset(dataset("lme", "longmemeval", SAMPLE_DIR / LONGMEMEVAL_S_FILE), store, logs.append)
    assert not stats.skipped
    assert dict(stats.rows) == {
        "questions": 8,
        "sessions": 17,
        "turns": 70,
        "haystacks": 33,
        "evidence": 24,
        "data_quality": 13,
        "load_failures": 0,  # has_answer_missing: one row per question
    }
    assert dict(stats.quality) == {
        "empty_turn": 3,
        "has_answer_missing": 90,
        "integer_answer": 1,
        "repeated_session_id": 1,
    }
    assert stats.partition_keys[:2] == ("lme__5d1c2a7e", "lme__9b7e3f10") and len(stats.partition_keys) == 8
    for table in TABLES:
        assert pq.read_schema(store.canonical_path("lme", table)) == CANONICAL_SCHEMAS[table], table
    assert logs and "8 questions" in logs[-1]
    assert stats.as_metadata()["rows_turns"] == 70
    corpus = Corpus.load(store, "lme")
    q = corpus.question("lme__e0f4c6d9")
    hay = corpus.haystack(q.haystack_id)
    assert [h.position for h in hay] == list(range(5))
    assert [h.session.datetime for h in hay] == sorted(h.session.datetime for h in hay)
    assert all(len(h.turns) == h.session.n_turns for h in hay)
    gold = corpus.evidence("lme__e0f4c6d9")
    assert {e.level for e in gold} == {"session", "turn"}
    assert not list(store.parquet_root.glob(f"{STAGING_DIR}/*"))


@pytest.mark.parametrize(
    ("loader", "name"),
    [("locomo", LOCOMO_FILE), ("locomo_mc10", MC10_FILE), ("longmemeval", LONGMEMEVAL_S_FILE)],
)
def test_outputs_pass_the_canonical_pandera_checks(store: ResultStore, loader: str, name: str) -> None:
    convert_dataset(dataset("d", loader, SAMPLE_DIR / name), store, lambda _m: None)
    for table, schema in CANONICAL_PANDERA.items():
        schema.validate(store.read_canonical("d", table).to_pandas(), lazy=True)


def test_shared_sessions_are_stored_once(store: ResultStore) -> None:
    stats = convert_dataset(dataset("mc", "locomo_mc10", SAMPLE_DIR / MC10_FILE), store, lambda _m: None)
    assert (stats.rows["questions"], stats.rows["sessions"], stats.rows["turns"], stats.rows["haystacks"]) == (
        27,
        12,
        96,
        12,
    )
    turns = pq.read_table(store.canonical_path("mc", "turns"))
    assert len(set(turns.column("turn_id").to_pylist())) == turns.num_rows
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM turns").fetchone() == (96,)


def test_limit_takes_the_first_questions(store: ResultStore) -> None:
    stats = convert_dataset(dataset("lo", "locomo", SAMPLE_DIR / LOCOMO_FILE, limit=5), store, lambda _m: None)
    assert stats.partition_keys == tuple(f"lo__conv-1_q{i}" for i in range(5))
    assert stats.rows["sessions"] == 6  # conv-2 was never reached
    assert set(pq.read_table(store.canonical_path("lo", "evidence")).column("question_id").to_pylist()) <= {
        f"conv-1_q{i}" for i in range(5)
    }


def test_unchanged_source_is_skipped_and_changed_source_reconverted(store: ResultStore, tmp_path: Path) -> None:
    src = tmp_path / "lme.json"
    shutil.copy(SAMPLE_DIR / LONGMEMEVAL_S_FILE, src)
    ds = dataset("lme", "longmemeval", src)
    first = convert_dataset(ds, store, lambda _m: None)
    before = snapshot(store, "lme")
    second = convert_dataset(ds, store, lambda _m: None)
    assert second.skipped and not first.skipped
    assert (second.rows, second.quality, second.partition_keys) == (first.rows, first.quality, first.partition_keys)
    assert snapshot(store, "lme") == before
    manifest = json.loads((store.parquet_root / "canonical" / "lme" / MANIFEST).read_text())
    assert manifest["input"]["limit"] is None and manifest["input"]["loader"] == "longmemeval"
    # a different limit is a different conversion
    assert not convert_dataset(dataset("lme", "longmemeval", src, limit=2), store, lambda _m: None).skipped
    records = json.loads(src.read_text())[:3]
    src.write_text(json.dumps(records))
    third = convert_dataset(ds, store, lambda _m: None)
    assert not third.skipped and third.n_questions == 3


def test_failed_load_leaves_earlier_tables_untouched(store: ResultStore, tmp_path: Path) -> None:
    src = tmp_path / "lme.json"
    shutil.copy(SAMPLE_DIR / LONGMEMEVAL_S_FILE, src)
    ds = dataset("lme", "longmemeval", src)
    convert_dataset(ds, store, lambda _m: None)
    before = snapshot(store, "lme")
    text = src.read_text()
    cut = text.index('"question_id": "c41d88a2"')  # record 2 is truncated mid-object
    src.write_text(text[:cut] + '"question_id": "c41d88a2", "question": ')
    os.utime(src, ns=(1, 1))
    with pytest.raises(DatasetFileError) as info:
        convert_dataset(ds, store, lambda _m: None)
    assert str(src) in str(info.value) and "record 2" in str(info.value)
    assert snapshot(store, "lme") == before
    assert not list(store.parquet_root.glob(f"{STAGING_DIR}/*"))


def test_missing_source_file(store: ResultStore, tmp_path: Path) -> None:
    with pytest.raises(DatasetFileError, match="file not found"):
        convert_dataset(dataset("x", "longmemeval", tmp_path / "absent.json"), store, lambda _m: None)


def test_small_batches_give_same_rows(store: ResultStore, tmp_path: Path) -> None:
    big = convert_dataset(dataset("a", "longmemeval", SAMPLE_DIR / LONGMEMEVAL_S_FILE), store, lambda _m: None)
    small = convert_dataset(
        dataset("b", "longmemeval", SAMPLE_DIR / LONGMEMEVAL_S_FILE), store, lambda _m: None, batch_rows=7
    )
    assert small.rows == big.rows
    meta = pq.ParquetFile(store.canonical_path("b", "turns")).metadata
    assert meta.num_row_groups > 1 and meta.num_rows == 70
    a = pq.read_table(store.canonical_path("a", "turns")).drop_columns(["dataset"])
    b = pq.read_table(store.canonical_path("b", "turns")).drop_columns(["dataset"])
    assert a.equals(b)


def test_every_record_failing_still_writes_readable_tables(store: ResultStore, tmp_path: Path) -> None:
    records = json.loads((SAMPLE_DIR / LONGMEMEVAL_S_FILE).read_text())[:2]
    for r in records:
        r["answer_session_ids"] = "not a list"
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(records))
    stats = convert_dataset(dataset("bad", "longmemeval", src), store, lambda _m: None)
    assert (stats.n_questions, stats.n_failures, stats.rows["turns"]) == (0, 2, 0)
    assert stats.partition_keys == ("bad__5d1c2a7e", "bad__9b7e3f10")
    for table in TABLES:
        assert pq.read_schema(store.canonical_path("bad", table)) == CANONICAL_SCHEMAS[table]
    assert {f["field"] for f in pq.read_table(store.canonical_path("bad", "load_failures")).to_pylist()} == {
        "answer_session_ids"
    }


def test_conversion_runs_without_cyclic_collections_and_restores_them(
    store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records are read and written with the collector off (pipeline/util/heap.py); it is on again after,
    also after a failed load."""
    import gc
    from collections.abc import Iterator

    from pipeline.core.records import ParsedRecord
    from pipeline.datasets import convert
    from pipeline.datasets.longmemeval import load_longmemeval

    seen: list[bool] = []

    def recording(path: Path, name: str) -> Iterator[ParsedRecord]:
        for rec in load_longmemeval(path, name):
            seen.append(gc.isenabled())
            yield rec

    def failing(path: Path, name: str) -> Iterator[ParsedRecord]:
        yield from recording(path, name)
        raise DatasetFileError(path, "truncated")

    src = SAMPLE_DIR / LONGMEMEVAL_S_FILE
    monkeypatch.setattr(convert, "LOADERS", {"longmemeval": recording})
    stats = convert_dataset(dataset("lme", "longmemeval", src), store, lambda m: None)
    assert stats.n_questions == 8 and seen == [False] * 8 and gc.isenabled()
    seen.clear()
    monkeypatch.setattr(convert, "LOADERS", {"longmemeval": failing})
    with pytest.raises(DatasetFileError, match="truncated"):
        convert_dataset(dataset("lme2", "longmemeval", src), store, lambda m: None)
    assert seen == [False] * 8 and gc.isenabled()


@pytest.mark.parametrize(
    ("loader", "name"),
    [("locomo", LOCOMO_FILE), ("locomo_mc10", MC10_FILE), ("longmemeval", LONGMEMEVAL_S_FILE)],
)
def test_turns_table_is_the_table_of_the_first_sessions_turn_rows(store: ResultStore, loader: str, name: str) -> None:
    """The turns written from the sessions' columns are the rows ``table_from_rows`` made of their TurnRows,
    cut into row groups where those rows were cut: after the session that fills ``batch_rows`` (here 7)."""
    from pipeline.datasets.convert import table_from_rows
    from pipeline.datasets.loaders import LOADERS

    src = SAMPLE_DIR / name
    convert_dataset(dataset("d", loader, src), store, lambda _m: None, batch_rows=7)
    first: dict[str, tuple[TurnRow, ...]] = {}
    for rec in LOADERS.get(loader)(src, "d"):
        for s in rec.sessions:
            first.setdefault(s.session.session_key, s.turns)
    rows = [t for turns in first.values() for t in turns]
    path = store.canonical_path("d", "turns")
    assert pq.read_table(path).equals(table_from_rows(rows, CANONICAL_SCHEMAS["turns"]))
    groups, filled = [], 0
    for turns in first.values():
        filled += len(turns)
        if filled >= 7:
            groups.append(filled)
            filled = 0
    groups += [filled] if filled else []
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == groups


def test_longmemeval_turns_go_to_parquet_without_a_turn_row_each(
    store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LongMemEval's loader hands the converter each session's turns as columns (pipeline/core/records.py
    TurnColumns): no TurnRow is built for them (building and taking apart 245,625 rows cost LongMemEval_S's
    conversion ~0.4 s)."""
    built: list[TurnRow] = []
    init = TurnRow.__init__

    def counted(self: TurnRow, *args: object, **kwargs: object) -> None:
        built.append(self)
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(TurnRow, "__init__", counted)
    stats = convert_dataset(dataset("lme", "longmemeval", SAMPLE_DIR / LONGMEMEVAL_S_FILE), store, lambda _m: None)
    assert stats.rows["turns"] == 70 and built == []


def test_a_session_without_turns_adds_no_row_group(tmp_path: Path) -> None:
    """Only rows flush: a session of no turns, buffered last, leaves the turns file without an empty row group."""
    from pipeline.datasets.convert import _Sink, table_from_sessions
    from pipeline.datasets.sessions import build_session

    sink = _Sink(tmp_path / "turns.parquet", CANONICAL_SCHEMAS["turns"], 2, 1 << 20, table_from_sessions)
    full = build_session("d", "a", None, None, None, [TurnSpec("u", "user", "hi", False)] * 2)
    sink.add(full, full.session.n_turns, 4)
    empty = build_session("d", "b", None, None, None, [])
    sink.add(empty, 0, 0)
    assert sink.close() == 2
    meta = pq.ParquetFile(tmp_path / "turns.parquet").metadata
    assert (meta.num_row_groups, meta.num_rows) == (1, 2)
