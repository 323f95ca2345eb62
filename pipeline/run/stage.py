"""The per-question stage driver shared by every per-question stage (no Dagster in here).

Why one driver: resumability, failure accounting and the outcome that becomes Dagster partition
status must behave the same in every stage. The driver gets the run's partition keys, computes the
(question, unit) pairs not yet done, writes each finished question at once (one Parquet file per
stage and question, atomic), so ``kill -9`` loses only the questions in flight, and returns a
``StageOutcome`` naming every key whose stored rows hold a failure. A failure is a row with
``status='failed'`` and its error: never a zero, never dropped, and retried by the next run.

A dead endpoint (``stop_after`` consecutive questions whose every failure is an unreachable
endpoint) stops the stage: the questions not yet attempted are recorded as failed with one
clear error instead of each waiting through its own retries.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config.model import BenchmarkConfig
from pipeline.core.partitions import dataset_of
from pipeline.core.record_hash import failure_hash, question_hashes
from pipeline.core.status import STATUS_FAILED, STATUS_OK
from pipeline.core.units import system_of
from pipeline.datasets.convert import dataset_failure_path
from pipeline.llm.protocol import NOT_ATTEMPTED, is_unreachable
from pipeline.run.progress import Progress
from pipeline.run.stale import configured_systems, stale_systems, with_note
from pipeline.run.status_index import StageIndex
from pipeline.store.results import ResultStore
from pipeline.util.heap import fewer_collections

STATUS_FIELDS: list[pa.Field] = [
    pa.field("partition_key", pa.string()),
    pa.field("dataset", pa.string()),
    pa.field("question_id", pa.string()),
    pa.field("unit", pa.string()),
    pa.field("unit_hash", pa.string()),
    pa.field("record_hash", pa.string()),
    pa.field("status", pa.string()),
    pa.field("error", pa.string()),
    pa.field("duration_s", pa.float64()),
    pa.field("finished_at", pa.timestamp("us")),
]
STATUS_NAMES = [f.name for f in STATUS_FIELDS]


@dataclass(frozen=True)
class UnitSpec:
    """One unit of work per question: e.g. a memory system, or (system, reader)."""

    unit: str
    unit_hash: str


@dataclass(frozen=True)
class WorkItem:
    partition_key: str
    dataset: str
    question_id: str
    units: tuple[UnitSpec, ...]
    record_hash: str = ""  # content of the question's canonical record (pipeline/core/record_hash.py)


@dataclass(frozen=True)
class UnitResult:
    unit: str
    unit_hash: str
    status: str
    error: str | None = None
    duration_s: float = 0.0
    payload: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def failed(cls, spec: UnitSpec, error: str, duration_s: float = 0.0) -> UnitResult:
        return cls(spec.unit, spec.unit_hash, STATUS_FAILED, error, duration_s)


Compute = Callable[[list[WorkItem]], Iterable[tuple[str, list[UnitResult]]]]
UnitsFor = Callable[[str], list[UnitSpec]]


@dataclass(frozen=True)
class QuestionIndex:
    """The questions a run covers: key -> (dataset, question_id, load failure message or None, record hash).

    Why the record hash: a unit is done only for the record it was computed from, so editing a gold
    answer or a question recomputes that question's units, and a record that became invalid does not
    keep results computed from its earlier, valid form.
    """

    rows: dict[str, tuple[str, str, str | None, str]]

    @classmethod
    def from_store(cls, store: ResultStore, cfg: BenchmarkConfig) -> QuestionIndex:
        rows: dict[str, tuple[str, str, str | None, str]] = {}
        for ds in cfg.datasets:
            q = store.read_canonical(ds.name, "questions")
            if q is not None:
                hashes = question_hashes(q, store.read_canonical(ds.name, "haystacks"))
                for key, qid in zip(
                    q.column("partition_key").to_pylist(), q.column("question_id").to_pylist(), strict=True
                ):
                    rows[key] = (ds.name, qid, None, hashes[key])
            f = store.read_canonical(ds.name, "load_failures")
            if f is not None:
                for rec in f.to_pylist():
                    if rec["partition_key"]:
                        message = rec["message"]
                        rows[rec["partition_key"]] = (ds.name, rec["record_id"], message, failure_hash(message))
        return cls(rows)


def stage_schema(payload_schema: pa.Schema) -> pa.Schema:
    return pa.schema(STATUS_FIELDS + list(payload_schema))


def _done_units(rows: list[dict[str, Any]] | None, record_hash: str) -> set[tuple[str, str]]:
    """(unit, unit hash) pairs stored ok for this version of the record (older files: none)."""
    return {
        (r["unit"], r["unit_hash"])
        for r in rows or ()
        if r["status"] == STATUS_OK and r.get("record_hash") is not None and r["record_hash"] == record_hash
    }


def _first_failure(rows: list[dict[str, Any]] | None) -> str | None:
    """The first stored failure's error, or None when every stored row is ok (the progress rule)."""
    for r in rows or ():
        if r["status"] == STATUS_FAILED:
            return r["error"] or "failed"
    return None


def _rows(item: WorkItem, results: list[UnitResult]) -> list[dict[str, Any]]:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return [
        {
            "partition_key": item.partition_key,
            "dataset": item.dataset,
            "question_id": item.question_id,
            "unit": r.unit,
            "unit_hash": r.unit_hash,
            "record_hash": item.record_hash,
            "status": r.status,
            "error": r.error,
            "duration_s": r.duration_s,
            "finished_at": now,
            **r.payload,
        }
        for r in results
    ]


def _merge(existing: pa.Table | None, new: pa.Table, recomputed: set[str]) -> pa.Table:
    if existing is None:
        return new
    keep = [r for r in existing.to_pylist() if r["unit"] not in recomputed]
    if not keep:
        return new
    try:
        old = pa.Table.from_pylist(keep, schema=new.schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError):
        return new  # schema changed between versions: recomputed rows win, stale rows dropped
    return pa.concat_tables([old, new])


@dataclass
class StageOutcome:
    """What one stage did to the run's keys; ``failed`` is exactly the keys the progress view calls failed."""

    stage: str
    keys_total: int = 0
    keys_already_done: int = 0
    keys_computed: int = 0
    units_ok: int = 0
    units_failed: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # key -> first error
    stopped: str | None = None  # why the stage stopped early (dead endpoint)
    written: list[str] = field(default_factory=list)  # keys whose file this run wrote
    # the status columns (STATUS_NAMES) of each table written, in order: what the stage's row check
    # reads, instead of every file written read back from disk (~0.5 ms a file)
    written_status: list[pa.Table] = field(default_factory=list)
    units_by_key: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (units ok, failed) this run
    files_read: int = 0  # stored partition files opened to find what is done (the index saves the rest)
    seconds: float = 0.0
    preview: list[dict[str, Any]] = field(default_factory=list)


def reached_endpoint(result: UnitResult) -> bool:
    """A unit that got a fresh LLM reply (``cache_hit`` False): the endpoint answered it. Offline
    units (``cache_hit`` None) and cached replies prove nothing about the endpoint."""
    payload = result.payload
    return payload.get("cache_hit") is False or payload.get("judge_cache_hit") is False


class EndpointBreaker:
    """Counts consecutive questions that could not reach the endpoint: every failed unit failed
    with a connection error and no unit got a fresh reply, whatever the offline units of the
    question did (a config with an offline and an LLM reader, LLM judges on an offline reader)."""

    def __init__(self, stop_after: int) -> None:
        self.stop_after = stop_after
        self.streak = 0
        self.last_error = ""

    def observe(self, results: list[UnitResult]) -> bool:
        """True when the stage should stop (``stop_after`` such questions in a row; 0 = never)."""
        failed = [r for r in results if r.status == STATUS_FAILED]
        dead = (
            bool(failed)
            and all(is_unreachable(r.error or "") for r in failed)
            and not any(reached_endpoint(r) for r in results)
        )
        self.streak = self.streak + 1 if dead else 0
        if dead:
            self.last_error = failed[-1].error or ""
        return self.stop_after > 0 and self.streak >= self.stop_after


class QuestionStage:
    """Runs ``compute`` over the pending (question, unit) pairs of one stage and records results."""

    def __init__(
        self,
        store: ResultStore,
        cfg: BenchmarkConfig,
        *,
        stage: str,
        payload_schema: pa.Schema,
        units_for: UnitsFor,
        log: Callable[[str], None] = lambda _msg: None,
        stop_after_unreachable: int = 5,
        index: QuestionIndex | None = None,
        on_recorded: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.cfg = cfg
        self.stage = stage
        self.schema = stage_schema(payload_schema)
        self.units_for = units_for
        self.log = log
        self.stop_after_unreachable = stop_after_unreachable
        self.index = index if index is not None else QuestionIndex.from_store(store, cfg)
        self.stored = StageIndex(store.parquet_root, stage)
        self.outcome = StageOutcome(stage)
        # told of each key once its outcome is final (recorded, or found already done): Dagster's status follows
        self.on_recorded = on_recorded or (lambda _key: None)
        self._load_errors: dict[str, str | None] = {}  # dataset -> its load error (None: it loaded)

    def _missing_record(self, key: str) -> str:
        """Why a key the run covers has no canonical record: its dataset's load error when it failed
        to load on its first load (the same error the progress view shows for its canonical step)."""
        dataset = dataset_of(key)
        if dataset not in self._load_errors:
            path = dataset_failure_path(self.store, dataset)
            rows = pq.read_table(path, columns=["message"]).to_pylist() if path.exists() else []
            self._load_errors[dataset] = str(rows[0]["message"]) if rows else None
        load_error = self._load_errors[dataset]
        if load_error is not None:
            return f"no canonical record for {key!r}: dataset {dataset!r} failed to load: {load_error}"
        return (
            f"no canonical record for {key!r} in {self.cfg.source}: its dataset {dataset!r} "
            "failed to load or no longer has this question (see the canonical asset's log)"
        )

    def _failure(self, dataset: str, rows: list[dict[str, Any]] | None) -> str | None:
        """The question's failure message: its first stored failure, naming (and telling how to remove)
        failed rows of memory systems no longer configured, which no run would ever retry."""
        error = _first_failure(rows)
        if error is None:
            return None
        # the config's systems (a system whose reader or judge was removed is still configured) ...
        stale = stale_systems(rows or (), configured_systems(self.cfg, dataset), self.stage)
        if stale:  # ... and the systems of the stage's own units (a caller's units are configured by definition)
            stale = [s for s in stale if s not in self._unit_systems(dataset)]
        return with_note(error, stale)

    def _unit_systems(self, dataset: str) -> set[str]:
        """Systems of the stage's units for ``dataset``; none for a dataset the config no longer has."""
        try:
            return {system_of(u.unit) for u in self.units_for(dataset)}
        except KeyError:  # BenchmarkConfig.dataset: a question key of a removed dataset
            return set()

    def pending(self, keys: list[str]) -> tuple[list[WorkItem], list[tuple[WorkItem, str]]]:
        """(work items to compute, (item, error) pairs that fail without computing)."""
        todo: list[WorkItem] = []
        broken: list[tuple[WorkItem, str]] = []
        for key in keys:
            row = self.index.rows.get(key)
            if row is None:
                dataset = dataset_of(key)
                spec = [UnitSpec(f"{self.stage}", "-")]
                broken.append((WorkItem(key, dataset, key, tuple(spec)), self._missing_record(key)))
                continue
            dataset, qid, load_error, record_hash = row
            existing = self.stored.rows_for(key)
            done = _done_units(existing, record_hash)
            missing = tuple(u for u in self.units_for(dataset) if (u.unit, u.unit_hash) not in done)
            if not missing:
                self.outcome.keys_already_done += 1
                error = self._failure(dataset, existing)
                if error is not None:  # a stored row of a unit no longer configured
                    self.outcome.failed[key] = error
                self.on_recorded(key)
                continue
            item = WorkItem(key, dataset, qid, missing, record_hash)
            if load_error:
                broken.append((item, f"canonical record invalid: {load_error}"))
            else:
                todo.append(item)
        return todo, broken

    def record(self, item: WorkItem, results: list[UnitResult]) -> None:
        """Write one question's results (merged with its earlier rows)."""
        new = pa.Table.from_pylist(_rows(item, results), schema=self.schema)
        existing = self.store.read_partition(self.stage, item.partition_key)
        merged = _merge(existing, new, {r.unit for r in results})
        self.store.write_partition(self.stage, item.partition_key, merged)
        self.stored.put(item.partition_key, merged)
        o = self.outcome
        o.written.append(item.partition_key)
        o.written_status.append(merged.select(STATUS_NAMES))
        o.keys_computed += 1
        ok = sum(r.status == STATUS_OK for r in results)
        o.units_ok += ok
        o.units_failed += len(results) - ok
        o.units_by_key[item.partition_key] = (ok, len(results) - ok)
        error = self._failure(item.dataset, self.stored.rows[item.partition_key])
        if error is not None:
            o.failed[item.partition_key] = error
        if len(o.preview) < 10:
            o.preview += [
                {k: v for k, v in row.items() if k in ("partition_key", "unit", "status", "error")}
                for row in new.slice(0, 2).to_pylist()
            ]
        self.on_recorded(item.partition_key)

    def run(self, keys: list[str], compute: Compute) -> StageOutcome:
        """Compute the pending units of ``keys``; every key ends ok, failed or already done."""
        start = time.monotonic()
        self.outcome.keys_total = len(keys)
        todo, broken = self.pending(keys)
        self.log(
            f"{self.stage}: {len(keys)} questions, {self.outcome.keys_already_done} already done, "
            f"{len(todo)} to compute, {len(broken)} without a valid canonical record"
        )
        for item, message in broken:
            self.record(item, [UnitResult.failed(u, message) for u in item.units])
        by_key = {i.partition_key: i for i in todo}
        breaker = EndpointBreaker(self.stop_after_unreachable)
        why = ""
        progress = Progress(self.stage, len(todo), self.log)
        results_iter = _guarded(compute, todo)
        with fewer_collections():  # allocation-heavy: see pipeline/util/heap.py
            try:
                for key, results in results_iter:
                    self.record(by_key.pop(key), results)
                    progress.step()
                    if breaker.observe(results) and by_key:  # stop only if something is left to spare
                        why = (
                            f"{self.stage} stopped after {breaker.streak} consecutive questions could not reach the "
                            f"endpoint (last error: {breaker.last_error})"
                        )
                        self.outcome.stopped = f"{why}; {len(by_key)} questions not attempted"
                        break
            finally:
                results_iter.close()
                progress.close()
        reason = f"{NOT_ATTEMPTED}{why}" if self.outcome.stopped else "stage produced no result"
        for item in by_key.values():  # unattempted after a stop, or a compute bug: recorded as failures
            self.record(item, [UnitResult.failed(u, reason) for u in item.units])
        self.stored.save()
        self.outcome.files_read = self.stored.reads
        self.outcome.seconds = time.monotonic() - start
        return self.outcome


def _guarded(compute: Compute, todo: list[WorkItem]) -> Generator[tuple[str, list[UnitResult]], None, None]:
    """Yield compute's results; an exception escaping compute fails only the unfinished items."""
    if not todo:
        return
    seen: set[str] = set()
    try:
        for key, results in compute(todo):
            seen.add(key)
            yield key, results
    except Exception as exc:
        msg = f"{type(exc).__name__}: {exc}"
        for item in todo:
            if item.partition_key not in seen:
                yield item.partition_key, [UnitResult.failed(u, msg) for u in item.units]


def timed(fn: Callable[[], dict[str, Any]], spec: UnitSpec) -> UnitResult:
    """Run one unit; an exception becomes a failed UnitResult carrying the error text."""
    start = time.monotonic()
    try:
        payload = fn()
    except Exception as exc:
        return UnitResult.failed(spec, f"{type(exc).__name__}: {exc}", time.monotonic() - start)
    return UnitResult(spec.unit, spec.unit_hash, STATUS_OK, None, time.monotonic() - start, payload)
