"""The OpenAI tool-calling loop: the model calls tools until it answers or its step budget ends.

Why our own loop over membench's LLM client (pipeline/llm/client.py ``OpenAIChatClient.chat``), not an agent
framework: every LLM call then goes through the one cache keyed by (model, messages, params), so a
finished question re-runs with zero requests, and an interrupted one replays its finished steps
from the cache (the tools are deterministic, so the messages, hence the keys, repeat exactly) and
resumes at the first step that was not answered. Every step is recorded for the answer row.

What the model can get wrong, and what happens (never a crash):
- an unknown tool name, arguments that are not a JSON object, arguments a tool rejects
  (``ToolInputError``): the error is returned to the model as the tool's result, so it can fix
  the call; ``max_tool_errors`` such errors in a row fail the unit with the last one;
- a tool call without an id or a function name (it cannot even be answered in the protocol):
  the unit fails naming the step and the call;
- no answer after ``max_steps`` tool calls: one last call with ``tool_choice: "none"`` asks for
  the answer, which is recorded as capped; a model that still calls tools fails the unit.
When the model's reply is what failed the unit, that reply is discarded from the cache (as the
judges discard unparseable verdicts): the next run replays the steps before it and asks it again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.llm.cache import discard_reply
from pipeline.llm.protocol import ChatClient, LLMReply
from pipeline.llm.text_calls import tool_calls_in_text

CAP_MESSAGE = "error: the tool-call budget is used up; answer now with what you found"


class ToolInputError(ValueError):
    """The model called a tool with unusable arguments: told to the model, not a failure."""


class AgentLoopError(RuntimeError):
    """The loop cannot go on (LLM call failed, malformed call, no answer): the unit fails."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: ``content`` goes back to the model, ``record`` into the step's trace."""

    content: str
    record: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    """A function the model may call: OpenAI function spec (JSON schema) plus its implementation."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[[Mapping[str, Any]], ToolResult]

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call as the model made it and what came of it (``error`` None = it ran)."""

    call_id: str
    tool: str
    arguments: Any  # the parsed JSON object, or the raw text when it was not one
    error: str | None = None
    record: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.call_id, "tool": self.tool, "arguments": self.arguments, "error": self.error,
                **self.record}  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One LLM call of the loop: its tool calls (none for the answering call) and its usage."""

    index: int
    tool_calls: tuple[ToolCallRecord, ...]
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cache_hit: bool
    cost_usd: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.index,
            "tool_calls": [c.as_dict() for c in self.tool_calls],
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
            "cache_hit": self.cache_hit,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True)
class LoopSettings:
    """The knobs of one loop (they are part of the reader's params, hence of the unit hash)."""

    max_steps: int  # tool calls at most
    max_tool_errors: int = 3  # bad tool calls in a row before the unit fails
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 300
    text_tool_calls: bool = False  # read tool calls the server left in the reply's text (text_calls.py)
    first_tool: str | None = None  # the first call must call this tool (tool_choice naming it)


@dataclass(frozen=True)
class LoopResult:
    """The loop's answer and its full trace."""

    answer: str
    steps: tuple[Step, ...]
    capped: bool
    model: str

    @property
    def tool_calls(self) -> int:
        return sum(len(s.tool_calls) for s in self.steps)

    def total(self, name: str) -> Any:
        """Sum of a step usage field over the steps; None when any step does not know it."""
        values = [getattr(s, name) for s in self.steps]
        return None if any(v is None for v in values) else sum(values)


@dataclass
class _State:
    messages: list[dict[str, Any]]
    steps: list[Step] = field(default_factory=list)
    used: int = 0  # tool calls made
    errors_in_row: int = 0
    capped: bool = False


def run_tool_loop(
    llm: ChatClient, messages: Sequence[Mapping[str, Any]], tools: Sequence[Tool], settings: LoopSettings
) -> LoopResult:
    """Call the model with ``tools`` until it answers in text; raises AgentLoopError when it cannot."""
    by_name = {t.name: t for t in tools}
    specs = [t.spec() for t in tools]
    state = _State([dict(m) for m in messages])
    while True:
        final = state.used >= settings.max_steps
        reply = _call(llm, state, specs, settings, final)
        calls = list(reply.tool_calls)
        if not calls and settings.text_tool_calls:
            calls = tool_calls_in_text(reply.text, len(state.steps))
        if not calls:
            text = (reply.text or "").strip()
            state.steps.append(_step(len(state.steps), (), text, reply))
            return LoopResult(text, tuple(state.steps), state.capped or final, reply.model)
        if final:
            _reject(reply, f"no answer within max_steps={settings.max_steps}: at step {len(state.steps)} the "
                    "model still called tools after being asked to answer (tool_choice 'none')")  # fmt: skip
        try:
            _run_calls(reply, calls, state, by_name, settings)
        except AgentLoopError as exc:
            _reject(reply, str(exc))


def _reject(reply: LLMReply, reason: str) -> None:
    """Fail the loop because of ``reply``, which leaves the cache so the next run asks again."""
    discard_reply(reply.cache_key, f"agentic loop: {reason}")
    raise AgentLoopError(reason)


def _call(llm: ChatClient, state: _State, specs: list[dict[str, Any]], settings: LoopSettings, final: bool) -> LLMReply:
    choice: Any = "none" if final else "auto"
    if settings.first_tool and not state.steps and not final:  # OpenAI's form of "call this tool now"
        choice = {"type": "function", "function": {"name": settings.first_tool}}
    params = {"tools": specs, "tool_choice": choice}
    reply = llm.chat(
        state.messages,
        model=settings.model,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        params=params,
    )
    if not reply.ok:
        raise AgentLoopError(f"LLM call failed at step {len(state.steps)} ({reply.model}): {reply.error}")
    return reply


def _step(index: int, calls: tuple[ToolCallRecord, ...], text: str, reply: LLMReply) -> Step:
    return Step(
        index, calls, text, reply.prompt_tokens, reply.completion_tokens, reply.latency_s, reply.cache_hit,
        reply.cost_usd,
    )  # fmt: skip


def _run_calls(
    reply: LLMReply,
    calls: Sequence[Mapping[str, Any]],
    state: _State,
    tools: Mapping[str, Tool],
    settings: LoopSettings,
) -> None:
    """Answer every tool call of ``reply`` (the protocol needs a tool message per call id); ``calls``
    are its tool calls, or the ones written in its text (then the text is not sent back as well)."""
    index = len(state.steps)
    parsed = [_parse_call(raw, index) for raw in calls]
    content = (reply.text or "") if reply.tool_calls else ""
    state.messages.append({"role": "assistant", "content": content, "tool_calls": [p[1] for p in parsed]})
    records = []
    for call_id, wire, arguments, problem in parsed:
        name = wire["function"]["name"]
        if state.used >= settings.max_steps:
            record = ToolCallRecord(call_id, name, arguments, f"over max_steps={settings.max_steps}: not run")
            state.capped = True
            content = CAP_MESSAGE
        else:
            state.used += 1
            record, content = _execute(call_id, name, arguments, problem, tools)
            state.errors_in_row = state.errors_in_row + 1 if record.error else 0
            if state.errors_in_row >= settings.max_tool_errors:
                raise AgentLoopError(
                    f"{state.errors_in_row} bad tool calls in a row (last at step {index}: {record.error})"
                )
        records.append(record)
        state.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
    state.steps.append(_step(index, tuple(records), reply.text or "", reply))


def _parse_call(raw: Mapping[str, Any], step: int) -> tuple[str, dict[str, Any], Any, str | None]:
    """(call id, the call as sent back to the model, arguments, why the arguments are unusable).

    A call without an id or a function name cannot be answered: AgentLoopError."""
    function = raw.get("function")
    call_id = raw.get("id")
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise AgentLoopError(f"malformed tool call at step {step} (no id or function name): {json.dumps(raw)[:300]}")
    assert isinstance(function, Mapping)
    raw_args = function.get("arguments")
    text = raw_args if isinstance(raw_args, str) else json.dumps(raw_args)
    wire = {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}
    try:
        arguments = json.loads(text) if isinstance(raw_args, str) else raw_args
    except ValueError:
        return call_id, wire, text, f"arguments are not JSON: {text[:200]!r}"
    if not isinstance(arguments, dict):
        return call_id, wire, arguments, f"arguments must be a JSON object, got {text[:200]!r}"
    return call_id, wire, arguments, None


def _execute(
    call_id: str, name: str, arguments: Any, problem: str | None, tools: Mapping[str, Tool]
) -> tuple[ToolCallRecord, str]:
    """Run one call -> (its record, the tool message's content); a model mistake becomes the
    record's ``error``, and the content tells the model what was wrong."""
    tool = tools.get(name)
    if tool is None:
        problem = problem or f"unknown tool {name!r} (available: {', '.join(sorted(tools))})"
    if problem is None and tool is not None:
        try:
            result = tool.run(arguments)
        except ToolInputError as exc:
            problem = f"{name}: {exc}"
        else:
            return ToolCallRecord(call_id, name, arguments, None, result.record), result.content
    return ToolCallRecord(call_id, name, arguments, problem), f"error: {problem}"
