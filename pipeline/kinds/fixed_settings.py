"""LLM call settings a protocol fixes, so the ``llm:`` block's value is not what those calls send.

Why: a config key that is silently ignored makes a run look configured when it is not. Every
``llm:`` key takes effect, except where a published protocol (or membench's own multiple-choice
protocol) fixes the value; ``membench check-config`` lists each such case: which calls, which key,
which value, which protocol, and the config value they do not use.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config.model import BenchmarkConfig, LLMConfig
from pipeline.judges import base as judges_base
from pipeline.judges import llm as llm_judges
from pipeline.kinds.resolve import ResolvedConfig
from pipeline.readers import presets
from pipeline.readers.llm import KIND as LLM_READER_KIND
from pipeline.readers.llm import LLMReaderParams


@dataclass(frozen=True)
class FixedSetting:
    """``key`` of the ``llm:`` block is sent as ``value`` by these calls, because ``protocol`` says so."""

    key: str
    value: float | int
    protocol: str


_LME_QA = "LongMemEval's evaluate_qa.py"
_MEM0 = "mem0's evaluation/metrics/llm_judge.py"
_JUDGE_TEMP = llm_judges.JUDGE_TEMPERATURE

# judge metric -> what its calls fix (judges without an entry send the llm block's values)
JUDGE_FIXED: dict[str, tuple[FixedSetting, ...]] = {
    judges_base.METRIC_LME_OFFICIAL_LLM_JUDGE: (
        FixedSetting("max_tokens", llm_judges.LME_MAX_TOKENS, _LME_QA),
        FixedSetting("temperature", _JUDGE_TEMP, _LME_QA),
    ),
    judges_base.METRIC_LME_LLM_JUDGE: (  # the same calls, read strictly
        FixedSetting("max_tokens", llm_judges.LME_MAX_TOKENS, _LME_QA),
        FixedSetting("temperature", _JUDGE_TEMP, _LME_QA),
    ),
    judges_base.METRIC_LOCOMO_LLM_JUDGE: (
        FixedSetting("max_tokens", llm_judges.LOCOMO_JUDGE_MAX_TOKENS, "membench's mem0-style LoCoMo judge"),
        FixedSetting("temperature", _JUDGE_TEMP, "membench's mem0-style LoCoMo judge"),
    ),
    judges_base.METRIC_MEM0_LOCOMO_JUDGE: (FixedSetting("temperature", _JUDGE_TEMP, _MEM0),),
    judges_base.METRIC_MEM0_LOCOMO_JUDGE_STRICT: (FixedSetting("temperature", _JUDGE_TEMP, _MEM0),),
}


def _line(who: str, calls: str, fixed: FixedSetting, block: str, llm: LLMConfig) -> str:
    configured = getattr(llm, fixed.key)
    unused = "" if configured == fixed.value else f"; {block}.{fixed.key}: {configured} is not used for them"
    return f"{who}: {calls} send {fixed.key}={fixed.value} ({fixed.protocol}){unused}"


def _reader_notes(resolved: ResolvedConfig, llm: LLMConfig) -> list[str]:
    cfg = resolved.config
    notes: list[str] = []
    for spec in resolved.readers:
        if spec.kind != LLM_READER_KIND or not isinstance(spec.params, LLMReaderParams):
            continue
        p = spec.params
        mc = [d.name for d in cfg.datasets if spec.applies_to(d.name) and _kind(d.loader) == judges_base.KIND_MC10]
        if mc:
            fixed = FixedSetting("max_tokens", p.mc_max_tokens, "membench's multiple-choice protocol: one option index")
            notes.append(_line(spec.where, f"multiple-choice answers ({', '.join(mc)})", fixed, "llm", llm))
        if p.preset == presets.PRESET_LME_CON:
            fixed = FixedSetting("max_tokens", presets.LME_CON_MAX_TOKENS, "LongMemEval's chain-of-note reading step")
            notes.append(_line(spec.where, "per-session notes", fixed, "llm", llm))
    return notes


def _kind(loader: str) -> str | None:
    try:
        return judges_base.dataset_kind(loader)
    except judges_base.JudgeConfigError:
        return None


def _judges(cfg: BenchmarkConfig, resolved: ResolvedConfig) -> list[tuple[str, judges_base.JudgeSpec, dict]]:
    """(label, spec, params) of the LLM judges this config runs: its ``judges:`` or each family's defaults."""
    if cfg.judges:
        return [(s.where, s.impl, s.params_given()) for s in resolved.judges if s.impl.needs_llm]
    kinds = sorted({k for d in cfg.datasets if (k := _kind(d.loader)) is not None})
    names = [n for k in kinds for n in judges_base.DEFAULT_JUDGES[k][1]]
    return [(f"default judge {n}", resolved.default_judges[n].impl, {}) for n in names]


def _model_line(who: str, spec: judges_base.JudgeSpec, params: dict, block: str, llm: LLMConfig) -> str | None:
    """The model a judge asks, when it is not the one its published protocol judged with."""
    asked = judges_base.judge_model(params, llm.model)
    if spec.official_model is None or asked == spec.official_model:
        return None
    source = "its params" if params.get("model") else f"{block}.model"
    return f"{who}: judge calls ask {asked} ({source}); the published protocol judged with {spec.official_model}"


def fixed_llm_settings(resolved: ResolvedConfig) -> list[str]:
    """One line per (component, setting) whose LLM calls do not send the ``llm:`` block's value."""
    cfg = resolved.config
    notes = _reader_notes(resolved, cfg.llm) if cfg.llm is not None else []
    judge_llm, block = cfg.judge_endpoint(), cfg.judge_block
    if judge_llm is None:
        return notes
    for who, spec, _ in _judges(cfg, resolved):
        notes += [_line(who, "judge calls", f, block, judge_llm) for f in JUDGE_FIXED.get(spec.metric, ())]
    return notes


def judge_model_notes(resolved: ResolvedConfig) -> list[str]:
    """One line per LLM judge asking another model than its published protocol judged with. Every
    judge asks the configured judge model (no judge keeps a model of its own); this says where
    that differs from the paper's, so a score is not read as the paper's protocol."""
    cfg = resolved.config
    judge_llm, block = cfg.judge_endpoint(), cfg.judge_block
    if judge_llm is None:
        return []
    lines = (_model_line(who, spec, params, block, judge_llm) for who, spec, params in _judges(cfg, resolved))
    return [line for line in lines if line]
