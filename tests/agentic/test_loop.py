"""The tool-calling loop (pipeline.agentic.loop) against the fake OpenAI server through the real
LLM client and cache: steps recorded, cache replay, resume, and every way a model can misbehave."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from pipeline.agentic.loop import AgentLoopError, LoopSettings, Tool, ToolInputError, ToolResult, run_tool_loop
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, tool_call
from pipeline.llm.protocol import MalformedReply, parse_completion

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)

FACTS = {"dog": "Biscuit is Alice's golden retriever.", "tram": "Alice rode tram 28 in Lisbon."}
QUESTION = "What is the name of Alice's dog?"


def lookup_tool(calls: list[str]) -> Tool:
    """A real (tiny) search tool: facts whose key occurs in the query; ``calls`` records queries."""

    def run(args: Mapping[str, Any]) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str):
            raise ToolInputError("'query' must be a string")
        calls.append(query)
        hits = [text for key, text in FACTS.items() if key in query]
        return ToolResult("\n".join(hits) or "nothing", {"query": query, "hits": len(hits)})

    params = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    return Tool("lookup", "look facts up", params, run)


def messages() -> list[dict[str, str]]:
    return [{"role": "system", "content": "Use tools."}, {"role": "user", "content": QUESTION}]


def run(llm: OpenAIChatClient, calls: list[str], max_steps: int = 3, max_tool_errors: int = 3) -> Any:
    return run_tool_loop(llm, messages(), [lookup_tool(calls)], LoopSettings(max_steps, max_tool_errors))


def test_search_then_answer_records_every_step_and_reruns_from_cache(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    server.add_script(QUESTION, [{"tool_calls": [tool_call("lookup", {"query": "dog name"}, "c1")]},
                                 {"content": "Biscuit"}])  # fmt: skip
    calls: list[str] = []
    result = run(llm, calls)
    assert (result.answer, result.capped, result.tool_calls, len(result.steps)) == ("Biscuit", False, 1, 2)
    assert calls == ["dog name"]
    first, last = result.steps
    assert first.tool_calls[0].tool == "lookup" and first.tool_calls[0].record == {"query": "dog name", "hits": 1}
    assert first.tool_calls[0].error is None and not first.cache_hit
    # the tool's result went back to the model as a tool message answering the call id
    sent = server.requests[1]["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "c1", "content": FACTS["dog"]}
    assert sent[-2]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"query": "dog name"}'}
    assert server.requests[0]["tools"][0]["function"]["name"] == "lookup"
    assert server.requests[0]["tool_choice"] == "auto"
    # usage per step: the fake server counts whitespace words of every message
    assert first.prompt_tokens == len(["Use", "tools."]) + len(QUESTION.split())
    assert last.prompt_tokens == first.prompt_tokens + len(FACTS["dog"].split())
    assert last.completion_tokens == 1 and result.total("prompt_tokens") == first.prompt_tokens + last.prompt_tokens

    # a rerun replays every step from the cache: no request at all, same trace
    before = server.request_count
    again = run(llm, [])
    assert server.request_count == before
    assert again.answer == "Biscuit" and all(s.cache_hit for s in again.steps)
    assert [s.tool_calls for s in again.steps] == [s.tool_calls for s in result.steps]


def test_an_interrupted_loop_resumes_at_the_step_that_failed(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    script = [
        {"tool_calls": [tool_call("lookup", {"query": "dog"}, "c1")]},
        {"tool_calls": [tool_call("lookup", {"query": "tram"}, "c2")]},
        {"content": "Biscuit"},
    ]
    # request 1 is answered, request 2 gets HTTP 500 (max_retries=0 in the fixture): the loop stops
    server.add_script(QUESTION, script, faults=[None, Fault.server_error(500)])
    calls: list[str] = []
    with pytest.raises(AgentLoopError, match=r"LLM call failed at step 1 .*HTTP 500"):
        run(llm, calls)
    assert server.request_count == 2 and calls == ["dog"]
    # the rerun replays step 0 from the cache and asks only for steps 1 and 2
    server.reset_counts()
    result = run(llm, calls)
    assert result.answer == "Biscuit" and server.request_count == 2
    assert result.steps[0].cache_hit and not result.steps[1].cache_hit
    assert [s.tool_calls[0].record["query"] for s in result.steps[:2]] == ["dog", "tram"]


def test_unknown_tool_is_told_to_the_model_which_can_recover(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    server.add_script(QUESTION, [{"tool_calls": [tool_call("grep_memory", {"query": "dog"}, "c1")]},
                                 {"tool_calls": [tool_call("lookup", {"query": "dog"}, "c2")]},
                                 {"content": "Biscuit"}])  # fmt: skip
    calls: list[str] = []
    result = run(llm, calls)
    assert result.answer == "Biscuit" and calls == ["dog"] and result.tool_calls == 2
    bad = result.steps[0].tool_calls[0]
    assert bad.error == "unknown tool 'grep_memory' (available: lookup)"
    assert server.requests[1]["messages"][-1]["content"] == "error: unknown tool 'grep_memory' (available: lookup)"


def test_arguments_that_are_not_json_fail_the_unit_after_max_tool_errors(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    server.add_script(QUESTION, [{"tool_calls": [tool_call("lookup", "{query: dog", "c1")]}], repeat_last=True)
    with pytest.raises(AgentLoopError, match=r"2 bad tool calls in a row \(last at step 1: arguments are not JSON"):
        run(llm, [], max_steps=5, max_tool_errors=2)
    assert server.request_count == 2
    assert server.requests[1]["messages"][-1]["content"].startswith("error: arguments are not JSON: '{query: dog'")


def test_arguments_a_tool_rejects_and_non_object_arguments_are_errors_for_the_model(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    bad = [tool_call("lookup", {"q": 1}, "c1"), tool_call("lookup", "[1]", "c2")]
    server.add_script(QUESTION, [{"tool_calls": bad}, {"content": "Biscuit"}])
    result = run(llm, [])
    errors = [c.error for c in result.steps[0].tool_calls]
    assert errors == ["lookup: 'query' must be a string", "arguments must be a JSON object, got '[1]'"]
    assert result.answer == "Biscuit"  # two errors in a row < max_tool_errors=3


@pytest.mark.parametrize(
    "bad_call",
    [
        {"type": "function", "function": {"name": "lookup", "arguments": "{}"}},  # no id
        {"id": "c1", "type": "function", "function": {"arguments": "{}"}},  # no name
        {"id": "c1", "type": "function"},  # no function
    ],
)
def test_a_malformed_tool_call_fails_the_unit_naming_it(
    server: FakeOpenAIServer, llm: OpenAIChatClient, bad_call: dict[str, Any]
) -> None:
    server.add_script(QUESTION, [{"tool_calls": [bad_call]}])
    with pytest.raises(AgentLoopError, match=r"malformed tool call at step 0 \(no id or function name\)"):
        run(llm, [])


def test_tool_calls_that_are_not_a_list_are_a_failed_llm_call(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    server.add_script(QUESTION, [{"tool_calls": {"id": "c1"}}])
    with pytest.raises(AgentLoopError, match=r"malformed reply: choices\[0\]\.message\.tool_calls is dict, not a list"):
        run(llm, [])


def test_a_loop_that_never_answers_is_capped_and_asked_for_its_answer(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    server.add_script(QUESTION, [{"tool_calls": [tool_call("lookup", {"query": "dog"}, "c1")]}],
                      final_reply="Biscuit, I think", repeat_last=True)  # fmt: skip
    calls: list[str] = []
    result = run(llm, calls, max_steps=3)
    assert result.capped and result.tool_calls == 3 and len(result.steps) == 4
    assert result.answer == "Biscuit, I think" and calls == ["dog"] * 3
    assert [r["tool_choice"] for r in server.requests] == ["auto", "auto", "auto", "none"]


def test_a_model_that_ignores_tool_choice_none_fails_the_unit(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    server.add_script(QUESTION, [{"tool_calls": [tool_call("lookup", {"query": "dog"}, "c1")]}],
                      repeat_last=True, obey_tool_choice=False)  # fmt: skip
    with pytest.raises(AgentLoopError, match="no answer within max_steps=2: at step 2 the model still called tools"):
        run(llm, [], max_steps=2)
    assert server.request_count == 3


def test_calls_beyond_the_budget_in_one_reply_are_answered_but_not_run(
    server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    many = [tool_call("lookup", {"query": f"dog {i}"}, f"c{i}") for i in range(3)]
    server.add_script(QUESTION, [{"tool_calls": many}], final_reply="Biscuit")
    calls: list[str] = []
    result = run(llm, calls, max_steps=2)
    assert calls == ["dog 0", "dog 1"] and result.capped and result.answer == "Biscuit"
    assert result.steps[0].tool_calls[2].error == "over max_steps=2: not run"
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c0", "c1", "c2"]  # every call id answered


def test_tool_calls_count_only_when_tools_were_requested() -> None:
    body = '{"choices": [{"message": {"content": null, "tool_calls": [{"id": "c"}]}, "finish_reason": "tool_calls"}]}'
    assert parse_completion(body, tools_requested=True).tool_calls == ({"id": "c"},)
    with pytest.raises(MalformedReply, match="content is not text"):
        parse_completion(body)  # a plain reader never takes a tool-call reply for an empty answer


# ---- tool calls written in the reply's text (llama-cpp-python's server with the GGUF template) ------
TEXT_CALLS = [  # (reply text, the calls read from it as (name, arguments))
    ('<tool_call>\n{"name": "lookup", "arguments": {"query": "dog"}}\n</tool_call>', [("lookup", {"query": "dog"})]),
    ('{{"name": "lookup", "arguments": {"query": "dog", "k": 1}}}', [("lookup", {"query": "dog", "k": 1})]),
    ('{"name": "lookup", "arguments": "{\\"query\\": \\"dog\\"}"}', [("lookup", {"query": "dog"})]),
    ('<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": 1}}',
     [("a", {}), ("b", {"x": 1})]),
    ("Biscuit", []),
    ('{"answer": "Biscuit"}', []),  # JSON, but not a call
    ("<tool_call>not json</tool_call>", []),
    ("", []),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), TEXT_CALLS)
def test_tool_calls_in_text(text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    from pipeline.llm.text_calls import tool_calls_in_text

    calls = tool_calls_in_text(text, 2)
    got = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
    assert got == expected
    assert [c["id"] for c in calls] == [f"text_call_2_{i}" for i in range(len(expected))]


def test_text_tool_calls_run_only_when_switched_on(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    written = '<tool_call>\n{"name": "lookup", "arguments": {"query": "dog name"}}\n</tool_call>'
    server.add_script(QUESTION, [{"content": written}, {"content": "Biscuit"}])
    calls: list[str] = []
    result = run_tool_loop(llm, messages(), [lookup_tool(calls)], LoopSettings(3, text_tool_calls=True))
    assert (result.answer, result.tool_calls, calls) == ("Biscuit", 1, ["dog name"])
    sent = server.requests[1]["messages"]
    assert sent[-2]["content"] == "" and sent[-2]["tool_calls"][0]["id"] == "text_call_0_0"
    assert sent[-1] == {"role": "tool", "tool_call_id": "text_call_0_0", "content": FACTS["dog"]}
    # off (the default): the same reply is the answer, as the server sent it
    server.add_script("What is the dog called?", [{"content": written}])
    plain = [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "What is the dog called?"}]
    off = run_tool_loop(llm, plain, [lookup_tool([])], LoopSettings(3))
    assert (off.answer, off.tool_calls) == (written, 0)


def test_first_tool_names_the_tool_the_first_call_must_make(server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    server.add_script(QUESTION, [{"tool_calls": [tool_call("lookup", {"query": "dog"}, "c1")]},
                                 {"content": "Biscuit"}])  # fmt: skip
    result = run_tool_loop(llm, messages(), [lookup_tool([])], LoopSettings(3, first_tool="lookup"))
    assert (result.answer, result.tool_calls) == ("Biscuit", 1)
    choices = [r["tool_choice"] for r in server.requests]
    assert choices == [{"type": "function", "function": {"name": "lookup"}}, "auto"]
