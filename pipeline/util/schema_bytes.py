"""A Parquet file's schema as the bytes its footer holds, read without decoding the footer.

Why: the catalog's schema check (pipeline/store/file_schemas.py) compares the schemas of every
per-question file at a run's end, ~8k files at 2,000 questions. pyarrow decodes a whole footer to
give its schema, row groups and statistics included (~0.17 ms CPU a file, ~1.3 s a run's end);
the schema is the first thing in the footer, so a file whose footer starts with a schema already
seen has that schema, found by one ``startswith``.

The footer is Thrift's compact encoding of ``FileMetaData``; ``schema`` is its field 2, written
after ``version`` (field 1) and before everything else. ``schema_prefix`` returns the footer's bytes
from its start to the end of field 2: equal prefixes are equal schemas, and since the walk is
decided by the bytes it has read, a footer that starts with a prefix found in another footer has
exactly that prefix (no prefix is a proper prefix of another). Two schemas written with different
bytes but the same meaning compare as different: a caller then takes its slow, general path.
"""

from __future__ import annotations

from pathlib import Path

MAGIC = b"PAR1"  # a plain (unencrypted) Parquet file ends with its footer's length and this
_TAIL = 8  # the footer's length (4 bytes, little-endian) and MAGIC

# Thrift compact types (the low nibble of a field header)
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
_VARINTS = (_I16, _I32, _I64)
SCHEMA_FIELD = 2  # FileMetaData.schema


def footer_bytes(path: Path | str) -> bytes:
    """The footer of a plain Parquet file (``OSError`` when missing, ``ValueError`` when it is none)."""
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size < _TAIL + len(MAGIC):
            raise ValueError(f"{path}: too small to be a Parquet file")
        f.seek(size - _TAIL)
        tail = f.read(_TAIL)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != MAGIC or length > size - _TAIL - len(MAGIC):
            raise ValueError(f"{path}: not a plain Parquet file")
        f.seek(size - _TAIL - length)
        return f.read(length)


def schema_prefix(footer: bytes) -> bytes:
    """``footer`` up to the end of its ``schema`` field (see the module's docstring); ``ValueError``
    when the bytes are no Thrift struct with that field."""
    try:
        pos, last = 0, 0
        while True:
            head = footer[pos]
            pos += 1
            if head == 0:
                raise ValueError("a Parquet footer without a schema")
            kind, delta = head & 0x0F, head >> 4
            if delta:
                field = last + delta
            else:
                raw, pos = _varint(footer, pos)
                field = _zigzag(raw)
            pos = _skip(footer, pos, kind)
            if field == SCHEMA_FIELD:
                return footer[:pos]
            last = field
    except IndexError as exc:
        raise ValueError("a truncated Parquet footer") from exc


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _skip(buf: bytes, pos: int, kind: int) -> int:
    """The position after one value of compact type ``kind`` at ``pos``."""
    if kind in (_TRUE, _FALSE):  # a field's boolean lives in its header
        return pos
    if kind == _BYTE:
        return pos + 1
    if kind in _VARINTS:
        return _varint(buf, pos)[1]
    if kind == _DOUBLE:
        return pos + 8
    if kind == _BINARY:
        length, pos = _varint(buf, pos)
        return pos + length
    if kind in (_LIST, _SET):
        return _skip_list(buf, pos)
    if kind == _MAP:
        return _skip_map(buf, pos)
    if kind == _STRUCT:
        return _skip_struct(buf, pos)
    raise ValueError(f"unknown Thrift compact type {kind}")


def _skip_list(buf: bytes, pos: int) -> int:
    head = buf[pos]
    pos += 1
    count, kind = head >> 4, head & 0x0F
    if count == 15:
        count, pos = _varint(buf, pos)
    for _ in range(count):
        pos = pos + 1 if kind in (_TRUE, _FALSE) else _skip(buf, pos, kind)  # a boolean element: one byte
    return pos


def _skip_map(buf: bytes, pos: int) -> int:
    count, pos = _varint(buf, pos)
    if not count:
        return pos
    kinds = buf[pos]
    pos += 1
    key, value = kinds >> 4, kinds & 0x0F
    for _ in range(count):
        pos = _skip(buf, pos, key) if key not in (_TRUE, _FALSE) else pos + 1
        pos = _skip(buf, pos, value) if value not in (_TRUE, _FALSE) else pos + 1
    return pos


def _skip_struct(buf: bytes, pos: int) -> int:
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return pos
        if not head >> 4:  # a long-form field id follows
            pos = _varint(buf, pos)[1]
        pos = _skip(buf, pos, head & 0x0F)
