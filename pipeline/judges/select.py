"""Which judges run on a dataset, bound to the run's judge LLM (the benchmark resolved at load).

Why a module above pipeline/judges/base.py: choosing judges needs the resolved benchmark
(pipeline/config/specs.py, built by pipeline/kinds/resolve.py and passed down), and the resolver needs
the judge registry (pipeline/kinds/judges.py); this module imports neither the resolver nor the
registry: every judge it binds, configured or default, arrives resolved in the benchmark.
"""

from __future__ import annotations

from pipeline.config.model import LLMConfig
from pipeline.config.specs import Benchmark, ComponentSpec
from pipeline.judges.base import DEFAULT_JUDGES, BoundJudge, JudgeConfigError, JudgeSpec, dataset_kind, judge_model
from pipeline.llm.identity import hash_extras
from pipeline.memory.base import MemorySystem
from pipeline.readers.base import LLMClient, Reader

# the resolved benchmark as the judges see it: every section known (pipeline/config/specs.py)
JudgeBenchmark = Benchmark[type[MemorySystem], type[Reader], JudgeSpec]


def bind_judge(spec: ComponentSpec[JudgeSpec], llm: LLMClient | None, endpoint: LLMConfig | None = None) -> BoundJudge:
    """One resolved judge entry (registry lookup and params validated once, at resolution) bound to
    the run's judge LLM. An LLM judge without an LLM fails (never replaced by another judge)."""
    judge = spec.impl
    if judge.needs_llm and llm is None:
        raise JudgeConfigError(
            f"judge {spec.name!r} ({spec.kind}) needs an LLM but the config has no 'llm:' block; "
            "remove it from 'judges:' or configure an LLM (it is never replaced by another judge)"
        )
    params = spec.params_given()
    if not judge.needs_llm or llm is None:
        return BoundJudge(spec.name, judge, params, None)
    extras = hash_extras(endpoint, judge.llm_fields, ("model",))  # ``endpoint``: the judges' block in the config
    return BoundJudge(spec.name, judge, params, judge_model(params, llm.model), extras)


def judges_for(kind: str, dataset: str, bench: JudgeBenchmark, llm: LLMClient | None) -> list[BoundJudge]:
    """The judges run on ``dataset`` (of ``kind``): the config's ``judges:`` entries that apply to
    the dataset and its kind when given, else the defaults (LLM judges only with an LLM).
    ``llm`` is the judges' client (the config's ``judge_llm`` endpoint when it has one)."""
    if bench.config.judges:
        bound = [bind_judge(s, llm, bench.config.judge_endpoint()) for s in bench.judges if s.applies_to(dataset)]
        return [b for b in bound if kind in b.spec.kinds]
    base, with_llm = DEFAULT_JUDGES[kind]
    names = base + (with_llm if llm is not None else ())
    return [bind_judge(bench.default_judges[n], llm, bench.config.judge_endpoint()) for n in names]


def check_judges(bench: JudgeBenchmark, llm: LLMClient | None) -> None:
    """Bind every configured judge once: an LLM judge without an LLM fails the run at its start
    (JudgeConfigError), before any question (unknown judges and bad params failed at resolution)."""
    for s in bench.judges:
        bind_judge(s, llm, bench.config.judge_endpoint())


def unavailable_judges(kind: str, bench: JudgeBenchmark, llm: LLMClient | None) -> list[tuple[str, str]]:
    """(judge, reason) for default judges of ``kind`` that this run cannot use: the report lists
    them as unavailable instead of silently showing another metric in their place."""
    if bench.config.judges or llm is not None:
        return []
    return [(n, "no LLM configured (config has no 'llm:' block)") for n in DEFAULT_JUDGES[kind][1]]


def judged_datasets(bench: JudgeBenchmark) -> list[str]:
    """The datasets at least one judge of this run scores (configured, else the defaults that the
    run's endpoints allow). Why: BEAM and LoCoMo-Plus are rubric- and LLM-judged, so a run of them
    without an LLM has no judgment at all, by design; its report still shows retrieval and answers."""
    cfg = bench.config
    has_llm = cfg.judge_endpoint() is not None
    out = []
    for ds in cfg.datasets:
        kind = dataset_kind(ds.loader)
        if cfg.judges:
            judged = any(s.applies_to(ds.name) and kind in s.impl.kinds for s in bench.judges)
        else:
            base, with_llm = DEFAULT_JUDGES[kind]
            judged = bool(base or (with_llm and has_llm))
        if judged:
            out.append(ds.name)
    return out


def without_llm_judge(bench: JudgeBenchmark) -> str | None:
    """One sentence naming each dataset whose default LLM judges this config cannot run (it has no LLM),
    or None. Why a sentence for the run's summary and not a warning: a config without an LLM (the
    sample's offline reader) is a choice, not a problem; it is stated once, where the run ends."""
    if bench.config.judges or bench.config.judge_endpoint() is not None:
        return None
    parts = []
    for ds in bench.config.datasets:
        try:
            kind = dataset_kind(ds.loader)
        except JudgeConfigError:  # a plugin loader of no known family has no default judges to be without
            continue
        names = [name for name, _ in unavailable_judges(kind, bench, None)]
        if names:
            parts.append(f"{ds.name} ({', '.join(names)})")
    if not parts:
        return None
    return f"no LLM judge (the config has no 'llm:' block): {', '.join(parts)}; rule-based judges only"
