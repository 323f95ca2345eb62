"""Ingestion: build each (memory system, haystack) memory session by session, resumably.

Why here and not in the asset: the logic (resume at the first unfinished session, one ingestion
shared by every question of a haystack, failure = error row with the progress reached) must be
testable without Dagster. ``assets/ingestion.py`` only wires resources to ``ingestion_results``.

Flow per (system, haystack): load the checkpoint (pipeline.memory.checkpoint); if it belongs to
the same unit hash and haystack, ``restore`` its units and continue at ``sessions_completed``;
feed the remaining sessions in time order to ``ingest_session``; persist the units as configured
(pipeline.memory.systems.checkpoint_every) and always at the end and before reporting a failure.
A session that appears twice in one haystack (same content key, a LongMemEval_S quirk) is
ingested once: its turn ids would otherwise collide.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.core.status import STATUS_FAILED, STATUS_OK
from pipeline.memory.base import MemoryDeps, MemorySystem, MemoryUnit
from pipeline.memory.checkpoint import (
    Checkpoint,
    CheckpointState,
    checkpoint_lock,
    checkpoint_path,
    haystack_fingerprint,
    load,
    save,
)
from pipeline.memory.systems import MemoryBenchmark, SystemSpec, checkpoint_every, filter_roles, system_specs
from pipeline.run.stage import UnitResult, UnitSpec, WorkItem
from pipeline.store.corpus import Corpus, HaystackSession
from pipeline.store.results import ResultStore
from pipeline.util.parallel import parallel_map

Log = Callable[[str], None]


class IngestionError(RuntimeError):
    """A session could not be ingested (its message names the session)."""


@dataclass(frozen=True)
class IngestOutcome:
    """The state of one (system, haystack) memory after an ingestion attempt."""

    system: str
    system_kind: str
    haystack_id: str
    sessions_completed: int
    sessions_total: int
    units: int
    ingest_seconds: float  # cumulative over every run that worked on this memory
    run_seconds: float  # spent by this attempt
    resumed_from: int  # sessions already done when this attempt started
    error: str | None = None

    def payload(self) -> dict[str, Any]:
        """The INGESTION_PAYLOAD columns."""
        return {
            "system_kind": self.system_kind,
            "haystack_id": self.haystack_id,
            "sessions_completed": self.sessions_completed,
            "sessions_total": self.sessions_total,
            "next_session": self.sessions_completed,
            "units": self.units,
            "ingest_seconds": self.ingest_seconds,
        }


@dataclass
class _Progress:
    """Mutable state of one ingestion attempt: ``completed`` sessions so far (the state's count is
    set when a checkpoint is taken, not per session: a ``replace`` per session cost more than
    ingesting one into a flat memory)."""

    state: CheckpointState
    units: list[MemoryUnit]
    started: float
    completed: int

    def checkpoint(self) -> Checkpoint:
        spent = time.monotonic() - self.started
        state = replace(self.state, sessions_completed=self.completed, ingest_seconds=self.state.ingest_seconds + spent)
        return Checkpoint(state, self.units)


def _validate(added: list[MemoryUnit], haystack_id: str, hs: HaystackSession, seen: set[str]) -> None:
    """A system's units must belong to this haystack and session and have new, unique ids."""
    for u in added:
        if u.haystack_id != haystack_id or u.session_key != hs.session.session_key:
            raise IngestionError(
                f"unit {u.unit_id!r} claims haystack {u.haystack_id!r} / session {u.session_key!r}, "
                f"but was added by session {hs.session.session_key!r} of haystack {haystack_id!r}"
            )
        if u.unit_id in seen:
            raise IngestionError(f"duplicate unit id {u.unit_id!r} in haystack {haystack_id!r}")
        seen.add(u.unit_id)


def _start_state(spec: SystemSpec, haystack_id: str, path: Path, keys: list[str], log: Log) -> Checkpoint:
    fresh = CheckpointState(spec.name, spec.kind, spec.unit_hash, haystack_fingerprint(keys), 0, len(keys), 0.0)
    found = load(path)
    if found is None:
        return Checkpoint(fresh)
    s = found.state
    if (s.unit_hash, s.fingerprint, s.sessions_total) != (fresh.unit_hash, fresh.fingerprint, len(keys)):
        log(f"{spec.name}/{haystack_id}: checkpoint is for another config or haystack version; starting over")
        return Checkpoint(fresh)
    return found


def ingest_haystack(
    spec: SystemSpec,
    build: Callable[[], MemorySystem],
    haystack_id: str,
    sessions: list[HaystackSession],
    path: Path,
    log: Log = lambda _m: None,
) -> IngestOutcome:
    """Bring the memory of ``spec`` for one haystack up to date; never raises for a bad session.

    ``sessions`` are in time order and already filtered to the dataset's index roles.
    """
    keys = [hs.session.session_key for hs in sessions]
    if not sessions:
        raise IngestionError(f"haystack {haystack_id!r} has no sessions")
    start = _start_state(spec, haystack_id, path, keys, log)
    done = start.state.sessions_completed
    progress = _Progress(start.state, list(start.units), time.monotonic(), done)

    def outcome(error: str | None = None) -> IngestOutcome:
        """Persist the progress and report exactly what was persisted."""
        ck = progress.checkpoint()
        save(path, ck)
        return IngestOutcome(
            spec.name, spec.kind, haystack_id, ck.state.sessions_completed, ck.state.sessions_total,
            len(ck.units), ck.state.ingest_seconds, time.monotonic() - progress.started, done, error,
        )  # fmt: skip

    if start.state.complete:  # nothing to do: report the stored state, spend no time on it
        s = start.state
        return IngestOutcome(
            spec.name, spec.kind, haystack_id, s.sessions_completed, s.sessions_total, len(start.units),
            s.ingest_seconds, 0.0, s.sessions_completed,
        )  # fmt: skip
    if done:
        log(f"{spec.name}/{haystack_id}: resuming at session {done} of {len(keys)}")
    try:
        system = build()
        if done:
            system.restore(list(start.units))
    except Exception as exc:  # recorded as the unit's failure
        return outcome(f"could not build/restore the memory: {type(exc).__name__}: {exc}")
    every = checkpoint_every(spec.cls)
    seen_ids = {u.unit_id for u in progress.units}
    earlier = set(keys[:done])
    for i in range(done, len(sessions)):
        hs = sessions[i]
        if hs.session.session_key not in earlier:
            earlier.add(hs.session.session_key)
            try:
                added = system.ingest_session(haystack_id, hs)
                _validate(added, haystack_id, hs, seen_ids)
            except Exception as exc:  # recorded as the unit's failure, progress kept
                where = f"session {i} ({hs.session.source_session_id!r}) of {len(sessions)}"
                return outcome(f"ingestion stopped at {where}: {type(exc).__name__}: {exc}")
            progress.units.extend(added)
        progress.completed = i + 1
        if every and (i + 1) % every == 0:
            save(path, progress.checkpoint())
    return outcome()


# ---- the stage: questions grouped by haystack ---------------------------------------------------
@dataclass
class MemoryRun:
    """What the ingestion and retrieval stages share: store, benchmark, deps, corpora (loaded once)."""

    store: ResultStore
    bench: MemoryBenchmark
    deps: MemoryDeps
    log: Log = lambda _m: None
    workers: int = 1  # haystacks ingested in parallel (LLM systems); 1 = sequential
    _corpora: dict[str, Corpus] | None = None
    # the last haystack's sessions, ((dataset, haystack_id), sessions): every system of a group reads
    # the same sessions, built once (one tuple, so a thread reads a matching pair or rebuilds)
    _last_haystack: tuple[tuple[str, str], list[HaystackSession]] | None = None

    def corpus(self, dataset: str) -> Corpus:
        if self._corpora is None:
            self._corpora = {}
        if dataset not in self._corpora:  # turns of the roles the memories index only (filter_roles keeps no others)
            roles = self.bench.config.dataset(dataset).index_roles
            self._corpora[dataset] = Corpus.load(self.store, dataset, roles)
        return self._corpora[dataset]

    def specs(self, dataset: str) -> dict[str, SystemSpec]:
        return {s.name: s for s in system_specs(self.bench, dataset)}

    def sessions(self, spec: SystemSpec, dataset: str, haystack_id: str) -> list[HaystackSession]:
        """The haystack's sessions with the turns of ``spec.index_roles`` only.

        Why the check before ``filter_roles``: the corpus holds the dataset's ``index_roles`` turns
        only, the roles every system indexes, so filtering again rebuilt each session unchanged.
        """
        corpus = self.corpus(dataset)
        sessions = self.haystack(dataset, haystack_id)
        kept = corpus.turn_roles
        if spec.index_roles is not None and kept is not None and set(kept) <= set(spec.index_roles):
            return sessions
        return filter_roles(sessions, spec.index_roles)

    def haystack(self, dataset: str, haystack_id: str) -> list[HaystackSession]:
        """The haystack's sessions, built once for all the systems that ingest it in a row."""
        last = self._last_haystack
        if last is not None and last[0] == (dataset, haystack_id):
            return last[1]
        sessions = self.corpus(dataset).haystack(haystack_id)
        self._last_haystack = ((dataset, haystack_id), sessions)
        return sessions

    def path(self, spec: SystemSpec, dataset: str, haystack_id: str) -> Path:
        return checkpoint_path(self.store, spec.name, dataset, haystack_id)


def units_for(bench: MemoryBenchmark) -> Callable[[str], list[UnitSpec]]:
    """QuestionStage's ``units_for``: one unit per memory system configured for the dataset."""
    return lambda dataset: [s.unit() for s in system_specs(bench, dataset)]


def haystack_groups(run: MemoryRun, items: list[WorkItem]) -> dict[tuple[str, str], list[WorkItem]]:
    """Work items grouped by (dataset, haystack_id), in first-seen order."""
    groups: dict[tuple[str, str], list[WorkItem]] = defaultdict(list)
    for item in items:
        haystack_id = run.corpus(item.dataset).question(item.partition_key).haystack_id
        groups[(item.dataset, haystack_id)].append(item)
    return groups


def _unit_result(unit: UnitSpec, o: IngestOutcome, share: float) -> UnitResult:
    status = STATUS_OK if o.error is None else STATUS_FAILED
    return UnitResult(unit.unit, unit.unit_hash, status, o.error, share, o.payload())


def _ingest_unit(run: MemoryRun, spec: SystemSpec, dataset: str, haystack_id: str) -> IngestOutcome:
    try:
        sessions = run.sessions(spec, dataset, haystack_id)
        path = run.path(spec, dataset, haystack_id)
        with checkpoint_lock(path):  # a concurrent run waits, then resumes from it
            return ingest_haystack(spec, lambda: spec.build(run.deps), haystack_id, sessions, path, run.log)
    except Exception as exc:  # e.g. missing haystack / build error: the unit fails
        msg = f"{type(exc).__name__}: {exc}"
        return IngestOutcome(spec.name, spec.kind, haystack_id, 0, 0, 0, 0.0, 0.0, 0, msg)


def _ingest_group(run: MemoryRun, dataset: str, haystack_id: str, group: list[WorkItem]) -> dict[str, IngestOutcome]:
    """Ingest the haystack into every system some question of the group still needs."""
    specs = run.specs(dataset)
    needed = list(dict.fromkeys(u.unit for item in group for u in item.units))
    outcomes = {name: _ingest_unit(run, specs[name], dataset, haystack_id) for name in needed}
    for name, o in outcomes.items():
        if o.error:
            run.log(f"ingestion {name}/{haystack_id} failed: {o.error}")
    return outcomes


def _group_rows(group: list[WorkItem], outcomes: dict[str, IngestOutcome]) -> Iterator[tuple[str, list[UnitResult]]]:
    users = {name: sum(any(u.unit == name for u in i.units) for i in group) for name in outcomes}
    for item in group:
        shares = {u.unit: outcomes[u.unit].run_seconds / users[u.unit] for u in item.units}
        yield item.partition_key, [_unit_result(u, outcomes[u.unit], shares[u.unit]) for u in item.units]


def ingestion_results(run: MemoryRun, items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
    """QuestionStage ``compute``: ingest each (system, haystack) once, then report every question.

    With ``run.workers`` > 1 (LLM systems: the LLM's ``max_concurrency``) haystacks are ingested
    in parallel threads; sessions of one haystack always go in order. Rows are yielded in the
    main thread as each haystack finishes, so the stage driver persists them at once.
    A question's ``duration_s`` is its share of this run's ingestion time of that haystack (so the
    stage total is the true total); ``ingest_seconds`` holds the haystack's full cumulative cost.
    """
    groups = haystack_groups(run, items)
    for (dataset, haystack_id), _ in groups.items():  # load lazily-cached corpus data before threads start
        run.corpus(dataset).check_haystack(haystack_id)
    if run.workers <= 1:
        for (dataset, haystack_id), group in groups.items():
            yield from _group_rows(group, _ingest_group(run, dataset, haystack_id, group))
        return

    def ingest(entry: tuple[tuple[str, str], list[WorkItem]]) -> dict[str, IngestOutcome]:
        (dataset, haystack_id), group = entry
        return _ingest_group(run, dataset, haystack_id, group)

    for (_, group), outcomes in parallel_map(ingest, list(groups.items()), run.workers, "ingest"):
        yield from _group_rows(group, outcomes)
