"""A small OpenAI-compatible chat server for tests: canned replies plus scripted faults.

Why our own server instead of mocking: the LLM client must be tested through the real ``openai``
package and a real socket (openai 3.x uses httpx2, which respx cannot intercept), so retries,
timeouts, Retry-After, the concurrency cap and the Authorization header are exercised for real.

- Replies: a rule table, first rule whose ``match`` is a substring of the last user message wins;
  otherwise ``default_reply``.
- Faults: each rule has its own queue of faults (consumed one per matching request), and there is
  a global queue for any request; a request with no pending fault is answered normally.
- Tool calling: ``add_script`` gives a rule a queue of assistant messages (text and/or
  ``tool_calls``, built with ``tool_call``; malformed ones too), consumed one per matching request.
  A request with ``tool_choice: "none"`` gets the rule's text reply, as a real server must give
  (unless ``obey_tool_choice`` is off: a server that keeps calling tools).
- Usage: ``prompt_tokens`` = whitespace-separated words over all message contents,
  ``completion_tokens`` = words of the reply (deterministic, so tests can assert exact counts).
- Observability: request count, request bodies, Authorization headers seen, max in-flight, and a
  timeline of (arrival time, matched rule) for benchmarks that measure throughput.
- Quota (``set_quota``): a provider's requests-per-minute and tokens-per-minute limits over a
  sliding window; a request over either gets HTTP 429 with Retry-After (``rejected`` counts them)
  and only accepted requests enter ``accepted`` (arrival time, tokens), so tests count per window.
- ``GET .../models`` lists the default model (the client's probe of an endpoint that is slow to
  reply: pipeline/llm/hang.py); ``probes`` counts them.
- A hung endpoint (``hang_everything``): it accepts every connection and answers nothing, neither a
  chat request nor a probe, until ``hang_everything(False)`` or the server stops; ``hung`` counts
  the requests it held (by path). Unlike ``Fault.hang`` (one request), nothing else is answered.

Usage::

    with running_fake_server() as srv:
        srv.add_rule("capital of France", "Paris")
        srv.push_faults(Fault.rate_limited("1"), Fault.server_error())
        ...  # point a client at srv.base_url
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

FaultKind = Literal["status", "hang", "garbage", "malformed", "empty"]


@dataclass(frozen=True)
class Fault:
    """How to spoil one request: an HTTP error, a hang, or a broken 200 body."""

    kind: FaultKind
    status: int = 500
    retry_after: str | None = None
    hang_s: float = 10.0

    @classmethod
    def rate_limited(cls, retry_after: str | None = None) -> Fault:
        return cls("status", 429, retry_after)

    @classmethod
    def server_error(cls, status: int = 500, retry_after: str | None = None) -> Fault:
        return cls("status", status, retry_after)

    @classmethod
    def hang(cls, seconds: float = 10.0) -> Fault:
        """Say nothing for ``seconds`` (cut short when the server stops)."""
        return cls("hang", hang_s=seconds)

    @classmethod
    def garbage(cls) -> Fault:
        """HTTP 200, ``application/json``, but the body is not JSON."""
        return cls("garbage")

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200 JSON without ``choices``."""
        return cls("malformed")

    @classmethod
    def empty(cls) -> Fault:
        """HTTP 200 completion whose message content is the empty string."""
        return cls("empty")


@dataclass
class Rule:
    match: str
    reply: str
    delay_s: float = 0.0
    usage: bool = True
    faults: deque[Fault | None] = field(default_factory=deque)  # None: that request is answered normally
    script: deque[dict[str, Any]] = field(default_factory=deque)  # assistant messages, one per request
    repeat_last: bool = False  # the script's last message answers every later request (a loop)
    obey_tool_choice: bool = True

    def next_message(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for one request (called under the server's lock)."""
        forced_text = self.obey_tool_choice and body.get("tool_choice") == "none"
        if forced_text or not self.script:
            return {"role": "assistant", "content": self.reply}
        message = self.script[0] if self.repeat_last and len(self.script) == 1 else self.script.popleft()
        return {"role": "assistant", "content": None, **message}


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """One OpenAI ``tool_calls`` entry; ``arguments`` as a dict is JSON-encoded, a str is sent as is
    (so a test can send arguments that are not JSON)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"call_{zlib.crc32(f'{name}{args}'.encode()):08x}", "type": "function",
            "function": {"name": name, "arguments": args}}  # fmt: skip


def word_count(text: str) -> int:
    return len(text.split())


class FakeOpenAIServer:
    """ThreadingHTTPServer on ``host`` (127.0.0.1; a free port) answering POST ``.../chat/completions``.

    A subclass may set ``host`` to another local address: benchmarks/several_hosts.py serves test
    hosts in network namespaces, which cannot reach the hub's loopback address."""

    host = "127.0.0.1"

    def __init__(self, default_reply: str = "I don't know.", default_delay_s: float = 0.0) -> None:
        self.default = Rule("", default_reply, default_delay_s)
        self.rules: list[Rule] = []
        self.global_faults: deque[Fault] = deque()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.request_count = 0
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.timeline: list[tuple[float, str]] = []  # (time.monotonic() at arrival, matched rule's match)
        self.quota: Quota | None = None
        self.accepted: list[tuple[float, int]] = []  # (arrival, tokens) of requests the quota let through
        self.rejected = 0  # requests answered 429 by the quota
        self.rejected_by: dict[str, int] = {}  # "rpm" / "tpm" -> how many of them
        self.probes = 0  # GET .../models requests answered
        self.hanging = threading.Event()  # set: every request is held unanswered (hang_everything)
        self.hung: dict[str, int] = {}  # path -> requests held while hanging
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- scripting -------------------------------------------------------------------------
    def add_rule(
        self,
        match: str,
        reply: str,
        *,
        delay_s: float = 0.0,
        usage: bool = True,
        faults: Sequence[Fault | None] = (),
    ) -> Rule:
        rule = Rule(match, reply, delay_s, usage, deque(faults))
        with self.lock:
            self.rules.append(rule)
        return rule

    def add_script(
        self,
        match: str,
        messages: Sequence[dict[str, Any]],
        *,
        final_reply: str = "I don't know.",
        repeat_last: bool = False,
        obey_tool_choice: bool = True,
        faults: Sequence[Fault | None] = (),
    ) -> Rule:
        """A rule answering matching requests with ``messages`` in turn (e.g. ``{"tool_calls": [...]}``
        or ``{"content": "Paris"}``), then ``final_reply``; ``repeat_last``: never runs out."""
        rule = Rule(match, final_reply, faults=deque(faults), script=deque(messages), repeat_last=repeat_last,
                    obey_tool_choice=obey_tool_choice)  # fmt: skip
        with self.lock:
            self.rules.append(rule)
        return rule

    def push_faults(self, *faults: Fault) -> None:
        with self.lock:
            self.global_faults.extend(faults)

    def hang_everything(self, on: bool = True) -> None:
        """Hold every request from now on, unanswered (``False``: answer again; held ones are closed unanswered)."""
        if on:
            self.hanging.set()
        else:
            self.hanging.clear()

    def hold_if_hanging(self, path: str) -> bool:
        """Called first by every request: while hanging, count it and hold it until released; True if held."""
        if not self.hanging.is_set():
            return False
        with self.lock:
            self.hung[path] = self.hung.get(path, 0) + 1
        while self.hanging.is_set() and not self.stopping.wait(0.05):
            pass
        return True

    def set_quota(self, rpm: int | None = None, tpm: int | None = None, window_s: float = 60.0) -> None:
        """Enforce at most ``rpm`` requests and ``tpm`` tokens (prompt + reply words) per sliding window."""
        with self.lock:
            self.quota = Quota(rpm, tpm, window_s)

    def reset_counts(self) -> None:
        with self.lock:
            self.request_count = 0
            self.requests.clear()
            self.auth_headers.clear()
            self.max_in_flight = 0

    # ---- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> Self:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer((self.host, 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ---- request handling (called from handler threads) ------------------------------------
    def begin(self, body: dict[str, Any], auth: str) -> tuple[Rule, Fault | None, dict[str, Any]]:
        """Count the request; pick its rule, pending fault (if any) and assistant message."""
        last_user = _last_user_text(body.get("messages"))
        with self.lock:
            self.request_count += 1
            self.requests.append(body)
            self.auth_headers.append(auth)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            rule = next((r for r in self.rules if r.match in last_user), self.default)
            now = time.monotonic()
            self.timeline.append((now, rule.match))
            fault = rule.faults.popleft() if rule.faults else None  # None in a rule's queue = served normally
            if fault is None and self.global_faults:
                fault = self.global_faults.popleft()
            if fault is not None:
                return rule, fault, {}
            if self.quota is not None:  # a spoiled request is not served, so it spends no quota
                why = self.quota.why_over(self.accepted, now, request_tokens(body, rule.reply))
                if why is not None:
                    self.rejected += 1
                    self.rejected_by[why] = self.rejected_by.get(why, 0) + 1
                    return rule, Fault.rate_limited(f"{self.quota.wait_s(self.accepted, now):.3f}"), {}
            return rule, None, rule.next_message(body)

    def end(self) -> None:
        with self.lock:
            self.in_flight -= 1


@dataclass(frozen=True)
class Quota:
    """Requests and tokens per sliding window, as a provider enforces them."""

    rpm: int | None
    tpm: int | None
    window_s: float = 60.0

    def why_over(self, accepted: list[tuple[float, int]], now: float, tokens: int) -> str | None:
        """ "rpm" or "tpm" when the request does not fit, else None (and it is logged in ``accepted``)."""
        recent = [(t, n) for t, n in accepted if t > now - self.window_s]
        if self.rpm is not None and len(recent) >= self.rpm:
            return "rpm"
        if self.tpm is not None and sum(n for _, n in recent) + tokens > self.tpm:
            return "tpm"
        accepted.append((now, tokens))
        return None

    def wait_s(self, accepted: list[tuple[float, int]], now: float) -> float:
        """Seconds until the oldest request in the window leaves it (the Retry-After of a 429)."""
        recent = [t for t, _ in accepted if t > now - self.window_s]
        return max(recent[0] + self.window_s - now, 0.001) if recent else 0.001


def request_tokens(body: dict[str, Any], reply: str) -> int:
    """The tokens a request costs: prompt words plus reply words (the usage the server reports)."""
    return sum(word_count(m.get("content", "")) for m in body.get("messages", [])) + word_count(reply)


def _last_user_text(messages: object) -> str:
    if not isinstance(messages, list):
        return ""
    users = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return users[-1] if users and isinstance(users[-1], str) else ""


def completion_body(
    body: dict[str, Any], text: str, usage: bool, n: int, message: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A chat.completion object as OpenAI returns it (usage counted in whitespace words);
    ``message`` (a scripted assistant message) replaces the plain ``text`` reply."""
    message = message or {"role": "assistant", "content": text}
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    out: dict[str, Any] = {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage:
        prompt = sum(word_count(m.get("content") or "") for m in body.get("messages", []))
        content = message.get("content")
        done = word_count(content if isinstance(content, str) else "")
        done += word_count(json.dumps(message["tool_calls"])) if message.get("tool_calls") else 0
        out["usage"] = {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}
    return out


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def do_GET(self) -> None:
        if self.fake.hold_if_hanging(self.path):
            return
        if not self.path.rstrip("/").endswith("/models"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        with self.fake.lock:
            self.fake.probes += 1
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})

    def do_POST(self) -> None:
        if self.fake.hold_if_hanging(self.path):
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        except ValueError:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client killed mid-request
                self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        rule, fault, message = self.fake.begin(body, self.headers.get("Authorization", ""))
        try:
            self._respond(body, rule, fault, message)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer
        finally:
            self.fake.end()

    def _respond(self, body: dict[str, Any], rule: Rule, fault: Fault | None, message: dict[str, Any]) -> None:
        n = self.fake.request_count
        if fault is None:
            if rule.delay_s:
                self.fake.stopping.wait(rule.delay_s)
            self._send(200, completion_body(body, rule.reply, rule.usage, n, message))
        elif fault.kind == "status":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            err = {"error": {"message": f"fake status {fault.status}", "type": "fake", "code": None}}
            self._send(fault.status, err, headers)
        elif fault.kind == "hang":
            self.fake.stopping.wait(fault.hang_s)
            self._send(200, completion_body(body, rule.reply, rule.usage, n))
        elif fault.kind == "garbage":
            self._send_raw(200, b"<html>upstream exploded{{", "application/json")
        elif fault.kind == "malformed":
            self._send(200, {"id": f"chatcmpl-fake-{n}", "object": "chat.completion", "model": "x"})
        else:  # empty
            self._send(200, completion_body(body, "", rule.usage, n))

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def running_fake_server(default_reply: str = "I don't know.") -> Iterator[FakeOpenAIServer]:
    """Start a fake server on a free port; always stopped on exit."""
    server = FakeOpenAIServer(default_reply).start()
    try:
        yield server
    finally:
        server.stop()
