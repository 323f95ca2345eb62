"""The LLM wire protocol: request/reply records, reply-body parsing and retry timing.

Why separate from the resource (resources/llm.py): readers and judges under ``pipeline/`` type
against ``ChatClient``/``LLMReply`` without importing Dagster resources, and these pure functions
(what counts as a usable completion, how long to wait before a retry) are unit-tested on their own.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

Message = Mapping[str, Any]


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
    this call (0 for a cache hit). ``cost_usd``: pipeline.llm_prices.cost_usd of the token counts
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

    def as_row(self) -> dict[str, Any]:
        """A flat dict for Parquet rows / metadata (no secret is ever part of a reply)."""
        return asdict(self)


class ChatClient(Protocol):
    """What readers and judges need from an LLM (LLMResource, or a test double of the same API)."""

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


def parse_completion(body: str) -> Completion:
    """The first choice's message text and the usage counts, from a chat.completions JSON body."""
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
    if not isinstance(text, str):
        raise MalformedReply(f"choices[0].message.content is not text (finish_reason={finish!r})")
    if not text.strip():
        raise MalformedReply(f"empty completion text (finish_reason={finish!r})")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    model = data.get("model")
    return Completion(
        text=text,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        finish_reason=finish if isinstance(finish, str) else None,
        served_model=model if isinstance(model, str) else None,
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def safe_url(url: str) -> str:
    """``url`` without credentials, query or fragment (safe for logs and metadata)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


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
