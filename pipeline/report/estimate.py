"""``membench estimate``: the LLM calls, tokens and cost a run still needs, before it is spent.

Why: BEAM's 1M and 10M tiers (and LLM memory products on any dataset) cost real money; a user
decides from what the run will ask, not from a bill. For every dataset of the config and every
component that calls an LLM, over the work NOT done yet (no stored ok row for its unit):

- ingestion (memory kinds that call an LLM per session, e.g. the products): pending sessions x the
  kind's ratios MEASURED in this results folder (``product_session`` markers of sessions it already
  ingested): calls per session, prompt tokens per token of session text, completion tokens per
  session. A kind not measured yet says so: ingest a slice first (``limit: 2``);
- answers (LLM readers): one call per pending question (``lme_official_con``: + one per session),
  tokens = the mean of this reader's stored answers on the dataset (else on any dataset), else
  unknown;
- judgments (LLM judges): BEAM's rubric judges make one call per rubric item (exact, from the
  questions), its event-ordering alignment at most n(n+1)/2 calls for n items when the reply lists
  the n items (the mean measured per question when judgments exist); the other judges one call per
  question. Calls that two judges share through the LLM cache (BEAM's rubric calls, its
  alignment calls) are counted once. Tokens per call = the mean measured on this judge's stored
  judgments, else (rubric judges) the prompt's own tokens plus the answer's measured mean.

Token counts are membench's ``regex_word_punct`` for text (pipeline/core/tokens.py) and the
endpoint's reported usage for measurements; cost = configs/prices.yaml (unknown for an unpriced
model). An estimate, named as one: every line says what it is based on.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipeline.config.model import PROJECT_ROOT
from pipeline.config.specs import ComponentSpec
from pipeline.core.families import BEAM_EVENT_ORDERING, FAMILY_MC10
from pipeline.core.tokens import count_tokens
from pipeline.judges.base import DEFAULT_JUDGES, JudgeSpec, dataset_kind, judge_model
from pipeline.judges.beam import BEAM_JUDGE_PROMPT
from pipeline.judges.locomo_plus import LOCOMO_PLUS_JUDGE_MAX_TOKENS, LOCOMO_PLUS_JUDGE_PROMPT
from pipeline.kinds.resolve import ResolvedConfig
from pipeline.llm.prices import ModelPrice, cost_usd
from pipeline.metrics.aggregates import (
    METRIC_BEAM_EVENT_ORDERING,
    METRIC_BEAM_OFFICIAL,
    METRIC_BEAM_RUBRIC_MEAN,
    METRIC_LOCOMO_PLUS_JUDGE,
)
from pipeline.readers.presets import PRESET_LME_CON, PRESET_LOCOMO_PLUS
from pipeline.readers.presets_beam import LOCOMO_PLUS_MAX_TOKENS
from pipeline.store.results import ResultStore

ALIGNMENT_PROMPT_TOKENS = 80  # an alignment call: its two messages and two short snippets, about
RUBRIC_ITEM_TOKENS = 20  # a rubric item's tokens, about (BEAM's are short sentences)
PROMPT_OVERHEAD_TOKENS = 120  # a reader prompt's template and question, beside the memory's context (approximate)
RUBRIC_JUDGES = frozenset({METRIC_BEAM_OFFICIAL, METRIC_BEAM_RUBRIC_MEAN})
ALIGNMENT_JUDGES = frozenset({METRIC_BEAM_OFFICIAL, METRIC_BEAM_EVENT_ORDERING})


@dataclass(frozen=True)
class Estimate:
    """One component's pending LLM work on one dataset."""

    dataset: str
    stage: str  # ingestion | answers | judgments
    component: str  # the unit: system, system/reader or system/reader/judge
    model: str | None
    pending: int
    pending_of: str  # sessions | questions
    calls: float | None
    prompt_tokens: float | None
    completion_tokens: float | None
    cost_usd: float | None
    basis: str


@dataclass(frozen=True)
class DatasetText:
    """What the estimate needs of one dataset's canonical tables."""

    questions: dict[str, dict[str, Any]]  # partition key -> {haystack_id, type_raw, rubric}
    sessions: dict[str, list[str]]  # haystack id -> session keys
    session_tokens: dict[str, int]  # session key -> tokens of its turns ("speaker: text")


def dataset_text(store: ResultStore, dataset: str) -> DatasetText | None:
    """The dataset's questions, haystacks and session token counts; None before it is converted."""
    questions_t = store.read_canonical(dataset, "questions")
    haystacks_t = store.read_canonical(dataset, "haystacks")
    turns_t = store.read_canonical(dataset, "turns")
    if questions_t is None or haystacks_t is None or turns_t is None:
        return None
    columns = ["partition_key", "haystack_id", "type_raw", "rubric", "answer"]
    questions = {r["partition_key"]: r for r in questions_t.select(columns).to_pylist()}
    sessions: dict[str, list[str]] = defaultdict(list)
    for r in haystacks_t.select(["haystack_id", "session_key"]).to_pylist():
        sessions[r["haystack_id"]].append(r["session_key"])
    tokens: dict[str, int] = defaultdict(int)
    for r in turns_t.select(["session_key", "speaker", "text"]).to_pylist():
        tokens[r["session_key"]] += count_tokens(f"{r['speaker']}: {r['text']}")
    return DatasetText(questions, dict(sessions), dict(tokens))


class Stored:
    """Rows already in the results folder: which (question, unit) are done, and measured usage."""

    def __init__(self, store: ResultStore) -> None:
        self.root = store.parquet_root
        self.con = duckdb.connect()

    def _rows(self, stage: str, columns: str, where: str = "TRUE") -> list[tuple[Any, ...]]:
        files = sorted(str(p) for p in (self.root / stage).glob("*.parquet"))
        if not files:
            return []
        sql = f"SELECT {columns} FROM read_parquet(?, union_by_name = true) WHERE {where}"
        return self.con.execute(sql, [files]).fetchall()

    def done(self, stage: str) -> set[tuple[str, str]]:
        return {(k, u) for k, u in self._rows(stage, "partition_key, unit", "status = 'ok'")}

    def context_tokens(self) -> dict[tuple[str, str], int]:
        """(question, system) -> context tokens of its stored retrieval (retrieval costs no LLM call)."""
        rows = self._rows("retrievals", "partition_key, unit, context_tokens", "status = 'ok'")
        return {(k, u): int(t) for k, u, t in rows if t is not None}

    def answer_usage(self) -> list[tuple[str, str, float, float]]:
        """(dataset, unit, prompt tokens, completion tokens) of ok, measured answers."""
        return self._rows(
            "answers",
            "dataset, unit, prompt_tokens, completion_tokens",
            "status = 'ok' AND prompt_tokens IS NOT NULL AND completion_tokens IS NOT NULL",
        )

    def judgment_usage(self) -> list[tuple[str, str, str, float, float, str | None]]:
        """(dataset, unit, partition key, prompt tokens, completion tokens, details) of ok, measured judgments."""
        return self._rows(
            "judgments",
            "dataset, unit, partition_key, judge_prompt_tokens, judge_completion_tokens, details",
            "status = 'ok' AND judge_prompt_tokens IS NOT NULL",
        )

    def product_sessions(self) -> list[tuple[str, str, str, float, float, float]]:
        """(system, dataset, session key, llm calls, prompt tokens, completion tokens) per ingested session."""
        files = sorted(str(p) for p in (self.root / "memory").glob("*/*/*.parquet"))
        if not files:
            return []
        sql = (
            "SELECT regexp_extract(filename, 'memory/([^/]+)/([^/]+)/', 1), regexp_extract(filename, "
            "'memory/([^/]+)/([^/]+)/', 2), session_key, CAST(json_extract(text, '$.llm_calls') AS DOUBLE), "
            "CAST(json_extract(text, '$.prompt_tokens') AS DOUBLE), CAST(json_extract(text, '$.completion_tokens') "
            "AS DOUBLE) FROM read_parquet(?, union_by_name = true, filename = true) WHERE kind = 'product_session'"
        )
        try:
            return self.con.execute(sql, [files]).fetchall()
        except duckdb.Error:  # checkpoints without product markers (no text/kind column)
            return []


def _cost(
    model: str | None, prompt: float | None, completion: float | None, prices: Mapping[str, ModelPrice]
) -> float | None:
    if model is None or prompt is None or completion is None:
        return None
    return cost_usd(model, round(prompt), round(completion), prices)


def _mean(pairs: Iterable[tuple[float, float]]) -> tuple[float, float] | None:
    values = list(pairs)
    if not values:
        return None
    return sum(p for p, _ in values) / len(values), sum(c for _, c in values) / len(values)


class Estimator:
    """The estimate of one resolved config against its results folder."""

    def __init__(
        self,
        res: ResolvedConfig,
        store: ResultStore,
        prices: Mapping[str, ModelPrice],
        canonical: ResultStore | None = None,
    ) -> None:
        self.res, self.cfg, self.store, self.prices = res, res.config, store, prices
        self.canonical = canonical  # where datasets not converted in ``store`` yet were converted
        self.stored = Stored(store)
        self.done = {stage: self.stored.done(stage) for stage in ("ingestion", "answers", "judgments")}
        self.answers = self.stored.answer_usage()
        self.judgments = self.stored.judgment_usage()
        self.contexts = self.stored.context_tokens()

    def run(self) -> list[Estimate]:
        out: list[Estimate] = []
        for ds in self.cfg.datasets:
            text = dataset_text(self.store, ds.name)
            if text is None and self.canonical is not None:
                text = dataset_text(self.canonical, ds.name)
            if text is None:
                raise FileNotFoundError(
                    f"dataset {ds.name!r} has no canonical tables under {self.store.parquet_root}: convert it first "
                    "(it costs no LLM call): dagster asset materialize --select '*canonical'"
                )
            out += self._ingestion(ds.name, text)
            out += self._answers(ds.name, text)
            out += self._judgments(ds.name, text)
        return out

    # ---- ingestion ------------------------------------------------------------------------------
    def _ingestion(self, dataset: str, text: DatasetText) -> list[Estimate]:
        out = []
        for spec in self.res.systems_for(dataset):
            if not getattr(spec.impl, "uses_llm", False):
                continue
            pending_hay = {
                q["haystack_id"] for k, q in text.questions.items() if (k, spec.name) not in self.done["ingestion"]
            }
            sessions = [s for h in sorted(pending_hay) for s in text.sessions.get(h, [])]
            tokens = sum(text.session_tokens.get(s, 0) for s in sessions)
            ratio = self._session_ratio(spec.kind, text)
            model = self.cfg.llm.model if self.cfg.llm else None
            if ratio is None:
                out.append(
                    Estimate(
                        dataset,
                        "ingestion",
                        spec.name,
                        model,
                        len(sessions),
                        "sessions",
                        None,
                        None,
                        None,
                        None,
                        f"no measurement of kind {spec.kind!r} yet: ingest a slice first (limit: 2)",
                    )
                )
                continue
            calls, per_token, completion, n = ratio
            prompt, comp = tokens * per_token, len(sessions) * completion
            out.append(
                Estimate(
                    dataset,
                    "ingestion",
                    spec.name,
                    model,
                    len(sessions),
                    "sessions",
                    len(sessions) * calls,
                    prompt,
                    comp,
                    _cost(model, prompt, comp, self.prices),
                    f"measured on {n} ingested session(s) of kind {spec.kind}",
                )
            )
        return out

    def _session_ratio(self, kind: str, text: DatasetText) -> tuple[float, float, float, int] | None:
        """(calls per session, prompt tokens per session token, completion tokens per session, sessions)."""
        kinds = {s.name: s.kind for s in self.res.memory_systems}
        rows = [r for r in self.stored.product_sessions() if kinds.get(r[0]) == kind and r[2] in text.session_tokens]
        session_tokens = sum(text.session_tokens[r[2]] for r in rows)
        if not rows or not session_tokens:
            return None
        n = len(rows)
        return (
            sum(r[3] or 0 for r in rows) / n,
            sum(r[4] or 0 for r in rows) / session_tokens,
            sum(r[5] or 0 for r in rows) / n,
            n,
        )

    # ---- answers ------------------------------------------------------------------------------------
    def _answers(self, dataset: str, text: DatasetText) -> list[Estimate]:
        out = []
        for system in self.res.systems_for(dataset):
            for reader in self.res.readers_for(dataset):
                if not getattr(reader.impl, "uses_llm", False):
                    continue
                unit = f"{system.name}/{reader.name}"
                pending = [k for k in text.questions if (k, unit) not in self.done["answers"]]
                params = reader.params_json()
                per_q = 1.0
                if params.get("preset") == PRESET_LME_CON:  # one note per session, then the answer
                    notes = sum(len(text.sessions.get(text.questions[k]["haystack_id"], [])) for k in pending)
                    per_q += notes / max(len(pending), 1)
                model = params.get("model") or (self.cfg.llm.model if self.cfg.llm else None)
                usage, basis = self._answer_usage(dataset, unit, reader.name)
                if usage is None:
                    if dataset_kind(self.cfg.dataset(dataset).loader) == FAMILY_MC10 and "mc_max_tokens" in params:
                        params = {**params, "max_tokens": params["mc_max_tokens"]}  # one option index
                    elif params.get("preset") == PRESET_LOCOMO_PLUS and not params.get("max_tokens"):
                        params = {**params, "max_tokens": LOCOMO_PLUS_MAX_TOKENS}  # the preset's own cap
                    usage, basis = self._unmeasured_answer(pending, system.name, params)
                n = len(pending) * reader.config.repeats
                prompt = None if usage[0] is None else n * usage[0]
                comp = None if usage[1] is None else n * usage[1]
                cost = _cost(model, prompt, comp, self.prices)
                out.append(
                    Estimate(dataset, "answers", unit, model, n, "questions", n * per_q, prompt, comp, cost, basis)
                )
        return out

    def _unmeasured_answer(
        self, pending: list[str], system: str, params: Mapping[str, Any]
    ) -> tuple[tuple[float | None, float | None], str]:
        """Before any answer: the stored retrievals' context tokens + the prompt's own, and at most
        max_tokens of reply (an upper bound)."""
        contexts = [self.contexts.get((k, system)) for k in pending]
        max_tokens = params.get("max_tokens") or (self.cfg.llm.max_tokens if self.cfg.llm else None)
        completion = None if max_tokens is None else float(max_tokens)
        if pending and all(c is not None for c in contexts):
            prompt = sum(c or 0 for c in contexts) / len(pending) + PROMPT_OVERHEAD_TOKENS
            return (prompt, completion), "stored retrievals' context + prompt; reply <= max_tokens (upper bound)"
        return (None, completion), "no retrieval stored yet (run retrieval_benchmark: no LLM call); reply <= max_tokens"

    def _answer_usage(
        self, dataset: str, unit: str, reader: str
    ) -> tuple[tuple[float | None, float | None] | None, str]:
        same = _mean((p, c) for d, u, p, c in self.answers if d == dataset and u == unit)
        if same is not None:
            return same, "mean of this unit's stored answers"
        any_ds = _mean((p, c) for _d, u, p, c in self.answers if u.split("/")[1].split("~")[0] == reader)
        if any_ds is not None:
            return any_ds, f"mean of reader {reader!r}'s stored answers (other systems or datasets)"
        return None, "no answer of this reader measured yet"

    # ---- judgments ----------------------------------------------------------------------------------
    def _judge_specs(self, dataset: str, loader: str) -> list[ComponentSpec[JudgeSpec]]:
        kind = dataset_kind(loader)
        if self.cfg.judges:
            return [s for s in self.res.judges if s.applies_to(dataset) and kind in s.impl.kinds]
        base, with_llm = DEFAULT_JUDGES[kind]
        names = base + (with_llm if self.cfg.judge_endpoint() is not None else ())
        return [self.res.default_judges[n] for n in names]

    def _judgments(self, dataset: str, text: DatasetText) -> list[Estimate]:
        loader = self.cfg.dataset(dataset).loader
        judges = [j for j in self._judge_specs(dataset, loader) if j.impl.needs_llm]
        endpoint = self.cfg.judge_endpoint()
        out = []
        for system in self.res.systems_for(dataset):
            for reader in self.res.readers_for(dataset):
                answer_unit = f"{system.name}/{reader.name}"
                answer = self._answer_length(dataset, answer_unit, reader.params_json())
                shared: set[tuple[str, str]] = set()  # (question, "rubric" | "align") already counted
                for judge in judges:
                    unit = f"{answer_unit}/{judge.name}"
                    pending = [k for k in text.questions if (k, unit) not in self.done["judgments"]]
                    model = judge_model(judge.params_given(), endpoint.model if endpoint else None)
                    work = _JudgeWork()
                    for k in pending:
                        work.add(judge.impl.metric, k, text, shared, self._alignment_calls(judge.name))
                    out.append(self._judge_line(dataset, unit, model, judge, len(pending), work, answer, text))
        return out

    def _answer_length(self, dataset: str, unit: str, params: Mapping[str, Any]) -> tuple[float | None, str]:
        """Tokens of an answer the judges will read: measured, else the reader's max_tokens (a bound)."""
        measured = _mean((p, c) for d, u, p, c in self.answers if d == dataset and u == unit)
        if measured is not None:
            return measured[1], "measured answers"
        bound = params.get("max_tokens") or (self.cfg.llm.max_tokens if self.cfg.llm else None)
        return (None if bound is None else float(bound)), "answers <= max_tokens"

    def _judge_line(
        self,
        dataset: str,
        unit: str,
        model: str | None,
        judge: ComponentSpec[JudgeSpec],
        n_pending: int,
        work: _JudgeWork,
        answer: tuple[float | None, str],
        text: DatasetText,
    ) -> Estimate:
        repeats = judge.config.repeats
        measured = self._judge_call_usage(dataset, judge.name)
        endpoint = self.cfg.judge_endpoint()
        reply_bound = float(endpoint.max_tokens) if endpoint is not None else None
        if measured is not None:
            prompt: float | None = work.calls * measured[0]
            comp: float | None = work.calls * measured[1]
            basis = "mean per call of this judge's stored judgments"
        else:
            prompt, comp, basis = self._judge_bound(judge.impl.metric, work, answer, text, reply_bound)
        if work.shared:
            basis += f"; {work.shared} question(s) share their calls with an earlier judge (LLM cache)"
        prompt = None if prompt is None else prompt * repeats
        comp = None if comp is None else comp * repeats
        calls = work.calls * repeats
        cost = _cost(model, prompt, comp, self.prices)
        return Estimate(dataset, "judgments", unit, model, n_pending * repeats, "questions", calls, prompt, comp, cost,
                        basis)  # fmt: skip

    def _judge_bound(
        self, metric: str, work: _JudgeWork, answer: tuple[float | None, str], text: DatasetText, reply: float | None
    ) -> tuple[float | None, float | None, str]:
        """Before any judgment: the prompts' own tokens plus the answer, replies <= max_tokens."""
        if answer[0] is None:
            return None, None, "no judgment measured yet and no answer length known"
        comp = None if reply is None else work.calls * reply
        if metric in RUBRIC_JUDGES | ALIGNMENT_JUDGES:
            rubric = work.rubric_calls * (count_tokens(BEAM_JUDGE_PROMPT) + RUBRIC_ITEM_TOKENS + answer[0])
            align = work.align_calls * ALIGNMENT_PROMPT_TOKENS
            return rubric + align, comp, f"prompts + {answer[1]}; replies <= max_tokens (upper bound)"
        if metric == METRIC_LOCOMO_PLUS_JUDGE:
            evidence = sum(count_tokens(q.get("answer") or "") for q in text.questions.values()) / max(
                len(text.questions), 1
            )
            prompt = work.calls * (count_tokens(LOCOMO_PLUS_JUDGE_PROMPT) + evidence + answer[0])
            bound = None if comp is None else work.calls * min(float(LOCOMO_PLUS_JUDGE_MAX_TOKENS), reply or 0)
            return prompt, bound, f"prompt + evidence + {answer[1]}; replies <= 512 tokens (upper bound)"
        return None, None, "no judgment of this judge measured yet"

    def _alignment_calls(self, judge: str) -> float | None:
        """Mean alignment calls per event-ordering question of this judge's stored judgments."""
        measured = [
            json.loads(d).get("n_calls")
            for _d, u, _k, _p, _c, d in self.judgments
            if u.endswith(f"/{judge}") and d and '"aligned"' in d
        ]
        values = [m for m in measured if isinstance(m, int)]
        return sum(values) / len(values) if values else None

    def _judge_call_usage(self, dataset: str, judge: str) -> tuple[float, float] | None:
        rows = [(p, c, d) for ds, u, _k, p, c, d in self.judgments if u.endswith(f"/{judge}") and ds == dataset]
        if not rows:
            return None
        n = sum(max(1, int(json.loads(d).get("n_calls", 1)) if d else 1) for _p, _c, d in rows)
        return sum(p for p, _c, _d in rows) / n, sum(c or 0 for _p, c, _d in rows) / n


class _JudgeWork:
    """The calls one judge makes on its pending questions (BEAM: rubric and alignment calls apart)."""

    def __init__(self) -> None:
        self.rubric_calls = 0.0
        self.align_calls = 0.0
        self.other_calls = 0.0
        self.shared = 0

    @property
    def calls(self) -> float:
        return self.rubric_calls + self.align_calls + self.other_calls

    def add(
        self, metric: str, key: str, text: DatasetText, shared: set[tuple[str, str]], measured_align: float | None
    ) -> None:
        q = text.questions[key]
        items = len(q["rubric"] or [])
        eo = q["type_raw"] == BEAM_EVENT_ORDERING
        if metric not in RUBRIC_JUDGES | ALIGNMENT_JUDGES:
            self.other_calls += 1
            return
        if metric in ALIGNMENT_JUDGES and eo:
            if (key, "align") in shared:
                self.shared += 1
            else:
                shared.add((key, "align"))
                # a reply listing the n items, one per line: each line tries the unused items in order
                self.align_calls += measured_align if measured_align is not None else items * (items + 1) / 2
        if metric in RUBRIC_JUDGES and not (metric == METRIC_BEAM_OFFICIAL and eo):
            if (key, "rubric") in shared:
                self.shared += 1
            else:
                shared.add((key, "rubric"))
                self.rubric_calls += items


def estimate_run(
    res: ResolvedConfig, store: ResultStore, prices: Mapping[str, ModelPrice], canonical: ResultStore | None = None
) -> list[Estimate]:
    """Every pending LLM line of ``res``; canonical tables are read from ``store``, else ``canonical``."""
    return Estimator(res, store, prices, canonical).run()


def _fmt(value: float | None, digits: int = 0) -> str:
    return "?" if value is None else f"{value:,.{digits}f}"


def render(estimates: list[Estimate]) -> str:
    """One line per component, then a total per dataset and overall (a total is unknown if a part is)."""
    head = (
        "dataset",
        "stage",
        "component",
        "model",
        "pending",
        "calls",
        "prompt tok",
        "compl tok",
        "cost USD",
        "basis",
    )
    rows = [
        (
            e.dataset,
            e.stage,
            e.component,
            e.model or "-",
            f"{e.pending:,} {e.pending_of}",
            _fmt(e.calls),
            _fmt(e.prompt_tokens),
            _fmt(e.completion_tokens),
            _fmt(e.cost_usd, 2),
            e.basis,
        )
        for e in estimates
    ]
    for label, group in [
        *((d, [e for e in estimates if e.dataset == d]) for d in dict.fromkeys(e.dataset for e in estimates)),
        ("all", estimates),
    ]:

        def total(name: str, group: list[Estimate] = group) -> float | None:
            values = [getattr(e, name) for e in group]
            return None if any(v is None for v in values) else sum(values)

        rows.append(
            (
                label,
                "total",
                "",
                "",
                "",
                _fmt(total("calls")),
                _fmt(total("prompt_tokens")),
                _fmt(total("completion_tokens")),
                _fmt(total("cost_usd"), 2),
                "",
            )
        )
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
    return "\n".join(lines) if estimates else "no component of this config calls an LLM: nothing to estimate"


def prices_path(res: ResolvedConfig) -> Path:
    p = Path(res.config.prices_path)
    return p if p.is_absolute() else PROJECT_ROOT / p
