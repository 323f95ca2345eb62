"""LoCoMo scoring vs LoCoMo's own scorer: hand-checked tables, then question by question on the real data.

The expected values are figures, not code: tests/data/official/locomo_scores.json holds what
snap-research/locomo's ``task_eval/evaluation.py`` produced (per-category score and evidence
recall of ``eval_question_answering``, ``exact_match_score``, ``normalize_answer``) when run
outside this repository on the inputs of tests/support/parity_inputs.py; its header names the commit and
how the figures were made. membench's implementation lives in pipeline/judges/locomo.py and
pipeline/metrics/locomo_evidence.py.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from pipeline.judges.base import JudgeContext, JudgeInput
from pipeline.judges.locomo import locomo_adversarial_official, locomo_exact_match, locomo_f1, normalize_answer
from pipeline.metrics.locomo_evidence import locomo_evidence_recall_official, locomo_evidence_recall_repaired
from tests.support.judges import question
from tests.support.official_figures import load_figures
from tests.support.parity_inputs import inputs_digest, locomo_case_payload, locomo_cases

FIGURES = "locomo_scores.json"


@lru_cache(maxsize=1)
def _official() -> dict[str, Any]:
    return load_figures(FIGURES)


def _table(name: str) -> dict[str, Any]:
    """An official table as {input: value} (inputs as JSON text when they are lists)."""
    rows = _official()["tables"][name]
    return {json.dumps(row[:-1]) if len(row) > 2 else row[0]: row[-1] for row in rows}


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
    assert _table("category_5_score")[output] == float(expected)  # LoCoMo's scorer agrees


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
    assert normalize_answer(text) == normalized == _table("normalize_answer")[text]


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
    if context:  # LoCoMo's scorer reads context[0], so it has no figure for an empty context
        assert _table("evidence_recall")[json.dumps([evidence, context])] == official
    # the repaired side compares canonical turn ids (dia id D<s>:<t> of conversation c -> c:<s>:<t>)
    context_turns = {"c:" + c[1:] for c in context if c.startswith("D")}
    if repaired is None:
        if not repaired_gold:
            with pytest.raises(ValueError, match="undefined"):
                locomo_evidence_recall_repaired(repaired_gold, context_turns)
    else:
        assert locomo_evidence_recall_repaired(repaired_gold, context_turns) == repaired


def test_every_official_table_row_is_checked_above() -> None:
    tables = _official()["tables"]
    sizes = {name: len(rows) for name, rows in tables.items()}
    assert sizes == {"normalize_answer": 5, "category_5_score": 9, "evidence_recall": 6}


# ---- the real data -----------------------------------------------------------------------------------
@pytest.mark.shared_data
def test_locomo_scores_equal_the_official_figures(shared_datasets: Path) -> None:
    official = _official()
    header = official["header"]
    raw = (shared_datasets / "locomo10.json").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == header["dataset"]["sha256"]
    cases = list(locomo_cases(json.loads(raw)))
    assert inputs_digest(locomo_case_payload(c) for c in cases) == header["inputs_sha256"]  # the same inputs
    expected = {row["key"]: row for row in official["questions"]}
    assert [c.key for c in cases] == list(expected)
    pairs = em_pairs = differences = recall_pairs = recall_differences = 0
    for case in cases:
        want = expected[case.key]
        answer = None if case.answer is None else str(case.answer)
        q = question(type_raw=str(case.category), answer=answer, text=case.question)
        assert len(want["score"]) == len(case.outputs)
        for j, output in enumerate(case.outputs):
            ours = locomo_f1(JudgeInput(q, output), JudgeContext()).score
            pairs += 1
            differences += abs(float(ours or 0.0) - want["score"][j]) > 1e-12
            if case.category != 5:
                em = locomo_exact_match(JudgeInput(q, output), JudgeContext()).correct
                em_pairs += 1
                differences += em is not bool(want["exact_match"][j])
        for context, recall in zip(case.contexts, want["evidence_recall"], strict=True):
            recall_pairs += 1
            recall_differences += locomo_evidence_recall_official(list(case.evidence), list(context)) != recall
    assert differences == 0 and recall_differences == 0
    # (question, output) pairs: per-category score on all 1,986 questions (446 of them category 5), exact
    # match on categories 1-4; evidence recall: a turn context and a session context per question
    assert (pairs, em_pairs, recall_pairs) == (16708, 13126, 2 * 1986)
    assert (header["counts"]["scores"], header["counts"]["exact_matches"]) == (pairs, em_pairs)
