"""LoCoMo scoring vs the official code: hand-made tables, then question by question on the real data.

The oracle functions below are LoCoMo's own (snap-research/locomo ``task_eval/evaluation.py``,
CC BY-NC 4.0): ``normalize_answer``, ``f1_score``, ``f1`` (multi-answer), ``exact_match_score``, the
per-category dispatch and the category-5 rule of ``eval_question_answering``, and its evidence
recall. They are embedded here only as a test reference (``np.mean`` of the multi-answer F1 written
as ``sum / len``); membench's implementation lives in pipeline/judges/locomo.py and
pipeline/metrics/locomo_evidence.py.
"""

from __future__ import annotations

import json
import random
import string
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import regex
from nltk.stem import PorterStemmer

from pipeline.judges.base import JudgeContext, JudgeInput
from pipeline.judges.locomo import locomo_adversarial_official, locomo_exact_match, locomo_f1, normalize_answer
from pipeline.metrics.locomo_evidence import locomo_evidence_recall_official, locomo_evidence_recall_repaired
from tests.judge_fixtures import question

ps = PorterStemmer()


# ---- the official oracle (snap-research/locomo task_eval/evaluation.py) --------------------------------
def off_normalize_answer(s: str) -> str:
    s = s.replace(",", "")

    def remove_articles(text: str) -> str:
        return regex.sub(r"\b(a|an|the|and)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def off_f1_score(prediction: str, ground_truth: str) -> float:
    prediction_tokens = [ps.stem(w) for w in off_normalize_answer(prediction).split()]
    ground_truth_tokens = [ps.stem(w) for w in off_normalize_answer(ground_truth).split()]
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def off_f1(prediction: str, ground_truth: str) -> float:
    predictions = [p.strip() for p in prediction.split(",")]
    ground_truths = [g.strip() for g in ground_truth.split(",")]
    scores = [max([off_f1_score(prediction, gt) for prediction in predictions]) for gt in ground_truths]
    return sum(scores) / len(scores)


def off_exact_match_score(prediction: str, ground_truth: str) -> bool:
    return set(off_normalize_answer(prediction).split()) == set(off_normalize_answer(ground_truth).split())


def off_score(category: int, answer: Any, output: str) -> float:
    """eval_question_answering's per-line score (metric 'f1')."""
    answer = str(answer)
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category in [2, 3, 4]:
        return off_f1_score(output, answer)
    if category in [1]:
        return off_f1(output, answer)
    if category in [5]:
        return 1 if ("no information available" in output.lower() or "not mentioned" in output.lower()) else 0
    raise ValueError(category)


def off_recall(evidence: list[str], context: list[str]) -> float:
    """eval_question_answering's recall_acc for one line that has a '<key>_context'."""
    if len(evidence) > 0:
        if context[0].startswith("S"):
            sessions = [e[1:] for e in context]
            return float(sum([ev.split(":")[0][1:] in sessions for ev in evidence])) / len(evidence)
        return float(sum([ev in context for ev in evidence])) / len(evidence)
    return 1


# ---- hand-checked tables -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Not mentioned in the conversation", True),
        ("That was NOT MENTIONED.", True),
        ("No information available", True),
        ("Not  mentioned", False),  # two spaces: the official raw substring test fails
        ("not\nmentioned", False),  # a newline: likewise
        ("“not mentioned”", True),  # curly quotes around the phrase do not matter
        ("never mentioned", False),
        ("no info available", False),
        ("", False),
    ],
)
def test_category5_is_the_official_raw_substring(output: str, expected: bool) -> None:
    assert locomo_adversarial_official(output) is expected
    verdict = locomo_f1(JudgeInput(question(type_raw="5", answer=None), output), JudgeContext())
    assert verdict.correct is expected and verdict.score == float(expected)
    assert off_score(5, None, output) == float(expected)


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The cat and a dog", "cat dog"),
        ("Theatre, an anthem", "theatre anthem"),  # 'an' inside 'anthem' is no word
        ("a.m. and p.m.", "am pm"),
        ("l'a the", "la"),
        ("Café and the crème", "café crème"),
    ],
)
def test_normalize_answer_uses_regex_word_boundaries(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized == off_normalize_answer(text)


@pytest.mark.parametrize(
    ("evidence", "context", "official", "repaired_gold", "repaired"),
    [
        (["D1:3"], ["D1:3", "D2:1"], 1.0, {"c:1:3"}, 1.0),
        (["D30:05"], ["D30:5"], 0.0, {"c:30:5"}, 1.0),  # zero-padded raw id never matches officially
        (["D8:6; D9:17"], ["D8:6", "D9:17"], 0.0, {"c:8:6", "c:9:17"}, 1.0),  # one raw string for two ids
        (["D1:3", "D2:4"], ["D2:4"], 0.5, {"c:1:3", "c:2:4"}, 0.5),
        ([], ["D1:1"], 1.0, set(), None),  # no evidence: 1 officially, excluded when repaired
        (["D1:3", "D4:4"], ["S1", "S2"], 0.5, {"c:1:3", "c:4:4"}, None),  # session context
        (["D1:3"], [], 0.0, {"c:1:3"}, 0.0),  # nothing in context
    ],
)
def test_evidence_recall_official_and_repaired(
    evidence: list[str], context: list[str], official: float, repaired_gold: set[str], repaired: float | None
) -> None:
    assert locomo_evidence_recall_official(evidence, context) == official
    if context:
        assert off_recall(evidence, context) == official
    # the repaired side compares canonical turn ids (dia id D<s>:<t> of conversation c -> c:<s>:<t>)
    context_turns = {"c:" + c[1:] for c in context if c.startswith("D")}
    if repaired is None:
        if not repaired_gold:
            with pytest.raises(ValueError, match="undefined"):
                locomo_evidence_recall_repaired(repaired_gold, context_turns)
    else:
        assert locomo_evidence_recall_repaired(repaired_gold, context_turns) == repaired


# ---- the real data -----------------------------------------------------------------------------------
def _predictions(sample: dict[str, Any], qa: dict[str, Any], others: list[dict[str, Any]]) -> list[str]:
    """Realistic outputs: the evidence turns' text, gold answers of other questions, abstentions."""
    turns = {t["dia_id"]: t["text"] for k, v in sample["conversation"].items() if k.startswith("session_")
             and isinstance(v, list) for t in v}  # fmt: skip
    preds = [turns[e] for e in qa.get("evidence", []) if e in turns]
    preds += [str(o.get("answer", o.get("adversarial_answer", ""))) for o in others]
    preds += [str(qa.get("answer", "")), str(qa.get("adversarial_answer", "")), "Not  mentioned", "not mentioned"]
    return preds


@pytest.mark.shared_data
def test_locomo_scores_equal_the_official_code(shared_datasets: Path) -> None:
    data = json.loads((shared_datasets / "locomo10.json").read_text())
    rng = random.Random(10)
    pairs = em_pairs = differences = recall_pairs = recall_differences = 0
    for sample in data:
        dia_ids = [t["dia_id"] for k, v in sample["conversation"].items() if k.startswith("session_")
                   and isinstance(v, list) for t in v]  # fmt: skip
        for i, qa in enumerate(sample["qa"]):
            cat = qa["category"]
            answer = qa.get("answer")
            q = question(type_raw=str(cat), answer=None if answer is None else str(answer), text=qa["question"])
            others = [sample["qa"][(i + d) % len(sample["qa"])] for d in (1, 7, 19)]
            for pred in _predictions(sample, qa, others):
                ours = locomo_f1(JudgeInput(q, pred), JudgeContext()).score
                official = off_score(cat, answer, pred)
                pairs += 1
                differences += abs(float(ours or 0.0) - official) > 1e-12
                if cat != 5:
                    gold = str(answer).split(";")[0].strip() if cat == 3 else str(answer)
                    em = locomo_exact_match(JudgeInput(q, pred), JudgeContext()).correct
                    em_pairs += 1
                    differences += em is not off_exact_match_score(pred, gold)
            evidence = qa.get("evidence", [])
            for context in (rng.sample(dia_ids, 10) + evidence[:1], [f"S{s}" for s in rng.sample(range(1, 30), 5)]):
                recall_pairs += 1
                recall_differences += locomo_evidence_recall_official(evidence, context) != off_recall(
                    evidence, context
                )
    assert differences == 0 and recall_differences == 0
    # (question, output) pairs: per-category score on all 1,986 questions (446 of them category 5), exact
    # match on categories 1-4; evidence recall: a turn context and a session context per question
    assert (pairs, em_pairs, recall_pairs) == (16708, 13126, 2 * 1986)
