"""Partition keys read at definitions load equal the keys the canonical conversion writes.

Why it matters: Dagster partitions are fixed when the definitions load (pipeline/datasets/keys.py),
the questions are written later by the canonical asset; if the two disagreed, a question would
have results but no partition (or a partition that can never be done).
"""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import patch

import pyarrow.parquet as pq
import pytest

from pipeline.config.model import DatasetConfig
from pipeline.datasets.convert import convert_dataset
from pipeline.datasets.keys import _scan, _scan_loader, dataset_keys
from pipeline.datasets.loaders import KEY_LOADERS, LOADERS
from pipeline.store.results import ResultStore
from tests.support.paths import PROJECT_ROOT

SAMPLES = PROJECT_ROOT / "pipeline" / "sample_data"


@pytest.mark.parametrize(
    ("loader", "file", "limit", "per_type", "expected"),
    [
        ("locomo", "locomo_sample.json", None, None, 27),
        ("locomo", "locomo_sample.json", 5, None, 5),
        ("locomo", "locomo_sample.json", None, 2, 10),  # 5 LoCoMo categories x 2
        ("locomo_mc10", "locomo_mc10_sample.jsonl", None, 1, 5),
        ("longmemeval", "longmemeval_s_sample.json", 3, 1, 3),
    ],
)
def test_keys_at_load_equal_the_converted_keys(
    tmp_path: Path, loader: str, file: str, limit: int | None, per_type: int | None, expected: int
) -> None:
    ds = DatasetConfig(name="d", loader=loader, path=str(SAMPLES / file), limit=limit, limit_per_type=per_type)
    store = ResultStore(results_dir=str(tmp_path / "res"))
    before = dataset_keys(ds, store.parquet_root)  # a scan of the file (no canonical tables yet)
    assert before.error is None and len(before.keys) == expected
    convert_dataset(ds, store, lambda _m: None)
    written = pq.read_table(store.canonical_path("d", "questions"), columns=["partition_key"]).column(0).to_pylist()
    assert list(before.keys) == written
    after = dataset_keys(ds, store.parquet_root)  # now read from the up-to-date canonical tables
    assert after.keys == before.keys


def test_missing_file_gives_no_keys_and_a_named_error(tmp_path: Path) -> None:
    ds = DatasetConfig(name="d", loader="locomo", path=str(tmp_path / "absent.json"))
    keys = dataset_keys(ds, tmp_path / "parquet")
    assert keys.keys == () and "absent.json" in (keys.error or "")


def _lme_file_with_bad_records(tmp_path: Path) -> Path:
    """The LongMemEval sample plus the records a keys scan must treat as the full loader does."""
    records = json.loads((SAMPLES / "longmemeval_s_sample.json").read_text())
    broken_haystack = {**records[1], "question_id": "broken_haystack", "haystack_sessions": "not a list"}
    no_type = {k: v for k, v in records[2].items() if k != "question_type"} | {"question_id": "no_type"}
    extra = [broken_haystack, {"question": "no id"}, "not an object", records[0], no_type]  # records[0]: a duplicate
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(records[:3] + extra + records[3:]))
    return path


@pytest.mark.parametrize(
    ("limit", "ids"),
    [(None, None), (4, None), (7, None), (None, ("broken_haystack", "no_type")), (2, ("no_type",))],
)
def test_the_key_only_scan_finds_the_full_loaders_keys(
    tmp_path: Path, limit: int | None, ids: tuple[str, ...] | None
) -> None:
    path = _lme_file_with_bad_records(tmp_path)
    ds = DatasetConfig(
        name="d", loader="longmemeval", path=str(path), limit=limit, question_ids=list(ids or []) or None
    )
    fast = _scan(ds, path)
    assert _scan_loader(ds) is KEY_LOADERS["longmemeval"]
    with patch.dict(KEY_LOADERS, clear=True):
        assert _scan_loader(ds) is LOADERS.get("longmemeval")
        full = _scan(ds, path)
    assert fast == full and full[0]
    if limit is None and ids is None:  # the failed records keep their keys, the duplicate has none
        assert {"d__broken_haystack", "d__no_type"} <= set(full[0])


def test_a_per_type_slice_scans_with_the_full_loader(tmp_path: Path) -> None:
    ds = DatasetConfig(
        name="d", loader="longmemeval", path=str(SAMPLES / "longmemeval_s_sample.json"), limit_per_type=1
    )
    assert _scan_loader(ds) is LOADERS.get("longmemeval")
