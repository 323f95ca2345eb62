"""The LLM wire protocol: request/reply records, reply-body parsing and retry timing.

Why separate from the client (pipeline/llm/client.py): readers and judges under ``pipeline/`` type
against ``ChatClient``/``LLMReply`` without importing Dagster resources, and these pure functions
(what counts as a usable completion, how long to wait before a retry) are unit-tested on their own.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import math
import random
import re
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from pipeline.llm.text_calls import tool_calls_in_text

Message = Mapping[str, Any]


# How the LLM resource words a failure to reach the endpoint at all (no HTTP reply). The stage
# driver's dead-endpoint breaker recognises exactly these, so both sides use these constants.
UNREACHABLE_CONNECTION = "connection error: "
UNREACHABLE_TIMEOUT = "timeout: no reply within "
UNREACHABLE_CONNECT_TIMEOUT = "timeout: no connection within "
# An error a stage copied from an upstream row ("answer failed: ...", "upstream retrieval failed: ...",
# "not attempted: ..."): that stage never called an endpoint, so it is not evidence of a dead one, and
# the run's summary names the upstream error instead (assets/run_gate.py; RE2 syntax, DuckDB reads it too).
DERIVED_ERROR_PATTERN = r"^(?:not attempted|[A-Za-z ]+ (?:failed|missing|stale|not attempted)): "
NOT_ATTEMPTED = "not attempted: "  # the error of a question a stage skipped after it stopped (pipeline/run/stage.py)
_DERIVED = re.compile(DERIVED_ERROR_PATTERN)


def is_derived(error: str) -> bool:
    """True when a stored error was copied from an upstream row or a stage's stop, not this unit's own."""
    return _DERIVED.match(error) is not None


def is_unreachable(error: str) -> bool:
    """True when a stored error says this stage's own call could not reach the endpoint (not a bad reply)."""
    if is_derived(error):
        return False
    return any(m in error for m in (UNREACHABLE_CONNECTION, UNREACHABLE_TIMEOUT, UNREACHABLE_CONNECT_TIMEOUT))


# A request param that is never sent upstream: it asks membench's client to read tool calls a server
# wrote as text (``parse_completion``'s ``text_tools``). It is part of the cache key, since the cached
# reply then holds the calls read from the text (pipeline/products/proxy.py sets it per product); its
# value is the reading's version: bump it when ``calls_written_as_text`` reads more, so replies cached
# under an older reading are asked again instead of replayed as read before.
TEXT_TOOL_CALLS_PARAM = "membench_text_tool_calls"
TEXT_TOOL_CALLS_VERSION = 2  # 2: a call wrapped in a markdown code fence is read too
_FENCED = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```$", re.DOTALL)
LOCAL_PARAMS = (TEXT_TOOL_CALLS_PARAM,)

# how a reply error names an empty completion (a judge that reads "" as a verdict looks for it)
EMPTY_COMPLETION = "empty completion text"


class MalformedReply(ValueError):
    """The server answered 2xx but the body is not a usable chat completion."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat call for ``chat_many``; ``None`` means "the resource's default"."""

    messages: Sequence[Message]
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LLMReply:
    """The outcome of one chat call. ``ok=False`` => ``text is None`` and ``error`` says why.

    ``latency_s``: wall time of the call including retries and backoff; a cache hit reports the
    latency recorded when the reply was first obtained. ``attempts``: HTTP requests made by
    this call (0 for a cache hit). ``cost_usd``: pipeline.llm.prices.cost_usd of the token counts
    (``None`` when unknown); a cache hit repeats the original call's cost, so this run's spend is
    the sum over ``cache_hit=False``.
    """

    text: str | None
    ok: bool
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cache_hit: bool
    attempts: int
    cost_usd: float | None
    model: str
    cache_key: str
    finish_reason: str | None = None
    # the reply's ``message.tool_calls`` exactly as sent (OpenAI tool calling; pipeline.agentic checks them)
    tool_calls: tuple[dict[str, Any], ...] = ()

    def as_row(self) -> dict[str, Any]:
        """A flat dict for Parquet rows / metadata (no secret is ever part of a reply)."""
        return asdict(self)


class ChatClient(Protocol):
    """What readers and judges need from an LLM (OpenAIChatClient, or a test double of the same API)."""

    def chat(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> LLMReply: ...

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[LLMReply]: ...


@dataclass(frozen=True)
class Completion:
    """A usable reply body (internal: becomes an LLMReply plus a cache entry)."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    served_model: str | None
    tool_calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Failure:
    """Why one attempt failed, and whether (and after how long) retrying can help."""

    error: str
    retryable: bool
    retry_after_s: float | None = None


# ---- pure helpers (unit-tested) ---------------------------------------------------------------
def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Wait before retry ``attempt`` (1-based): equal jitter over ``min(max_s, base_s * 2**(attempt-1))``.

    Why equal jitter: half the delay is guaranteed (the server gets its breather), the other
    half is random so that concurrent workers hit by the same 429 do not retry in lockstep.
    """
    ceiling = min(max_s, base_s * 2 ** (attempt - 1))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds, or an HTTP date); ``None`` if unusable."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def parse_completion(
    body: str, tools_requested: bool = False, tools_required: bool = False, text_tools: Collection[str] = ()
) -> Completion:
    """The first choice's message text and the usage counts, from a chat.completions JSON body.

    ``tools_requested``: the request offered tools, so a reply of tool calls without text is usable;
    otherwise a reply without text is malformed even if it carries tool calls. ``tools_required``:
    the request's ``tool_choice`` demanded a tool call, so a reply without one is malformed (an
    endpoint that ignores tool_choice, e.g. one that writes the call as text, is not cached as if
    it had answered). ``text_tools`` (opt-in, ``TEXT_TOOL_CALLS_PARAM``): the names of the offered
    tools; a reply without structured calls whose text is a call to one of them (pipeline.agentic.
    text_calls) is read as that call, before ``tools_required`` is checked."""
    try:
        data = json.loads(body)
    except ValueError:
        raise MalformedReply(f"body is not JSON: {body[:120]!r}") from None
    if not isinstance(data, dict):
        raise MalformedReply(f"body is JSON {type(data).__name__}, not an object")
    if data.get("error"):
        raise MalformedReply(f"server returned an error object: {str(data['error'])[:200]}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedReply("no choices[0] in the completion")
    message = choices[0].get("message")
    text = message.get("content") if isinstance(message, dict) else None
    finish = choices[0].get("finish_reason")
    tool_calls = _tool_calls(message) if tools_requested else ()
    if text_tools and not tool_calls and isinstance(text, str):
        tool_calls = calls_written_as_text(text, text_tools)
        finish = "tool_calls" if tool_calls else finish  # as a server that parsed them would say
    if tools_required and not tool_calls:
        raise MalformedReply(f"the request required a tool call (tool_choice) and the reply has none: {text!r:.120}")
    if tool_calls:  # a tool-calling turn: no answer text is needed (the caller runs the tools)
        text = text if isinstance(text, str) else ""
    elif not isinstance(text, str):
        raise MalformedReply(f"choices[0].message.content is not text (finish_reason={finish!r})")
    elif not text.strip():
        raise MalformedReply(f"{EMPTY_COMPLETION} (finish_reason={finish!r})")
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    model = data.get("model")
    return Completion(
        text=text,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        finish_reason=finish if isinstance(finish, str) else None,
        served_model=model if isinstance(model, str) else None,
        tool_calls=tool_calls,
    )


def calls_written_as_text(text: str, tool_names: Collection[str]) -> tuple[dict[str, Any], ...]:
    """The tool calls ``text`` writes (pipeline.llm.text_calls; the whole text may also be wrapped
    in one markdown code fence, as small models write JSON) when every one names one of ``tool_names``;
    else none: a call to a tool that was not offered is not read. The text itself is kept as written."""
    fenced = _FENCED.match(text.strip())
    calls = tool_calls_in_text(fenced.group(1) if fenced else text, 0)
    if not calls or any(c["function"]["name"] not in tool_names for c in calls):
        return ()
    return tuple(calls)


def _tool_calls(message: object) -> tuple[dict[str, Any], ...]:
    """``message.tool_calls`` as given (each entry's shape is checked by its caller, which can
    tell the model what was wrong); a ``tool_calls`` that is not a list is a malformed reply."""
    raw = message.get("tool_calls") if isinstance(message, dict) else None
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise MalformedReply(f"choices[0].message.tool_calls is {type(raw).__name__}, not a list")
    return tuple(c if isinstance(c, dict) else {"invalid": c} for c in raw)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def safe_url(url: str) -> str:
    """``url`` without credentials, query or fragment (safe for logs and metadata)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


MASK = "***"
MIN_MASK_FRAGMENT = 8  # a key fragment this long (or the whole key, when shorter) is masked
_SHORT_KEY = 16  # keys shorter than this (local placeholders) are masked as a whole only
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_\-.~+/=*]")  # "*": servers elide keys as sk-ab****wxyz
# header / field echoes: "Authorization: Bearer x", "'authorization': 'Basic x'", "api_key=x"
_CREDENTIAL_FIELD = re.compile(
    r"""(?ix)
    (?P<name>\b(?:proxy-)?authorization|\bx-api-key|\bapi[-_]?key|\baccess[-_]?token)
    (?P<sep>["']?\s*[:=]\s*["']?\s*)
    (?P<scheme>(?:bearer|basic|token)\s+)?
    (?P<value>[^\s"',;}\]]+)
    """
)
_BEARER = re.compile(r"(?i)\b(?P<scheme>bearer|basic)\s+(?P<value>[A-Za-z0-9_\-.~+/=*]{6,})")


def _masked_spans(lower: str, key: str) -> list[tuple[int, int]]:
    """Spans of ``lower`` covering any ``MIN_MASK_FRAGMENT``-long piece of ``key`` (lower-cased)."""
    k = len(key) if len(key) < _SHORT_KEY else MIN_MASK_FRAGMENT
    grams = {key[i : i + k] for i in range(len(key) - k + 1)}
    spans: list[tuple[int, int]] = []
    for i in range(len(lower) - k + 1):
        if lower[i : i + k] in grams:
            if spans and i <= spans[-1][1]:
                spans[-1] = (spans[-1][0], i + k)
            else:
                spans.append((i, i + k))
    return spans


def mask_secret(text: str, secret: str | None) -> str:
    """``text`` with every echo of ``secret`` and every credential header value replaced by ``***``.

    Why more than ``text.replace(secret, ...)``: servers echo keys altered (upper-cased, one
    character dropped, truncated in "Incorrect API key provided: sk-abc***xyz"), and a stored
    error text is kept forever in Parquet. So: any run of the text containing a piece of the key
    of ``MIN_MASK_FRAGMENT`` characters (case-insensitive) is masked together with the whole token
    around it; keys shorter than 16 characters are masked only whole (case-insensitive), so a
    short local placeholder does not blank ordinary words. Independently of the key, the value
    of an ``Authorization`` / ``api_key`` / ``Bearer`` echo is always masked: a server may echo
    a header that holds another credential than the configured key.
    """
    text = _CREDENTIAL_FIELD.sub(lambda m: f"{m['name']}{m['sep']}{m['scheme'] or ''}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m['scheme']} {MASK}" if m["value"] != MASK else m[0], text)
    if not secret or len(secret) < 4:
        return text
    spans = _masked_spans(text.lower(), secret.lower())
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end in spans:
        while start > pos and _TOKEN_CHAR.match(text[start - 1]):
            start -= 1
        while end < len(text) and _TOKEN_CHAR.match(text[end]):
            end += 1
        if start >= pos:  # else the widened span joins the previous mask, which just grows
            out += [text[pos:start], MASK]
        pos = max(pos, end)
    out.append(text[pos:])
    return "".join(out)


def normalise_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Plain dicts with text ``role`` and ``content``: a malformed prompt is a bug, so it raises."""
    if isinstance(messages, str | bytes) or not messages:
        raise ValueError("messages must be a non-empty sequence of {'role', 'content'} mappings")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise ValueError(f"messages[{i}]: expected a mapping with a text 'role', got {m!r:.80}")
        if not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] (role {m['role']!r}): 'content' must be text")
        out.append(dict(m))
    return out
