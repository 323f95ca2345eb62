"""Convert one configured dataset into its canonical Parquet tables.

Why this shape:
- Streaming: the loader yields one question at a time; sessions, turns and haystack rows go to
  Parquet writers in row-group batches, so memory is bounded by a batch, not by the file
  (LongMemEval_M is 2.7 GB). Only questions, evidence, issues and failures (small) stay in RAM.
  Turns are ONE file (``turns.parquet``, many row groups) so both the storage glob
  (``canonical/*/turns*.parquet``) and ``Corpus`` (``read_canonical(..., "turns")``) read it.
- Dedup: sessions/turns by ``session_key``, haystack rows by ``haystack_id``.
- Atomic: everything is written to ``<parquet>/.staging/<dataset>-<uuid>/`` and swapped into
  ``canonical/<dataset>/`` at the end (two renames); a load that fails at any point leaves the
  earlier canonical files untouched and removes its staging folder.
- Crash recovery (``recover_staging``, run before every conversion): a ``kill -9`` leaves a
  staging folder behind (removed), and a crash between the two renames leaves
  ``canonical/<dataset>`` missing with the complete new tables in staging (moved into place;
  the manifest is written last, so its presence proves the folder complete) or, failing that,
  the previous tables in ``<staging>.old`` (moved back).
- One dataset's file error never sinks the others (``convert_datasets``): the error is recorded
  in ``dataset_failures/<dataset>.parquet`` (shown as failed in ``progress``), the dataset keeps
  its earlier canonical tables, and the record is removed by its next successful conversion.
- Key conflicts: a ``KeyConflictFailure`` withdraws the earlier question holding its key
  (question and evidence rows out, a failure row under the key in), see pipeline.datasets.base.
- Incremental: ``_manifest.json`` records source path, size, mtime_ns, loader name/version and
  limit; when all of them match and every table exists, nothing is parsed (``skipped=True``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config.model import PROJECT_ROOT, DatasetConfig
from pipeline.core.records import (
    CANONICAL_SCHEMAS,
    TURN_COLUMNS,
    EvidenceRow,
    LoadFailure,
    ParsedRecord,
    QualityIssue,
    QuestionRow,
    SessionWithTurns,
)
from pipeline.datasets.base import LOADER_VERSION, DatasetFileError, KeyConflictFailure
from pipeline.datasets.loaders import LOADERS, SOURCE_FILES, source_files
from pipeline.datasets.slicing import sliced
from pipeline.store.results import ResultStore, write_parquet_atomic
from pipeline.util.heap import collections_paused

MANIFEST = "_manifest.json"
DATASET_FAILURES_DIR = "dataset_failures"  # parquet/dataset_failures/<dataset>.parquet
DATASET_FAILURE_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("file", pa.string()),
        ("record_index", pa.int64()),
        ("record_id", pa.string()),
        ("field", pa.string()),
        ("message", pa.string()),
        ("kept_earlier_tables", pa.bool_()),
        ("failed_at", pa.timestamp("us")),
    ]
)
STAGING_DIR = ".staging"
TABLES = tuple(CANONICAL_SCHEMAS)
BATCH_ROWS = 50_000
BATCH_TEXT_CHARS = 16 << 20  # also flush turns every ~16 M characters of text (bounds memory for long turns)
PROGRESS_EVERY_S = 10.0


@dataclass(frozen=True)
class ConvertStats:
    """Outcome of one conversion (also restored from the manifest when skipped)."""

    dataset: str
    skipped: bool
    rows: Mapping[str, int]
    n_questions: int
    n_failures: int
    quality: Mapping[str, int]  # data_quality kind -> sum of counts
    partition_keys: tuple[str, ...]  # questions + keyed load failures, file order
    seconds: float
    source: str = ""

    def as_metadata(self) -> dict[str, Any]:
        """Flat values for Dagster metadata."""
        return {
            "dataset": self.dataset,
            "skipped": self.skipped,
            "source": self.source,
            "questions": self.n_questions,
            "load_failures": self.n_failures,
            "seconds": round(self.seconds, 2),
            **{f"rows_{k}": v for k, v in self.rows.items()},
            "quality": json.dumps(dict(self.quality), sort_keys=True),
        }


def table_from_rows(rows: Iterable[Any], schema: pa.Schema) -> pa.Table:
    """Frozen dataclass rows -> Arrow table, column by column (much faster than asdict)."""
    rows = list(rows)
    arrays = [pa.array(list(map(attrgetter(f.name), rows)), type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def table_from_sessions(sessions: Iterable[SessionWithTurns], schema: pa.Schema) -> pa.Table:
    """The turns table of ``sessions``, from their turn columns (the same table as ``table_from_rows``
    of their ``turns``, without a ``TurnRow`` per turn)."""
    values: dict[str, list[Any]] = {name: [] for name in schema.names}
    for s in sessions:
        columns, n = s.turn_columns, s.session.n_turns
        key = s.session.session_key
        values["dataset"] += [s.session.dataset] * n
        values["session_key"] += [key] * n
        values["turn_id"] += [f"{key}:{i}" for i in range(n)]
        values["position"] += range(n)
        for name in TURN_COLUMNS:
            values[name] += getattr(columns, name)
    arrays = [pa.array(values[f.name], type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


class _Sink:
    """Items streamed to one Parquet file in row groups of ``batch_rows`` rows (or ``batch_chars``
    characters of text); ``build`` makes a row group's table of the items buffered for it."""

    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        batch_rows: int,
        batch_chars: int,
        build: Callable[[list[Any], pa.Schema], pa.Table] = table_from_rows,
    ) -> None:
        self.schema = schema
        self.batch_rows = batch_rows
        self.batch_chars = batch_chars
        self.build = build
        self.writer = pq.ParquetWriter(path, schema, compression="zstd")
        self.buffer: list[Any] = []
        self.rows = 0
        self.chars = 0
        self.count = 0

    def add(self, item: Any, rows: int = 1, chars: int = 0) -> None:
        """Buffer ``item`` (``rows`` rows holding ``chars`` characters of text); flush a full row group."""
        self.buffer.append(item)
        self.rows += rows
        self.chars += chars
        if self.rows >= self.batch_rows or self.chars >= self.batch_chars:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.writer.write_table(self.build(self.buffer, self.schema))
            self.count += self.rows
        self.buffer = []
        self.rows = 0
        self.chars = 0

    def close(self) -> int:
        """Flush and finish the file (a file without rows still carries the schema)."""
        self.flush()
        self.writer.close()
        return self.count


@dataclass
class _Collected:
    questions: list[QuestionRow] = field(default_factory=list)
    evidence: list[EvidenceRow] = field(default_factory=list)
    issues: list[QualityIssue] = field(default_factory=list)
    failures: list[LoadFailure] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)


class _CanonicalWriter:
    """Dedups and writes the records of one dataset into a staging folder."""

    def __init__(self, out: Path, dataset: str, batch_rows: int, batch_chars: int = BATCH_TEXT_CHARS) -> None:
        self.out = out
        self.dataset = dataset
        self.sinks = {
            name: _Sink(out / f"{name}.parquet", CANONICAL_SCHEMAS[name], batch_rows, batch_chars)
            for name in ("sessions", "haystacks")
        }
        turns = _Sink(out / "turns.parquet", CANONICAL_SCHEMAS["turns"], batch_rows, batch_chars, table_from_sessions)
        self.sinks["turns"] = turns
        self.marks: dict[str, int] = {}  # session_key -> hash of its has_answer positions
        self.haystacks: set[str] = set()
        self.conflicts: Counter[str] = Counter()
        self.c = _Collected()

    def add(self, rec: ParsedRecord) -> bool:
        """Store one record; True when it is a question (or a keyed failure) for the limit."""
        for s in rec.sessions:
            key = s.session.session_key
            mark = hash(s.answer_positions())
            prior = self.marks.get(key)
            if prior is None:
                self.marks[key] = mark
                self.sinks["sessions"].add(s.session)
                self.sinks["turns"].add(s, s.session.n_turns, sum(map(len, s.turn_columns.text)))
            elif prior != mark:
                self.conflicts[key] += 1
        for h in rec.haystack:
            if h.haystack_id not in self.haystacks:
                self.sinks["haystacks"].add(h)
        self.haystacks.update(h.haystack_id for h in rec.haystack)
        self.c.issues.extend(rec.issues)
        self.c.evidence.extend(rec.evidence)
        if rec.question is not None:
            self.c.questions.append(rec.question)
            self.c.keys.append(rec.question.partition_key)
            return True
        if rec.failure is not None:
            if isinstance(rec.failure, KeyConflictFailure):
                self._withdraw(rec.failure)
            self.c.failures.append(rec.failure)
            if rec.failure.partition_key:
                self.c.keys.append(rec.failure.partition_key)
                return True
        return False

    def _withdraw(self, conflict: KeyConflictFailure) -> None:
        """Fail the earlier question holding ``conflict.conflict_key`` (once; a failed one stays)."""
        key = conflict.conflict_key
        for i, q in enumerate(self.c.questions):
            if q.partition_key == key:
                del self.c.questions[i]
                self.c.evidence = [e for e in self.c.evidence if e.partition_key != key]
                message = (
                    f"{q.question_id!r} (record {q.record_index}) withdrawn: record {conflict.record_index} "
                    f"(id {conflict.record_id}) has the same partition key {key!r}; every record with this key fails"
                )
                self.c.failures.append(
                    LoadFailure(self.dataset, conflict.file, q.record_index, q.question_id, key, "question_id", message)
                )
                return

    def close(self) -> dict[str, int]:
        """Write the in-memory tables; returns rows per table."""
        action = "first occurrence's marking kept (evidence rows stay per question)"
        for key, n in sorted(self.conflicts.items()):
            self.c.issues.append(
                QualityIssue(self.dataset, "has_answer_conflict", key, "turns.has_answer", "<differs>", action, n)
            )
        rows = {name: sink.close() for name, sink in self.sinks.items()}
        for name, items in (
            ("questions", self.c.questions),
            ("evidence", self.c.evidence),
            ("data_quality", self.c.issues),
            ("load_failures", self.c.failures),
        ):
            table = table_from_rows(items, CANONICAL_SCHEMAS[name])  # (schema fields only)
            pq.write_table(table, self.out / f"{name}.parquet", compression="zstd")
            rows[name] = len(items)
        return {name: rows[name] for name in TABLES}

    def abort(self) -> None:
        """Close the open writers after a failed load (the staging folder is then removed)."""
        for sink in self.sinks.values():
            with contextlib.suppress(Exception):
                sink.writer.close()


def _source_manifest(ds: DatasetConfig, src: Path) -> dict[str, Any]:
    try:
        st = src.stat()
    except FileNotFoundError:
        raise DatasetFileError(src, f"file not found (dataset {ds.name!r})") from None
    out: dict[str, Any] = {
        "dataset": ds.name,
        "loader": ds.loader,
        "loader_version": LOADER_VERSION,
        "source": str(src),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "limit": ds.limit,
        "limit_per_type": ds.limit_per_type,
        "question_ids": list(ds.question_ids) if ds.question_ids else None,
    }
    if ds.loader in SOURCE_FILES:  # several files (a folder's own mtime misses an edit inside it)
        out["parts"] = _parts_digest(source_files(ds.loader, src))
    return out


def _parts_digest(files: list[Path]) -> dict[str, Any]:
    """How many files, and a digest of each one's (path, size, mtime_ns)."""
    h = hashlib.sha1(usedforsecurity=False)
    for f in files:
        st = f.stat()
        h.update(f"{f}\x00{st.st_size}\x00{st.st_mtime_ns}\n".encode("utf-8", "surrogatepass"))
    return {"files": len(files), "digest": h.hexdigest()[:16]}


def _read_manifest(out: Path) -> dict[str, Any] | None:
    try:
        return json.loads((out / MANIFEST).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _up_to_date(out: Path, source: Mapping[str, Any]) -> dict[str, Any] | None:
    manifest = _read_manifest(out)
    if manifest is None or manifest.get("input") != source:
        return None
    if not all((out / f"{name}.parquet").exists() for name in TABLES):
        return None
    return manifest


def _stored_keys(out: Path) -> tuple[str, ...]:
    keys = pq.read_table(out / "questions.parquet", columns=["partition_key"]).column(0).to_pylist()
    failed = pq.read_table(out / "load_failures.parquet", columns=["partition_key"]).column(0).to_pylist()
    return tuple(keys + [k for k in failed if k])


def _is_complete(folder: Path) -> bool:
    """A staging folder whose manifest (written last) and every table exist."""
    return (folder / MANIFEST).exists() and all((folder / f"{name}.parquet").exists() for name in TABLES)


def recover_staging(parquet_root: Path, dataset: str, log: Callable[[str], None]) -> list[str]:
    """Repair what a killed conversion of ``dataset`` left behind; returns what was done.

    Why at start: a ``kill -9`` runs no cleanup, so stale staging folders (hundreds of MB for
    LongMemEval) accumulate, and a crash between the two renames of ``_swap_into_place`` leaves
    no ``canonical/<dataset>`` at all. Only this dataset's folders are touched (the caller runs
    one conversion of a dataset at a time: Dagster runs one run at a time here).
    """
    staging_root = parquet_root / STAGING_DIR
    target = parquet_root / "canonical" / dataset
    if not staging_root.is_dir():
        return []
    ours = sorted(p for p in staging_root.iterdir() if p.name.startswith(f"{dataset}-") and _stem_is(p, dataset))
    done: list[str] = []
    if not target.exists():
        new = [p for p in ours if not p.name.endswith(".old") and _is_complete(p)]
        old = [p for p in ours if p.name.endswith(".old") and _is_complete(p)]
        for candidate, what in ((new, "completed conversion"), (old, "previous tables")):
            if candidate:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(candidate[-1], target)
                done.append(f"restored {what} of {dataset} from {candidate[-1].name}")
                break
    for p in ours:
        if p.exists():
            shutil.rmtree(p, ignore_errors=True)
            done.append(f"removed stale staging folder {p.name}")
    for line in done:
        log(f"{dataset}: {line}")
    return done


def _stem_is(path: Path, dataset: str) -> bool:
    """``<dataset>-<32 hex>[.old]``: never another dataset whose name extends this one."""
    rest = path.name[len(dataset) + 1 :].removesuffix(".old")
    return len(rest) == 32 and all(c in "0123456789abcdef" for c in rest)


def _swap_into_place(staging: Path, target: Path) -> None:
    """Replace ``target`` by ``staging`` (old folder renamed aside first, then removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = staging.with_name(f"{staging.name}.old")
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def _limited(
    records: Iterator[ParsedRecord], writer: _CanonicalWriter, ds: DatasetConfig, log: Callable[[str], None]
) -> None:
    """Write the dataset's slice (``limit`` / ``limit_per_type``, pipeline/datasets/slicing.py) of ``records``."""
    n = 0
    last = time.monotonic()
    for rec in sliced(records, ds.limit, ds.limit_per_type, ds.question_ids):
        if writer.add(rec):
            n += 1
        if time.monotonic() - last > PROGRESS_EVERY_S:
            last = time.monotonic()
            log(f"{writer.dataset}: {n} questions read")


def convert_dataset(
    ds: DatasetConfig,
    store: ResultStore,
    log: Callable[[str], None],
    *,
    base_dir: Path = PROJECT_ROOT,
    batch_rows: int = BATCH_ROWS,
) -> ConvertStats:
    """Write ``canonical/<ds.name>/*.parquet`` from ``ds.path`` (skipped when unchanged)."""
    start = time.monotonic()
    src = ds.resolved_path(base_dir)
    loader = LOADERS.get(ds.loader)
    out = store.parquet_root / "canonical" / ds.name
    recover_staging(store.parquet_root, ds.name, log)
    source = _source_manifest(ds, src)
    done = _up_to_date(out, source)
    if done is not None:
        log(f"{ds.name}: {src} unchanged since last conversion; skipped")
        return _stats(ds.name, True, done["stats"], _stored_keys(out), time.monotonic() - start, src)
    staging = store.parquet_root / STAGING_DIR / f"{ds.name}-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    try:
        writer = _CanonicalWriter(staging, ds.name, batch_rows)
        with collections_paused():  # allocation-heavy, cycle-free: see pipeline/util/heap.py
            try:
                with contextlib.closing(loader(src, ds.name)) as records:
                    _limited(records, writer, ds, log)
            except BaseException:
                writer.abort()
                raise
            rows = writer.close()
        summary = {
            "rows": rows,
            "n_questions": rows["questions"],
            "n_failures": rows["load_failures"],
            "quality": _quality(writer.c.issues),
        }
        (staging / MANIFEST).write_text(json.dumps({"input": source, "stats": summary}, indent=2))
        _swap_into_place(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    stats = _stats(ds.name, False, summary, tuple(writer.c.keys), time.monotonic() - start, src)
    log(f"{ds.name}: {stats.n_questions} questions, {stats.n_failures} load failures, rows {dict(rows)}")
    return stats


def _quality(issues: list[QualityIssue]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for issue in issues:
        counts[issue.kind] += issue.count
    return dict(sorted(counts.items()))


def _stats(
    name: str, skipped: bool, summary: Mapping[str, Any], keys: tuple[str, ...], seconds: float, src: Path
) -> ConvertStats:
    return ConvertStats(
        dataset=name,
        skipped=skipped,
        rows=dict(summary["rows"]),
        n_questions=summary["n_questions"],
        n_failures=summary["n_failures"],
        quality=dict(summary["quality"]),
        partition_keys=keys,
        seconds=seconds,
        source=str(src),
    )


@dataclass(frozen=True)
class DatasetFailure:
    """A dataset whose file could not be converted; its earlier tables (if any) are kept."""

    dataset: str
    file: str
    record_index: int | None
    record_id: str | None
    field: str | None
    message: str
    kept_earlier_tables: bool

    @classmethod
    def from_exception(cls, ds: DatasetConfig, src: str, exc: Exception, kept: bool) -> DatasetFailure:
        """Name file, record and field for a ``DatasetFileError``; any other error by its type."""
        if isinstance(exc, DatasetFileError):
            return cls(ds.name, exc.file, exc.record_index, exc.record_id, exc.field, str(exc), kept)
        return cls(ds.name, src, None, None, None, f"{src}: {type(exc).__name__}: {exc}", kept)


def dataset_failure_path(store: ResultStore, dataset: str) -> Path:
    return store.parquet_root / DATASET_FAILURES_DIR / f"{dataset}.parquet"


def _record_failure(store: ResultStore, failure: DatasetFailure) -> None:
    row = {**failure.__dict__, "failed_at": dt.datetime.now(dt.UTC).replace(tzinfo=None)}
    table = pa.Table.from_pylist([row], schema=DATASET_FAILURE_SCHEMA)
    write_parquet_atomic(dataset_failure_path(store, failure.dataset), table)


def convert_datasets(
    datasets: Iterable[DatasetConfig],
    store: ResultStore,
    log: Callable[[str], None],
    *,
    base_dir: Path = PROJECT_ROOT,
    batch_rows: int = BATCH_ROWS,
) -> tuple[list[ConvertStats], list[DatasetFailure]]:
    """Convert each dataset on its own: one dataset's error fails that dataset only.

    Why: a duplicate id, a stray byte or a truncated download in one file used to fail the whole
    canonical step, so every other dataset got no questions in any later stage. Each failure is
    recorded (file, record, field, message) in ``dataset_failures/<dataset>.parquet`` and shown as
    failed in ``progress``; a successful conversion (or an up-to-date skip) removes the record.
    """
    stats: list[ConvertStats] = []
    failures: list[DatasetFailure] = []
    for ds in datasets:
        try:
            stats.append(convert_dataset(ds, store, log, base_dir=base_dir, batch_rows=batch_rows))
        except Exception as exc:  # any error of one dataset must leave the others running
            kept = (store.parquet_root / "canonical" / ds.name / MANIFEST).exists()
            failure = DatasetFailure.from_exception(ds, str(ds.resolved_path(base_dir)), exc, kept)
            _record_failure(store, failure)
            failures.append(failure)
            state = "earlier tables kept" if kept else "no earlier tables"
            log(f"{ds.name}: FAILED to load ({state}): {failure.message}")
        else:
            with contextlib.suppress(FileNotFoundError):
                dataset_failure_path(store, ds.name).unlink()
    return stats, failures
