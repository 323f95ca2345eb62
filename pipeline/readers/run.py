"""The answers stage without Dagster: units, per-question answering, bounded concurrency.

Why here and not in the asset: the rules (which (system, reader) pairs exist, what an upstream
failure becomes, how an answer row looks) must be testable without a Dagster run;
``assets/answers.py`` only wires resources to ``AnswerRun``.

Units: ``"<system>/<reader>"`` for every memory system configured for the dataset x every reader
configured for it (default: one ``offline`` reader). The unit hash covers the system's unit hash
(its params, embedding/LLM models), the reader's params and its identity (model, prompt hash).
An answer needs its system's ``retrievals`` row for the question: missing, failed or stale (another
config hash) => the answer unit fails with "upstream retrieval ...", never an empty-context answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import pyarrow as pa

from pipeline.config.identity import endpoint_settings
from pipeline.config.model import BenchmarkConfig, ComponentConfig
from pipeline.config.specs import Benchmark, ComponentSpec
from pipeline.core.records import QuestionRow
from pipeline.core.status import STATUS_FAILED, STATUS_OK
from pipeline.core.units import base_system, cutoff_of, repeat_unit
from pipeline.llm.identity import asked_model, hash_extras, llm_fields, price_identity
from pipeline.llm.protocol import NOT_ATTEMPTED
from pipeline.memory.base import MemorySystem, RetrievalResult
from pipeline.memory.cutoffs import reading_systems
from pipeline.memory.systems import system_specs
from pipeline.readers.base import (
    Answer,
    Reader,
    ReaderConfigError,
    ReaderDeps,
    ReadInput,
    retrieval_from_row,
    units_column,
)
from pipeline.run.stage import UnitResult, UnitSpec, WorkItem, timed
from pipeline.store.corpus import Corpus
from pipeline.store.results import ResultStore
from pipeline.util.parallel import parallel_map

RETRIEVALS = "retrievals"
# questions whose inputs a batching reader (``prefetch``) sees at once: bounds what a killed run
# recomputes (answers are written per question) and the memory the chunk's retrievals hold. 128:
# the offline reader's sentences are embedded one call per chunk, and per-call costs (and lanes
# waiting for each other) weigh on small calls. Answers stage of configs/shared.yaml, replayed
# (19,787 new sentences): 32 -> 59.3 s (27.1 s in the model), 64 -> 56.2 s, 128 -> 53.6 s (23.0 s),
# 256 -> 54.8 s; peak RSS 1.87 / 1.82 / 1.76 / 1.76 GB.
PREFETCH_QUESTIONS = 128
Log = Callable[[str], None]
# the resolved benchmark as the readers see it (pipeline/config/specs.py; judges unknown here)
ReaderBenchmark = Benchmark[type[MemorySystem], type[Reader], Any]


def configured_readers(bench: ReaderBenchmark, dataset: str | None = None) -> list[ComponentConfig]:
    """The run's readers (``readers:`` or the default offline reader), optionally for one dataset."""
    return [r.config for r in bench.readers_for(dataset)]


@dataclass(frozen=True)
class AnswerUnit:
    """One (memory system, reader) pair for a dataset, with the hashes that identify it."""

    system: str
    system_hash: str
    reader: ComponentConfig
    spec: UnitSpec
    repeat: int = 1  # r of the reader's ``repeats``: unit "<system>/<reader>~<r>" for r >= 2
    settings: Mapping[str, Any] = field(default_factory=dict)  # identity inputs by config path (the manifest's)


def _hash(parts: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def reader_identity(entry: ComponentSpec[type[Reader]], cfg: BenchmarkConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(hash parts, settings) of a reader entry: its kind and params, its ``identity`` (models,
    prompts), the ``llm:`` settings its calls take when they differ from their defaults
    (pipeline/llm/identity.py) and the price of its model (answers store a cost)."""
    params = entry.params_json()
    parts: dict[str, Any] = {"reader": [entry.kind, params], "identity": entry.impl.identity(entry.config.params, cfg)}
    settings: dict[str, Any] = {
        f"readers[{entry.name}].kind": entry.kind,
        f"readers[{entry.name}].params": params,
        f"readers[{entry.name}] identity (models, prompts)": parts["identity"],
    }
    if getattr(entry.impl, "uses_llm", False) and cfg.llm is not None:
        fields = llm_fields(entry.impl, params)
        extras = hash_extras(cfg.llm, fields, ())
        if extras:
            parts["llm"] = extras
        settings.update(endpoint_settings("llm", cfg.llm, fields))
        price = price_identity(cfg, asked_model(params, cfg.llm))
        parts.update(price)
        settings[f"readers[{entry.name}] price"] = price.get("price")
    return parts, settings


def answer_units(bench: ReaderBenchmark, dataset: str) -> list[AnswerUnit]:
    """Every "<system>/<reader>" unit of ``dataset`` (from the resolved benchmark alone; computed
    once per benchmark object and dataset)."""

    def build() -> tuple[AnswerUnit, ...]:
        units = []
        systems = {s.name: s.settings for s in system_specs(bench, dataset)}
        for system, system_hash in reading_systems(bench, dataset):  # each system and its cut-offs
            for entry in bench.readers_for(dataset):
                base, settings = reader_identity(entry, bench.config)
                base = {"system": system_hash, **base}
                for r in range(1, entry.config.repeats + 1):
                    h = _hash(base if r == 1 else {**base, "repeat": r})
                    spec = UnitSpec(repeat_unit(f"{system}/{entry.name}", r), h)
                    unit_settings = {**systems[base_system(system)], **settings, f"readers[{entry.name}].repeat": r}
                    if cutoff_of(system) is not None:
                        unit_settings[f"memory_systems[{base_system(system)}] cut-off"] = cutoff_of(system)
                    units.append(AnswerUnit(system, system_hash, entry.config, spec, r, unit_settings))
        return tuple(units)

    return list(bench.derived(("answer_units", dataset), build))


def build_readers(bench: ReaderBenchmark, deps: ReaderDeps) -> dict[str, Reader]:
    """Instantiate every configured reader once with its parsed params: what the config alone
    cannot tell (a missing model folder, no LLM client) fails the run at its start."""
    readers = {}
    for entry in bench.readers:
        try:
            readers[entry.name] = entry.impl(entry.params, deps)
        except Exception as exc:
            raise ReaderConfigError(f"reader {entry.name!r} (kind {entry.kind!r}): {exc}") from exc
    return readers


def needs(bench: ReaderBenchmark) -> tuple[bool, bool]:
    """(needs an encoder, needs an LLM) over the configured readers."""
    classes = [r.impl for r in bench.readers]
    return any(c.uses_encoder for c in classes), any(c.uses_llm for c in classes)


def answer_payload(unit: AnswerUnit, reader: Reader, answer: Answer, context_tokens: int) -> dict[str, Any]:
    """One ``answers`` row's payload (ANSWERS_PAYLOAD columns)."""
    return {
        "system": unit.system,
        "reader": unit.reader.name,
        "reader_kind": unit.reader.kind,
        "label": reader.label,
        "model": answer.model,
        "prediction": answer.prediction,
        "predicted_index": answer.predicted_index,
        "invalid": answer.invalid,
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "latency_s": answer.latency_s,
        "cache_hit": answer.cache_hit,
        "cost_usd": answer.cost_usd,
        "context_tokens": context_tokens,
        "tool_calls": answer.tool_calls,
        "llm_calls": answer.llm_calls,
        "capped": answer.capped,
        "agent_trace": answer.agent_trace,
    }


def rows_by_unit(table: pa.Table | None, record_hash: str | None = None) -> dict[str, dict[str, Any]]:
    """A stage partition's rows keyed by unit (empty when the partition file does not exist).

    A row computed from another version of the question's record (``record_hash`` differs) is
    returned as failed-stale, so nothing downstream is computed from an outdated upstream row.
    """
    return keyed_rows([] if table is None else table.to_pylist(), record_hash)


def retrieval_rows(table: pa.Table | None, record_hash: str | None = None) -> dict[str, dict[str, Any]]:
    """``rows_by_unit`` of a ``retrievals`` partition, its ``units`` already RetrievedUnit tuples
    (``units_column``: the per-row dict conversion was ~8 s of the answers stage)."""
    if table is None or "units" not in table.column_names:
        return rows_by_unit(table, record_hash)
    rows = table.drop_columns(["units"]).to_pylist()
    for row, units in zip(rows, units_column(table.column("units")), strict=True):
        row["units"] = units
    return keyed_rows(rows, record_hash)


def keyed_rows(table_rows: list[dict[str, Any]], record_hash: str | None) -> dict[str, dict[str, Any]]:
    """Rows keyed by unit; rows of another record version become failed-stale (``rows_by_unit``)."""
    rows = {r["unit"]: r for r in table_rows}
    if record_hash:
        for unit, r in rows.items():
            if r.get("record_hash") not in (None, record_hash):
                stale = "stale: computed from an earlier version of this question's record; run its stage again"
                rows[unit] = {**r, "status": STATUS_FAILED, "error": stale}
    return rows


def upstream_error(
    row: dict[str, Any] | None, *, unit: str, expected_hash: str, prefix: str, stage: str, key: str
) -> str | None:
    """Why an upstream row cannot be used (missing, failed, stale), or None when it is usable.

    ``prefix`` starts the message ("upstream retrieval", "answer"): "<prefix> failed: <error>".
    """
    if row is None:
        return f"{prefix} missing: no {unit!r} row in {stage} for {key}"
    if row["status"] != STATUS_OK:
        error = str(row["error"])
        return f"{prefix} {error}" if error.startswith(NOT_ATTEMPTED) else f"{prefix} failed: {error}"
    if row["unit_hash"] != expected_hash:
        return (
            f"{prefix} stale: {unit!r} row in {stage} has unit hash {row['unit_hash']}, "
            f"the current config expects {expected_hash}; materialize {stage} again"
        )
    return None


class AnswerRun:
    """Answers the pending units of a list of questions; yields each question as it finishes."""

    def __init__(
        self,
        store: ResultStore,
        bench: ReaderBenchmark,
        readers: dict[str, Reader],
        *,
        max_workers: int = 1,
        log: Log = lambda _msg: None,
    ) -> None:
        self.store = store
        self.bench = bench
        self.readers = readers
        self.max_workers = max_workers
        self.log = log
        self._corpora: dict[str, Corpus] = {}
        self._units: dict[str, dict[str, AnswerUnit]] = {}
        self._locks = {name: threading.Lock() for name, r in readers.items() if not r.thread_safe}
        # (partition key, system) -> the retrieval built for the chunk's prefetch, reused by its answers
        self._retrievals: dict[tuple[str, str], RetrievalResult] = {}

    def units_for(self, dataset: str) -> list[UnitSpec]:
        return [u.spec for u in self._dataset_units(dataset).values()]

    def _dataset_units(self, dataset: str) -> dict[str, AnswerUnit]:
        if dataset not in self._units:
            self._units[dataset] = {u.spec.unit: u for u in answer_units(self.bench, dataset)}
        return self._units[dataset]

    def corpus(self, dataset: str) -> Corpus:
        """Questions and sessions only (session dates for the offline reader); loaded once."""
        if dataset not in self._corpora:
            tables = {t: self.store.read_canonical(dataset, t) for t in ("questions", "sessions")}
            missing = [t for t, v in tables.items() if v is None]
            if missing:
                raise FileNotFoundError(f"dataset {dataset!r}: canonical table(s) {missing} missing")
            self._corpora[dataset] = Corpus(dataset, {k: v for k, v in tables.items() if v is not None})
        return self._corpora[dataset]

    def compute(self, items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
        for dataset in sorted({i.dataset for i in items}):
            self.corpus(dataset)  # load before threads start
            self._dataset_units(dataset)
        if self.max_workers <= 1:
            for start in range(0, len(items), PREFETCH_QUESTIONS):
                chunk = items[start : start + PREFETCH_QUESTIONS]
                rows: dict[str, dict[str, dict[str, Any]]] = {}
                for i in chunk:  # read once for prefetch and answers; a bad file fails in answer_item
                    with contextlib.suppress(Exception):
                        rows[i.partition_key] = self._retrieval_rows(i)
                self._prefetch(chunk, rows)
                for item in chunk:
                    answer = partial(self.answer_item, rows=rows.get(item.partition_key))
                    yield item.partition_key, guarded(answer, item)
            return
        work = partial(guarded, self.answer_item)
        for item, results in parallel_map(work, items, self.max_workers, "answers"):
            yield item.partition_key, results

    def _retrieval_rows(self, item: WorkItem) -> dict[str, dict[str, Any]]:
        return retrieval_rows(self.store.read_partition(RETRIEVALS, item.partition_key), item.record_hash)

    def _prefetch(self, chunk: list[WorkItem], rows_of: Mapping[str, dict[str, dict[str, Any]]]) -> None:
        """Let readers that batch their work (``prefetch``) see a chunk's inputs first.

        Only a speed-up: an error here is logged and ignored, and each answer is then computed
        (or fails) on its own, per question, as without it.
        """
        inputs: dict[str, list[ReadInput]] = {}
        self._retrievals.clear()
        try:
            for item in chunk:
                if item.partition_key not in rows_of:
                    continue
                corpus = self.corpus(item.dataset)
                question = corpus.question(item.partition_key)
                rows = rows_of[item.partition_key]
                units = self._dataset_units(item.dataset)
                for spec in item.units:
                    unit = units[spec.unit]
                    row = rows.get(unit.system)
                    if row is None or row["status"] != STATUS_OK or row["unit_hash"] != unit.system_hash:
                        continue
                    key = (item.partition_key, unit.system)
                    if key not in self._retrievals:  # one per (question, system), whatever the readers
                        self._retrievals[key] = retrieval_from_row(row)
                    retrieval = self._retrievals[key]
                    inputs.setdefault(unit.reader.name, []).append(ReadInput(question, retrieval, repeat=unit.repeat))
            for name, batch in inputs.items():
                prefetch = getattr(self.readers[name], "prefetch", None)
                if prefetch is not None:
                    with self._locks.get(name) or nullcontext():
                        prefetch(batch)
        except Exception as exc:  # a failed speed-up must not fail the answers
            self.log(f"answers: prefetch of {len(chunk)} questions failed ({type(exc).__name__}: {exc}); one by one")

    def answer_item(self, item: WorkItem, rows: dict[str, dict[str, Any]] | None = None) -> list[UnitResult]:
        """``rows``: the question's retrieval rows when already read (the serial path's chunk)."""
        corpus = self.corpus(item.dataset)
        question = corpus.question(item.partition_key)
        if rows is None:
            rows = self._retrieval_rows(item)
        units = self._dataset_units(item.dataset)
        return [self.answer_unit(units[s.unit], s, question, rows, corpus) for s in item.units]

    def answer_unit(
        self,
        unit: AnswerUnit,
        spec: UnitSpec,
        question: QuestionRow,
        rows: dict[str, dict[str, Any]],
        corpus: Corpus,
    ) -> UnitResult:
        row = rows.get(unit.system)
        error = upstream_error(
            row,
            unit=unit.system,
            expected_hash=unit.system_hash,
            prefix="upstream retrieval",
            stage=RETRIEVALS,
            key=question.partition_key,
        )
        if error is not None or row is None:
            return UnitResult.failed(spec, error or "upstream retrieval missing")
        retrieval = self._retrievals.pop((question.partition_key, unit.system), None) or retrieval_from_row(row)
        dates = session_dates(corpus, [u.session_key for u in retrieval.units])
        reader = self.readers[unit.reader.name]
        lock = self._locks.get(unit.reader.name) or nullcontext()

        def run() -> dict[str, Any]:
            with lock:
                start = time.monotonic()
                answer = reader.answer(ReadInput(question, retrieval, dates, unit.repeat, unit.system))
                if answer.latency_s is None:  # offline readers: the time spent answering
                    answer = replace(answer, latency_s=time.monotonic() - start)
            return answer_payload(unit, reader, answer, retrieval.context_tokens)

        return timed(run, spec)


def session_dates(corpus: Corpus, session_keys: list[str]) -> dict[str, str | None]:
    """session_key -> raw session date, for the keys the corpus knows."""
    dates: dict[str, str | None] = {}
    for key in session_keys:
        try:
            dates[key] = corpus.session(key).datetime_raw
        except KeyError:
            continue
    return dates


def guarded(fn: Callable[[WorkItem], list[UnitResult]], item: WorkItem) -> list[UnitResult]:
    """``fn(item)``; an unexpected error fails that question's units only (the others go on)."""
    try:
        return fn(item)
    except Exception as exc:
        return [UnitResult.failed(u, f"{type(exc).__name__}: {exc}") for u in item.units]
