"""Pinned judge metric names and how each aggregates over questions.

Why a module of its own, below both the judges and the catalog: the catalog's accuracy views
(pipeline/catalog/report.py) need each metric's aggregate rule, and the store that builds the
catalog sits below the judges; importing the judges from there would run an import back up.
The judges' specs (pipeline/kinds/judges.py) carry the same rule; a test ties the two.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.core.families import FAMILY_BEAM, FAMILY_LOCOMO, FAMILY_LOCOMO_PLUS, FAMILY_LONGMEMEVAL, FAMILY_MC10

# ---- pinned metric names (one definition each; reports use these constants) ---------------
METRIC_MC_ACCURACY = "mc_accuracy"
METRIC_LOCOMO_F1 = "locomo_f1"
METRIC_LOCOMO_EXACT_MATCH = "locomo_exact_match"
METRIC_LOCOMO_KEYWORD_OVERLAP = "locomo_keyword_overlap"
METRIC_LOCOMO_LLM_JUDGE = "locomo_llm_judge"
METRIC_LME_OFFICIAL_LLM_JUDGE = "lme_official_llm_judge"
METRIC_LME_LLM_JUDGE = "lme_llm_judge"
METRIC_LME_CONTAINS_NORMALIZED = "lme_contains_normalized"
METRIC_MEM0_LOCOMO_JUDGE = "mem0_locomo_judge"
METRIC_MEM0_LOCOMO_JUDGE_STRICT = "mem0_locomo_judge_strict"
METRIC_BEAM_OFFICIAL = "beam_official"
METRIC_BEAM_RUBRIC_MEAN = "beam_rubric_mean"
METRIC_BEAM_EVENT_ORDERING = "beam_event_ordering"
METRIC_LOCOMO_PLUS_JUDGE = "locomo_plus_judge"

# how a report aggregates a metric over questions
AGG_ACCURACY = "accuracy"  # mean of ``correct`` over rows where it is not null
AGG_MEAN_SCORE = "mean_score"  # mean of ``score``

# metric -> aggregate rule of every built-in judge (a metric not listed aggregates as an accuracy)
METRIC_AGGREGATES: Mapping[str, str] = {
    METRIC_MC_ACCURACY: AGG_ACCURACY,
    METRIC_LOCOMO_F1: AGG_MEAN_SCORE,
    METRIC_LOCOMO_EXACT_MATCH: AGG_ACCURACY,
    METRIC_LOCOMO_KEYWORD_OVERLAP: AGG_ACCURACY,
    METRIC_LOCOMO_LLM_JUDGE: AGG_ACCURACY,
    METRIC_LME_OFFICIAL_LLM_JUDGE: AGG_ACCURACY,
    METRIC_LME_LLM_JUDGE: AGG_ACCURACY,
    METRIC_LME_CONTAINS_NORMALIZED: AGG_ACCURACY,
    METRIC_MEM0_LOCOMO_JUDGE: AGG_ACCURACY,
    METRIC_MEM0_LOCOMO_JUDGE_STRICT: AGG_ACCURACY,
    METRIC_BEAM_OFFICIAL: AGG_MEAN_SCORE,
    METRIC_BEAM_RUBRIC_MEAN: AGG_MEAN_SCORE,
    METRIC_BEAM_EVENT_ORDERING: AGG_MEAN_SCORE,
    METRIC_LOCOMO_PLUS_JUDGE: AGG_MEAN_SCORE,  # correct 1, partial 0.5, wrong 0
}

# metric -> dataset families it scores, for every built-in judge (the official aggregate views,
# pipeline/catalog/official.py, pick a family's metrics from it; a test ties it to the judges' kinds)
METRIC_FAMILIES: Mapping[str, frozenset[str]] = {
    METRIC_MC_ACCURACY: frozenset({FAMILY_MC10}),
    METRIC_LOCOMO_F1: frozenset({FAMILY_LOCOMO}),
    METRIC_LOCOMO_EXACT_MATCH: frozenset({FAMILY_LOCOMO}),
    METRIC_LOCOMO_KEYWORD_OVERLAP: frozenset({FAMILY_LOCOMO}),
    METRIC_LOCOMO_LLM_JUDGE: frozenset({FAMILY_LOCOMO}),
    METRIC_LME_OFFICIAL_LLM_JUDGE: frozenset({FAMILY_LONGMEMEVAL}),
    METRIC_LME_LLM_JUDGE: frozenset({FAMILY_LONGMEMEVAL}),
    METRIC_LME_CONTAINS_NORMALIZED: frozenset({FAMILY_LONGMEMEVAL}),
    METRIC_MEM0_LOCOMO_JUDGE: frozenset({FAMILY_LOCOMO}),
    METRIC_MEM0_LOCOMO_JUDGE_STRICT: frozenset({FAMILY_LOCOMO}),
    METRIC_BEAM_OFFICIAL: frozenset({FAMILY_BEAM}),
    METRIC_BEAM_RUBRIC_MEAN: frozenset({FAMILY_BEAM}),
    METRIC_BEAM_EVENT_ORDERING: frozenset({FAMILY_BEAM}),
    METRIC_LOCOMO_PLUS_JUDGE: frozenset({FAMILY_LOCOMO_PLUS}),
}
