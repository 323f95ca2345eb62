"""The built-in judges by metric name: the explicit list a config's ``judges:`` kind is looked up in.

Why a list and not registration on import: which judges exist must not depend on which modules a
process happened to import. Plugins (``package.module:Name``, entry points) are added to
``JUDGES`` when a config names them (pipeline/kinds/plugins.py).
"""

from __future__ import annotations

from pipeline.judges.base import JudgeSpec
from pipeline.judges.beam import BEAM_EVENT_ORDERING_JUDGE, BEAM_OFFICIAL_JUDGE, BEAM_RUBRIC_MEAN_JUDGE
from pipeline.judges.llm import (
    LME_LLM_JUDGE,
    LME_OFFICIAL_LLM_JUDGE,
    LOCOMO_LLM_JUDGE,
    MEM0_LOCOMO_JUDGE,
    MEM0_LOCOMO_STRICT_JUDGE,
)
from pipeline.judges.lme import LME_CONTAINS_NORMALIZED_JUDGE
from pipeline.judges.locomo import LOCOMO_EXACT_MATCH_JUDGE, LOCOMO_F1_JUDGE, LOCOMO_KEYWORD_OVERLAP_JUDGE
from pipeline.judges.locomo_plus import LOCOMO_PLUS_JUDGE
from pipeline.judges.mc import MC_ACCURACY_JUDGE
from pipeline.util.registry import Registry

BUILTIN_JUDGES: tuple[JudgeSpec, ...] = (
    LME_CONTAINS_NORMALIZED_JUDGE,
    LOCOMO_F1_JUDGE,
    LOCOMO_EXACT_MATCH_JUDGE,
    LOCOMO_KEYWORD_OVERLAP_JUDGE,
    MC_ACCURACY_JUDGE,
    LME_OFFICIAL_LLM_JUDGE,
    LME_LLM_JUDGE,
    LOCOMO_LLM_JUDGE,
    MEM0_LOCOMO_JUDGE,
    MEM0_LOCOMO_STRICT_JUDGE,
    BEAM_OFFICIAL_JUDGE,
    BEAM_RUBRIC_MEAN_JUDGE,
    BEAM_EVENT_ORDERING_JUDGE,
    LOCOMO_PLUS_JUDGE,
)

JUDGES: Registry[JudgeSpec] = Registry.of("judge", {spec.metric: spec for spec in BUILTIN_JUDGES})


def metric_info() -> dict[str, dict[str, str]]:
    """metric -> {description, aggregate, needs_llm, official_model} of every built-in judge: for reports and docs."""
    return {
        spec.metric: {
            "description": spec.description,
            "aggregate": spec.aggregate,
            "needs_llm": str(spec.needs_llm).lower(),
            "official_model": spec.official_model or "",
        }
        for spec in sorted(BUILTIN_JUDGES, key=lambda s: s.metric)
    }
