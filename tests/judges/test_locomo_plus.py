"""LoCoMo-Plus's judge: the Cognitive prompt, the official reading of the reply (quirks included),
the strict reading, and scores correct 1 / partial 0.5 / wrong 0, through the fake OpenAI server."""

from __future__ import annotations

import pytest

from pipeline.judges.base import JudgeContext, JudgeInput, UnparseableVerdict
from pipeline.judges.locomo_plus import (
    LOCOMO_PLUS_JUDGE_PROMPT,
    judge_prompt,
    label_official,
    label_strict,
    locomo_plus_judge,
)
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer
from tests.support.judges import question

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)

EVIDENCE = (
    "Caroline\uff1aAfter learning to say 'no', I've felt less stressed.\nMelanie\uff1aProtecting your time matters."
)


@pytest.mark.parametrize(
    ("reply", "official", "strict"),
    [
        ('{"label": "correct", "reason": "links to saying no"}', "correct", "correct"),
        ('```json\n{"label": "partial", "reason": "vague"}\n```', "partial", "partial"),
        ('{"reason": "no link", "label": "wrong"}', "wrong", "wrong"),  # pattern needs label first: the JSON read
        ('{"label": "correct"}', "correct", "correct"),
        ('{"label": "Correct", "reason": 5}', "correct", None),  # a non-text reason: the fallback
        ('{"label": 1, "reason": "correct link"}', "correct", None),  # a non-text label: the fallback
        ("The prediction is incorrect.", "correct", None),  # the fallback finds "correct" in "incorrect"
        ("Label: wrong", "wrong", None),
        ('["partial"]', "partial", None),
        ('{"label": "maybe", "reason": "unsure"}', "maybe", None),  # scores 0
        ("", "", None),
    ],
)
def test_reading_the_label(reply: str, official: str, strict: str | None) -> None:
    assert label_official(reply) == official
    assert label_strict(reply) == strict


def test_the_prompt_is_the_cognitive_template() -> None:
    prompt = judge_prompt(EVIDENCE, "Oh no, remember how saying no helped you?")
    assert prompt == LOCOMO_PLUS_JUDGE_PROMPT.format(
        evidence=EVIDENCE, pred="Oh no, remember how saying no helped you?"
    )
    assert prompt.startswith("\nYou are a Memory Awareness Judge.\n")
    assert prompt.endswith('{"label": "correct"|"wrong", "reason": "<Does the prediction relate to the evidence?>"}\n')


def _plus(answer: str | None = EVIDENCE):
    return question(dataset="plus", question_id="conv-26_plus0", type_raw="causal", answer=answer,
                    text='Caroline said, "I ended up volunteering for that project."')  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "score"),
    [('{"label": "correct", "reason": "r"}', 1.0), ('{"label": "partial", "reason": "r"}', 0.5),
     ('{"label": "wrong", "reason": "r"}', 0.0), ("no idea", 0.0)],
)  # fmt: skip
def test_scores_through_the_client(server: FakeOpenAIServer, llm: OpenAIChatClient, reply: str, score: float) -> None:
    server.add_rule("Memory Awareness Judge", reply)
    verdict = locomo_plus_judge(JudgeInput(_plus(), "You said no before!"), JudgeContext(llm))
    assert verdict.score == score and verdict.correct is (score == 1.0)
    (body,) = server.requests
    assert body["messages"] == [{"role": "user", "content": judge_prompt(EVIDENCE, "You said no before!")}]
    assert (body["temperature"], body["max_tokens"]) == (0.0, 512)


def test_strict_reading_fails_an_unclear_reply_and_asks_again(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    server.add_rule("Memory Awareness Judge", "It is incorrect.")
    ctx = JudgeContext(llm, params={"reading": "strict"})
    for _ in range(2):
        with pytest.raises(UnparseableVerdict, match="correct / partial / wrong"):
            locomo_plus_judge(JudgeInput(_plus(), "x"), ctx)
    assert server.request_count == 2
    official = locomo_plus_judge(JudgeInput(_plus(), "x"), JudgeContext(llm))
    assert official.score == 1.0 and official.details["label"] == "correct"  # the official reading's quirk


def test_a_question_without_evidence_is_an_error(llm: OpenAIChatClient) -> None:
    with pytest.raises(ValueError, match="evidence"):
        locomo_plus_judge(JudgeInput(_plus(None), "x"), JudgeContext(llm))
