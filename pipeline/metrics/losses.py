"""Where a wrong answer was lost: one cause per wrong verdict, pinned here.

Why: an accuracy says how many answers were wrong, not whether to fix the memory, the reader or the
judge. Each wrong verdict (a scored judgment with ``correct`` false) gets exactly one cause, tried in
this order:

1. ``string_right_judged_wrong``: a string metric (``STRING_METRICS``: exact match, or the gold
   contained in the answer) on the same answer says it is right, and this judge says wrong: the
   judge, or the gold's wording, is where the point was lost;
2. ``evidence_not_retrieved``: no gold evidence turn reached the reader (turn-level
   ``evidence_recall_context`` = 0): the memory lost it;
3. ``retrieved_answered_wrong``: gold evidence was in the reader's context (``evidence_recall_context``
   > 0) and the answer is still wrong: the reader lost it;
4. ``evidence_unknown``: the question has no gold evidence to look for, or its retrieval was not
   scored (abstention questions, multiple choice, a failed retrieval); counted, never guessed.
"""

from __future__ import annotations

from pipeline.metrics.aggregates import METRIC_LME_CONTAINS_NORMALIZED, METRIC_LOCOMO_EXACT_MATCH

CAUSE_STRING_RIGHT = "string_right_judged_wrong"
CAUSE_NOT_RETRIEVED = "evidence_not_retrieved"
CAUSE_RETRIEVED_WRONG = "retrieved_answered_wrong"
CAUSE_UNKNOWN = "evidence_unknown"
CAUSES = (CAUSE_STRING_RIGHT, CAUSE_NOT_RETRIEVED, CAUSE_RETRIEVED_WRONG, CAUSE_UNKNOWN)
STRING_METRICS: tuple[str, ...] = (METRIC_LOCOMO_EXACT_MATCH, METRIC_LME_CONTAINS_NORMALIZED)


def loss_cause(string_right: bool, evidence_recall_context: float | None) -> str:
    """The cause of one wrong verdict (see the module doc for the order)."""
    if string_right:
        return CAUSE_STRING_RIGHT
    if evidence_recall_context is None:
        return CAUSE_UNKNOWN
    return CAUSE_NOT_RETRIEVED if evidence_recall_context == 0 else CAUSE_RETRIEVED_WRONG


def loss_cause_sql(string_right: str, evidence_recall_context: str) -> str:
    """The SQL of ``loss_cause``."""
    return (
        f"CASE WHEN {string_right} THEN '{CAUSE_STRING_RIGHT}' WHEN {evidence_recall_context} IS NULL THEN "
        f"'{CAUSE_UNKNOWN}' WHEN {evidence_recall_context} = 0 THEN '{CAUSE_NOT_RETRIEVED}' "
        f"ELSE '{CAUSE_RETRIEVED_WRONG}' END"
    )
