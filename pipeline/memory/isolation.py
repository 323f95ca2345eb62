"""The isolation canary: a fact ingested into one haystack must never come back in another's retrieval.

Why: membench builds one memory per haystack and asks each only its own questions; a memory
product or an MCP server that keeps one store per process, per user id or per file can answer a
question of conversation B from conversation A's memories, and the benchmark then measures a leak,
not a memory. The check builds the configured system as a run does, twice, into a state folder of
its own (never the run's stores):

1. haystack A: one session whose user states a unique canary fact (a made-up code no dataset holds);
2. haystack B: one session on the same topic without the code;
3. B is asked for the code: the canary in any retrieved unit or in the context is a LEAK;
4. A is asked too (the control): when A's own retrieval does not return the canary, the check
   cannot tell a leak from a memory that forgets, and says so (inconclusive), never "isolated".

The result is stored (``parquet/integrity/isolation/<system>.parquet``, view ``isolation_checks``)
with the system's unit hash; the manifest flags a configured system whose check under its current
unit hash leaked (``isolation_leak``), and the report shows the flag beside its numbers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.core.records import QuestionRow, SessionRow, TurnRow
from pipeline.memory.base import MemoryDeps, MemorySystem, RetrievalResult
from pipeline.memory.systems import MemoryBenchmark, SystemSpec, system_specs
from pipeline.store.corpus import HaystackSession
from pipeline.store.results import ResultStore, write_parquet_atomic

ISOLATION_DIR = "integrity/isolation"  # under parquet/
STATUS_ISOLATED = "isolated"
STATUS_LEAKED = "leaked"
STATUS_INCONCLUSIVE = "inconclusive"  # the control failed: A's own retrieval lacks the canary
STATUS_FAILED = "failed"  # building, ingesting or retrieving raised
CANARY_DATASET = "isolation_canary"

ISOLATION_SCHEMA = pa.schema(
    [
        ("system", pa.string()),
        ("system_kind", pa.string()),
        ("unit_hash", pa.string()),
        ("status", pa.string()),
        ("leaked", pa.bool_()),
        ("control_found", pa.bool_()),
        ("canary", pa.string()),
        ("n_units_b", pa.int64()),
        ("error", pa.string()),
        ("checked_at", pa.string()),
    ]
)


@dataclass(frozen=True)
class IsolationResult:
    """One system's canary check."""

    system: str
    system_kind: str
    unit_hash: str
    status: str
    leaked: bool
    control_found: bool
    canary: str
    n_units_b: int
    error: str | None
    checked_at: str

    def line(self) -> str:
        """What ``membench check-isolation`` prints for the system."""
        what = {
            STATUS_ISOLATED: "isolated: haystack B's retrieval never returned haystack A's canary",
            STATUS_LEAKED: "LEAKED: haystack B's retrieval returned haystack A's canary (flagged in the manifest)",
            STATUS_INCONCLUSIVE: "inconclusive: haystack A's own retrieval did not return its canary",
            STATUS_FAILED: f"failed: {self.error}",
        }[self.status]
        return f"{self.system} ({self.system_kind}): {what}"


def canary_code(unit_hash: str) -> str:
    """A code no dataset holds, fixed per system configuration (a rerun asks the same question)."""
    return "ZQX-" + hashlib.sha256(f"membench canary {unit_hash}".encode()).hexdigest()[:8].upper()


def _session(haystack: str, key: str, lines: list[str]) -> HaystackSession:
    when = dt.datetime(2023, 5, 8, 13, 56)
    session = SessionRow(CANARY_DATASET, key, key, "1:56 pm on 8 May, 2023", when, None, len(lines))
    turns = tuple(
        TurnRow(CANARY_DATASET, key, f"{key}:{i}", i, "user" if i % 2 == 0 else "assistant",
                "user" if i % 2 == 0 else "assistant", text, False, None)
        for i, text in enumerate(lines)
    )  # fmt: skip
    return HaystackSession(0, session, turns)


def canary_sessions(code: str) -> tuple[HaystackSession, HaystackSession]:
    """(haystack A's session stating the canary, haystack B's session on the same topic without it)."""
    a = _session("A", "canary_a_s1", [
        f"My locker code at the Marlowe climbing gym is {code}, please remember it.",
        "Noted: your Marlowe gym locker code.",
    ])  # fmt: skip
    b = _session("B", "canary_b_s1", [
        "I joined the Marlowe climbing gym last week and got a locker there.",
        "That sounds fun, enjoy the climbing.",
    ])  # fmt: skip
    return a, b


def canary_question(haystack_id: str) -> QuestionRow:
    return QuestionRow(
        dataset=CANARY_DATASET, question_id=f"{haystack_id}_q", partition_key=f"{CANARY_DATASET}__{haystack_id}_q",
        record_index=0, type_raw="canary", type_name="canary",
        question="What is my locker code at the Marlowe climbing gym?", answer=None, adversarial_answer=None,
        choices=None, correct_choice_index=None, question_date_raw="2023/05/09 (Tue) 10:00",
        question_date=dt.datetime(2023, 5, 9, 10, 0), is_abstention=False, haystack_id=haystack_id,
    )  # fmt: skip


def _holds(result: RetrievalResult, code: str) -> bool:
    return code in result.context or any(code in u.text for u in result.units)


def _memory(spec: SystemSpec, deps: MemoryDeps, haystack_id: str, session: HaystackSession) -> MemorySystem:
    memory = spec.build(deps)
    memory.ingest_session(haystack_id, session)
    return memory


def check_isolation(spec: SystemSpec, deps: MemoryDeps, *, nonce: str = "") -> IsolationResult:
    """Run the canary check of one system with ``deps`` (its ``state_dir`` should be a fresh folder)."""
    code = canary_code(spec.unit_hash)
    ids = (f"canary_a{nonce}", f"canary_b{nonce}")
    base: dict[str, Any] = {
        "system": spec.name, "system_kind": spec.kind, "unit_hash": spec.unit_hash, "canary": code,
        "checked_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }  # fmt: skip
    session_a, session_b = canary_sessions(code)
    memories: list[MemorySystem] = []
    try:
        memories.append(_memory(spec, deps, ids[0], session_a))
        memories.append(_memory(spec, deps, ids[1], session_b))
        in_b = memories[1].retrieve(canary_question(ids[1]))
        in_a = memories[0].retrieve(canary_question(ids[0]))
    except Exception as exc:  # the check itself could not run: say why, never "isolated"
        return IsolationResult(**base, status=STATUS_FAILED, leaked=False, control_found=False, n_units_b=0,
                               error=f"{type(exc).__name__}: {exc}")  # fmt: skip
    finally:
        for memory in memories:  # servers and proxy routes of the memories built here end with the check
            close = getattr(memory, "close", None)
            if callable(close):
                close()
    leaked, control = _holds(in_b, code), _holds(in_a, code)
    status = STATUS_LEAKED if leaked else STATUS_ISOLATED if control else STATUS_INCONCLUSIVE
    return IsolationResult(**base, status=status, leaked=leaked, control_found=control, n_units_b=len(in_b.units),
                           error=None)  # fmt: skip


def isolation_path(store: ResultStore, system: str) -> Path:
    return store.parquet_root / ISOLATION_DIR / f"{system}.parquet"


def check_isolation_of(bench: MemoryBenchmark, system: str, deps: MemoryDeps) -> IsolationResult:
    """The check of the configured system ``system`` (its spec on the config's first dataset it applies
    to), in a temporary state folder under the results folder, stored for the manifest and the report."""
    cfg = bench.config
    dataset = next(d.name for d in cfg.datasets if any(s.name == system for s in system_specs(bench, d.name)))
    spec = next(s for s in system_specs(bench, dataset) if s.name == system)
    results = cfg.resolved_results_dir()
    results.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".isolation-{system}-", dir=results))
    try:
        data_dir = scratch / "data"
        run_deps = MemoryDeps(deps.encoder, deps.llm, deps.cross_encoder_path, str(data_dir), deps.log, scratch)
        result = check_isolation(spec, run_deps, nonce="_" + scratch.name.rsplit("-", 1)[-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    store = ResultStore(results_dir=str(results))
    write_parquet_atomic(isolation_path(store, system), pa.Table.from_pylist([asdict(result)], schema=ISOLATION_SCHEMA))
    return result
