"""The per-question stage driver shared by every partitioned asset.

Why one driver: resumability, failure accounting and Dagster partition status must behave the
same in every stage. A run without a partition (``dagster job execute -j full_benchmark``)
processes every question of the configured datasets that is not yet done; a run for a partition
or range (UI backfill, ``dagster asset materialize --partition``) processes exactly those keys.
Each finished question is written at once (one Parquet file per stage and question, atomic), so
``kill -9`` loses only the questions in flight. A failure is a row with ``status='failed'`` and
its error: never a zero, never dropped, and retried by the next run.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import pyarrow as pa

from pipeline.config import BenchmarkConfig
from resources.storage import ResultStore

STATUS_OK = "ok"
STATUS_FAILED = "failed"

STATUS_FIELDS: list[pa.Field] = [
    pa.field("partition_key", pa.string()),
    pa.field("dataset", pa.string()),
    pa.field("question_id", pa.string()),
    pa.field("unit", pa.string()),
    pa.field("config_hash", pa.string()),
    pa.field("status", pa.string()),
    pa.field("error", pa.string()),
    pa.field("duration_s", pa.float64()),
    pa.field("finished_at", pa.timestamp("us")),
]


@dataclass(frozen=True)
class UnitSpec:
    """One unit of work per question: e.g. a memory system, or (system, reader)."""

    unit: str
    config_hash: str


@dataclass(frozen=True)
class WorkItem:
    partition_key: str
    dataset: str
    question_id: str
    units: tuple[UnitSpec, ...]


@dataclass(frozen=True)
class UnitResult:
    unit: str
    config_hash: str
    status: str
    error: str | None = None
    duration_s: float = 0.0
    payload: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def failed(cls, spec: UnitSpec, error: str, duration_s: float = 0.0) -> UnitResult:
        return cls(spec.unit, spec.config_hash, STATUS_FAILED, error, duration_s)


Compute = Callable[[list[WorkItem]], Iterable[tuple[str, list[UnitResult]]]]
UnitsFor = Callable[[str], list[UnitSpec]]


@dataclass(frozen=True)
class QuestionIndex:
    """The questions a run covers: key -> (dataset, question_id, load failure message or None)."""

    rows: dict[str, tuple[str, str, str | None]]

    @classmethod
    def from_store(cls, store: ResultStore, cfg: BenchmarkConfig) -> QuestionIndex:
        rows: dict[str, tuple[str, str, str | None]] = {}
        for ds in cfg.datasets:
            q = store.read_canonical(ds.name, "questions")
            if q is not None:
                for key, qid in zip(
                    q.column("partition_key").to_pylist(), q.column("question_id").to_pylist(), strict=True
                ):
                    rows[key] = (ds.name, qid, None)
            f = store.read_canonical(ds.name, "load_failures")
            if f is not None:
                for rec in f.to_pylist():
                    if rec["partition_key"]:
                        rows[rec["partition_key"]] = (ds.name, rec["record_id"], rec["message"])
        return cls(rows)


def stage_schema(payload_schema: pa.Schema) -> pa.Schema:
    return pa.schema(STATUS_FIELDS + list(payload_schema))


def select_keys(context: dg.AssetExecutionContext, index: QuestionIndex) -> tuple[list[str], bool]:
    """(keys, partitioned): the run's partition keys, or every key of the configured datasets."""
    if context.has_partition_key_range or context.has_partition_key:
        return list(context.partition_keys), True
    return sorted(index.rows), False


def _done_units(existing: pa.Table | None) -> set[tuple[str, str]]:
    if existing is None:
        return set()
    return {
        (r["unit"], r["config_hash"])
        for r in existing.select(["unit", "config_hash", "status"]).to_pylist()
        if r["status"] == STATUS_OK
    }


def _rows(item: WorkItem, results: list[UnitResult]) -> list[dict[str, Any]]:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return [
        {
            "partition_key": item.partition_key,
            "dataset": item.dataset,
            "question_id": item.question_id,
            "unit": r.unit,
            "config_hash": r.config_hash,
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
class StageStats:
    keys_total: int = 0
    keys_already_done: int = 0
    keys_computed: int = 0
    units_ok: int = 0
    units_failed: int = 0
    failed_keys: list[str] = field(default_factory=list)
    preview: list[dict[str, Any]] = field(default_factory=list)


class QuestionStage:
    """Runs ``compute`` over the pending (question, unit) pairs of one stage and records results."""

    def __init__(
        self,
        context: dg.AssetExecutionContext,
        store: ResultStore,
        cfg: BenchmarkConfig,
        *,
        stage: str,
        payload_schema: pa.Schema,
        units_for: UnitsFor,
    ) -> None:
        self.context = context
        self.store = store
        self.cfg = cfg
        self.stage = stage
        self.schema = stage_schema(payload_schema)
        self.units_for = units_for
        self.index = QuestionIndex.from_store(store, cfg)
        self.keys, self.partitioned = select_keys(context, self.index)
        self.stats = StageStats(keys_total=len(self.keys))

    def pending(self) -> tuple[list[WorkItem], list[WorkItem]]:
        """(work items to compute, items whose canonical record failed to load)."""
        todo: list[WorkItem] = []
        broken: list[WorkItem] = []
        for key in self.keys:
            if key not in self.index.rows:
                raise dg.Failure(
                    f"partition {key!r} is not a question of config {self.cfg.source}; "
                    "materialize the canonical assets with this config first"
                )
            dataset, qid, load_error = self.index.rows[key]
            done = _done_units(self.store.read_partition(self.stage, key))
            missing = tuple(u for u in self.units_for(dataset) if (u.unit, u.config_hash) not in done)
            if not missing:
                self.stats.keys_already_done += 1
                continue
            item = WorkItem(key, dataset, qid, missing)
            (broken if load_error else todo).append(item)
        return todo, broken

    def record(self, item: WorkItem, results: list[UnitResult]) -> None:
        """Write one question's results (merged with its earlier rows) and update Dagster status."""
        new = pa.Table.from_pylist(_rows(item, results), schema=self.schema)
        existing = self.store.read_partition(self.stage, item.partition_key)
        merged = _merge(existing, new, {r.unit for r in results})
        self.store.write_partition(self.stage, item.partition_key, merged)
        self.stats.keys_computed += 1
        ok = sum(r.status == STATUS_OK for r in results)
        self.stats.units_ok += ok
        self.stats.units_failed += len(results) - ok
        if ok < len(results):
            self.stats.failed_keys.append(item.partition_key)
        if len(self.stats.preview) < 10:
            self.stats.preview += [
                {k: v for k, v in row.items() if k in ("partition_key", "unit", "status", "error")}
                for row in new.slice(0, 2).to_pylist()
            ]
        all_ok = _done_units(merged) >= {(u.unit, u.config_hash) for u in self.units_for(item.dataset)}
        if all_ok and not self.partitioned:
            self.context.log_event(dg.AssetMaterialization(asset_key=self.stage, partition=item.partition_key))

    def run(self, compute: Compute) -> dg.MaterializeResult:
        start = time.monotonic()
        todo, broken = self.pending()
        self.context.log.info(
            f"{self.stage}: {len(self.keys)} questions, {self.stats.keys_already_done} already done, "
            f"{len(todo)} to compute, {len(broken)} with an invalid canonical record"
        )
        for item in broken:
            message = self.index.rows[item.partition_key][2]
            self.record(item, [UnitResult.failed(u, f"canonical record invalid: {message}") for u in item.units])
        by_key = {i.partition_key: i for i in todo}
        last_log = time.monotonic()
        for key, results in _guarded(compute, todo):
            self.record(by_key.pop(key), results)
            if time.monotonic() - last_log > 10:
                last_log = time.monotonic()
                self.context.log.info(f"{self.stage}: {self.stats.keys_computed}/{len(todo)} questions done")
        for item in by_key.values():  # compute returned without yielding them: a bug, recorded as failure
            self.record(item, [UnitResult.failed(u, "stage produced no result") for u in item.units])
        self.store.refresh_catalog()
        return self._result(time.monotonic() - start)

    def _result(self, seconds: float) -> dg.MaterializeResult:
        s = self.stats
        metadata: dict[str, Any] = {
            "questions": s.keys_total,
            "already_done": s.keys_already_done,
            "computed": s.keys_computed,
            "units_ok": s.units_ok,
            "units_failed": s.units_failed,
            "failed_questions": len(s.failed_keys),
            "failed_examples": ", ".join(s.failed_keys[:20]) or "none",
            "seconds": round(seconds, 2),
            "catalog": dg.MetadataValue.path(str(self.store.catalog_path)),
        }
        if s.preview:
            metadata["preview"] = dg.MetadataValue.md(_markdown(s.preview))
        if self.partitioned and s.failed_keys:
            raise dg.Failure(
                f"{self.stage}: {len(s.failed_keys)} question(s) failed: {', '.join(s.failed_keys[:20])}; "
                "their errors are in the progress view",
                metadata=metadata,
            )
        return dg.MaterializeResult(metadata=metadata)


def _guarded(compute: Compute, todo: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
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


def _markdown(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, ""))[:80] for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def timed(fn: Callable[[], dict[str, Any]], spec: UnitSpec) -> UnitResult:
    """Run one unit; an exception becomes a failed UnitResult carrying the error text."""
    start = time.monotonic()
    try:
        payload = fn()
    except Exception as exc:
        return UnitResult.failed(spec, f"{type(exc).__name__}: {exc}", time.monotonic() - start)
    return UnitResult(spec.unit, spec.config_hash, STATUS_OK, None, time.monotonic() - start, payload)
