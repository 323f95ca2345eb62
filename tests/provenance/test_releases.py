"""Dataset file hashes and the known-release table (pipeline/provenance/releases.py).

The records hash must not depend on record order, indentation, JSON vs JSON Lines or gzip; the
file hash must. The table's figures are checked against the real copies they were computed from.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.provenance.releases import KNOWN_RELEASES, file_sha256, match_release, records_sha256

RECORDS = [
    {"question_id": "q1", "answer": 3, "haystack_sessions": [[{"role": "user", "content": "hi"}]]},
    {"question_id": "q2", "answer": "Paris", "haystack_sessions": []},
    {"sample_id": "conv-1", "qa": [{"question": "a?"}, {"question": "b?"}], "conversation": {}},
]


def _write(path: Path, form: str, records: list[dict]) -> Path:
    if form == "json":
        path.write_text(json.dumps(records))
    elif form == "json_indented_reversed":
        path.write_text(json.dumps(list(reversed(records)), indent=2, sort_keys=True))
    elif form == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    elif form == "gzip":
        path.write_bytes(gzip.compress(json.dumps(records).encode()))
    return path


@pytest.mark.parametrize("form", ["json", "json_indented_reversed", "jsonl", "gzip"])
def test_records_hash_ignores_order_layout_and_compression(tmp_path: Path, form: str) -> None:
    base = records_sha256(_write(tmp_path / "base.json", "json", RECORDS))
    other = records_sha256(_write(tmp_path / f"other.{form}", form, RECORDS))
    assert other == base
    assert (base.n_records, base.n_questions) == (3, 4)  # a LoCoMo-like sample counts its qa items


@pytest.mark.parametrize(
    ("change", "same_records"),
    [
        (lambda rs: rs[:2], False),  # a record dropped
        (lambda rs: [{**rs[0], "answer": 4}, *rs[1:]], False),  # one value edited
        (lambda rs: [rs[0], rs[0], *rs[1:]], False),  # a record duplicated
        (lambda rs: [{k: rs[0][k] for k in reversed(list(rs[0]))}, *rs[1:]], True),  # keys reordered
    ],
)
def test_records_hash_sees_every_content_change(
    tmp_path: Path, change: Callable[[list[dict]], list[dict]], same_records: bool
) -> None:
    base = _write(tmp_path / "a.json", "json", RECORDS)
    edited = _write(tmp_path / "b.json", "json", change(RECORDS))
    assert (records_sha256(edited).sha256 == records_sha256(base).sha256) is same_records


def test_unknown_file_matches_no_release(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.json", "json", RECORDS)
    assert match_release(file_sha256(path), records_sha256(path).sha256) == (None, "")


def test_known_hashes_are_those_of_the_real_copies(shared_datasets: Path) -> None:
    """Each table entry's figures recomputed from the copy it names (the S copy is 498 of 500)."""
    copies = {
        "locomo10.json": "locomo10.json",
        "longmemeval_oracle.json": "longmemeval_oracle.json",
        "longmemeval_s_cleaned.json": "longmemeval_s_cleaned_498of500.json.gz",
    }
    for release in KNOWN_RELEASES:
        path = shared_datasets / copies[release.file_name]
        sha, records = file_sha256(path), records_sha256(path)
        assert (records.sha256, records.n_records, records.n_questions) == (
            release.records_sha256,
            release.n_records,
            release.n_questions,
        ), release.name
        if release.file_sha256 is not None:
            assert sha == release.file_sha256
        found, how = match_release(sha, records.sha256)
        assert found == release and how == ("file" if release.file_sha256 else "records")
