"""Ingestion: resume at the session where a run stopped, once per haystack, failures as rows."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig
from pipeline.core.records import QuestionRow
from pipeline.kinds.resolve import resolve_config
from pipeline.memory.base import Encoder, MemoryDeps, MemoryUnit
from pipeline.memory.checkpoint import CHECKPOINT_LOCKS, checkpoint_path, load
from pipeline.memory.ingest import IngestionError, MemoryRun, ingest_haystack, ingestion_results, units_for
from pipeline.memory.rag import RagMemory
from pipeline.memory.retrieve import retrieval_results
from pipeline.memory.summaries import NO_SUMMARIES
from pipeline.memory.systems import SystemSpec, checkpoint_every, system_specs
from pipeline.run.stage import WorkItem
from pipeline.store.corpus import HaystackSession
from pipeline.store.results import ResultStore
from pipeline.util.filelock import keyed_locks_available
from tests.support.memory import DATASET, HAYSTACK, build_haystack, encoder, question, write_toy_dataset


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


class Stop(Exception):
    """The simulated failure inside a session."""


class RecordingRag(RagMemory):
    """The real rag memory, recording which sessions it was fed and failing on demand."""

    calls: list[int]
    fail_at: int | None = None
    interrupt: type[BaseException] = Stop

    def __init__(self, params: dict[str, Any], deps: MemoryDeps) -> None:
        super().__init__(params, deps)
        self.calls = []

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        self.calls.append(session.position)
        if session.position == self.fail_at:
            raise self.interrupt(f"simulated stop at session {session.position}")
        return super().ingest_session(haystack_id, session)


class PerSessionRag(RecordingRag):
    checkpoint_every = 1


def spec_for(cls: type, unit_hash: str = "h1") -> SystemSpec:
    return SystemSpec.from_class(ComponentConfig(name="rag", kind="rag"), cls, unit_hash, None)


def make(cls: type[RecordingRag], enc: Encoder, fail_at: int | None, instances: list[RecordingRag]) -> Any:
    def build() -> RecordingRag:
        system = cls({}, MemoryDeps(enc))
        system.fail_at = fail_at
        instances.append(system)
        return system

    return build


def test_checkpoint_policy() -> None:
    from pipeline.memory.full_context import FullContextMemory
    from pipeline.memory.notes import NotesMemory

    assert checkpoint_every(NotesMemory) == 1  # LLM sessions are persisted one by one
    assert checkpoint_every(RagMemory) == 0 and checkpoint_every(FullContextMemory) == 0
    assert checkpoint_every(PerSessionRag) == 1


@pytest.mark.parametrize("k", [1, 2])
def test_failure_at_session_k_resumes_at_k(enc: Encoder, tmp_path: Path, k: int) -> None:
    sessions = build_haystack()
    path = tmp_path / "memory.parquet"
    runs: list[RecordingRag] = []
    first = ingest_haystack(spec_for(RecordingRag), make(RecordingRag, enc, k, runs), HAYSTACK, sessions, path)
    assert (
        first.error == f"ingestion stopped at session {k} ('session_{k + 1}') of 3: Stop: simulated stop at session {k}"
    )
    assert (first.sessions_completed, first.payload()["next_session"], first.sessions_total) == (k, k, 3)
    assert runs[0].calls == list(range(k + 1))

    second = ingest_haystack(spec_for(RecordingRag), make(RecordingRag, enc, None, runs), HAYSTACK, sessions, path)
    assert second.error is None and second.resumed_from == k
    assert runs[1].calls == list(range(k, 3))  # started at session k, not at 0

    reference = tmp_path / "uninterrupted.parquet"
    ingest_haystack(spec_for(RecordingRag), make(RecordingRag, enc, None, runs), HAYSTACK, sessions, reference)
    resumed, clean = load(path), load(reference)
    assert resumed is not None and clean is not None
    assert resumed.units == clean.units and len(clean.units) == 11
    assert resumed.state.sessions_completed == 3


def test_completed_memory_is_not_ingested_again(enc: Encoder, tmp_path: Path) -> None:
    path, runs = tmp_path / "m.parquet", []
    ingest_haystack(spec_for(RecordingRag), make(RecordingRag, enc, None, runs), HAYSTACK, build_haystack(), path)
    again = ingest_haystack(
        spec_for(RecordingRag), make(RecordingRag, enc, None, runs), HAYSTACK, build_haystack(), path
    )
    assert again.error is None and again.resumed_from == 3 and len(runs) == 1  # no system even built


def test_hard_kill_keeps_per_session_checkpoints_only(enc: Encoder, tmp_path: Path) -> None:
    """A kill (no except handler runs) loses nothing of a per-session system; a cheap one restarts."""
    for cls, expected_start in ((PerSessionRag, 2), (RecordingRag, 0)):
        cls.interrupt = KeyboardInterrupt
        path, runs = tmp_path / f"{cls.__name__}.parquet", []
        try:
            with pytest.raises(KeyboardInterrupt):
                ingest_haystack(spec_for(cls), make(cls, enc, 2, runs), HAYSTACK, build_haystack(), path)
        finally:
            cls.interrupt = Stop
        outcome = ingest_haystack(spec_for(cls), make(cls, enc, None, runs), HAYSTACK, build_haystack(), path)
        assert outcome.resumed_from == expected_start and runs[-1].calls == list(range(expected_start, 3))


def test_changed_config_restarts_from_zero(enc: Encoder, tmp_path: Path) -> None:
    path, runs = tmp_path / "m.parquet", []
    ingest_haystack(spec_for(RecordingRag, "h1"), make(RecordingRag, enc, 1, runs), HAYSTACK, build_haystack(), path)
    outcome = ingest_haystack(
        spec_for(RecordingRag, "h2"), make(RecordingRag, enc, None, runs), HAYSTACK, build_haystack(), path
    )
    assert outcome.resumed_from == 0 and runs[-1].calls == [0, 1, 2]


def test_repeated_session_is_ingested_once(enc: Encoder, tmp_path: Path) -> None:
    sessions = build_haystack()
    repeated = [*sessions, HaystackSession(3, sessions[0].session, sessions[0].turns)]
    runs: list[RecordingRag] = []
    outcome = ingest_haystack(
        spec_for(RecordingRag), make(RecordingRag, enc, None, runs), HAYSTACK, repeated, tmp_path / "m"
    )
    assert outcome.error is None and outcome.sessions_completed == 4 and outcome.units == 11
    assert runs[0].calls == [0, 1, 2]


def test_empty_haystack_is_an_error(enc: Encoder, tmp_path: Path) -> None:
    with pytest.raises(IngestionError, match="has no sessions"):
        ingest_haystack(spec_for(RecordingRag), make(RecordingRag, enc, None, []), HAYSTACK, [], tmp_path / "m")


# ---- the stages over a result store ------------------------------------------------------------------
QUESTIONS = [
    question("What is the name of Alice's dog?", "q1", 0),
    question("What musical instrument is Alice learning?", "q2", 1),
]


def toy_config(tmp_path: Path, systems: list[ComponentConfig], roles: tuple[str, ...] | None = None) -> BenchmarkConfig:
    return BenchmarkConfig(
        results_dir=str(tmp_path / "results"),
        datasets=(DatasetConfig(name=DATASET, loader="toy", path="-", index_roles=roles),),
        memory_systems=tuple(systems),
    )


def items_for(cfg: BenchmarkConfig, questions: list[QuestionRow]) -> list[WorkItem]:
    units = tuple(units_for(resolve_config(cfg))(DATASET))
    return [WorkItem(q.partition_key, DATASET, q.question_id, units) for q in questions]


def run_stage(run: MemoryRun, stage: str, items: list[WorkItem]) -> dict[str, dict[str, Any]]:
    """Run a stage's compute and store the rows as the QuestionStage would; unit -> row by key."""
    compute = ingestion_results if stage == "ingestion" else retrieval_results
    out: dict[str, dict[str, Any]] = {}
    for key, results in compute(run, items):
        rows = [{"unit": r.unit, "status": r.status, "error": r.error, **r.payload} for r in results]
        run.store.write_partition(stage, key, pa.Table.from_pylist(rows))
        for r in rows:
            out[f"{key}/{r['unit']}"] = r
    return out


def test_stages_share_one_ingestion_per_haystack(enc: Encoder, tmp_path: Path) -> None:
    systems = [
        ComponentConfig(name="rag-3", kind="rag", params={"top_k": 3}),
        ComponentConfig(name="full", kind="full_context", params={"token_budget": 60}),
        ComponentConfig(name="summ", kind="summaries", params={"top_k": 1}),
    ]
    cfg = toy_config(tmp_path, systems)
    store = ResultStore(results_dir=cfg.results_dir)
    write_toy_dataset(store, QUESTIONS, with_summaries=False)
    run = MemoryRun(store, resolve_config(cfg), MemoryDeps(enc))
    items = items_for(cfg, QUESTIONS)

    ingested = run_stage(run, "ingestion", items)
    for q in ("q1", "q2"):
        row = ingested[f"toy__{q}/rag-3"]
        assert (row["status"], row["sessions_completed"], row["sessions_total"], row["next_session"]) == ("ok", 3, 3, 3)
        assert row["units"] == 11 and row["haystack_id"] == HAYSTACK and row["system_kind"] == "rag"
        failed = ingested[f"toy__{q}/summ"]
        assert failed["status"] == "failed" and NO_SUMMARIES in failed["error"]
        assert (failed["sessions_completed"], failed["next_session"]) == (0, 0)
    specs = {s.name: s for s in system_specs(resolve_config(cfg), DATASET)}
    ck = load(checkpoint_path(store, "rag-3", DATASET, HAYSTACK))
    assert ck is not None and ck.state.unit_hash == specs["rag-3"].unit_hash
    if keyed_locks_available():  # the folder's one lock file, no lock file per checkpoint
        path = checkpoint_path(store, "rag-3", DATASET, HAYSTACK)
        assert sorted(p.name for p in path.parent.iterdir()) == sorted([CHECKPOINT_LOCKS, path.name])

    retrieved = run_stage(run, "retrievals", items)
    q1 = retrieved["toy__q1/rag-3"]
    assert q1["status"] == "ok" and q1["units"][0]["unit_id"] == "s0:0" and len(q1["units"]) == 3
    assert q1["units"][0]["turn_ids"] == ["s0:0"] and q1["units"][0]["semantic"] > 0
    assert q1["retrieval_latency_s"] > 0 and "Biscuit" in q1["context"]
    assert json.loads(q1["notes"])["memory_units"] == 11
    assert retrieved["toy__q2/rag-3"]["units"][0]["unit_id"] == "s2:0"
    full = retrieved["toy__q1/full"]
    assert full["status"] == "ok" and full["trimmed_units"] > 0 and full["context_tokens"] <= 60
    summ = retrieved["toy__q1/summ"]
    assert summ["status"] == "failed"
    assert "ingestion of 'summ'" in summ["error"] and "upstream error: ingestion stopped at session 0" in summ["error"]
    assert NO_SUMMARIES in summ["error"]


def test_retrieval_without_ingestion_fails_clearly(enc: Encoder, tmp_path: Path) -> None:
    cfg = toy_config(tmp_path, [ComponentConfig(name="rag", kind="rag")])
    store = ResultStore(results_dir=cfg.results_dir)
    write_toy_dataset(store, QUESTIONS)
    rows = run_stage(
        MemoryRun(store, resolve_config(cfg), MemoryDeps(enc)), "retrievals", items_for(cfg, QUESTIONS[:1])
    )
    assert rows["toy__q1/rag"]["status"] == "failed"
    assert "no ingestion checkpoint (materialize `ingestion` first)" in rows["toy__q1/rag"]["error"]


def test_index_roles_and_unit_hash(enc: Encoder, tmp_path: Path) -> None:
    systems = [ComponentConfig(name="rag", kind="rag", params={"top_k": 20})]
    all_roles, users = toy_config(tmp_path, systems), toy_config(tmp_path, systems, roles=("user",))
    assert (
        units_for(resolve_config(all_roles))(DATASET)[0].unit_hash
        != units_for(resolve_config(users))(DATASET)[0].unit_hash
    )
    store = ResultStore(results_dir=users.results_dir)
    write_toy_dataset(store, QUESTIONS)
    run = MemoryRun(store, resolve_config(users), MemoryDeps(enc))
    ingested = run_stage(run, "ingestion", items_for(users, QUESTIONS[:1]))
    assert ingested["toy__q1/rag"]["units"] == 6  # Alice's (user) turns only
    rows = run_stage(run, "retrievals", items_for(users, QUESTIONS[:1]))
    user_turns = {"s0:0", "s0:2", "s1:0", "s1:2", "s2:0", "s2:2"}
    assert {u["unit_id"] for u in rows["toy__q1/rag"]["units"]} == user_turns
    corpus = run.corpus(DATASET)  # the stages' corpus holds the indexed roles' turns only
    assert corpus.turn_roles == ("user",) and {t.turn_id for t in corpus.turns("s0")} == {"s0:0", "s0:2"}


def test_the_systems_of_a_haystack_share_its_sessions(enc: Encoder, tmp_path: Path) -> None:
    """Built once per haystack, not per system, and not filtered again when the corpus holds the
    indexed roles only; a system indexing other roles still gets only its roles' turns."""
    systems = [ComponentConfig(name="rag", kind="rag"), ComponentConfig(name="full", kind="full_context")]
    cfg = toy_config(tmp_path, systems, roles=("user",))
    store = ResultStore(results_dir=cfg.results_dir)
    write_toy_dataset(store, QUESTIONS)
    run = MemoryRun(store, resolve_config(cfg), MemoryDeps(enc))
    rag, full = system_specs(resolve_config(cfg), DATASET)
    sessions = run.sessions(rag, DATASET, HAYSTACK)
    assert run.sessions(full, DATASET, HAYSTACK) is sessions
    assert sessions == run.corpus(DATASET).haystack(HAYSTACK)
    assert {t.role for hs in sessions for t in hs.turns} == {"user"}
    other = run.sessions(replace(full, index_roles=("assistant",)), DATASET, HAYSTACK)
    assert [hs.session for hs in other] == [hs.session for hs in sessions]
    assert all(hs.turns == () for hs in other)
