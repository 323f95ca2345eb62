"""Reader presets: published answer protocols (LongMemEval, LoCoMo, mem0) byte for byte and end to end."""

from __future__ import annotations

import json

import jinja2
import pytest

from pipeline.kinds.readers import build_reader
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer
from pipeline.memory.base import RetrievalResult, RetrievedUnit
from pipeline.readers.base import ReaderConfigError, ReaderDeps, ReadInput
from pipeline.readers.presets import (
    LME_ANSWER_PROMPT,
    LME_ANSWER_PROMPT_COT,
    LOCOMO_NOT_MENTIONED,
    LOCOMO_QA_PROMPT,
    LOCOMO_QA_PROMPT_CAT_5,
    MEM0_ANSWER_PROMPT,
    SessionChunk,
    lme_history,
    lme_prompt,
    locomo_cat5_answer,
    locomo_prompt,
    locomo_question,
    mem0_prompt,
)
from tests.support.judges import lme, locomo, question

pytest_plugins = ["tests.support.llm"]


# ---- LongMemEval: run_generation.py, history_format json ---------------------------------------------------
def test_lme_prompt_and_history_are_run_generations() -> None:
    chunks = [SessionChunk("2023/05/20 (Sat) 10:00", ("user: b",)), SessionChunk("2023/05/01 (Mon) 09:00", ("a",))]
    history = lme_history(chunks)
    # sorted by date; '\n### Session i:\nSession Date: ...\nSession Content:\n' + '\n' + json.dumps(session)
    assert history == (
        '\n### Session 1:\nSession Date: 2023/05/01 (Mon) 09:00\nSession Content:\n\n["a"]\n'
        '\n### Session 2:\nSession Date: 2023/05/20 (Sat) 10:00\nSession Content:\n\n["user: b"]\n'
    )
    # the template texts are pinned by sha256 (tests/tree/test_protocol_texts.py); here: the slots and their order
    plain = lme_prompt(history, "2023/05/30 (Tue) 23:40", "Q?", cot=False)
    assert plain == LME_ANSWER_PROMPT.format(history, "2023/05/30 (Tue) 23:40", "Q?")
    assert plain.endswith(history + "\n\nCurrent Date: 2023/05/30 (Tue) 23:40\nQuestion: Q?\nAnswer:")
    cot = lme_prompt(history, "D", "Q?", cot=True)
    assert cot == LME_ANSWER_PROMPT_COT.format(history, "D", "Q?")
    assert cot.endswith("\nCurrent Date: D\nQuestion: Q?\nAnswer (step by step):")


# ---- LoCoMo: QA prompt, category-2 hint, category-5 seeded two-way choice -------------------------------------
def test_locomo_question_rules() -> None:
    assert locomo_question("When?", "2", None, "q1", 0).text == (
        "When? Use DATE of CONVERSATION to answer with an approximate date."
    )
    assert locomo_question("What?", "4", None, "q1", 0).text == "What?"
    orders = {locomo_question("Who?", "5", "Bob", f"q{i}", 0).options["a"] for i in range(40)}
    assert orders == {LOCOMO_NOT_MENTIONED, "Bob"}  # both orders occur across questions
    first = locomo_question("Who?", "5", "Bob", "q7", 0)
    assert first == locomo_question("Who?", "5", "Bob", "q7", 0)  # the same seed gives the same order
    a, b = first.options["a"], first.options["b"]
    assert first.text == f"Who? Select the correct answer: (a) {a} (b) {b}. "
    assert {a, b} == {LOCOMO_NOT_MENTIONED, "Bob"}
    # LoCoMo's batch-size-1 query: context + a blank line + the template (which starts with a newline)
    assert locomo_prompt("CTX", first) == "CTX\n\n" + LOCOMO_QA_PROMPT_CAT_5.format(first.text)
    assert LOCOMO_QA_PROMPT_CAT_5.format(first.text).startswith("\n") and first.text + " Short answer:\n" in (
        locomo_prompt("CTX", first)
    )
    assert locomo_prompt("CTX", locomo_question("What?", "4", None, "q1", 0)) == "CTX\n\n" + LOCOMO_QA_PROMPT.format(
        "What?"
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("a", LOCOMO_NOT_MENTIONED), ("B", "Bob"), ("(a)", LOCOMO_NOT_MENTIONED), ("(b)", "Bob"),
     ("Bob did", "Bob did"), ("(c)", "(c)")],
)  # fmt: skip
def test_locomo_cat5_reply_mapping(reply: str, expected: str) -> None:
    assert locomo_cat5_answer(reply, {"a": LOCOMO_NOT_MENTIONED, "b": "Bob"}) == expected


# ---- mem0: ANSWER_PROMPT rendered as its Jinja template --------------------------------------------------------
def test_mem0_prompt_renders_like_jinja() -> None:
    memories = ["1:56 pm on 8 May, 2023: Caroline went to a support group"]
    expected = jinja2.Template(MEM0_ANSWER_PROMPT).render(
        speaker_1_user_id="speaker_1",
        speaker_2_user_id="speaker_2",
        speaker_1_memories=json.dumps(memories, indent=4),
        speaker_2_memories=json.dumps([], indent=4),
        question="When?",
    )
    assert mem0_prompt(memories, "When?") == expected
    assert MEM0_ANSWER_PROMPT.count(" \n") == 6  # mem0's trailing spaces kept
    assert "8. The answer should be less than 5-6 words." in expected


# ---- end to end through the LLM resource -----------------------------------------------------------------------
UNITS = (
    RetrievedUnit("u1", 1, "S2", ("S2:0",), "user: I moved to Berlin."),
    RetrievedUnit("u2", 2, "S1", ("S1:0",), "user: I live in Paris."),
    RetrievedUnit("u3", 3, "S2", ("S2:1",), "assistant: Nice."),
    RetrievedUnit("u4", 4, "S3", ("S3:0",), "trimmed away"),
)
RETRIEVAL = RetrievalResult(units=UNITS, context="CONTEXT", context_tokens=10, trimmed_units=1)
DATES = {"S1": "2023/01/01 (Sun) 10:00", "S2": "2023/03/01 (Wed) 10:00", "S3": "2023/04/01 (Sat) 10:00"}


def test_lme_official_preset_request(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Where did I buy it?", "Berlin")
    reader = build_reader("llm", {"preset": "lme_official"}, ReaderDeps(llm=llm))
    answer = reader.answer(ReadInput(lme("single-session-user", "Berlin"), RETRIEVAL, DATES))
    assert answer.prediction == "Berlin"
    prompt = server.requests[0]["messages"][0]["content"]
    history = lme_history(
        [SessionChunk(DATES["S2"], ("user: I moved to Berlin.", "assistant: Nice.")),
         SessionChunk(DATES["S1"], ("user: I live in Paris.",))]
    )  # fmt: skip
    assert prompt == lme_prompt(history, "2023/05/30 (Tue) 23:40", "Where did I buy it?", cot=False)
    assert "trimmed away" not in prompt  # the budget-trimmed unit is not in the reader's context


def test_lme_chain_of_note_preset(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Extracted note", "The user lives in Paris.")
    server.add_rule("Answer (step by step):", "Paris")
    reader = build_reader("llm", {"preset": "lme_official_con"}, ReaderDeps(llm=llm))
    answer = reader.answer(ReadInput(lme("single-session-user", "Paris"), RETRIEVAL, DATES))
    assert answer.prediction == "Paris"
    assert server.request_count == 3  # one note per session (S2, S1), then the answer
    note_request = server.requests[0]
    assert note_request["max_tokens"] == 500 and note_request["temperature"] == 0.0
    final = server.requests[-1]["messages"][0]["content"]
    assert json.dumps({"session_summary": "The user lives in Paris."}) in final


def test_locomo_official_preset_maps_the_category5_letter(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Select the correct answer", "(a)")
    q = question(type_raw="5", answer=None, question_id="conv-26_q3")
    q = type(q)(**{**q.__dict__, "adversarial_answer": "Sweden"})
    answer = build_reader("llm", {"preset": "locomo_official", "seed": 1}, ReaderDeps(llm=llm)).answer(
        ReadInput(q, RETRIEVAL, DATES)
    )
    lq = locomo_question(q.question, "5", "Sweden", "conv-26_q3", 1)
    assert answer.prediction == lq.options["a"]
    assert server.requests[0]["messages"][0]["content"] == locomo_prompt("CONTEXT", lq)


def test_mem0_official_preset_is_a_system_message(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    reader = build_reader("llm", {"preset": "mem0_official"}, ReaderDeps(llm=llm))
    reader.answer(ReadInput(locomo("4", "Paris"), RETRIEVAL, DATES))
    [message] = server.requests[0]["messages"]
    assert message["role"] == "system"
    assert f"{DATES['S2']}: user: I moved to Berlin." in message["content"]


def test_unknown_preset_is_a_config_error(llm: OpenAIChatClient) -> None:
    with pytest.raises(ReaderConfigError, match="preset"):
        build_reader("llm", {"preset": "lme_offical"}, ReaderDeps(llm=llm))
