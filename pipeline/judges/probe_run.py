"""Run every configured judge of a dataset on its probe set (pipeline/judges/probe.py) and store the verdicts.

Why stored and keyed like a stage: a probe verdict of an LLM judge costs a request; each row
carries the unit hash of (judge definition, params, judge model, probe), and a rerun keeps every
ok row whose hash is unchanged (no request, not even to the LLM cache) and asks again only for
new, changed or failed probes. A judge that cannot reach a verdict (transport failure, an
unparseable reply) gives a failed row: counted apart, never as an accept or a reject.

Rows: ``parquet/judge_probes/<dataset>__<judge>.parquet`` (the ``judge_probes`` table; the
``judge_probe_rates`` view of pipeline/catalog/probes.py reads it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.records import QuestionRow
from pipeline.core.status import STATUS_FAILED, STATUS_OK
from pipeline.datasets.loaders import LOADERS
from pipeline.judges.base import BoundJudge, JudgeContext, JudgeFailed, JudgeInput, dataset_kind
from pipeline.judges.probe import DEFAULT_PER_TYPE, Probe, build_probes
from pipeline.judges.select import JudgeBenchmark, judges_for
from pipeline.readers.base import LLMClient
from pipeline.store.results import ResultStore, write_parquet_atomic

PROBE_DIR = "judge_probes"  # under parquet/
Log = Callable[[str], None]

JUDGE_PROBES_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("judge", pa.string()),
        ("metric", pa.string()),
        ("judge_model", pa.string()),
        ("unit_hash", pa.string()),
        ("partition_key", pa.string()),
        ("question_id", pa.string()),
        ("type_raw", pa.string()),
        ("type_name", pa.string()),
        ("probe", pa.string()),
        ("expected_correct", pa.bool_()),
        ("answer", pa.string()),
        ("reformatted_date", pa.bool_()),
        ("status", pa.string()),
        ("verdict", pa.bool_()),  # NULL: failed, or the judge does not apply (excluded)
        ("error", pa.string()),
        ("judge_cache_hit", pa.bool_()),
        ("judge_prompt_tokens", pa.int64()),
        ("judge_completion_tokens", pa.int64()),
        ("details", pa.string()),
    ]
)


@dataclass(frozen=True)
class ProbeRun:
    """What one ``membench judge-probe`` did for one (dataset, judge)."""

    dataset: str
    judge: str
    path: Path
    n_probes: int
    n_kept: int  # ok rows of an earlier run with the same unit hash (no request)
    n_judged: int
    n_failed: int


def probe_path(store: ResultStore, dataset: str, judge: str) -> Path:
    return store.parquet_root / PROBE_DIR / f"{dataset}__{judge}.parquet"


def dataset_questions(bench: JudgeBenchmark, dataset: str) -> list[QuestionRow]:
    """Every readable question of the dataset's whole file (the config's slice is not applied: the
    probe set of a dataset must not depend on which questions a run scores)."""
    ds = bench.config.dataset(dataset)
    records = LOADERS.get(ds.loader)(ds.resolved_path(bench.config.base_dir), ds.name)
    return [r.question for r in records if r.question is not None]


def _row(dataset: str, judge: BoundJudge, probe: Probe, unit_hash: str) -> dict[str, Any]:
    return {
        "dataset": dataset, "judge": judge.name, "metric": judge.spec.metric, "judge_model": judge.llm_model,
        "unit_hash": unit_hash, "partition_key": probe.partition_key, "question_id": probe.question_id,
        "type_raw": probe.type_raw, "type_name": probe.type_name, "probe": probe.kind,
        "expected_correct": probe.expected_correct, "answer": probe.answer, "reformatted_date": probe.reformatted_date,
    }  # fmt: skip


def judge_probe(judge: BoundJudge, probe: Probe, question: QuestionRow, llm: LLMClient | None) -> dict[str, Any]:
    """The verdict columns of one probe (status failed with the error when no verdict was reached)."""
    try:
        verdict = judge.spec.fn(JudgeInput(question, probe.answer), JudgeContext(llm=llm, params=judge.params))
    except JudgeFailed as exc:
        return {"status": STATUS_FAILED, "verdict": None, "error": f"{type(exc).__name__}: {exc}"}
    return {
        "status": STATUS_OK, "verdict": verdict.correct, "error": None, "judge_cache_hit": verdict.cache_hit,
        "judge_prompt_tokens": verdict.prompt_tokens, "judge_completion_tokens": verdict.completion_tokens,
        "details": json.dumps(verdict.details, sort_keys=True, default=str),
    }  # fmt: skip


def _previous(path: Path) -> dict[str, dict[str, Any]]:
    """Ok rows of an earlier run by unit hash (a missing or unreadable file: none)."""
    if not path.exists():
        return {}
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, pa.ArrowInvalid):
        return {}
    return {r["unit_hash"]: r for r in rows if r["status"] == STATUS_OK}


def probe_one_judge(
    store: ResultStore,
    dataset: str,
    judge: BoundJudge,
    probes: Iterable[Probe],
    questions: dict[str, QuestionRow],
    llm: LLMClient | None,
) -> ProbeRun:
    """Judge every probe (keeping unchanged ok rows), write the judge's file, count what happened."""
    path = probe_path(store, dataset, judge.name)
    previous = _previous(path)
    rows, kept, failed = [], 0, 0
    for probe in probes:
        unit_hash = judge.unit_hash(f"probe:{probe.probe_hash}")
        if unit_hash in previous:
            rows.append(previous[unit_hash])
            kept += 1
            continue
        row = {
            **_row(dataset, judge, probe, unit_hash),
            **judge_probe(judge, probe, questions[probe.partition_key], llm),
        }
        failed += row["status"] == STATUS_FAILED
        rows.append(row)
    write_parquet_atomic(path, pa.Table.from_pylist(rows, schema=JUDGE_PROBES_SCHEMA))
    return ProbeRun(dataset, judge.name, path, len(rows), kept, len(rows) - kept, failed)


def run_judge_probes(
    store: ResultStore,
    bench: JudgeBenchmark,
    dataset: str,
    llm: LLMClient | None,
    *,
    per_type: int = DEFAULT_PER_TYPE,
    judges: Iterable[str] | None = None,
    log: Log = lambda _msg: None,
) -> list[ProbeRun]:
    """Every judge the config runs on ``dataset`` (or only ``judges``) on the dataset's probe set."""
    kind = dataset_kind(bench.config.dataset(dataset).loader)
    bound = judges_for(kind, dataset, bench, llm)
    if judges is not None:
        wanted = set(judges)
        bound = [j for j in bound if j.name in wanted]
    questions = dataset_questions(bench, dataset)
    probes = build_probes(questions, per_type)
    by_key = {q.partition_key: q for q in questions}
    log(f"{dataset}: {len(probes)} probes of {len({p.partition_key for p in probes})} questions; judges: "
        + (", ".join(j.name for j in bound) or "none"))  # fmt: skip
    runs = []
    for judge in bound:
        run = probe_one_judge(store, dataset, judge, probes, by_key, llm)
        log(f"{dataset} / {judge.name}: {run.n_judged} judged ({run.n_failed} failed), {run.n_kept} kept")
        runs.append(run)
    return runs
