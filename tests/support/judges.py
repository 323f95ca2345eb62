"""Question rows for reader and judge tests (one helper per dataset kind), and a retrieval result to read."""

from __future__ import annotations

from pipeline.core.records import QuestionRow
from pipeline.memory.base import RetrievalResult, RetrievedUnit

MC_CHOICES = (
    "Paris",
    "London",
    "Berlin",
    "Madrid",
    "Rome",
    "Vienna",
    "Lisbon",
    "Oslo",
    "Prague",
    "Not mentioned in the conversation",
)


def question(
    *,
    dataset: str = "locomo",
    question_id: str = "q1",
    type_raw: str = "4",
    text: str = "What did Caroline research?",
    answer: str | None = "Adoption agencies",
    choices: tuple[str, ...] | None = None,
    correct_choice_index: int | None = None,
    question_date_raw: str | None = None,
    haystack_id: str = "h1",
) -> QuestionRow:
    return QuestionRow(
        dataset=dataset,
        question_id=question_id,
        partition_key=f"{dataset}__{question_id}",
        record_index=0,
        type_raw=type_raw,
        type_name=type_raw,
        question=text,
        answer=answer,
        adversarial_answer=None,
        choices=choices,
        correct_choice_index=correct_choice_index,
        question_date_raw=question_date_raw,
        question_date=None,
        is_abstention=question_id.endswith("_abs") or type_raw == "5",
        haystack_id=haystack_id,
    )


def locomo(category: str, answer: str | None, text: str = "What did Caroline research?") -> QuestionRow:
    return question(type_raw=category, answer=answer, text=text)


def lme(question_type: str, answer: str, question_id: str = "lme1", text: str = "Where did I buy it?") -> QuestionRow:
    return question(
        dataset="lme",
        question_id=question_id,
        type_raw=question_type,
        text=text,
        answer=answer,
        question_date_raw="2023/05/30 (Tue) 23:40",
    )


def mc(correct: int = 0, text: str = "Which city did Caroline visit?") -> QuestionRow:
    return question(
        dataset="mc10",
        question_id="conv-26_q0",
        type_raw="single_hop",
        text=text,
        answer=MC_CHOICES[correct],
        choices=MC_CHOICES,
        correct_choice_index=correct,
    )


# one retrieved turn (Caroline visited Paris) and its context: what a reader reads for these questions
RETRIEVAL = RetrievalResult(
    units=(RetrievedUnit("u1", 1, "s1", ("s1:0",), "Caroline: I visited Paris."),),
    context="[Session 1 | 2023-05-08 (Mon) 13:56]\nCaroline: I visited Paris.",
    context_tokens=12,
)
