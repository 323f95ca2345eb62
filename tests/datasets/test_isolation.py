"""One dataset's file error fails that dataset only (issue 11 items 1, 3, 5).

Each case writes two datasets, breaks one file in a way the issue names (a non-UTF-8 byte, a
truncated .gz, a top level that is not an array), and checks: the healthy dataset converts, the
broken one is recorded with a message naming file, record and field, its earlier tables are
kept, and ``progress`` shows it failed. Crash states of the staging swap are built by hand.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipeline.config.model import DatasetConfig
from pipeline.datasets.convert import (
    MANIFEST,
    STAGING_DIR,
    convert_dataset,
    convert_datasets,
    dataset_failure_path,
    recover_staging,
)
from pipeline.datasets.samples import build_longmemeval
from pipeline.store.results import ResultStore


def lme_records(n: int = 3) -> list[dict[str, Any]]:
    return build_longmemeval(oracle=True)[:n]


def _noop(_message: str) -> None:
    return None


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    return ResultStore(results_dir=str(tmp_path / "results"))


def _datasets(tmp_path: Path) -> tuple[DatasetConfig, DatasetConfig]:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(lme_records()))
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(json.dumps(lme_records()).encode()))
    return (
        DatasetConfig(name="good", loader="longmemeval", path=str(good)),
        DatasetConfig(name="bad", loader="longmemeval", path=str(bad)),
    )


def _break(path: Path, how: str) -> None:
    data = gzip.decompress(path.read_bytes())
    if how == "truncated_gz":
        path.write_bytes(gzip.compress(data)[:-300])
    elif how == "non_utf8":
        cut = data.index(b'"question"', data.index(b'"question_id"', 10) + 1)
        path.write_bytes(gzip.compress(data[:cut] + b'"x": "\xff", ' + data[cut:]))
    elif how == "not_an_array":
        path.write_bytes(gzip.compress(b'{"data": []}'))
    # make sure the converter does not skip the file as unchanged
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10_000_000))


@pytest.mark.parametrize(
    ("how", "needle", "field"),
    [
        ("truncated_gz", "corrupt", "<file bytes>"),
        ("non_utf8", "non-UTF-8 byte", "<json>"),
        ("not_an_array", "top level is a JSON object", "<top level>"),
    ],
)
def test_file_error_fails_only_its_dataset(
    store: ResultStore, tmp_path: Path, how: str, needle: str, field: str
) -> None:
    good, bad = _datasets(tmp_path)
    first, failed = convert_datasets([good, bad], store, _noop)
    assert [s.dataset for s in first] == ["good", "bad"] and failed == []
    earlier = pq.read_table(store.canonical_path("bad", "questions"))
    _break(Path(bad.path), how)

    stats, failed = convert_datasets([bad, good], store, _noop)
    assert [s.dataset for s in stats] == ["good"]
    assert [f.dataset for f in failed] == ["bad"]
    failure = failed[0]
    assert needle in failure.message and failure.field == field and failure.kept_earlier_tables
    assert failure.message.startswith(f"{bad.path}: record ")
    assert pq.read_table(store.canonical_path("bad", "questions")).equals(earlier)  # nothing lost
    stored = pq.read_table(dataset_failure_path(store, "bad")).to_pylist()
    assert [(r["dataset"], r["field"], r["message"]) for r in stored] == [("bad", field, failure.message)]

    with store.connect() as con:
        rows = con.execute(
            "SELECT stage, status, errors FROM progress WHERE partition_key = 'bad__*' ORDER BY stage"
        ).fetchall()
        good_done = con.execute(
            "SELECT count(*) FROM progress WHERE dataset = 'good' AND stage = 'canonical' AND status = 'done'"
        ).fetchone()
    assert {(stage, status) for stage, status, _ in rows} == {
        (s, "failed") for s in ("canonical", "ingestion", "retrievals", "answers", "judgments")
    }
    assert all(needle in err for _, _, err in rows)
    assert good_done == (3,)

    _datasets(tmp_path)  # the file is fixed: the failure record goes away
    stats, failed = convert_datasets([bad], store, _noop)
    assert failed == [] and not dataset_failure_path(store, "bad").exists()


def test_dataset_without_earlier_tables_is_recorded_as_failed(store: ResultStore, tmp_path: Path) -> None:
    good, _ = _datasets(tmp_path)
    missing = DatasetConfig(name="gone", loader="longmemeval", path=str(tmp_path / "nope.json"))
    stats, failed = convert_datasets([missing, good], store, _noop)
    assert [s.dataset for s in stats] == ["good"]
    assert failed[0].dataset == "gone" and not failed[0].kept_earlier_tables
    assert "file not found" in failed[0].message


def test_records_without_an_id_are_counted_everywhere(store: ResultStore, tmp_path: Path) -> None:
    records: list[Any] = lme_records(4)
    records[1] = ["not", "an", "object"]
    del records[3]["question_id"]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(records))
    convert_dataset(DatasetConfig(name="ds", loader="longmemeval", path=str(path)), store, _noop)
    with store.connect() as con:
        summary = con.execute(
            "SELECT stage, done, failed, missing FROM progress_summary WHERE dataset = 'ds' ORDER BY stage"
        ).fetchall()
        keys = con.execute("SELECT DISTINCT partition_key FROM progress WHERE status = 'failed' ORDER BY 1").fetchall()
    assert dict((s, (d, f)) for s, d, f, _ in summary)["canonical"] == (2, 2)
    assert all(f == 2 for _, _, f, _ in summary)  # failed in every stage, never "missing"
    assert keys == [("ds__#1",), ("ds__#3",)]


# ---- crash recovery of the staging swap -------------------------------------------------------
def _converted(store: ResultStore, tmp_path: Path) -> tuple[DatasetConfig, Path]:
    good, _ = _datasets(tmp_path)
    convert_dataset(good, store, _noop)
    return good, store.parquet_root / "canonical" / "good"


def test_stale_staging_folders_are_removed(store: ResultStore, tmp_path: Path) -> None:
    _, target = _converted(store, tmp_path)
    staging = store.parquet_root / STAGING_DIR
    killed = staging / f"good-{'a' * 32}"  # a kill -9 in the middle of writing
    killed.mkdir(parents=True)
    (killed / "turns.parquet").write_bytes(b"half a file")
    other = staging / f"good_extra-{'b' * 32}"  # another dataset's folder is not ours
    other.mkdir()
    done = recover_staging(store.parquet_root, "good", _noop)
    assert done == [f"removed stale staging folder {killed.name}"]
    assert not killed.exists() and other.exists() and (target / MANIFEST).exists()


@pytest.mark.parametrize("crash", ["after_first_rename", "before_second_rename_old_only"])
def test_crash_between_the_two_renames_is_recovered(store: ResultStore, tmp_path: Path, crash: str) -> None:
    good, target = _converted(store, tmp_path)
    before = pq.read_table(target / "questions.parquet")
    staging = store.parquet_root / STAGING_DIR
    staging.mkdir(exist_ok=True)
    new = staging / f"good-{'c' * 32}"
    old = staging / f"good-{'c' * 32}.old"
    shutil.copytree(target, new)  # a complete new conversion (manifest written last)
    os.replace(target, old)  # the first rename happened, the second did not
    if crash == "before_second_rename_old_only":
        (new / MANIFEST).unlink()  # the new folder is incomplete: the old tables come back
    stats = convert_dataset(good, store, _noop)
    assert stats.skipped and pq.read_table(target / "questions.parquet").equals(before)
    assert list(staging.iterdir()) == []


def test_question_totals_count_records_without_an_id(store: ResultStore, tmp_path: Path) -> None:
    from pipeline.catalog.report import _dataset_questions_cte

    records: list[Any] = lme_records(3)
    records[2] = "not a record"
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(records))
    convert_dataset(DatasetConfig(name="ds", loader="longmemeval", path=str(path)), store, _noop)
    with store.connect() as con:
        totals = con.execute(_dataset_questions_cte(has_failures=True)).fetchall()
    assert totals == [("ds", 3)]  # 2 questions + the record whose id could not be read
