"""``lme_contains_normalized``: an offline, lexical LongMemEval judge (NOT the official one).

Why a distinct name: the official LongMemEval metric is an LLM judge (``lme_official_llm_judge``,
pipeline/judges/llm.py). This one only lets the pipeline produce a score without an LLM;
its numbers are not comparable with published LongMemEval accuracies.

Definition (pinned), routed in this order:
1. abstention question (question_id ends with "_abs"): correct iff the prediction contains one of
   ``ABSTENTION_PHRASES`` (pipeline/metrics/lexical.py);
2. single-session-preference: not applicable (the gold is a rubric, not an answer string):
   ``correct`` = null, excluded from accuracy;
3. otherwise: correct iff the normalised gold (lower-case, punctuation removed, articles
   dropped) occurs in the normalised prediction as a whole-token sequence.
"""

from __future__ import annotations

from pipeline.core.families import is_abstention_id
from pipeline.core.records import QuestionRow
from pipeline.judges.base import (
    AGG_ACCURACY,
    KIND_LONGMEMEVAL,
    METRIC_LME_CONTAINS_NORMALIZED,
    JudgeContext,
    JudgeInput,
    JudgeSpec,
    Verdict,
    text_fingerprint,
)
from pipeline.metrics.lexical import ABSTENTION_PHRASES, normalize_plain, says_not_available

TYPE_PREFERENCE = "single-session-preference"


def is_lme_abstention(q: QuestionRow) -> bool:
    """LongMemEval's rule (evaluate_qa.py): an abstention question is marked by its id."""
    return is_abstention_id(q.question_id)


def lme_gold(q: QuestionRow) -> str:
    if q.answer is None or not q.answer.strip():
        raise ValueError(f"question {q.question_id!r} (record {q.record_index}): field 'answer' is empty")
    return q.answer


def contains_normalized(prediction: str, gold: str) -> bool:
    """Normalised gold is a whole-token subsequence of the normalised prediction."""
    g = normalize_plain(gold)
    if not g:
        return False
    return f" {g} " in f" {normalize_plain(prediction)} "


def lme_contains_normalized(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    q = inp.question
    pred = inp.prediction or ""
    if is_lme_abstention(q):
        ok = says_not_available(pred)
        return Verdict(ok, float(ok), {"abstention": True, "rule": "abstention phrase"})
    if q.type_raw == TYPE_PREFERENCE:
        reason = "gold is a rubric for a personalised response; no lexical check applies"
        return Verdict(None, None, {"applicable": False, "reason": reason})
    gold = lme_gold(q)
    ok = contains_normalized(pred, gold)
    return Verdict(ok, float(ok), {"gold": gold, "normalized_gold": normalize_plain(gold)})


LME_CONTAINS_NORMALIZED_JUDGE = JudgeSpec(
    metric=METRIC_LME_CONTAINS_NORMALIZED,
    kinds=frozenset({KIND_LONGMEMEVAL}),
    fn=lme_contains_normalized,
    description="OFFLINE lexical LongMemEval check (not the official judge): normalised gold "
    "contained in the prediction; '_abs' questions: an abstention phrase; preference: n/a",
    aggregate=AGG_ACCURACY,
    version="1",
    fingerprint=text_fingerprint(*ABSTENTION_PHRASES),
)
