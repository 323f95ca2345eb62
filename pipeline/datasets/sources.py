"""Streaming readers for dataset files: JSON arrays (plain or gzip) and JSON Lines.

Why streaming: LongMemEval_M is 2.7 GB of JSON; ``json.load`` would need several times that in
RAM. ``ijson`` (C yajl2 backend) yields one record at a time, so memory is bounded by the largest
record. Every syntax or compression error becomes a ``DatasetFileError`` naming the record index
where it happened.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import ijson

from pipeline.datasets.base import DatasetFileError

GZIP_MAGIC = b"\x1f\x8b"
_READ_ERRORS = (OSError, EOFError, zlib.error)
_BUF_SIZE = 1 << 20  # 1 MiB reads: fewer Python-level calls into the parser


@contextmanager
def open_source(path: Path) -> Iterator[IO[bytes]]:
    """Binary stream of ``path``, transparently gunzipped when it starts with the gzip magic."""
    if not path.is_file():
        raise DatasetFileError(path, "file not found")
    raw = path.open("rb")
    try:
        magic = raw.read(2)
        raw.seek(0)
        if magic == GZIP_MAGIC:
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield gz
        elif path.name.endswith(".gz"):
            raise DatasetFileError(path, "not gzip: the name ends in .gz but the gzip magic bytes are missing")
        else:
            yield raw
    finally:
        raw.close()


def first_char(stream: IO[bytes], path: Path) -> str | None:
    """First non-whitespace character of the stream (None when empty); the stream is rewound."""
    try:
        while True:
            chunk = stream.read(4096)
            if not chunk:
                char = None
                break
            stripped = chunk.lstrip()
            if stripped:
                char = stripped[:1].decode("latin-1")
                break
        stream.seek(0)
    except _READ_ERRORS as exc:
        raise DatasetFileError(path, f"cannot read (corrupt or not gzip): {exc}") from None
    return char


def _require_array(stream: IO[bytes], path: Path) -> None:
    char = first_char(stream, path)
    if char is None:
        raise DatasetFileError(path, "not JSON: the file is empty", field="<json>")
    if char == "{":
        raise DatasetFileError(path, "top level is a JSON object; expected an array of records", field="<top level>")
    if char != "[":
        raise DatasetFileError(path, f"not JSON: unexpected first character {char!r}", field="<json>")


def iter_array_stream(stream: IO[bytes], path: Path) -> Iterator[tuple[int, Any]]:
    """(index, record) for each item of the top-level JSON array of an open stream."""
    _require_array(stream, path)
    items = ijson.items(stream, "item", use_float=True, buf_size=_BUF_SIZE)
    index = 0
    while True:
        try:
            record = next(items)
        except StopIteration:
            return
        except ijson.JSONError as exc:
            raise DatasetFileError(path, f"not valid JSON: {exc}", record_index=index, field="<json>") from None
        except _READ_ERRORS as exc:
            raise DatasetFileError(path, f"corrupt file: {exc}", record_index=index, field="<json>") from None
        yield index, record
        index += 1


def iter_json_array(path: Path) -> Iterator[tuple[int, Any]]:
    """(index, record) for each item of the file's top-level JSON array, streamed."""
    with open_source(path) as stream:
        yield from iter_array_stream(stream, path)


def iter_json_lines_stream(stream: IO[bytes], path: Path) -> Iterator[tuple[int, Any]]:
    """(index, record) for each non-blank line of a JSON Lines stream."""
    index = 0
    lineno = 0
    while True:
        try:
            line = stream.readline()
        except _READ_ERRORS as exc:
            raise DatasetFileError(path, f"corrupt file: {exc}", record_index=index, field="<json>") from None
        if not line:
            return
        lineno += 1
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DatasetFileError(
                path, f"line {lineno} is not valid JSON: {exc}", record_index=index, field="<json>"
            ) from None
        yield index, record
        index += 1


def iter_records_auto(path: Path) -> Iterator[tuple[int, Any]]:
    """JSON Lines when the file starts with ``{``, a JSON array when it starts with ``[``."""
    with open_source(path) as stream:
        char = first_char(stream, path)
        if char == "[":
            yield from iter_array_stream(stream, path)
        elif char == "{":
            yield from iter_json_lines_stream(stream, path)
        elif char is None:
            raise DatasetFileError(path, "not JSON: the file is empty", field="<json>")
        else:
            raise DatasetFileError(path, f"not JSON: unexpected first character {char!r}", field="<json>")
