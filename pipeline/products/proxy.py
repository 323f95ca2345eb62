"""The OpenAI-compatible endpoint membench serves on 127.0.0.1 for the memory products under test.

Why: a product library (mem0, LangMem, Graphiti, ...) makes its own LLM and embedding calls. Pointed
at this endpoint, every one of them goes through membench's LLM client (its cache keyed by
model, messages and params, retries, rate limit, key masking, token and cost accounting) and its
embedding cache, so a rerun of a product costs 0 upstream calls, the product never sees the real
API key, and its spend is measured per system and per phase (``ingestion`` vs ``search``).

Routes (one server per process, started on first use, daemon thread):

- ``POST /m/<meter>/v1/chat/completions``: forwarded through the meter's ``ChatClient``. ``model``,
  ``temperature``, ``max_tokens`` (or ``max_completion_tokens``) and ``response_format`` /
  ``seed`` / ``top_p`` / ``stop`` and tool calling (``tools``, ``tool_choice``, ``parallel_tool_calls``;
  the messages' ``tool_calls`` / ``tool_call_id``) are forwarded (as params, so they enter the cache
  key), and a reply's ``tool_calls`` are returned as sent (LangMem extracts through tool calls).
  A request the client cannot represent (legacy ``functions``, ``n`` > 1, ``stream``) is refused with
  400 naming the field: a product feature membench cannot serve fails loudly, never silently changes.
- ``POST /m/<meter>/v1/embeddings``: vectors from the meter's ``Encoder`` (membench's cached
  encoder, L2-normalised; ``encoding_format`` float or base64, as the ``openai`` client asks).

Endpoint options (``EndpointOptions``, per meter, set from a product's params; all off by default,
so a request goes upstream as the product sent it):

- ``schema_format="json_object_schema"``: a ``response_format`` of type ``json_schema`` is sent upstream
  as ``{"type": "json_object", "schema": <the same schema>}``, the form llama-cpp-python's server
  turns into a grammar that constrains the reply to the schema (it refuses ``json_schema``). The
  product still asks for, and gets, a reply of its schema; only the wire form changes.
- ``text_tool_calls``: when the request offers tools, a reply whose text writes a call to one of them
  (Qwen's ``<tool_call>{...}</tool_call>`` blocks or the bare JSON object, fenced or not;
  pipeline/llm/text_calls.py, pipeline.llm.protocol.calls_written_as_text)
  is returned as a proper ``tool_calls`` entry (an endpoint that renders the model's chat template
  but does not parse its calls back). membench's client reads the calls (``TEXT_TOOL_CALLS_PARAM``,
  never sent upstream, part of the cache key), so a ``tool_choice`` that requires a call is checked
  after reading, and a reply that still has no call is a failed call, never cached.
- ``frequency_penalty``: OpenAI's ``frequency_penalty``, added to every chat request of the product
  that does not set one itself. A small local model can repeat one JSON object until its reply cap
  (Hindsight's fact extraction with the 1.5B model, docs/guide/products.md); a penalty lets it stop. It
  is a forwarded param, so it enters the cache key, and the system's params name it in every report.

An upstream failure (membench's retries exhausted) is answered with HTTP 400 and the client's
error text: not 5xx, because the product's own client would retry a 5xx and double the calls
that membench already retried and counted.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

from pipeline.core.tokens import count_tokens
from pipeline.llm.protocol import TEXT_TOOL_CALLS_PARAM, TEXT_TOOL_CALLS_VERSION, ChatClient, LLMReply
from pipeline.memory.base import Encoder

PHASE_INGESTION = "ingestion"
PHASE_SEARCH = "search"
PHASES = (PHASE_INGESTION, PHASE_SEARCH)
FORWARDED_PARAMS = (
    "response_format", "seed", "top_p", "stop", "presence_penalty", "frequency_penalty",
    "tools", "tool_choice", "parallel_tool_calls",
)  # fmt: skip
REFUSED_FIELDS = ("functions", "function_call", "stream")
MESSAGE_TOOL_FIELDS = ("tool_calls", "tool_call_id", "name")  # kept on a message as the product sent them
_JSON = "application/json"
TEXT_CALL_ID_PREFIX = "text_call_0_"  # the ids pipeline.llm.protocol.calls_written_as_text gives


class ProxyRequestError(ValueError):
    """A request the proxy refuses (HTTP 400): the message names the field."""


SchemaFormat = Literal["json_schema", "json_object_schema"]


@dataclass(frozen=True)
class EndpointOptions:
    """How the proxy adapts a product's requests to an upstream that lacks a feature (module docstring)."""

    schema_format: SchemaFormat = "json_schema"  # json_object_schema: json_schema sent as json_object + schema
    text_tool_calls: bool = False  # read tool calls the upstream wrote as text
    frequency_penalty: float | None = None  # added to chat requests that set none (module docstring)


@dataclass
class Usage:
    """What one phase of one product instance spent (every call, cached or not)."""

    llm_calls: int = 0
    upstream_llm_calls: int = 0  # calls not answered from the cache (HTTP requests = attempts)
    upstream_attempts: int = 0
    failed_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0  # cost of upstream calls only: a cache hit costs nothing in this run
    embed_calls: int = 0
    embed_texts: int = 0
    embed_tokens: int = 0  # pipeline.core.tokens definition (regex_word_punct) over the embedded texts

    def add_reply(self, reply: LLMReply) -> None:
        self.llm_calls += 1
        self.upstream_llm_calls += 0 if reply.cache_hit else 1
        self.upstream_attempts += reply.attempts
        self.failed_llm_calls += 0 if reply.ok else 1
        self.prompt_tokens += reply.prompt_tokens or 0
        self.completion_tokens += reply.completion_tokens or 0
        if not reply.cache_hit and reply.cost_usd is not None:
            self.cost_usd += reply.cost_usd

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "cost_usd": round(self.cost_usd, 8)}


@dataclass
class Meter:
    """One product instance's route: its clients, its current phase and its usage per phase.

    The product sets ``phase`` around its own ingestion and search calls; the proxy attributes
    every request on the meter's route to the phase current when it arrives.
    """

    llm: ChatClient | None
    encoder: Encoder | None
    options: EndpointOptions = field(default_factory=EndpointOptions)
    meter_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    phase: str = PHASE_INGESTION
    usage: dict[str, Usage] = field(default_factory=lambda: {p: Usage() for p in PHASES})
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    last_error: str | None = None  # the latest failed LLM call's error (a product may swallow the failure)

    @contextmanager
    def in_phase(self, phase: str) -> Iterator[Usage]:
        """Attribute calls to ``phase`` while inside; yields a fresh Usage of just this block."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}; expected one of {PHASES}")
        block = Usage()
        with self.lock:
            self.phase = phase
            self._blocks.append(block)
        try:
            yield block
        finally:
            with self.lock:
                self._blocks.remove(block)

    def __post_init__(self) -> None:
        self._blocks: list[Usage] = []

    def record(self, fn_name: str, *args: Any) -> None:
        """Apply ``Usage.<fn_name>(*args)`` to the current phase and to any open block."""
        with self.lock:
            targets = [self.usage[self.phase], *self._blocks]
            for u in targets:
                getattr(u, fn_name)(*args)

    def record_embeddings(self, texts: list[str]) -> None:
        tokens = sum(count_tokens(t) for t in texts)
        with self.lock:
            for u in [self.usage[self.phase], *self._blocks]:
                u.embed_calls += 1
                u.embed_texts += len(texts)
                u.embed_tokens += tokens


# ---- request translation (pure, unit-tested) ---------------------------------------------------
@dataclass(frozen=True)
class ChatCall:
    messages: list[dict[str, Any]]
    model: str | None
    temperature: float | None
    max_tokens: int | None
    params: dict[str, Any]


def chat_call(body: Mapping[str, Any], options: EndpointOptions | None = None) -> ChatCall:
    """The ``ChatClient.chat`` arguments for a chat.completions request body (or ProxyRequestError),
    adapted by ``options`` (the default: as sent)."""
    options = options or EndpointOptions()
    refused = [f for f in REFUSED_FIELDS if body.get(f)]
    if refused:
        raise ProxyRequestError(f"membench's product proxy does not serve {refused} (use tools, without streaming)")
    if int(body.get("n") or 1) != 1:
        raise ProxyRequestError("membench's product proxy serves n=1 only")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ProxyRequestError("'messages' must be a non-empty list")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    params = {k: body[k] for k in FORWARDED_PARAMS if body.get(k) is not None}
    if options.schema_format == "json_object_schema" and "response_format" in params:
        params["response_format"] = json_object_schema(params["response_format"])
    if options.frequency_penalty is not None:
        params.setdefault("frequency_penalty", options.frequency_penalty)
    if options.text_tool_calls and params.get("tools"):
        params[TEXT_TOOL_CALLS_PARAM] = TEXT_TOOL_CALLS_VERSION
    return ChatCall(
        messages=[_text_message(m) for m in messages],
        model=body.get("model") or None,
        temperature=body.get("temperature"),
        max_tokens=int(max_tokens) if max_tokens is not None else None,
        params=params,
    )


def json_object_schema(response_format: object) -> object:
    """``{"type": "json_object", "schema": S}`` for a ``json_schema`` response format of schema S
    (llama-cpp-python's schema-constrained JSON); any other response format is returned unchanged."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return response_format
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        raise ProxyRequestError("response_format json_schema without a 'json_schema.schema' object")
    return {"type": "json_object", "schema": schema}


def _text_message(message: object) -> dict[str, Any]:
    """A {role, content: str} message (plus its tool-call fields); list-of-parts content is joined when
    every part is text; an assistant turn of tool calls only (content null) gets content ""."""
    if not isinstance(message, dict) or "role" not in message:
        raise ProxyRequestError(f"a message is not an object with a role: {str(message)[:80]}")
    content = message.get("content")
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if len(texts) != len(content) or not all(isinstance(t, str) for t in texts):
            raise ProxyRequestError("only text message parts are served")
        content = "\n".join(str(t) for t in texts)
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise ProxyRequestError("message content must be text")
    out: dict[str, Any] = {"role": str(message["role"]), "content": content}
    out.update({k: message[k] for k in MESSAGE_TOOL_FIELDS if message.get(k) is not None})
    return out


def completion_body(reply: LLMReply, requested_model: str | None) -> dict[str, Any]:
    """An OpenAI chat.completion object for a successful reply (usage = the upstream's counts)."""
    pt, ct = reply.prompt_tokens or 0, reply.completion_tokens or 0
    return {
        "id": f"chatcmpl-membench-{reply.cache_key[:16]}",
        "object": "chat.completion",
        "created": 0,
        "model": requested_model or reply.model,
        "choices": [
            {
                "index": 0,
                "message": _reply_message(reply),
                "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
    }


def _reply_message(reply: LLMReply) -> dict[str, Any]:
    if not reply.tool_calls:
        return {"role": "assistant", "content": reply.text}
    calls = [_unique_text_call_id(c, reply.cache_key) for c in reply.tool_calls]
    read_from_text = calls != list(reply.tool_calls)  # the text was the calls: not an answer besides them
    return {"role": "assistant", "content": None if read_from_text else reply.text or None, "tool_calls": calls}


def _unique_text_call_id(call: dict[str, Any], cache_key: str) -> dict[str, Any]:
    """A call read from text is numbered within its reply (``text_call_0_<i>``); the product gets an id
    unique to the request (from its cache key, so a replay gives the same id): a product that pairs
    tool results with call ids (trustcall's retries) never sees one id in two of its turns."""
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id.startswith(TEXT_CALL_ID_PREFIX):
        return call
    return {**call, "id": f"text_call_{cache_key[:12]}_{call_id.removeprefix(TEXT_CALL_ID_PREFIX)}"}


def embedding_inputs(body: Mapping[str, Any]) -> list[str]:
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ProxyRequestError("'input' must be a string or a non-empty list of strings (token arrays: no)")
    return texts


def embeddings_body(vectors: np.ndarray, model: str, encoding: str, tokens: int) -> dict[str, Any]:
    data = []
    for i, vec in enumerate(np.asarray(vectors, dtype=np.float32)):
        emb: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode() if encoding == "base64" else vec.tolist()
        data.append({"object": "embedding", "index": i, "embedding": emb})
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


# ---- the server ----------------------------------------------------------------------------------
class ProductProxy:
    """The process-wide proxy server; meters are registered and released by product instances."""

    def __init__(self) -> None:
        self._meters: dict[str, Meter] = {}
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="membench-proxy", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def base_url(self, meter: Meter) -> str:
        """The OpenAI ``base_url`` a product uses for ``meter``."""
        return f"http://127.0.0.1:{self.port}/m/{meter.meter_id}/v1"

    def register(self, meter: Meter) -> str:
        with self._lock:
            self._meters[meter.meter_id] = meter
        return self.base_url(meter)

    def release(self, meter: Meter) -> None:
        with self._lock:
            self._meters.pop(meter.meter_id, None)

    def meter(self, meter_id: str) -> Meter | None:
        with self._lock:
            return self._meters.get(meter_id)

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


_PROXY: ProductProxy | None = None
_PROXY_LOCK = threading.Lock()


def product_proxy() -> ProductProxy:
    """The process's proxy, started on first use."""
    global _PROXY
    with _PROXY_LOCK:
        if _PROXY is None:
            _PROXY = ProductProxy()
        return _PROXY


class _Handler(BaseHTTPRequestHandler):
    proxy: ProductProxy
    protocol_version = "HTTP/1.1"  # keep-alive: the openai client reuses connections

    def log_message(self, format: str, *args: Any) -> None:  # the product's calls are counted, not logged
        return

    def do_POST(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        # m/<meter>/v1/chat/completions | m/<meter>/v1/embeddings
        meter = self.proxy.meter(parts[1]) if len(parts) >= 4 and parts[0] == "m" else None
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length) if length else b""
        if meter is None:
            self._send(404, _error(f"no product route {self.path}", "not_found"))
            return
        route = "/".join(parts[3:])
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ProxyRequestError("request body must be a JSON object")
            if route == "chat/completions":
                status, payload = _chat(meter, body)
            elif route == "embeddings":
                status, payload = _embeddings(meter, body)
            else:
                status, payload = 404, _error(f"no route {route}", "not_found")
        except (ProxyRequestError, ValueError) as exc:
            status, payload = 400, _error(str(exc), "invalid_request_error")
        self._send(status, payload)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", _JSON)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None, "param": None}}


def _chat(meter: Meter, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if meter.llm is None:
        return 400, _error("no LLM configured for this product (the benchmark config has no llm: block)", "config")
    call = chat_call(body, meter.options)
    reply = meter.llm.chat(
        call.messages, model=call.model, temperature=call.temperature, max_tokens=call.max_tokens, params=call.params
    )
    meter.record("add_reply", reply)
    if not reply.ok:
        meter.last_error = reply.error
        return 400, _error(f"upstream LLM call failed: {reply.error}", "upstream_error")
    return 200, completion_body(reply, call.model)


def _embeddings(meter: Meter, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if meter.encoder is None:
        return 400, _error("no embedding model configured for this product", "config")
    texts = embedding_inputs(body)
    vectors = meter.encoder.encode(texts)
    meter.record_embeddings(texts)
    encoding = str(body.get("encoding_format") or "float")
    tokens = sum(count_tokens(t) for t in texts)
    return 200, embeddings_body(vectors, meter.encoder.model_name, encoding, tokens)
