"""A per-stage index of the stored (question, unit) statuses, so a rerun need not open every file.

Why: deciding what a run still has to do means knowing, for every question of the range, which
units are stored ok; reading ~12,000 small Parquet files one by one took ~77 s of an otherwise
free rerun on configs/shared.yaml. The index (``parquet/_index/<stage>.parquet``) holds each
file's status columns with the file's size and mtime; on load one directory scan tells which
entries are still valid, and only files written since (by this run, a killed run, or a concurrent
run) are read again. It is a cache, never the source of truth: a missing, stale or damaged index
only costs reads, and concurrent writers can lose entries but never make one wrong.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.status import STATUS_FAILED
from pipeline.store.results import (
    LEGACY_UNIT_HASH,
    UNIT_HASH,
    read_parquet_file,
    with_unit_hash,
    write_parquet_atomic,
)

INDEX_DIR = "_index"
COLUMNS = ("unit", "unit_hash", "record_hash", "status", "error")
_SCHEMA = pa.schema(
    [("partition_key", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64())]
    + [(c, pa.string()) for c in COLUMNS]
)

Row = dict[str, Any]
Stamp = tuple[int, int]  # (size, mtime_ns)


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_size, st.st_mtime_ns)


class StageIndex:
    """Status rows of one stage's partition files, read lazily and validated by (size, mtime)."""

    def __init__(self, parquet_root: Path, stage: str) -> None:
        self.dir = parquet_root / stage
        self.path = parquet_root / INDEX_DIR / f"{stage}.parquet"
        self.files: dict[str, Stamp] = {}
        self.rows: dict[str, list[Row]] = {}
        self.reads = 0  # partition files opened (what the index saves)
        self._dirty = False
        self._scan()

    def _scan(self) -> None:
        with contextlib.suppress(FileNotFoundError), os.scandir(self.dir) as entries:
            for e in entries:
                if e.name.endswith(".parquet") and not e.name.startswith("."):
                    self.files[e.name[: -len(".parquet")]] = _stamp(e.stat())
        try:
            cached = pq.read_table(self.path).to_pylist()
        except (OSError, pa.ArrowException):
            return
        grouped: dict[str, list[Row]] = {}
        stamps: dict[str, Stamp] = {}
        for r in cached:
            key = r["partition_key"]
            if UNIT_HASH not in r:  # an index written before the column was renamed
                r[UNIT_HASH] = r.get(LEGACY_UNIT_HASH)
            grouped.setdefault(key, []).append({c: r[c] for c in COLUMNS})
            stamps[key] = (r["size"], r["mtime_ns"])
        for key, rows in grouped.items():
            if self.files.get(key) == stamps[key]:
                self.rows[key] = rows

    def rows_for(self, key: str) -> list[Row] | None:
        """The stored status rows of ``key`` (None when it has no file)."""
        if key not in self.files:
            return None
        if key not in self.rows:
            table = with_unit_hash(read_parquet_file(self.dir / f"{key}.parquet"))
            self.put(key, table)
            self.reads += 1
        return self.rows[key]

    def put(self, key: str, table: pa.Table) -> None:
        """Record what was just written (or read) for ``key``."""
        table = with_unit_hash(table)
        names = set(table.column_names)
        cols = {c: table.column(c).to_pylist() if c in names else [None] * table.num_rows for c in COLUMNS}
        self.rows[key] = [{c: cols[c][i] for c in COLUMNS} for i in range(table.num_rows)]
        with contextlib.suppress(FileNotFoundError):
            self.files[key] = _stamp((self.dir / f"{key}.parquet").stat())
        self._dirty = True

    def drop(self, key: str) -> None:
        """Forget ``key`` whose file was just removed (``membench forget``, pipeline/cli/forget.py)."""
        self.files.pop(key, None)
        self.rows.pop(key, None)
        self._dirty = True

    def save(self) -> None:
        """Write the valid entries (atomic); a no-op when nothing changed."""
        if not self._dirty:
            return
        out: list[Row] = []
        for key, rows in self.rows.items():
            stamp = self.files.get(key)
            if stamp is not None:
                out += [{"partition_key": key, "size": stamp[0], "mtime_ns": stamp[1], **r} for r in rows]
        write_parquet_atomic(self.path, pa.Table.from_pylist(out, schema=_SCHEMA))
        self._dirty = False


def stage_failures(parquet_root: Path, stage: str, keys: list[str]) -> list[tuple[str, str]]:
    """(key, errors) of the ``keys`` that the ``progress`` view calls failed in ``stage``, by key.

    The view's rule, read from the stage's own files (through the index) instead of the catalog: a
    question failed when a stored row of it failed; its errors are those rows' errors joined by
    `` | `` (``progress.errors``), ``failed`` when none was given. Why not the view: it needs a
    catalog rebuilt after the stage (every file's footer bound again, seconds on a large folder),
    and the stage's check runs right after the stage wrote those files.
    """
    index = StageIndex(parquet_root, stage)
    failed: list[tuple[str, str]] = []
    for key in sorted(set(keys)):
        rows = [r for r in index.rows_for(key) or () if r["status"] == STATUS_FAILED]
        if rows:
            failed.append((key, " | ".join(r["error"] for r in rows if r["error"] is not None) or "failed"))
    index.save()  # files read here are indexed for the next run
    return failed
