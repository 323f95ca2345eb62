"""The plain LLM client: chat completions against any OpenAI-compatible server, cached and retried.

``OpenAIChatClient`` imports no Dagster: readers, judges and memory systems take it as the
``pipeline.llm.protocol.ChatClient`` protocol, tests and benchmarks build it directly, and the
Dagster resource (resources/llm.py ``LLMResource``) only builds one per run from the benchmark object.

Why this shape:
- One code path for OpenAI, DeepSeek, vLLM, Ollama and llama.cpp server: ``chat.completions``
  through the ``openai`` client with a configurable ``base_url``. The raw body is parsed by
  pipeline.llm.protocol.parse_completion, tolerantly (servers differ in optional fields) but
  strictly where it matters: no message text means a failed call, never an empty answer.
- Retries are ours alone (the client's are disabled): exponential backoff with jitter on 429,
  408/409, 5xx, timeouts and connection errors, honouring ``Retry-After`` up to a cap. A call that
  still fails is returned as ``LLMReply(ok=False, error=...)`` so the caller records it as failed
  (and the next run retries it); transport problems never raise into the caller.
- Every successful reply is cached by sha256(model, messages, params) (pipeline.llm.cache), so a
  finished benchmark re-runs with zero requests (a client built directly needs no API key for it; the
  definitions still ask for a remote endpoint's key at load: pipeline/llm/keys.py).
- At most ``max_concurrency`` requests are in flight per resource, however many threads call it.
- The API key is a secret: set it with ``dg.EnvVar`` on the Dagster resource (or leave it empty and
  name ``api_key_env``); it is excluded from repr/str, metadata (``describe``), cache keys, cache files and errors.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from pipeline.config.model import PROJECT_ROOT, BenchmarkConfig, LLMConfig
from pipeline.llm.cache import ResponseCache, cache_key
from pipeline.llm.hang import Hung, probe, watched
from pipeline.llm.keys import NO_KEY_PLACEHOLDER, is_local, key_from_env
from pipeline.llm.meter import METER
from pipeline.llm.prices import ModelPrice, cost_usd, load_prices
from pipeline.llm.protocol import (
    LOCAL_PARAMS,
    TEXT_TOOL_CALLS_PARAM,
    UNREACHABLE_CONNECT_TIMEOUT,
    UNREACHABLE_CONNECTION,
    UNREACHABLE_TIMEOUT,
    ChatClient,
    ChatRequest,
    Completion,
    Failure,
    LLMReply,
    MalformedReply,
    Message,
    backoff_delay,
    is_unreachable,
    mask_secret,
    normalise_messages,
    parse_completion,
    parse_retry_after,
    safe_url,
)
from pipeline.llm.ratelimit import RequestBudget, booked, budget_for, reserve_tokens

if TYPE_CHECKING:  # openai is imported when a client is first used (~0.5 s CPU off every start-up)
    import openai

__all__ = [
    "ChatClient",
    "ChatRequest",
    "LLMConfigError",
    "LLMReply",
    "MalformedReply",
    "OpenAIChatClient",
    "backoff_delay",
    "parse_completion",
    "parse_retry_after",
    "safe_url",
]

DEFAULT_PRICES = "configs/prices.yaml"
CACHE_SUBDIR = "llm_cache"
RETRYABLE_STATUS = frozenset({408, 409, 429})
CHAT_COMPLETIONS_PATH = "/chat/completions"
_BEARER: openai.RequestOptions = {"security": {"bearer_auth": True}}  # as the SDK's chat.completions.create sends
MAX_ERROR_CHARS = 500

# the logger Dagster's run log shows (the one its get_dagster_logger("membench.llm") returns), without importing Dagster
log = logging.getLogger("dagster.builtin.membench.llm")
_INIT_LOCK = threading.Lock()


class LLMConfigError(ValueError):
    """The LLM resource cannot be used as configured (e.g. no API key for a remote server)."""


# ---- runtime state (not config) ---------------------------------------------------------------
class EndpointHealth:
    """Whether the endpoint is known to be down: a call gave up on it and nothing answered since.

    Why: with the per-call retries alone, every question waited through its own backoff on a dead
    endpoint (136 s to stop a stage with the shipped defaults, 166 s black-holed). Once one call
    has spent its ``unreachable_retries`` on it, or a probe found it hung (pipeline/llm/hang.py),
    the others make one attempt each, probed as soon as it is sent (the first reply marks it up
    again), so the stage's own breaker (pipeline/run/stage.py) stops it soon.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.down = False

    def mark_down(self) -> None:
        with self._lock:
            self.down = True

    def mark_up(self) -> None:
        with self._lock:
            self.down = False


class _Runtime:
    """Per-resource state created on first use: cache, prices, concurrency gate, lazy client."""

    def __init__(
        self,
        cache: ResponseCache,
        prices: dict[str, ModelPrice],
        max_concurrency: int,
        limiter: RequestBudget | None = None,
    ) -> None:
        self.cache = cache
        self.prices = prices
        self.gate = threading.BoundedSemaphore(max_concurrency)
        self.limiter = limiter  # requests/tokens per minute, shared by the runs of a config (None: unlimited)
        self.rng = random.Random()
        self.health = EndpointHealth()
        self.client: openai.OpenAI | None = None
        self.client_lock = threading.Lock()


class OpenAIChatClient(BaseModel):
    """An OpenAI-compatible chat endpoint with retries, a concurrency cap, a cache and costs.

    A plain client (no Dagster): ``OpenAIChatClient.from_config(cfg.llm, cache_dir=...)`` or
    ``OpenAIChatClient.from_benchmark(cfg)``; in a run, ``LLMResource`` builds and holds it.
    Relative paths resolve against the project root.
    """

    base_url: str = Field(description="OpenAI-compatible base URL, e.g. https://api.openai.com/v1")
    model: str = Field(description="Default model name sent in requests (and used for prices)")
    model_tag: str | None = Field(default=None, description="What the model name alone does not say; in cache keys")
    api_key: str = Field(default="", repr=False, description="Set with dg.EnvVar; never stored")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Env var read at call time when api_key is empty")
    temperature: float | None = Field(default=0.0, description="None omits it (reasoning models)")
    max_tokens: int = Field(default=512, ge=1)
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    timeout_s: float = Field(default=60.0, gt=0)
    connect_timeout_s: float = Field(default=5.0, gt=0, description="Longest wait for a connection")
    max_retries: int = Field(default=5, ge=0, description="Retries after the first attempt")
    unreachable_retries: int = Field(
        default=2, ge=0, description="Retries of a connection error or timeout (0 once the endpoint is known down)"
    )
    probe_after_s: float | None = Field(
        default=10.0, gt=0, description="No reply this long: probe the endpoint (pipeline/llm/hang.py); None: never"
    )
    max_concurrency: int = Field(default=4, ge=1)
    requests_per_minute: float | None = Field(
        default=None, gt=0, description="Provider quota: HTTP requests (retries included) at most this often"
    )
    tokens_per_minute: float | None = Field(default=None, gt=0, description="Provider quota: tokens per minute")
    cache_dir: str = Field(default="results/llm_cache")
    prices_path: str = Field(default=DEFAULT_PRICES)
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    retry_after_cap_s: float = Field(default=60.0, ge=0, description="Longest Retry-After honoured")

    _rt: _Runtime | None = PrivateAttr(default=None)

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def from_config(
        cls,
        cfg: LLMConfig,
        *,
        cache_dir: str | Path,
        prices_path: str | Path = DEFAULT_PRICES,
        api_key: str = "",
    ) -> OpenAIChatClient:
        """A client for ``cfg``. ``api_key``: the resource's (EnvVar-resolved) key; empty, the key is
        read from ``$<cfg.api_key_env>`` when first needed."""
        return cls(
            base_url=cfg.base_url,
            model=cfg.model,
            model_tag=cfg.model_tag,
            api_key=api_key,
            api_key_env=cfg.api_key_env,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            timeout_s=cfg.timeout_s,
            connect_timeout_s=cfg.connect_timeout_s,
            max_retries=cfg.max_retries,
            unreachable_retries=cfg.unreachable_retries,
            probe_after_s=cfg.probe_after_s,
            max_concurrency=cfg.max_concurrency,
            requests_per_minute=cfg.requests_per_minute,
            tokens_per_minute=cfg.tokens_per_minute,
            cache_dir=str(cache_dir),
            prices_path=str(prices_path),
        )

    @classmethod
    def from_benchmark(cls, cfg: BenchmarkConfig) -> OpenAIChatClient:
        """The run's ``llm`` section, caching under ``<results_dir>/llm_cache``."""
        if cfg.llm is None:
            raise LLMConfigError(f"{cfg.source or 'benchmark config'}: no 'llm' section")
        return cls.from_config(
            cfg.llm, cache_dir=cfg.resolved_results_dir() / CACHE_SUBDIR, prices_path=cfg.resolved_prices_path()
        )

    def describe(self) -> dict[str, str | float | int | None]:
        """Settings safe for Dagster metadata and logs (no key, URL without credentials)."""
        return {
            "llm_base_url": safe_url(self.base_url),
            "llm_model": self.model,
            "llm_model_tag": self.model_tag,
            "llm_temperature": self.temperature,
            "llm_max_tokens": self.max_tokens,
            "llm_max_retries": self.max_retries,
            "llm_max_concurrency": self.max_concurrency,
            "llm_timeout_s": self.timeout_s,
            "llm_requests_per_minute": self.requests_per_minute,
            "llm_tokens_per_minute": self.tokens_per_minute,
        }

    def __str__(self) -> str:
        return f"OpenAIChatClient({self.model} @ {safe_url(self.base_url)})"

    # ---- public API ------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> LLMReply:
        """One chat completion: from the cache, else live with retries. Never raises on transport."""
        req = ChatRequest(messages, model, temperature, max_tokens, dict(params or {}))
        return self._run(req)

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[LLMReply]:
        """Replies to ``requests`` in input order, run concurrently (at most ``max_concurrency``)."""
        replies: list[LLMReply | None] = [None] * len(requests)
        for i, reply in self.chat_iter(requests):
            replies[i] = reply
        return [r for r in replies if r is not None]

    def chat_iter(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[int, LLMReply]]:
        """``(index, reply)`` as each request finishes: lets a stage persist results as they come."""
        if not requests:
            return
        with ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="llm") as pool:
            futures = {pool.submit(self._run, req): i for i, req in enumerate(requests)}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()

    def close(self) -> None:
        rt = self._rt
        if rt is not None and rt.client is not None:
            rt.client.close()
            rt.client = None

    # ---- internals -------------------------------------------------------------------------
    def _resolve(self, path: str) -> Path:
        p = Path(os.path.expandvars(path))
        return p if p.is_absolute() else PROJECT_ROOT / p

    def _runtime(self) -> _Runtime:
        if self._rt is None:
            with _INIT_LOCK:
                if self._rt is None:
                    prices = load_prices(self._resolve(self.prices_path))
                    cache = ResponseCache(self._resolve(self.cache_dir))
                    endpoint = f"{safe_url(self.base_url)} {self.model}"  # one budget per endpoint and model
                    limiter = budget_for(self.requests_per_minute, self.tokens_per_minute, cache.root, endpoint)
                    self._rt = _Runtime(cache, prices, self.max_concurrency, limiter)
        return self._rt

    def _secret(self) -> str:
        """The key: ``api_key`` (EnvVar-resolved) or ``$api_key_env``; a placeholder for local servers."""
        key = self.api_key or key_from_env(self.api_key_env)
        if key:
            return key
        if is_local(self.base_url):
            return NO_KEY_PLACEHOLDER
        raise LLMConfigError(
            f"no API key for {safe_url(self.base_url)}: set ${self.api_key_env} "
            "(or the llm resource's api_key with dg.EnvVar)"
        )

    def _client(self, rt: _Runtime) -> openai.OpenAI:
        import openai

        with rt.client_lock:
            if rt.client is None:
                rt.client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=self._secret(),
                    timeout=openai.Timeout(self.timeout_s, connect=min(self.connect_timeout_s, self.timeout_s)),
                    max_retries=0,  # our retry loop is the only one (counts, backoff, Retry-After)
                )
            return rt.client

    def _request_params(self, req: ChatRequest) -> dict[str, Any]:
        """Every knob that shapes the reply: the cache key hashes exactly this."""
        params: dict[str, Any] = {
            "temperature": self.temperature if req.temperature is None else req.temperature,
            "max_tokens": self.max_tokens if req.max_tokens is None else req.max_tokens,
        }
        clash = sorted(set(req.params) & {*params, "model", "messages", "stream", "n"})
        if clash:
            raise ValueError(f"params {clash} must be set via chat() arguments (or are unsupported)")
        return {**params, **req.params}

    def _run(self, req: ChatRequest) -> LLMReply:
        rt = self._runtime()
        model = req.model or self.model
        messages = normalise_messages(req.messages)
        params = self._request_params(req)
        key = cache_key(model, messages, params, self.model_tag)
        with rt.cache.locked(key):
            cached = rt.cache.get(key)
            if cached is not None:
                reply = self._from_cache(rt, model, key, cached)
            else:
                reply = self._call_live(rt, model, messages, params, key)
        METER.add(reply)  # stage progress: requests/s, tokens/s, cost so far
        return reply

    def _from_cache(self, rt: _Runtime, model: str, key: str, payload: dict[str, Any]) -> LLMReply:
        pt, ct = payload.get("prompt_tokens"), payload.get("completion_tokens")
        return LLMReply(
            text=payload["text"],
            ok=True,
            error=None,
            prompt_tokens=pt,
            completion_tokens=ct,
            latency_s=float(payload.get("latency_s", 0.0)),
            cache_hit=True,
            attempts=0,
            cost_usd=cost_usd(model, pt, ct, rt.prices),
            model=model,
            cache_key=key,
            finish_reason=payload.get("finish_reason"),
            tool_calls=tuple(payload.get("tool_calls") or ()),
        )

    def _call_live(
        self, rt: _Runtime, model: str, messages: list[dict[str, Any]], params: dict[str, Any], key: str
    ) -> LLMReply:
        start = time.monotonic()
        attempts = unreachable = 0
        while True:
            attempts += 1
            outcome = self._attempt(rt, model, messages, params)
            if isinstance(outcome, Completion):
                rt.health.mark_up()
                latency = time.monotonic() - start
                self._store(rt, key, model, messages, params, outcome, latency)
                return self._ok_reply(rt, model, key, outcome, latency, attempts)
            limit = self.max_retries + 1  # the attempts this call may still make, as the log says
            if is_unreachable(outcome.error):
                unreachable += 1
                if rt.health.down or unreachable > self.unreachable_retries:
                    rt.health.mark_down()
                    note = "endpoint unreachable, not retried" if attempts == 1 else "endpoint unreachable"
                    failure = Failure(f"{outcome.error} ({note})", retryable=False)
                    return self._failed_reply(model, key, failure, time.monotonic() - start, attempts)
                limit = min(limit, attempts + self.unreachable_retries + 1 - unreachable)
            if not outcome.retryable or attempts > self.max_retries:
                return self._failed_reply(model, key, outcome, time.monotonic() - start, attempts)
            delay = self._retry_delay(rt, attempts, outcome.retry_after_s)
            log.warning(
                "LLM call to %s failed (attempt %d/%d: %s); retrying in %.2fs",
                model,
                attempts,
                limit,
                outcome.error,
                delay,
            )
            time.sleep(delay)

    def _retry_delay(self, rt: _Runtime, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_cap_s)
        return backoff_delay(attempt, self.backoff_base_s, self.backoff_max_s, rt.rng)

    def _attempt(
        self, rt: _Runtime, model: str, messages: list[dict[str, Any]], params: dict[str, Any]
    ) -> Completion | Failure:
        """One HTTP request (inside the concurrency gate) -> a parsed completion or a failure."""
        client = self._client(rt)
        standard = {k: params[k] for k in ("temperature", "max_tokens")}
        extra = {k: v for k, v in params.items() if k not in standard and k not in LOCAL_PARAMS}
        if standard["temperature"] is not None:
            extra["temperature"] = standard["temperature"]
        extra[self.max_tokens_param] = standard["max_tokens"]
        # booked inside the gate, right before sending: a request held by the gate spends no budget; the
        # prompt is counted only for a budget (a full context is ~8k tokens: ~1 ms of every request)
        reserve = reserve_tokens(messages, standard["max_tokens"]) if rt.limiter is not None else 0
        with rt.gate, booked(rt.limiter, reserve) as booking:
            body = self._send(rt, client, lambda: self._request(client, model, messages, extra))
            if isinstance(body, Failure):
                return body
            try:
                required = params.get("tool_choice") not in (None, "auto", "none")  # "required", "any", a function
                completion = parse_completion(
                    body, tools_requested="tools" in params, tools_required=required, text_tools=_text_tools(params)
                )
            except MalformedReply as exc:
                return Failure(self._clean(f"malformed reply: {exc}"), retryable=False)
            booking.used = _used_tokens(completion)
            return completion

    def _send(self, rt: _Runtime, client: openai.OpenAI, request: Callable[[], str | Failure]) -> str | Failure:
        """``request()``, watched by a probe of the endpoint while it waits (pipeline/llm/hang.py): at
        once when the endpoint is known down, else after ``probe_after_s`` (unless the reply timeout
        comes first). A probe that gets no answer marks the endpoint down and fails the attempt."""
        if self.probe_after_s is None:
            return request()
        first = 0.0 if rt.health.down else self.probe_after_s
        if first >= self.timeout_s:
            return request()  # the request's own timeout ends the wait first: nothing to watch
        outcome = watched(request, lambda: probe(client, self.connect_timeout_s), first, self.probe_after_s)
        if not isinstance(outcome, Hung):
            return outcome
        rt.health.mark_down()
        if outcome.why.startswith(UNREACHABLE_CONNECTION):  # the probe was refused: down, not hung
            return Failure(self._clean(outcome.why), retryable=False)
        return Failure(f"{UNREACHABLE_TIMEOUT}{outcome.waited_s:.1f}s and {outcome.why}: the endpoint hangs", False)

    def _request(
        self, client: openai.OpenAI, model: str, messages: list[dict[str, Any]], extra: dict[str, Any]
    ) -> str | Failure:
        """One chat completion request: the reply body, or why there is none (never raises)."""
        import openai

        try:
            # the SDK's documented call for a raw body (``post`` with ``cast_to=str``), not
            # ``chat.completions.with_raw_response.create``: that one walks the whole prompt against the
            # SDK's typed params (``maybe_transform``) and wraps the reply, ~0.5 vs ~0.2 ms CPU a request
            # (measured on a mock transport); the body sent is the same JSON object
            return client.post(
                CHAT_COMPLETIONS_PATH,
                cast_to=str,
                body={"model": model, "messages": messages, **extra},
                options=_BEARER,
            )
        except openai.APIStatusError as exc:
            return self._status_failure(exc)
        except openai.APITimeoutError as exc:
            if type(exc.__cause__).__name__ == "ConnectTimeout":  # the HTTP library's, whichever openai uses
                return Failure(f"{UNREACHABLE_CONNECT_TIMEOUT}{self.connect_timeout_s}s", retryable=True)
            return Failure(f"{UNREACHABLE_TIMEOUT}{self.timeout_s}s", retryable=True)
        except openai.APIConnectionError as exc:
            return Failure(self._clean(f"{UNREACHABLE_CONNECTION}{exc.__cause__ or exc}"), retryable=True)
        except openai.OpenAIError as exc:
            return Failure(self._clean(f"{type(exc).__name__}: {exc}"), retryable=False)

    def _status_failure(self, exc: openai.APIStatusError) -> Failure:
        status = exc.status_code
        retryable = status in RETRYABLE_STATUS or status >= 500
        retry_after = parse_retry_after(exc.response.headers.get("retry-after")) if retryable else None
        return Failure(self._clean(f"HTTP {status}: {exc.message}"), retryable, retry_after)

    def _clean(self, text: str) -> str:
        """Bounded error text with any occurrence of the key masked (servers may echo headers)."""
        return mask_secret(text, self.api_key or key_from_env(self.api_key_env))[:MAX_ERROR_CHARS]

    def _store(
        self,
        rt: _Runtime,
        key: str,
        model: str,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        c: Completion,
        latency: float,
    ) -> None:
        rt.cache.put(
            key,
            {
                "request": {"model": model, "messages": messages, "params": params},
                "text": c.text,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "finish_reason": c.finish_reason,
                "served_model": c.served_model,
                "tool_calls": list(c.tool_calls),
                "latency_s": latency,
                "created_at": dt.datetime.now(dt.UTC).isoformat(),
            },
        )

    def _ok_reply(self, rt: _Runtime, model: str, key: str, c: Completion, latency: float, attempts: int) -> LLMReply:
        return LLMReply(
            text=c.text,
            ok=True,
            error=None,
            prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens,
            latency_s=latency,
            cache_hit=False,
            attempts=attempts,
            cost_usd=cost_usd(model, c.prompt_tokens, c.completion_tokens, rt.prices),
            model=model,
            cache_key=key,
            finish_reason=c.finish_reason,
            tool_calls=c.tool_calls,
        )

    def _failed_reply(self, model: str, key: str, f: Failure, latency: float, attempts: int) -> LLMReply:
        error = f.error if attempts == 1 else f"{f.error} (after {attempts} attempts)"
        return LLMReply(
            text=None,
            ok=False,
            error=error,
            prompt_tokens=None,
            completion_tokens=None,
            latency_s=latency,
            cache_hit=False,
            attempts=attempts,
            cost_usd=None,
            model=model,
            cache_key=key,
        )


def _text_tools(params: Mapping[str, Any]) -> frozenset[str]:
    """The offered tools' names when the request asks its tool calls read from the text, else none."""
    if not params.get(TEXT_TOOL_CALLS_PARAM) or params.get("tool_choice") == "none":
        return frozenset()
    tools = params.get("tools") or []
    return frozenset(str(t.get("function", {}).get("name")) for t in tools if isinstance(t, Mapping))


def _used_tokens(c: Completion) -> int | None:
    """The tokens a reply spent by the endpoint's own usage (None when it reports none)."""
    if c.prompt_tokens is None or c.completion_tokens is None:
        return None
    return c.prompt_tokens + c.completion_tokens


# ---- which endpoint a role uses ------------------------------------------------------------------
Role = Literal["reader", "judges"]
ROLE_READER: Role = "reader"
ROLE_JUDGES: Role = "judges"


def endpoint_for(cfg: BenchmarkConfig, role: str) -> LLMConfig | None:
    """The endpoint of ``role``: readers (and memory systems) use ``llm:``; judges use
    ``BenchmarkConfig.judge_endpoint`` (``judge_llm:`` when set, else ``llm:``). The judge model is
    part of every judgment's unit hash, so pointing ``judge_llm`` at a new model re-runs exactly the
    judgments."""
    if role == ROLE_JUDGES:
        return cfg.judge_endpoint()
    return cfg.llm


def client_for(cfg: BenchmarkConfig, role: str = ROLE_READER, api_key: str = "") -> OpenAIChatClient | None:
    """A new client for ``role``'s endpoint of ``cfg`` (None without one), caching under
    ``<results_dir>/llm_cache`` (keys hash model, messages and params: readers and judges share it)."""
    endpoint = endpoint_for(cfg, role)
    if endpoint is None:
        return None
    return OpenAIChatClient.from_config(
        endpoint,
        cache_dir=cfg.resolved_results_dir() / CACHE_SUBDIR,
        prices_path=cfg.resolved_prices_path(),
        api_key=api_key,
    )
