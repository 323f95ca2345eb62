"""LLM judges: official LongMemEval prompts, strict label parsing, failures and the cache.

The judges run through the real OpenAIChatClient against the fake OpenAI-compatible server, so the
request (one user message, temperature 0, max_tokens) and the caching are observed for real.
"""

from __future__ import annotations

import hashlib

import pytest

from pipeline.core.status import UNPARSEABLE_ERROR_PREFIX
from pipeline.judges.base import JudgeContext, JudgeFailed, JudgeInput, UnparseableVerdict
from pipeline.judges.llm import (
    LME_PROMPT_DEFAULT,
    LOCOMO_ADVERSARIAL_GOLD,
    MEM0_ACCURACY_PROMPT,
    MEM0_STRICT_PROMPT,
    READING_OFFICIAL,
    READING_STRICT,
    get_anscheck_prompt,
    lme_llm_judge,
    lme_official_llm_judge,
    locomo_llm_judge,
    mem0_locomo_judge,
    mem0_locomo_judge_strict,
    parse_correct_wrong,
    parse_yes_no,
    read_lme_reply,
)
from pipeline.llm.cache import ResponseCache
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault
from tests.support.judges import lme, locomo
from tests.support.llm import JUDGE_MODEL

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)

# ---- official LongMemEval prompts -------------------------------------------------------------
# the texts themselves are pinned by sha256 in tests/tree/test_protocol_texts.py (docs/design/third_party.md)
DEFAULT_EXPECTED = LME_PROMPT_DEFAULT.format("Q?", "A", "R")


@pytest.mark.parametrize("task", ["single-session-user", "single-session-assistant", "multi-session"])
def test_default_prompt_is_the_official_text(task: str) -> None:
    assert get_anscheck_prompt(task, "Q?", "A", "R", abstention=False) == DEFAULT_EXPECTED
    # the slots are filled in the official order: question, answer, response
    assert "\n\nQuestion: Q?\n\nCorrect Answer: A\n\nModel Response: R\n\n" in DEFAULT_EXPECTED


@pytest.mark.parametrize(
    ("task", "abstention", "must_contain", "must_not_contain"),
    [
        ("temporal-reasoning", False, "do not penalize off-by-one errors for the number of days", "Rubric"),
        ("knowledge-update", False, "along with an updated answer", "off-by-one"),
        ("single-session-preference", False, "\n\nRubric: A\n\n", "Correct Answer"),
        # abstention wins over every type, including preference
        ("single-session-preference", True, "correctly identify the question as unanswerable?", "Rubric"),
        ("temporal-reasoning", True, "\n\nExplanation: A\n\n", "off-by-one"),
    ],
)
def test_prompt_per_question_type(task: str, abstention: bool, must_contain: str, must_not_contain: str) -> None:
    prompt = get_anscheck_prompt(task, "Q?", "A", "R", abstention)
    assert must_contain in prompt
    assert must_not_contain not in prompt
    assert prompt.endswith("Answer yes or no only.")


def test_unknown_question_type_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown LongMemEval question_type 'trivia'"):
        get_anscheck_prompt("trivia", "Q", "A", "R", abstention=False)


# ---- strict label parsing ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("yes", True),
        ("Yes.", True),
        ("  YES\n", True),
        ("**Yes**, the response matches.", True),
        ("no", False),
        ("No.", False),
        ("No, the response does not contain it.", False),
        ("", None),
        (None, None),
        ("Maybe", None),
        ("Yes or no", None),  # both labels: unclear
        ("No, yes", None),
        ("The answer is yes", None),  # first word must be the label
        ("Yesterday", None),
        ("Nope", None),
    ],
)
def test_parse_yes_no(reply: str | None, label: bool | None) -> None:
    assert parse_yes_no(reply) is label


# LongMemEval's two readings of one reply: official = evaluate_qa.py's ``'yes' in reply.lower()``
# (never unclear), strict = membench's clear yes/no (None = a failed judgment, asked again)
READINGS_TABLE: list[tuple[str | None, bool, bool | None]] = [
    # reply, official, strict
    ("yes", True, True),
    ("Yes", True, True),
    ("Yes.", True, True),
    ("YES", True, True),
    ("  yes\n", True, True),
    ("**Yes**", True, True),
    ("Answer: Yes", True, None),
    ("The answer is yes.", True, None),
    ("Yes, the response contains the answer.", True, True),
    ("no", False, False),
    ("No.", False, False),
    ("NO", False, False),
    ("No, it does not.", False, False),
    ("", False, None),
    (None, False, None),
    ("Maybe", False, None),
    ("no, not yes", True, None),  # the official reading: any "yes" wins
    ("Yes or no", True, None),
    ("Yesterday", True, None),  # substring, as the official script
    ("eyes", True, None),
    ("Nope", False, None),
    ("I cannot tell.", False, None),
    ("Correct", False, None),
    ("The model response is incorrect", False, None),
]


@pytest.mark.parametrize(("reply", "official", "strict"), READINGS_TABLE)
def test_lme_reply_readings(reply: str | None, official: bool, strict: bool | None) -> None:
    assert read_lme_reply(reply, READING_OFFICIAL) is official
    assert read_lme_reply(reply, READING_STRICT) is strict


def test_lme_reply_reading_unknown_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown LongMemEval judge reading 'lenient'"):
        read_lme_reply("yes", "lenient")


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": "CORRECT"}', True),
        ('{"label": "WRONG"}', False),
        ('The dates match.\n```json\n{"label": "CORRECT"}\n```', True),
        ('{"label": "correct"}', True),
        ("CORRECT", True),
        ("wrong.", False),
        ("The generated answer names a different city. WRONG", False),
        ('{"label": "PARTIAL"}', None),
        ("CORRECT or WRONG", None),
        ("I am not sure.", None),
        ("", None),
        ('{"verdict": "CORRECT"} but also WRONG', None),  # no label key, both words
    ],
)
def test_parse_correct_wrong(reply: str, label: bool | None) -> None:
    assert parse_correct_wrong(reply) is label


# ---- through the LLM resource -----------------------------------------------------------------
def test_lme_judge_calls_like_the_official_script_and_is_cached(
    llm: OpenAIChatClient, server: FakeOpenAIServer
) -> None:
    server.add_rule("Model Response: You bought it at Target", "Yes.")
    q = lme("single-session-user", "Target")
    inp = JudgeInput(q, "You bought it at Target")
    first = lme_official_llm_judge(inp, JudgeContext(llm=llm))
    assert first.correct is True and first.score == 1.0
    assert first.cache_hit is False and first.prompt_tokens and first.completion_tokens == 1
    assert first.details["judge_model"] == llm.model and first.details["prompt_type"] == "single-session-user"
    [body] = server.requests
    assert body["temperature"] == 0.0 and body["max_tokens"] == 10
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"] == get_anscheck_prompt(
        "single-session-user", q.question, "Target", "You bought it at Target", abstention=False
    )
    again = lme_official_llm_judge(inp, JudgeContext(llm=llm))
    assert again.cache_hit is True and again.correct is True
    assert server.request_count == 1  # judgments are cached like answers


def test_lme_judge_routes_abs_ids_first(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("unanswerable", "no")
    q = lme("single-session-preference", "You did not mention your car", question_id="p_abs")
    verdict = lme_official_llm_judge(JudgeInput(q, "A Tesla"), JudgeContext(llm=llm))
    assert verdict.correct is False and verdict.details["prompt_type"] == "abstention"
    assert "Explanation: You did not mention your car" in server.requests[0]["messages"][0]["content"]


def test_lme_judge_unclear_reply_is_a_failed_judgment(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Model Response:", "The response is partially right")
    with pytest.raises(JudgeFailed, match="not a clear yes/no"):
        lme_llm_judge(JudgeInput(lme("multi-session", "3"), "three"), JudgeContext(llm=llm))
    strict = JudgeContext(llm=llm, params={"reading": READING_STRICT})
    with pytest.raises(JudgeFailed, match="not a clear yes/no"):
        lme_official_llm_judge(JudgeInput(lme("multi-session", "3"), "three"), strict)


@pytest.mark.parametrize(
    ("reply", "correct"),
    [("Answer: Yes", True), ("The answer is yes.", True), ("", False), ("The response is partially right", False)],
)
def test_lme_official_preset_reads_like_the_official_script(
    llm: OpenAIChatClient, server: FakeOpenAIServer, reply: str, correct: bool
) -> None:
    server.add_rule("Model Response: three", reply)
    verdict = lme_official_llm_judge(JudgeInput(lme("multi-session", "3"), "three"), JudgeContext(llm=llm))
    assert verdict.correct is correct and verdict.score == float(correct)
    assert verdict.details["reading"] == READING_OFFICIAL and verdict.details["reply"] == reply
    again = lme_official_llm_judge(JudgeInput(lme("multi-session", "3"), "three"), JudgeContext(llm=llm))
    assert again.correct is correct
    # a non-empty reply is cached; an empty completion is not cacheable (the client reports it as
    # malformed), so it is asked again, and again read as "no"
    assert again.cache_hit is bool(reply) and server.request_count == (1 if reply else 2)


def test_lme_judge_transport_failure_is_a_failed_judgment(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.push_faults(Fault.server_error(503))
    with pytest.raises(JudgeFailed, match=r"judge LLM call failed.*HTTP 503"):
        lme_official_llm_judge(JudgeInput(lme("multi-session", "3"), "3"), JudgeContext(llm=llm))


def test_judge_model_param_is_sent(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Model Response:", "yes")
    ctx = JudgeContext(llm=llm, params={"model": "gpt-4o-2024-08-06"})
    verdict = lme_official_llm_judge(JudgeInput(lme("knowledge-update", "Paris"), "Paris"), ctx)
    assert server.requests[0]["model"] == "gpt-4o-2024-08-06"
    assert verdict.details["judge_model"] == "gpt-4o-2024-08-06"


def test_locomo_llm_judge(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Generated answer: adoption agencies", 'Same topic.\n{"label": "CORRECT"}')
    verdict = locomo_llm_judge(JudgeInput(locomo("4", "Adoption agencies"), "adoption agencies"), JudgeContext(llm=llm))
    assert verdict.correct is True and verdict.details["gold"] == "Adoption agencies"
    prompt = server.requests[0]["messages"][0]["content"]
    assert "Gold answer: Adoption agencies\nGenerated answer: adoption agencies" in prompt
    assert server.requests[0]["temperature"] == 0.0


def test_locomo_llm_judge_adversarial_gold_and_failure(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Generated answer: She went to Paris", "CORRECT or WRONG")
    with pytest.raises(JudgeFailed, match="not a clear CORRECT/WRONG"):
        locomo_llm_judge(JudgeInput(locomo("5", None), "She went to Paris"), JudgeContext(llm=llm))
    assert f"Gold answer: {LOCOMO_ADVERSARIAL_GOLD}\n" in server.requests[0]["messages"][0]["content"]


def test_llm_judge_without_llm_fails_instead_of_guessing() -> None:
    with pytest.raises(JudgeFailed, match="needs an LLM"):
        lme_official_llm_judge(JudgeInput(lme("multi-session", "3"), "3"), JudgeContext(llm=None))


# ---- issue 10: an unparseable verdict is never replayed from the cache -----------------------------------
def test_unparseable_reply_is_not_served_from_cache_next_time(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    maybe = server.add_rule("Model Response: three", "Maybe")
    inp = JudgeInput(lme("multi-session", "3"), "three")
    with pytest.raises(UnparseableVerdict, match="not a clear yes/no"):
        lme_llm_judge(inp, JudgeContext(llm=llm))
    cache = ResponseCache(llm.cache_dir)
    assert cache.rejected_count() == 1  # kept aside for inspection, not served
    server.rules.remove(maybe)  # the model now answers clearly
    server.add_rule("Model Response: three", "Yes.")
    verdict = lme_llm_judge(inp, JudgeContext(llm=llm))  # the next attempt asks the server again
    assert verdict.correct is True and verdict.cache_hit is False
    assert server.request_count == 2
    assert lme_llm_judge(inp, JudgeContext(llm=llm)).cache_hit is True  # a clear verdict is cached
    assert server.request_count == 2


def test_unparseable_error_text_has_the_counted_prefix() -> None:
    # pipeline.run.stage.timed stores "<class>: <message>"; the report counts rows starting with the prefix
    exc = UnparseableVerdict("judge reply is not a clear yes/no: 'Maybe'")
    assert f"{type(exc).__name__}: {exc}".startswith(UNPARSEABLE_ERROR_PREFIX)
    assert isinstance(exc, JudgeFailed)


# ---- mem0's LoCoMo judge, exactly --------------------------------------------------------------------------
# sha256 of ACCURACY_PROMPT in mem0ai/mem0 evaluation/metrics/llm_judge.py (commit 2352a44), as read there
MEM0_PROMPT_SHA256 = "62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0"


def test_mem0_prompt_bytes() -> None:
    assert hashlib.sha256(MEM0_ACCURACY_PROMPT.encode("utf-8")).hexdigest() == MEM0_PROMPT_SHA256
    assert MEM0_ACCURACY_PROMPT.count("\u2019") == 6 and MEM0_ACCURACY_PROMPT.count(" \n") == 4
    assert "generous" not in MEM0_STRICT_PROMPT and MEM0_STRICT_PROMPT.endswith('with the key as "label".\n')


def test_mem0_judge_request_is_mem0s(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Generated answer: adoption agencies", '{"label": "CORRECT"}')
    inp = JudgeInput(locomo("4", "Adoption agencies"), "adoption agencies")
    verdict = mem0_locomo_judge(inp, JudgeContext(llm=llm))
    # the configured judge model is asked (the client's here); mem0's own is recorded as the protocol's
    assert verdict.correct is True and verdict.details["judge_model"] == JUDGE_MODEL
    assert verdict.details["official_judge_model"] == "gpt-4o-mini"
    [body] = server.requests
    assert body["model"] == JUDGE_MODEL and body["temperature"] == 0.0
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == [
        {
            "role": "user",
            "content": MEM0_ACCURACY_PROMPT.format(
                question="What did Caroline research?",
                gold_answer="Adoption agencies",
                generated_answer="adoption agencies",
            ),
        }
    ]


@pytest.mark.parametrize(
    ("reply", "mem0", "strict"),
    [
        ('{"label": "CORRECT"}', True, True),
        ('{"label": "WRONG"}', False, False),
        ('```json\n{"label": "CORRECT"}\n```', True, True),  # mem0's extract_json strips the code block
        ('{"label": "correct"}', False, None),  # mem0: any label but "CORRECT" is 0; strict: not a verdict
        ('{"label": "PARTIALLY CORRECT"}', False, None),
        ("CORRECT", None, None),  # not JSON: mem0's script would crash -> unparseable
        # mem0's final extract_json reads from the first "{" to the last "}" (the pinned one crashed:
        # tests/judges/test_mem0_reading.py)
        ('Reasoning first. {"label": "CORRECT"}', True, True),
        ('{"verdict": "CORRECT"}', None, None),
    ],
)
def test_mem0_label_rules(
    reply: str, mem0: bool | None, strict: bool | None, llm: OpenAIChatClient, server: FakeOpenAIServer
) -> None:
    server.add_rule("Generated answer: Paris", reply)
    inp = JudgeInput(locomo("1", "Paris"), "Paris")
    for judge, expected in ((mem0_locomo_judge, mem0), (mem0_locomo_judge_strict, strict)):
        if expected is None:
            with pytest.raises(UnparseableVerdict):
                judge(inp, JudgeContext(llm=llm))
        else:
            assert judge(inp, JudgeContext(llm=llm)).correct is expected


def test_mem0_judge_skips_category_5_without_a_call(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    for judge in (mem0_locomo_judge, mem0_locomo_judge_strict):
        verdict = judge(JudgeInput(locomo("5", None), "Not mentioned"), JudgeContext(llm=llm))
        assert verdict.correct is None and verdict.score is None  # excluded: not in the denominator
    assert server.request_count == 0


def test_mem0_judge_model_param_overrides_the_default(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Generated answer:", '{"label": "WRONG"}')
    ctx = JudgeContext(llm=llm, params={"model": "fake-judge"})
    assert mem0_locomo_judge(JudgeInput(locomo("2", "May 2023"), "June"), ctx).correct is False
    assert server.requests[0]["model"] == "fake-judge"
