"""The BEAM and LoCoMo-Plus reader presets: the official answer inputs, call settings and replies."""

from __future__ import annotations

import pytest

from pipeline.config.model import BenchmarkConfig, DatasetConfig, LLMConfig
from pipeline.kinds.readers import build_reader
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer
from pipeline.memory.base import RetrievalResult, RetrievedUnit
from pipeline.readers import presets, presets_beam
from pipeline.readers.base import ReaderCallFailed, ReaderDeps, ReadInput
from pipeline.readers.llm import LLMReader
from pipeline.readers.presets_beam import (
    BEAM_RAG_ANSWER_PROMPT,
    beam_rag_prompt,
    locomo_plus_prompt,
    locomo_plus_reply,
)
from tests.support.judges import question

pytest_plugins = ["tests.support.llm"]

UNITS = (RetrievedUnit("u1", 1, "S1", ("S1:0",), "user: The first sprint ends on March 29. ->-> 1,1"),)
RETRIEVAL = RetrievalResult(units=UNITS, context="user: The first sprint ends on March 29. ->-> 1,1",
                            context_tokens=10, trimmed_units=0)  # fmt: skip
QUERY = 'Caroline said, "I ended up volunteering for that project."'


def test_beam_rag_prompt_fills_context_then_question() -> None:
    prompt = beam_rag_prompt("CTX", "When does my first sprint end?")
    assert prompt == BEAM_RAG_ANSWER_PROMPT.replace("<context>", "CTX").replace(
        "<question>", "When does my first sprint end?"
    )
    assert "CONTEXT:\nCTX\n\nQUESTION:\nWhen does my first sprint end?\n\nANSWER REQUIREMENTS:" in prompt
    assert beam_rag_prompt("see <question>", "Q") == BEAM_RAG_ANSWER_PROMPT.replace("<context>", "see Q").replace(
        "<question>", "Q"
    )


def test_locomo_plus_prompt_is_the_official_cognitive_input() -> None:
    prompt = locomo_plus_prompt('  Melanie said, "hi"', QUERY)
    assert prompt.startswith("Below is a conversation between two people: A and B. The conversation takes place")
    assert "Your task: This is a memory-aware dialogue setting." in prompt
    assert prompt.endswith('connect to or acknowledge that context.\n\nMelanie said, "hi"\n' + QUERY)
    assert (locomo_plus_reply("  ok \n"), locomo_plus_reply(""), locomo_plus_reply(None)) == (
        "ok",
        "(empty)",
        "(empty)",
    )


def test_beam_preset_request(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("When does my first sprint end?", "  March 29 \n")
    reader = build_reader("llm", {"preset": "beam_official"}, ReaderDeps(llm=llm))
    q = question(dataset="beam", question_id="100K-1-information_extraction-0", text="When does my first sprint end?")
    answer = reader.answer(ReadInput(q, RETRIEVAL))
    assert answer.prediction == "  March 29 \n"  # kept as returned, as the official code stores it
    (body,) = server.requests
    assert body["messages"] == [{"role": "user", "content": beam_rag_prompt(RETRIEVAL.context, q.question)}]
    assert body["temperature"] == 0.0


def test_beam_long_context_preset_sends_the_chat_as_messages(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("NOTE: Only provide the answer", "March 29")
    units = (
        RetrievedUnit("u1", 1, "S1", ("S1:0",), "user: When does the sprint end? ->-> 1,1"),
        RetrievedUnit("u2", 2, "S1", ("S1:1",), "assistant: On March 29.\nRemember the demo."),
        RetrievedUnit("u3", 3, "S2", (), "Summary of batch 2"),
        RetrievedUnit("u4", 4, "S2", ("S2:0",), "user: trimmed away"),
    )
    retrieval = RetrievalResult(units=units, context="unused", context_tokens=10, trimmed_units=1)
    reader = build_reader("llm", {"preset": "beam_official_long_context"}, ReaderDeps(llm=llm))
    q = question(dataset="beam", question_id="100K-1-information_extraction-0", text="When does my first sprint end?")
    assert reader.answer(ReadInput(q, retrieval)).prediction == "March 29"
    (body,) = server.requests
    assert body["messages"] == [
        {"role": "user", "content": "When does the sprint end? ->-> 1,1"},
        {"role": "assistant", "content": "On March 29.\nRemember the demo."},
        {"role": "user", "content": "Summary of batch 2"},  # no role prefix: a user message
        {"role": "user", "content": "\n            NOTE: Only provide the answer without any explanations. "
                                    "\n            Question: When does my first sprint end?"},
    ]  # fmt: skip
    assert body["temperature"] == 0.0


def test_locomo_plus_preset_request(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("memory-aware dialogue", "Remember when you learned to say no?")
    reader = build_reader("llm", {"preset": "locomo_plus_official"}, ReaderDeps(llm=llm))
    q = question(dataset="plus", question_id="conv-26_plus0", type_raw="causal", text=QUERY, answer="evidence")
    answer = reader.answer(ReadInput(q, RETRIEVAL))
    assert answer.prediction == "Remember when you learned to say no?"
    (body,) = server.requests
    assert body["messages"] == [{"role": "user", "content": locomo_plus_prompt(RETRIEVAL.context, QUERY)}]
    assert (body["temperature"], body["max_tokens"]) == (0.3, 1024)
    own = build_reader("llm", {"preset": "locomo_plus_official", "temperature": 0.0, "max_tokens": 64},
                       ReaderDeps(llm=llm))  # fmt: skip
    own.answer(ReadInput(q, RETRIEVAL))
    assert (server.requests[-1]["temperature"], server.requests[-1]["max_tokens"]) == (0.0, 64)


def test_a_blank_completion_fails_the_answer(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    """utils.py would answer "(empty)" and have it judged; membench's client reports an empty or blank
    completion as a failed call, so the answer fails and is asked again next run (a failure is never a score)."""
    server.add_rule("memory-aware dialogue", "  \n ")
    reader = build_reader("llm", {"preset": "locomo_plus_official"}, ReaderDeps(llm=llm))
    q = question(dataset="plus", question_id="conv-26_plus0", type_raw="causal", text=QUERY, answer="evidence")
    with pytest.raises(ReaderCallFailed, match="empty completion"):
        reader.answer(ReadInput(q, RETRIEVAL))


def test_new_presets_have_their_own_fingerprint_and_leave_the_others_unchanged() -> None:
    cfg = BenchmarkConfig(datasets=(DatasetConfig(name="d", loader="beam", path="x"),),
                          llm=LLMConfig(base_url="http://localhost:1/v1", model="m"))  # fmt: skip
    beam = LLMReader.identity({"preset": "beam_official"}, cfg)
    plus = LLMReader.identity({"preset": "locomo_plus_official"}, cfg)
    lme = LLMReader.identity({"preset": "lme_official"}, cfg)
    assert beam.endswith(f"preset=beam_official:{presets_beam.presets_fingerprint()}")
    assert plus.endswith(f"preset=locomo_plus_official:{presets_beam.presets_fingerprint()}")
    assert lme.endswith(f"preset=lme_official:{presets.presets_fingerprint()}")
