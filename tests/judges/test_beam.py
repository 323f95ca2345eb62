"""BEAM's judges through the real LLM client and the fake OpenAI server: prompts, reply reading,
int() truncation, the LLM alignment of event ordering, failures and the shared cache."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pipeline.core.records import QuestionRow
from pipeline.judges.base import JudgeContext, JudgeFailed, JudgeInput, UnparseableVerdict
from pipeline.judges.beam import (
    BEAM_EQUIVALENCE_SYSTEM,
    BEAM_EQUIVALENCE_USER,
    BEAM_JUDGE_PROMPT,
    beam_event_ordering,
    beam_official,
    beam_rubric_mean,
    read_json_reply,
    rubric_prompt,
    truncated,
    untruncated,
)
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault
from tests.support.judges import question

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)


def beam(ability: str, rubric: tuple[str, ...], text: str = "When does my first sprint end?") -> QuestionRow:
    q = question(dataset="beam", question_id=f"100K-1-{ability}-0", type_raw=ability, text=text, answer="ref")
    return dataclasses.replace(q, rubric=rubric, difficulty="easy")


def score_reply(score: object, reason: str = "checked") -> str:
    return json.dumps({"score": score, "reason": reason})


# ---- prompt and reply reading -----------------------------------------------------------------
def test_rubric_prompt_fills_two_placeholders_and_leaves_the_question_one() -> None:
    prompt = rubric_prompt("LLM response should state: March 29", "It ends on March 29.")
    assert "- QUESTION (what the user asked): <question>\n" in prompt  # not filled by the official code
    assert "- RUBRIC CRITERION (what to check): LLM response should state: March 29\n" in prompt
    assert "- RESPONSE TO EVALUATE: It ends on March 29.\n" in prompt
    assert prompt == BEAM_JUDGE_PROMPT.replace("<rubric_item>", "LLM response should state: March 29").replace(
        "<llm_response>", "It ends on March 29."
    )
    # the rubric item is put in first, so a placeholder inside it is filled with the response too
    assert "mention R" in rubric_prompt("mention <llm_response>", "R")


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"score": 1.0, "reason": "ok"}', {"score": 1.0, "reason": "ok"}),
        ('  ```json\n{"score": 0.5, "reason": "partly"}\n```  ', {"score": 0.5, "reason": "partly"}),
        ('```\n[{"score": 1}]\n```', [{"score": 1}]),
        ('Here it is: {"score": 0.0, "reason": "missing"} done', {"score": 0.0, "reason": "missing"}),
        ('{"score": 1} and {"score": 0}', {"score": 1}),  # the first, shortest object
        ('Note {"reason": "uses {x}", "score": 1}', None),  # the shortest match stops inside: not JSON
        ("The response complies. Score: 1", None),
        ("", None),
    ],
)
def test_read_json_reply(reply: str, value: object) -> None:
    assert read_json_reply(reply) == value


@pytest.mark.parametrize(
    ("score", "int_value", "float_value"),
    [(1.0, 1.0, 1.0), (0.5, 0.0, 0.5), (0, 0.0, 0.0), ("1", 1.0, 1.0), ("0.5", None, 0.5), (True, 1.0, 1.0),
     (None, None, None), ("full", None, None), (float("nan"), None, None), (0.7, 0.0, 0.7)],
)  # fmt: skip
def test_truncated_and_untruncated(score: object, int_value: float | None, float_value: float | None) -> None:
    assert truncated(score) == int_value
    assert untruncated(score) == float_value


# ---- rubric judges ------------------------------------------------------------------------------
def test_official_truncates_half_points_and_the_mean_keeps_them(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    server.add_rule("should state: Two columns", score_reply(1.0))
    server.add_rule("should state: 'category' and 'notes'", "```json\n" + score_reply(0.5) + "\n```")
    q = beam("multi_session_reasoning", ("LLM response should state: Two columns",
                                         "LLM response should state: 'category' and 'notes'"))  # fmt: skip
    inp, ctx = JudgeInput(q, "Two: category and something else."), JudgeContext(llm)
    official = beam_official(inp, ctx)
    assert (official.score, official.correct) == (0.5, False)  # (1 + int(0.5)) / 2
    assert official.details["item_scores"] == [1.0, 0.0] and official.details["n_calls"] == 2
    assert official.prompt_tokens is not None and official.cache_hit is False
    bodies = server.requests
    assert [b["messages"] for b in bodies] == [
        [{"role": "user", "content": rubric_prompt(item, "Two: category and something else.")}]
        for item in q.rubric or ()
    ]
    assert all(b["temperature"] == 0.0 for b in bodies)
    mean = beam_rubric_mean(inp, ctx)
    assert mean.score == 0.75 and mean.cache_hit is True and server.request_count == 2  # the same calls, cached


def test_event_ordering_rubric_mean_is_not_truncated_by_the_official_value(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    """For event ordering, the official llm_judge_score is float(score) (beam_rubric_mean); beam_official
    reports tau_norm there, as report_results.py does."""
    server.add_rule("RUBRIC CRITERION (what to check): Schema", score_reply(0.5))
    q = beam("event_ordering", ("Schema",))
    assert beam_rubric_mean(JudgeInput(q, "Schema"), JudgeContext(llm)).score == 0.5


@pytest.mark.parametrize("reply", ["I would give it full marks.", '{"reason": "no score"}', score_reply("0.5")])
def test_an_unreadable_score_is_a_failed_judgment_asked_again(
    server: FakeOpenAIServer, llm: OpenAIChatClient, reply: str
) -> None:
    server.add_rule("state: March 29", reply)
    q = beam("information_extraction", ("LLM response should state: March 29",))
    with pytest.raises(UnparseableVerdict, match="readable"):
        beam_official(JudgeInput(q, "March 29"), JudgeContext(llm))
    with pytest.raises(UnparseableVerdict):
        beam_official(JudgeInput(q, "March 29"), JudgeContext(llm))
    assert server.request_count == 2  # the unusable reply was not cached


def test_a_failed_call_fails_the_judgment(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    server.push_faults(Fault.server_error())
    q = beam("information_extraction", ("LLM response should state: March 29",))
    with pytest.raises(JudgeFailed, match="judge LLM call failed"):
        beam_official(JudgeInput(q, "March 29"), JudgeContext(llm))


def test_a_question_without_rubric_is_an_error_naming_it(llm: OpenAIChatClient) -> None:
    q = dataclasses.replace(beam("information_extraction", ("x",)), rubric=None)
    with pytest.raises(ValueError, match=r"'100K-1-information_extraction-0'.*'rubric'"):
        beam_official(JudgeInput(q, "x"), JudgeContext(llm))


# ---- event ordering: the LLM alignment ---------------------------------------------------------------
REFERENCE = ("Garden and bed schema", "Sowing calendar", "Deployment to a VPS")
REPLY = "1. Deployment to the VPS\n2. The schema of beds\n\n3. The calendar"


def _same(server: FakeOpenAIServer, reference: str, line: str) -> None:
    server.add_rule(BEAM_EQUIVALENCE_USER.format(first=reference, second=line), "**YES**")


def test_event_ordering_aligns_line_by_line_and_scores_tau_times_f1(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    _same(server, "Deployment to a VPS", "1. Deployment to the VPS")
    _same(server, "Garden and bed schema", "2. The schema of beds")
    _same(server, "Sowing calendar", "3. The calendar")
    q = beam("event_ordering", REFERENCE)
    verdict = beam_event_ordering(JudgeInput(q, REPLY), JudgeContext(llm))
    # aligned: Deployment, schema, "", calendar: tp 3, fp 1 (the empty line), fn 0 -> f1 6/7;
    # ranks over (schema, calendar, deployment, ""): [1, 2, 3, 5] vs [2, 4, 1, 3] -> tau-b 0, tau_norm 0.5
    assert verdict.details["aligned"] == ["Deployment to a VPS", "Garden and bed schema", "", "Sowing calendar"]
    assert verdict.details["f1"] == pytest.approx(6 / 7) and verdict.details["tau_norm"] == 0.5
    assert verdict.score == pytest.approx(3 / 7)
    # line 1 tries items 0, 1, 2; line 2 item 0; the empty line item 1 (0 and 2 are used); line 4 item 1
    asked = [b["messages"][1]["content"] for b in server.requests]
    assert asked == [BEAM_EQUIVALENCE_USER.format(first=REFERENCE[i], second=line) for i, line in
                     [(0, "1. Deployment to the VPS"), (1, "1. Deployment to the VPS"), (2, "1. Deployment to the VPS"),
                      (0, "2. The schema of beds"), (1, ""), (1, "3. The calendar")]]  # fmt: skip
    assert all(b["messages"][0] == {"role": "system", "content": BEAM_EQUIVALENCE_SYSTEM} for b in server.requests)
    official = beam_official(JudgeInput(q, REPLY), JudgeContext(llm))
    assert official.score == 0.5 and official.details["value"] == "tau_norm"
    assert server.request_count == 6  # the official value reuses the cached alignment


def test_event_ordering_judge_skips_other_abilities(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    verdict = beam_event_ordering(JudgeInput(beam("summarization", ("x",)), "y"), JudgeContext(llm))
    assert (verdict.correct, verdict.score, server.request_count) == (None, None, 0)


def test_an_undefined_tau_is_not_applicable(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    _same(server, "Only event", "Only event")
    verdict = beam_event_ordering(JudgeInput(beam("event_ordering", ("Only event",)), "Only event"), JudgeContext(llm))
    assert verdict.score is None and verdict.correct is None and "undefined" in verdict.details
