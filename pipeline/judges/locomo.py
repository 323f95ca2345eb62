"""LoCoMo lexical judges: the official F1, exact match, and seed 001's keyword overlap.

Official scoring: the definitions of snap-research/locomo ``task_eval/evaluation.py`` (which
membench does not carry: its code is CC BY-NC 4.0), implemented here and checked question by
question against figures that code produced (tests/judges/test_locomo_parity.py):
- ``normalize_answer``: drop ',', lower-case, strip ASCII punctuation, replace the words
  a/an/the/and by a space (word boundaries of the third-party ``regex`` module, as the official
  code uses), collapse whitespace.
- ``f1_score``: Porter-stemmed (NLTK ``PorterStemmer``, as the official code; PyStemmer's
  'porter' differs on words like "dying") token multisets; F1 of their intersection; 0 when
  nothing is shared.
- per category (type_raw): 1 multi-hop -> split prediction and gold on ',' and average, over gold
  parts, the best prediction part's F1; 2/4 -> ``f1_score``; 3 -> the gold before the first ';';
  5 adversarial -> 1 iff 'no information available' or 'not mentioned' is a substring of the
  lower-cased RAW output (``locomo_adversarial_official``): no whitespace or quote folding, so
  "Not  mentioned" and "not\nmentioned" score 0 exactly as in the official code.

``locomo_exact_match``: the official ``exact_match_score`` (sets of normalised tokens equal),
with the same gold preparation and category-5 rule. ``locomo_keyword_overlap`` (seed 001): pass
iff the gold is a case-insensitive substring of the prediction OR >= 60 % of the gold's keywords
(stop words removed, tokens < 2 chars dropped) occur in the prediction; score = that fraction.
"""

from __future__ import annotations

import string
from collections import Counter
from functools import lru_cache
from typing import Any

import regex

from pipeline.core.records import QuestionRow
from pipeline.judges.base import (
    AGG_ACCURACY,
    AGG_MEAN_SCORE,
    KIND_LOCOMO,
    METRIC_LOCOMO_EXACT_MATCH,
    METRIC_LOCOMO_F1,
    METRIC_LOCOMO_KEYWORD_OVERLAP,
    JudgeContext,
    JudgeInput,
    JudgeSpec,
    Verdict,
    text_fingerprint,
)
from pipeline.metrics.lexical import LOCOMO_NOT_AVAILABLE, STOP_WORDS, keywords

CATEGORIES = ("1", "2", "3", "4", "5")
CAT_MULTI_HOP = "1"
CAT_OPEN_DOMAIN = "3"
CAT_ADVERSARIAL = "5"
KEYWORD_PASS = 0.6

_ARTICLES = regex.compile(r"\b(a|an|the|and)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """The official LoCoMo normalisation (see module docstring)."""
    s = s.replace(",", "").lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """NLTK's PorterStemmer, imported on first use: importing nltk takes ~2 s, and resolving a
    config (which imports every judge module) must stay well under that."""
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stem(word))


def f1_score(prediction: str, gold: str) -> float:
    """Official token F1 over Porter-stemmed normalised tokens."""
    pred = [_stem(w) for w in normalize_answer(prediction).split()]
    ref = [_stem(w) for w in normalize_answer(gold).split()]
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Official category-1 F1: mean over gold parts of the best prediction part's F1 (',' split)."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(f1_score(p, g) for p in preds) for g in golds) / len(golds)


def exact_match(prediction: str, gold: str) -> bool:
    """Official exact_match_score: equal sets of normalised (unstemmed) tokens."""
    return set(normalize_answer(prediction).split()) == set(normalize_answer(gold).split())


def keyword_overlap(prediction: str, gold: str) -> float:
    """Fraction of the gold's distinct keywords found among the prediction's (0 when it has none)."""
    gold_kw = set(keywords(gold))
    if not gold_kw:
        return 0.0
    return len(gold_kw & set(keywords(prediction))) / len(gold_kw)


def category(q: QuestionRow) -> str:
    if q.type_raw not in CATEGORIES:
        raise ValueError(
            f"question {q.question_id!r} (record {q.record_index}): field 'type_raw' is "
            f"{q.type_raw!r}, not a LoCoMo category 1-5"
        )
    return q.type_raw


def locomo_gold(q: QuestionRow) -> str:
    """The gold a lexical LoCoMo metric compares with (category 3: the part before ';')."""
    if q.answer is None:
        raise ValueError(
            f"question {q.question_id!r} (record {q.record_index}): field 'answer' is null "
            f"for LoCoMo category {q.type_raw}"
        )
    return q.answer.split(";")[0].strip() if q.type_raw == CAT_OPEN_DOMAIN else q.answer


def locomo_adversarial_official(prediction: str) -> bool:
    """The official category-5 rule: a phrase of LOCOMO_NOT_AVAILABLE in the lower-cased raw output."""
    lowered = prediction.lower()
    return any(phrase in lowered for phrase in LOCOMO_NOT_AVAILABLE)


def _adversarial(prediction: str) -> Verdict:
    ok = locomo_adversarial_official(prediction)
    return Verdict(ok, float(ok), {"category": CAT_ADVERSARIAL, "rule": "official raw substring"})


def locomo_f1(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    """Official per-category score; ``correct`` marks a perfect F1 (reports use the mean score)."""
    cat = category(inp.question)
    pred = inp.prediction or ""
    if cat == CAT_ADVERSARIAL:
        return _adversarial(pred)
    gold = locomo_gold(inp.question)
    score = multi_answer_f1(pred, gold) if cat == CAT_MULTI_HOP else f1_score(pred, gold)
    return Verdict(score == 1.0, score, {"category": cat, "gold": gold})


def locomo_exact_match(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    cat = category(inp.question)
    pred = inp.prediction or ""
    if cat == CAT_ADVERSARIAL:
        return _adversarial(pred)
    gold = locomo_gold(inp.question)
    ok = exact_match(pred, gold)
    return Verdict(ok, float(ok), {"category": cat, "gold": gold})


def locomo_keyword_overlap(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    cat = category(inp.question)
    pred = inp.prediction or ""
    if cat == CAT_ADVERSARIAL:
        return _adversarial(pred)
    gold = locomo_gold(inp.question)
    substring = gold.strip().lower() in pred.lower()
    overlap = keyword_overlap(pred, gold)
    ok = substring or overlap >= KEYWORD_PASS
    details = {"category": cat, "gold": gold, "substring": substring, "overlap": overlap}
    return Verdict(ok, overlap, details)


_FINGERPRINT = text_fingerprint(
    _ARTICLES.pattern, *LOCOMO_NOT_AVAILABLE, " ".join(sorted(STOP_WORDS)), str(KEYWORD_PASS)
)
LOCOMO_F1_JUDGE = JudgeSpec(
    metric=METRIC_LOCOMO_F1,
    kinds=frozenset({KIND_LOCOMO}),
    fn=locomo_f1,
    description="official LoCoMo token F1 (Porter-stemmed; cat 1 multi-answer, cat 3 gold before ';', "
    "cat 5 'no information available'/'not mentioned')",
    aggregate=AGG_MEAN_SCORE,
    version="2",  # 2: raw category-5 substring rule, regex-module word boundaries
    fingerprint=_FINGERPRINT,
)
LOCOMO_EXACT_MATCH_JUDGE = JudgeSpec(
    metric=METRIC_LOCOMO_EXACT_MATCH,
    kinds=frozenset({KIND_LOCOMO}),
    fn=locomo_exact_match,
    description="official LoCoMo exact match: equal sets of normalised tokens (cat 5 as in F1)",
    aggregate=AGG_ACCURACY,
    version="2",  # 2: raw category-5 substring rule, regex-module word boundaries
    fingerprint=_FINGERPRINT,
)
LOCOMO_KEYWORD_OVERLAP_JUDGE = JudgeSpec(
    metric=METRIC_LOCOMO_KEYWORD_OVERLAP,
    kinds=frozenset({KIND_LOCOMO}),
    fn=locomo_keyword_overlap,
    description="gold substring of prediction OR >= 60% of gold keywords present (seed 001; cat 5 as in F1)",
    aggregate=AGG_ACCURACY,
    version="2",  # 2: raw category-5 substring rule, regex-module word boundaries
    fingerprint=_FINGERPRINT,
)
