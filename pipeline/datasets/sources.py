"""Streaming readers for dataset files: JSON arrays (plain or gzip) and JSON Lines.

Why streaming: LongMemEval_M is 2.7 GB of JSON; ``json.load`` would need several times that in
RAM. ``ijson`` (C yajl2 backend) yields one record at a time, so memory is bounded by the largest
record. Every syntax or compression error becomes a ``DatasetFileError`` naming the record index
where it happened.

Why ``isal`` and not the standard ``gzip``: a dataset file is gunzipped twice from an empty results
folder (the partition keys when the definitions load, then the canonical conversion), and zlib's
inflate was ~0.9 s of CPU per pass over LongMemEval_S's 77 MB (docs/design/speed.md, pass 7).
ISA-L's inflate gives the same bytes (same format, CRC and length checked; concatenated members
read as ``gzip`` reads them) in ~0.36 s. Its errors are ``gzip``'s (``EOFError`` truncated,
``gzip.BadGzipFile`` header or CRC) plus its own ``IsalError`` for corrupt deflate data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import ijson
from isal import igzip, isal_zlib

from pipeline.datasets.base import DatasetFileError

GZIP_MAGIC = b"\x1f\x8b"
COMPRESSION_FIELD = "<file bytes>"  # the error is below JSON: truncated gzip, unreadable bytes
# corrupt deflate data; isal's stubs declare it ``error: Exception``, an instance, but it is the class IsalError
_ISAL_ERROR = cast(type[BaseException], isal_zlib.error)
_READ_ERRORS = (OSError, EOFError, _ISAL_ERROR)
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
            with igzip.IGzipFile(fileobj=raw, mode="rb") as gz:
                # typed as io.BufferedIOBase, not typing.IO; it has every method used here
                yield cast(IO[bytes], gz)
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
        raise DatasetFileError(path, f"cannot read (corrupt or truncated): {exc}", field=COMPRESSION_FIELD) from None
    return char


def _require_array(stream: IO[bytes], path: Path) -> None:
    char = first_char(stream, path)
    if char is None:
        raise DatasetFileError(path, "not JSON: the file is empty", field="<json>")
    if char == "{":
        raise DatasetFileError(path, "top level is a JSON object; expected an array of records", field="<top level>")
    if char != "[":
        raise DatasetFileError(path, f"not JSON: unexpected first character {char!r}", field="<json>")


def _json_error(exc: Exception) -> str:
    """yajl's message, decoded, with its multi-line excerpt of the file folded onto one line."""
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "backslashreplace")
    text = " ".join(str(text).split())
    if "invalid bytes in UTF8" in text:
        text = "non-UTF-8 byte in a string (the file must be UTF-8): " + text
    return text[:300]


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
            raise DatasetFileError(
                path, f"not valid JSON: {_json_error(exc)}", record_index=index, field="<json>"
            ) from None
        except _READ_ERRORS as exc:
            raise DatasetFileError(path, f"corrupt file: {exc}", record_index=index, field=COMPRESSION_FIELD) from None
        yield index, record
        index += 1


def iter_json_array(path: Path) -> Iterator[tuple[int, Any]]:
    """(index, record) for each item of the file's top-level JSON array, streamed."""
    with open_source(path) as stream:
        yield from iter_array_stream(stream, path)


@dataclass(frozen=True)
class UnreadableRecord:
    """A JSON Lines line that cannot be parsed: loaders turn it into a failed record (no id).

    Why not a file error: each line of JSON Lines stands alone, so one bad line (a stray byte,
    a truncated last line) says nothing about the others, which still load.
    """

    reason: str


def iter_json_lines_stream(stream: IO[bytes], path: Path) -> Iterator[tuple[int, Any]]:
    """(index, record) for each non-blank line of a JSON Lines stream.

    A line that is not valid UTF-8 JSON yields an ``UnreadableRecord``; a file where no line at
    all is readable is a ``DatasetFileError`` (it is not JSON Lines).
    """
    index = 0
    lineno = 0
    readable = 0
    first_error: str | None = None
    while True:
        try:
            line = stream.readline()
        except _READ_ERRORS as exc:
            raise DatasetFileError(path, f"corrupt file: {exc}", record_index=index, field=COMPRESSION_FIELD) from None
        if not line:
            if readable == 0 and first_error is not None:
                raise DatasetFileError(path, f"no readable JSON line; first error: {first_error}", field="<json>")
            return
        lineno += 1
        if not line.strip():
            continue
        try:
            record: Any = json.loads(line)
            readable += 1
        except UnicodeDecodeError as exc:
            record = UnreadableRecord(
                f"line {lineno} is not UTF-8: byte {line[exc.start]:#04x} at column {exc.start + 1}"
            )
        except json.JSONDecodeError as exc:
            record = UnreadableRecord(f"line {lineno} is not valid JSON: {exc}")
        if isinstance(record, UnreadableRecord) and first_error is None:
            first_error = record.reason
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
