"""The product proxy: a real ``openai`` client -> membench's proxy -> membench's LLM client -> the fake server.

What is asserted: replies and usage pass through; a rerun is answered from membench's cache (0
upstream requests); tokens and calls are attributed to the phase current when the call arrived;
the product never sees the real key (the upstream does); embeddings are membench's cached MiniLM
vectors in both encodings the ``openai`` client uses; tool calls pass both ways and are cached;
refused features fail with 400 naming them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server, tool_call
from pipeline.memory.base import Encoder
from pipeline.products.proxy import (
    PHASE_INGESTION,
    PHASE_SEARCH,
    EndpointOptions,
    Meter,
    ProxyRequestError,
    chat_call,
    product_proxy,
)
from tests.support.memory import encoder

SECRET = "sk-upstream-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="fallback") as srv:
        yield srv


def _llm(server: FakeOpenAIServer, tmp_path: Path) -> OpenAIChatClient:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  up-model: {input_per_1m: 1000000.0, output_per_1m: 2000000.0}\n")
    return OpenAIChatClient(
        base_url=server.base_url, model="up-model", api_key=SECRET, cache_dir=str(tmp_path / "llm"),
        prices_path=str(prices), max_retries=1, backoff_base_s=0.0, backoff_max_s=0.0, timeout_s=5,
    )  # fmt: skip


@pytest.fixture
def meter(server: FakeOpenAIServer, tmp_path: Path, enc: Encoder) -> Iterator[Meter]:
    m = Meter(_llm(server, tmp_path), enc)
    product_proxy().register(m)
    yield m
    product_proxy().release(m)


def _client(m: Meter) -> openai.OpenAI:
    return openai.OpenAI(base_url=product_proxy().base_url(m), api_key="product-sees-no-key", max_retries=0)


def _ask(m: Meter, text: str) -> openai.types.chat.ChatCompletion:
    return _client(m).chat.completions.create(
        model="up-model", messages=[{"role": "user", "content": text}], temperature=0, max_tokens=50,
        response_format={"type": "json_object"},
    )  # fmt: skip


def test_chat_forwards_counts_and_caches(server: FakeOpenAIServer, meter: Meter) -> None:
    server.add_rule("facts please", '{"facts": ["Alice owns a puppy"]}')
    with meter.in_phase(PHASE_INGESTION) as block:
        out = _ask(meter, "facts please about Alice")
    assert out.choices[0].message.content == '{"facts": ["Alice owns a puppy"]}'
    assert out.usage is not None and (out.usage.prompt_tokens, out.usage.completion_tokens) == (4, 5)
    assert server.request_count == 1
    assert server.requests[0]["response_format"] == {"type": "json_object"}  # forwarded
    assert server.auth_headers == [f"Bearer {SECRET}"]  # membench's key upstream, not the product's
    assert (block.llm_calls, block.upstream_llm_calls, block.prompt_tokens, block.completion_tokens) == (1, 1, 4, 5)
    assert block.cost_usd == pytest.approx(4 * 1.0 + 5 * 2.0)
    with meter.in_phase(PHASE_SEARCH) as again:
        assert _ask(meter, "facts please about Alice").choices[0].message.content == out.choices[0].message.content
    assert server.request_count == 1  # the rerun came from membench's cache
    assert (again.llm_calls, again.upstream_llm_calls, again.cost_usd) == (1, 0, 0.0)
    assert meter.usage[PHASE_INGESTION].llm_calls == 1
    assert meter.usage[PHASE_SEARCH].llm_calls == 1


def test_upstream_failure_is_a_400_with_membench_error_and_no_product_retry(
    server: FakeOpenAIServer, meter: Meter
) -> None:
    server.push_faults(Fault.server_error(503), Fault.server_error(503))
    with pytest.raises(openai.BadRequestError, match="upstream LLM call failed: HTTP 503"):
        _ask(meter, "anything")
    assert server.request_count == 2  # membench's 1 retry; the product's client did not retry a 400
    assert meter.usage[PHASE_INGESTION].failed_llm_calls == 1
    assert meter.usage[PHASE_INGESTION].upstream_attempts == 2


def test_embeddings_are_membench_vectors_in_float_and_base64(meter: Meter, enc: Encoder) -> None:
    texts = ["Alice adopted a puppy.", "Bob runs marathons."]
    client = _client(meter)
    default = client.embeddings.create(model="any", input=texts)  # the client asks for base64 and decodes
    floats = client.embeddings.create(model="any", input=texts, encoding_format="float")
    want = enc.encode(texts)
    for got in (default, floats):
        assert np.allclose(np.array([d.embedding for d in got.data]), want, atol=1e-6)
    assert meter.usage[PHASE_INGESTION].embed_calls == 2
    assert meter.usage[PHASE_INGESTION].embed_texts == 4


TOOLS = [{"type": "function", "function": {"name": "Memory", "parameters": {"type": "object"}}}]


def test_tool_calls_round_trip_and_are_cached(server: FakeOpenAIServer, meter: Meter) -> None:
    """A tool-calling turn and the follow-up with the tool's result pass through, both cached."""
    call = tool_call("Memory", {"content": "Alice owns a puppy"}, "call_1")
    server.add_script("remember Alice", [{"tool_calls": [call]}, {"content": "done"}])

    def converse() -> tuple[openai.types.chat.ChatCompletion, openai.types.chat.ChatCompletion]:
        asked: list[Any] = [{"role": "user", "content": "remember Alice"}]
        first = _client(meter).chat.completions.create(model="m", messages=asked, tools=TOOLS, tool_choice="any")
        turn = first.choices[0].message
        asked += [turn.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
        return first, _client(meter).chat.completions.create(model="m", messages=asked, tools=TOOLS)

    first, second = converse()
    assert first.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.arguments) for c in first.choices[0].message.tool_calls or []] == [
        ("call_1", "Memory", '{"content": "Alice owns a puppy"}')
    ]
    assert second.choices[0].message.content == "done"
    assert server.requests[0]["tools"] == TOOLS and server.requests[0]["tool_choice"] == "any"
    assert server.requests[1]["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert server.requests[1]["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "ok"}
    again = converse()  # the script is spent: only membench's cache can answer the same turns
    assert server.request_count == 2
    assert again[0].choices[0].message.tool_calls == first.choices[0].message.tool_calls
    assert meter.usage[PHASE_INGESTION].upstream_llm_calls == 2 and meter.usage[PHASE_INGESTION].llm_calls == 4


def test_required_tool_call_answered_with_text_fails_uncached(server: FakeOpenAIServer, meter: Meter) -> None:
    """An endpoint that ignores tool_choice (writes the call as text) fails the call, counted, never cached."""
    server.add_rule("remember Bob", '{"name": "Memory", "arguments": {"content": "Bob runs"}}')
    asked = [{"role": "user", "content": "remember Bob"}]
    for _ in range(2):
        with pytest.raises(openai.BadRequestError, match="required a tool call"):
            _client(meter).chat.completions.create(model="m", messages=asked, tools=TOOLS, tool_choice="required")
    assert server.request_count == 2  # the text reply was not cached
    assert meter.usage[PHASE_INGESTION].failed_llm_calls == 2
    assert meter.last_error is not None and "required a tool call" in meter.last_error
    auto = _client(meter).chat.completions.create(model="m", messages=asked, tools=TOOLS)  # auto: text is an answer
    assert auto.choices[0].message.content == '{"name": "Memory", "arguments": {"content": "Bob runs"}}'


def test_refused_features_and_unknown_route(meter: Meter) -> None:
    with pytest.raises(openai.BadRequestError, match="functions"):
        _client(meter).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}],
            functions=[{"name": "f", "parameters": {}}],
        )  # fmt: skip
    gone = openai.OpenAI(base_url=product_proxy().base_url(Meter(None, None)), api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        gone.embeddings.create(model="m", input="x")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"messages": []}, "non-empty"),
        ({"messages": [{"role": "user", "content": "x"}], "n": 2}, "n=1"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "text message parts"),
        ({"messages": [{"role": "user", "content": "x"}], "stream": True}, "stream"),
    ],
)
def test_chat_call_refuses(body: dict[str, object], error: str) -> None:
    with pytest.raises(ProxyRequestError, match=error):
        chat_call(body)


def test_chat_call_translates() -> None:
    call = chat_call(
        {
            "model": "m", "temperature": 0.2, "max_completion_tokens": 7, "seed": 3,
            "messages": [{"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
        }
    )  # fmt: skip
    assert call.messages == [{"role": "system", "content": "a\nb"}]
    assert (call.model, call.temperature, call.max_tokens, call.params) == ("m", 0.2, 7, {"seed": 3})


@pytest.mark.parametrize(
    ("body", "penalty", "sent"),
    [
        ({}, None, None),  # off: as the product sent it
        ({}, 0.4, 0.4),  # added where the product set none
        ({"frequency_penalty": 0.1}, 0.4, 0.1),  # the product's own value is kept
        ({"frequency_penalty": 0.1}, None, 0.1),
    ],
)
def test_frequency_penalty_option(body: dict[str, float], penalty: float | None, sent: float | None) -> None:
    request = {"messages": [{"role": "user", "content": "x"}], **body}
    call = chat_call(request, EndpointOptions(frequency_penalty=penalty))
    assert call.params.get("frequency_penalty") == sent


# ---- endpoint options: an upstream without json_schema or without tool-call parsing -------------
SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}}}
AS_SCHEMA = {"type": "json_schema", "json_schema": {"name": "Facts", "schema": SCHEMA}}


@pytest.fixture
def adapted(server: FakeOpenAIServer, tmp_path: Path, enc: Encoder) -> Iterator[Meter]:
    """A meter with both endpoint options on."""
    m = Meter(_llm(server, tmp_path), enc, EndpointOptions(schema_format="json_object_schema", text_tool_calls=True))
    product_proxy().register(m)
    yield m
    product_proxy().release(m)


@pytest.mark.parametrize(
    ("asked", "sent"),
    [
        (AS_SCHEMA, {"type": "json_object", "schema": SCHEMA}),
        ({"type": "json_object"}, {"type": "json_object"}),
        ({"type": "text"}, {"type": "text"}),
    ],
)
def test_json_object_schema_sends_the_products_schema_as_json_object(
    server: FakeOpenAIServer, adapted: Meter, meter: Meter, asked: dict[str, Any], sent: dict[str, Any]
) -> None:
    server.add_rule("facts please", '{"facts": ["Alice owns a puppy"]}')
    for m in (adapted, meter, adapted):  # the adapted request again: from the cache
        reply = _client(m).chat.completions.create(
            model="up-model",
            messages=[{"role": "user", "content": "facts please"}],
            response_format=asked,  # type: ignore[arg-type]
        )
        assert reply.choices[0].message.content == '{"facts": ["Alice owns a puppy"]}'
    # the option off: as the product sent it (one cache: a request that was not adapted is the same request)
    assert [r["response_format"] for r in server.requests] == ([sent, asked] if sent != asked else [sent])
    assert (adapted.usage[PHASE_INGESTION].llm_calls, adapted.usage[PHASE_INGESTION].upstream_llm_calls) == (2, 1)


def test_json_object_schema_refuses_a_json_schema_without_schema() -> None:
    body = {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}}
    with pytest.raises(ProxyRequestError, match=r"json_schema\.schema"):
        chat_call(body, EndpointOptions(schema_format="json_object_schema"))
    assert chat_call(body).params["response_format"] == {"type": "json_schema"}  # off: forwarded as sent


MEMORY_CALL = '{"name": "Memory", "arguments": {"content": "Bob runs"}}'
TAGGED = f"<tool_call>\n{MEMORY_CALL}\n</tool_call>"
TWO = '<tool_call>{"name": "Memory", "arguments": {"content": "a"}}</tool_call>\n<tool_call>{"name": "Memory", "arguments": {"content": "b"}}</tool_call>'  # noqa: E501
# (what the upstream wrote, tool_choice, the calls the product gets (name, arguments) or None: HTTP 400, not cached)
TEXT_CALLS: list[tuple[str, Any, list[tuple[str, dict[str, Any]]] | None]] = [
    (TAGGED, "required", [("Memory", {"content": "Bob runs"})]),
    (MEMORY_CALL, "required", [("Memory", {"content": "Bob runs"})]),  # the bare object
    ("{" + MEMORY_CALL + "}", "required", [("Memory", {"content": "Bob runs"})]),  # doubled braces
    (f"```json\n{MEMORY_CALL}\n```", "required", [("Memory", {"content": "Bob runs"})]),  # fenced (seen on Qwen 1.5B)
    (f"```\n{TAGGED}\n```", "auto", [("Memory", {"content": "Bob runs"})]),
    (f"Sure:\n```json\n{MEMORY_CALL}\n```", "required", None),  # text around the fence: not a call
    (TWO, "required", [("Memory", {"content": "a"}), ("Memory", {"content": "b"})]),
    (TAGGED, "auto", [("Memory", {"content": "Bob runs"})]),
    (TAGGED, {"type": "function", "function": {"name": "Memory"}}, [("Memory", {"content": "Bob runs"})]),
    ('{"name": "Forget", "arguments": {}}', "required", None),  # a tool that was not offered: not read
    ("<tool_call>not json</tool_call>", "required", None),
    ("Nothing worth remembering.", "required", None),
    ("Nothing worth remembering.", "auto", []),  # a text answer stays an answer
    (TAGGED, "none", []),  # the product asked for no call: the text is the answer
]


@pytest.mark.parametrize(("written", "choice", "calls"), TEXT_CALLS)
def test_text_tool_calls_become_tool_calls(
    server: FakeOpenAIServer,
    adapted: Meter,
    written: str,
    choice: Any,
    calls: list[tuple[str, dict[str, Any]]] | None,
) -> None:
    server.add_rule("remember Bob", written)

    def ask() -> openai.types.chat.ChatCompletion:
        asked: Any = [{"role": "user", "content": "remember Bob"}]
        return _client(adapted).chat.completions.create(model="m", messages=asked, tools=TOOLS, tool_choice=choice)

    if calls is None:
        for _ in range(2):
            with pytest.raises(openai.BadRequestError, match="required a tool call"):
                ask()
        assert server.request_count == 2  # the unreadable reply was never cached
        return
    first, again = ask(), ask()
    assert server.request_count == 1 and again == first  # cached, as read
    message = first.choices[0].message
    got = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]  # type: ignore[union-attr]
    assert got == calls
    if calls:
        assert message.content is None and first.choices[0].finish_reason == "tool_calls"
        ids = [c.id for c in message.tool_calls or []]
        assert len(set(ids)) == len(calls) and all(re.fullmatch(r"text_call_[0-9a-f]{12}_\d", i) for i in ids)
    else:
        assert message.content == written
    assert "membench_text_tool_calls" not in server.requests[0]  # a membench option, never sent upstream
    assert server.requests[0]["tool_choice"] == choice


def test_text_tool_calls_leave_requests_without_tools_alone(server: FakeOpenAIServer, adapted: Meter) -> None:
    server.add_rule("say it", MEMORY_CALL)
    reply = _client(adapted).chat.completions.create(model="m", messages=[{"role": "user", "content": "say it"}])
    assert reply.choices[0].message.content == MEMORY_CALL and not reply.choices[0].message.tool_calls
