"""Which official release a raw dataset file is: sha256 of its bytes and of its records.

Why two hashes: the file hash names a byte-exact copy (a verbatim download). The records hash
is order- and format-independent (each record's canonical JSON hashed, the sorted hashes hashed
again), so a copy that was reordered, re-indented or gzipped still matches the release it holds
(the LongMemEval oracle copy the project was developed on is sorted by question id, content
identical). A file that matches neither is reported as an unknown release, never guessed.

``KNOWN_RELEASES`` lists only hashes computed here from real copies (the figures say which copy);
a release no copy was available of (LongMemEval_S original, LongMemEval_M, LoCoMo-MC10) is not
listed rather than listed from hearsay.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.datasets.sources import first_char, iter_array_stream, iter_json_lines_stream, open_source

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Release:
    """A known release of a benchmark file (hashes of a real copy; ``source`` names where it is published)."""

    name: str
    file_name: str
    source: str
    records_sha256: str
    n_records: int
    n_questions: int
    file_sha256: str | None = None  # None: no byte-exact copy was available to hash
    note: str = ""


KNOWN_RELEASES: tuple[Release, ...] = (
    Release(
        name="LoCoMo locomo10.json",
        file_name="locomo10.json",
        source="github.com/snap-research/locomo data/locomo10.json",
        file_sha256="79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
        records_sha256="75f58b102f743cba2ffdd26e9a173a41f2a8be54cb87ce0d20afd2f9acb3c869",
        n_records=10,
        n_questions=1986,
    ),
    Release(
        name="LongMemEval oracle",
        file_name="longmemeval_oracle.json",
        source="github.com/xiaowu0162/LongMemEval (data release: longmemeval_oracle.json)",
        records_sha256="ef5072364f691ecb650f75fa4dd6e9274d0d552cff94fd6bdf30268ae4230e29",
        n_records=500,
        n_questions=500,
        note="matched by records: the hashed copy is sorted by question_id, content identical",
    ),
    Release(
        name="LongMemEval_S cleaned, 498 of 500 questions",
        file_name="longmemeval_s_cleaned.json",
        source="huggingface.co/datasets/xiaowu0162/longmemeval-cleaned (longmemeval_s_cleaned.json)",
        records_sha256="6edcce506d255123c44bc0937cde43b33cd6ace8d69408ac14692ee96fe2b92d",
        n_records=498,
        n_questions=498,
        note="a partial copy (7e00a6cb and gpt4_7a0daae1 missing); the full cleaned and original S files "
        "were not available to hash",
    ),
)


def file_sha256(path: Path) -> str:
    """sha256 of the file's bytes as stored (a gzip file: of the compressed bytes)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _records(path: Path) -> Iterator[Any]:
    with open_source(path) as stream:
        rows = (
            iter_array_stream(stream, path) if first_char(stream, path) == "[" else iter_json_lines_stream(stream, path)
        )
        for _, record in rows:
            yield record


def record_digest(record: Any) -> str:
    """sha256 of one record's canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RecordsHash:
    """Order-independent hash of a file's records, and how many records and questions it holds."""

    sha256: str
    n_records: int
    n_questions: int


def records_sha256(path: Path) -> RecordsHash:
    """Hash of the sorted record digests; questions: a LoCoMo sample's ``qa`` items, else one per record."""
    digests: list[str] = []
    questions = 0
    for record in _records(path):
        digests.append(record_digest(record))
        qa = record.get("qa") if isinstance(record, dict) else None
        questions += len(qa) if isinstance(qa, list) else 1
    joined = "\n".join(sorted(digests)).encode()
    return RecordsHash(hashlib.sha256(joined).hexdigest(), len(digests), questions)


def match_release(file_hash: str, records_hash: str | None) -> tuple[Release | None, str]:
    """(the release, ``file`` or ``records``: how it matched), or (None, "") for an unknown file."""
    for release in KNOWN_RELEASES:
        if release.file_sha256 == file_hash:
            return release, "file"
    for release in KNOWN_RELEASES:
        if records_hash is not None and release.records_sha256 == records_hash:
            return release, "records"
    return None, ""
