"""The judgments stage without Dagster: units, per-question judging, bounded concurrency.

Units: ``"<system>/<reader>/<judge>"`` for every answer unit of the dataset x every judge chosen
for the dataset's kind (pipeline.judges.select.judges_for). The unit hash covers the answer unit's
hash and the judge's definition (version, prompt fingerprint, params, judge model).

A judgment needs its answer row: missing, failed or stale => the judgment unit fails with
"answer failed: ..." (or "answer missing/stale: ..."); it is never scored wrong. A judge that
cannot reach a verdict (LLM failure, unclear reply) raises JudgeFailed => failed row, retried.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pipeline.core.records import QuestionRow
from pipeline.core.units import repeat_unit
from pipeline.judges.base import BoundJudge, JudgeContext, JudgeInput, Verdict, dataset_kind
from pipeline.judges.select import JudgeBenchmark, judges_for
from pipeline.readers.base import LLMClient
from pipeline.readers.run import answer_units, guarded, rows_by_unit, upstream_error
from pipeline.run.stage import UnitResult, UnitSpec, WorkItem, timed
from pipeline.store.corpus import Corpus
from pipeline.store.results import ResultStore
from pipeline.util.parallel import parallel_map

ANSWERS = "answers"
# The columns of an ``answers`` row that judging reads: the row's key and version (``keyed_rows``),
# whether it may be judged (``upstream_error``) and what the judges see (``judge_answer``). Why not
# the whole row: an answers file has ~28 columns, and reading these 8 costs ~0.3 ms a file against
# ~0.5 ms, once per judged question; a column an older file lacks is absent either way.
JUDGED_ANSWER_COLUMNS = [
    "unit",
    "record_hash",
    "status",
    "error",
    "unit_hash",
    "prediction",
    "predicted_index",
    "invalid",
]
Log = Callable[[str], None]


@dataclass(frozen=True)
class JudgmentUnit:
    system: str
    reader: str
    answer_unit: str
    answer_hash: str
    judge: BoundJudge
    spec: UnitSpec
    repeat: int = 1  # r of the judge's ``repeats``: unit "<answer unit>/<judge>~<r>" for r >= 2
    settings: Mapping[str, Any] = field(default_factory=dict)  # identity inputs by config path (the manifest's)


def judgment_units(bench: JudgeBenchmark, dataset: str, llm: LLMClient | None) -> list[JudgmentUnit]:
    """Every "<system>/<reader>/<judge>" unit of ``dataset`` (from the resolved benchmark alone)."""
    judges = judges_for(dataset_kind(bench.config.dataset(dataset).loader), dataset, bench, llm)
    repeats = {j.name: j.repeats for j in bench.config.judges}
    endpoint, block = bench.config.judge_endpoint(), bench.config.judge_block
    own = {j.name: j.settings(endpoint, block) for j in judges}
    units = []
    for au in answer_units(bench, dataset):
        for judge in judges:
            for r in range(1, repeats.get(judge.name, 1) + 1):
                h = judge.unit_hash(au.spec.unit_hash if r == 1 else f"{au.spec.unit_hash}|repeat={r}")
                spec = UnitSpec(repeat_unit(f"{au.spec.unit}/{judge.name}", r), h)
                settings = {**au.settings, **own[judge.name], f"judges[{judge.name}].repeat": r}
                units.append(
                    JudgmentUnit(au.system, au.reader.name, au.spec.unit, au.spec.unit_hash, judge, spec, r, settings)
                )
    return units


def judgment_payload(unit: JudgmentUnit, verdict: Verdict) -> dict[str, Any]:
    """One ``judgments`` row's payload (JUDGMENTS_PAYLOAD columns)."""
    return {
        "system": unit.system,
        "reader": unit.reader,
        "judge": unit.judge.name,
        "metric": unit.judge.spec.metric,
        "correct": verdict.correct,
        "score": verdict.score,
        "details": json.dumps(verdict.details, sort_keys=True, default=str),
        "judge_prompt_tokens": verdict.prompt_tokens,
        "judge_completion_tokens": verdict.completion_tokens,
        "judge_cache_hit": verdict.cache_hit,
    }


def judge_answer(unit: JudgmentUnit, question: QuestionRow, row: dict[str, Any], llm: LLMClient | None) -> Verdict:
    """Apply one judge to one ``answers`` row (the judge's own function decides everything)."""
    inp = JudgeInput(
        question=question,
        prediction=row.get("prediction"),
        predicted_index=row.get("predicted_index"),
        invalid=bool(row.get("invalid")),
    )
    ctx = JudgeContext(llm=llm, params=unit.judge.params, repeat=unit.repeat, model=unit.judge.llm_model)
    return unit.judge.spec.fn(inp, ctx)


class JudgmentRun:
    """Judges the pending units of a list of questions; yields each question as it finishes."""

    def __init__(
        self,
        store: ResultStore,
        bench: JudgeBenchmark,
        llm: LLMClient | None,
        *,
        max_workers: int = 1,
        log: Log = lambda _msg: None,
    ) -> None:
        self.store = store
        self.bench = bench
        self.llm = llm  # the judges' client: judge_llm when the config has one (assets/clients.py judge_llm)
        self.max_workers = max_workers
        self.log = log
        self._corpora: dict[str, Corpus] = {}
        self._units: dict[str, dict[str, JudgmentUnit]] = {}

    def units_for(self, dataset: str) -> list[UnitSpec]:
        return [u.spec for u in self._dataset_units(dataset).values()]

    def _dataset_units(self, dataset: str) -> dict[str, JudgmentUnit]:
        if dataset not in self._units:
            self._units[dataset] = {u.spec.unit: u for u in judgment_units(self.bench, dataset, self.llm)}
        return self._units[dataset]

    def corpus(self, dataset: str) -> Corpus:
        if dataset not in self._corpora:
            questions = self.store.read_canonical(dataset, "questions")
            if questions is None:
                raise FileNotFoundError(f"dataset {dataset!r}: canonical table 'questions' missing")
            self._corpora[dataset] = Corpus(dataset, {"questions": questions})
        return self._corpora[dataset]

    def compute(self, items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
        for dataset in sorted({i.dataset for i in items}):
            self.corpus(dataset)
            self._dataset_units(dataset)
        if self.max_workers <= 1:
            for item in items:
                yield item.partition_key, guarded(self.judge_item, item)
            return
        work = partial(guarded, self.judge_item)
        for item, results in parallel_map(work, items, self.max_workers, "judgments"):
            yield item.partition_key, results

    def judge_item(self, item: WorkItem) -> list[UnitResult]:
        question = self.corpus(item.dataset).question(item.partition_key)
        answers = self.store.read_partition(ANSWERS, item.partition_key, JUDGED_ANSWER_COLUMNS)
        rows = rows_by_unit(answers, item.record_hash)
        units = self._dataset_units(item.dataset)
        return [self.judge_unit(units[s.unit], s, question, rows) for s in item.units]

    def judge_unit(
        self, unit: JudgmentUnit, spec: UnitSpec, question: QuestionRow, rows: dict[str, dict[str, Any]]
    ) -> UnitResult:
        row = rows.get(unit.answer_unit)
        error = upstream_error(
            row,
            unit=unit.answer_unit,
            expected_hash=unit.answer_hash,
            prefix="answer",
            stage=ANSWERS,
            key=question.partition_key,
        )
        if error is not None or row is None:
            return UnitResult.failed(spec, error or "answer missing")
        return timed(lambda: judgment_payload(unit, judge_answer(unit, question, row, self.llm)), spec)
