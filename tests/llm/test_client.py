"""OpenAIChatClient end to end: the real openai client against our fake OpenAI-compatible server.

Every assertion about retries and payloads is made on what the server actually received (request
counts, Authorization header). Waits and concurrency are proven without the wall clock (the suite
must pass on a loaded machine): retry waits are recorded by a stand-in ``sleep``, and calls in
flight are counted inside the resource's concurrency gate, where a ``threading.Barrier`` proves
that the allowed number of calls really overlap.
"""

from __future__ import annotations

import socket
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.config.model import BenchmarkConfig, DatasetConfig, LLMConfig
from pipeline.llm.client import LLMConfigError, OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server
from pipeline.llm.protocol import ChatRequest
from tests.support.llm import files_containing

KEY = "sk-membench-test-7f3a9c1e"
MODEL = "fake-model"
Q = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
]


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server() as srv:
        srv.add_rule("capital of France", "Paris is the capital.")
        yield srv


@pytest.fixture
def prices_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(f"models:\n  {MODEL}: {{input_per_1m: 2.0, output_per_1m: 10.0}}\n")
    return path


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retry waits the resource asked for; they return at once (no test waits on the clock)."""
    asked: list[float] = []
    fake_time = types.SimpleNamespace(sleep=asked.append, monotonic=time.monotonic)
    monkeypatch.setattr("pipeline.llm.client.time", fake_time)
    return asked


class GatedClient:
    """Wraps the resource's openai client: counts calls in flight inside the concurrency gate.

    Each call waits at a ``Barrier(parties)`` before going to the server, so a test finishes only
    if ``parties`` calls were in flight together (a cap of 1 would break the barrier), while
    ``max_in_flight`` (counted under a lock, inside the gate) shows the cap was never exceeded.
    """

    def __init__(self, real: Any, parties: int) -> None:
        self.real = real
        self.barrier = threading.Barrier(parties)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def close(self) -> None:
        self.real.close()

    def post(self, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self.barrier.wait(timeout=120)  # a safety net against a hang, not a timing assertion
            return self.real.post(*args, **kwargs)
        finally:
            with self.lock:
                self.in_flight -= 1


def gate_client(llm: OpenAIChatClient, parties: int) -> GatedClient:
    rt = llm._runtime()
    gated = GatedClient(llm._client(rt), parties)
    rt.client = gated
    return gated


@pytest.fixture
def make_llm(server: FakeOpenAIServer, tmp_path: Path, prices_file: Path) -> Iterator[Any]:
    """Build resources on the fake server with tiny waits; all are closed after the test."""
    made: list[OpenAIChatClient] = []

    def make(**overrides: Any) -> OpenAIChatClient:
        settings: dict[str, Any] = {
            "base_url": server.base_url,
            "model": MODEL,
            "api_key": KEY,
            "cache_dir": str(tmp_path / "cache"),
            "prices_path": str(prices_file),
            "timeout_s": 2.0,
            "max_retries": 2,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "retry_after_cap_s": 1.0,
        }
        llm = OpenAIChatClient(**{**settings, **overrides})
        made.append(llm)
        return llm

    yield make
    for llm in made:
        llm.close()


# ---- a successful call ------------------------------------------------------------------------
def test_reply_carries_text_usage_cost_and_sends_params(make_llm: Any, server: FakeOpenAIServer) -> None:
    reply = make_llm(temperature=0.0, max_tokens=32).chat(Q)
    assert reply.ok and reply.error is None
    assert reply.text == "Paris is the capital."
    # fake server usage = whitespace words: prompt 2 + 6 = 8, completion 4
    assert (reply.prompt_tokens, reply.completion_tokens) == (8, 4)
    # (8 * 2.0 + 4 * 10.0) / 1e6
    assert reply.cost_usd == pytest.approx(56 / 1_000_000)
    assert (reply.attempts, reply.cache_hit, reply.model, reply.finish_reason) == (1, False, MODEL, "stop")
    assert len(reply.cache_key) == 64 and reply.latency_s > 0
    assert server.request_count == 1
    sent = server.requests[0]
    assert sent == {"model": MODEL, "messages": Q, "temperature": 0.0, "max_tokens": 32}  # nothing else
    assert server.auth_headers == [f"Bearer {KEY}"]


def test_per_call_overrides_and_extra_params_reach_the_server(make_llm: Any, server: FakeOpenAIServer) -> None:
    reply = make_llm().chat(Q, model="other-model", temperature=0.5, max_tokens=7, params={"seed": 3})
    assert reply.ok and reply.model == "other-model"
    assert reply.cost_usd is None  # other-model is not priced: unknown, not 0
    sent = server.requests[0]
    assert (sent["model"], sent["temperature"], sent["max_tokens"], sent["seed"]) == (
        "other-model",
        0.5,
        7,
        3,
    )


def test_max_completion_tokens_param_and_omitted_temperature(make_llm: Any, server: FakeOpenAIServer) -> None:
    make_llm(max_tokens_param="max_completion_tokens", temperature=None, max_tokens=9).chat(Q)
    sent = server.requests[0]
    assert sent["max_completion_tokens"] == 9
    assert "max_tokens" not in sent and "temperature" not in sent


def test_missing_usage_gives_none_tokens_and_cost(make_llm: Any, server: FakeOpenAIServer) -> None:
    server.add_rule("no usage please", "fine", usage=False)
    reply = make_llm().chat(user("no usage please"))
    assert reply.ok and reply.text == "fine"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.cost_usd) == (None, None, None)


# ---- cache ------------------------------------------------------------------------------------
def test_second_identical_run_makes_zero_requests(make_llm: Any, server: FakeOpenAIServer) -> None:
    first = make_llm().chat(Q)
    rerun = make_llm()  # a fresh resource = a new run over the same cache dir
    second = rerun.chat(Q)
    assert server.request_count == 1
    assert second.cache_hit and second.attempts == 0 and second.ok
    assert (
        second.text,
        second.prompt_tokens,
        second.completion_tokens,
        second.cost_usd,
        second.cache_key,
    ) == (
        first.text,
        first.prompt_tokens,
        first.completion_tokens,
        first.cost_usd,
        first.cache_key,
    )
    assert rerun.chat_many([ChatRequest(Q)] * 3)[0].cache_hit
    assert server.request_count == 1


def test_changed_params_miss_the_cache(make_llm: Any, server: FakeOpenAIServer) -> None:
    llm = make_llm()
    llm.chat(Q)
    llm.chat(Q, temperature=0.3)
    llm.chat(Q, max_tokens=11)
    llm.chat(Q, params={"top_p": 0.5})
    llm.chat(Q, model="m2")
    assert server.request_count == 5


def test_cache_hit_needs_no_key_and_no_server(make_llm: Any, server: FakeOpenAIServer, tmp_path: Path) -> None:
    make_llm().chat(Q)
    offline = make_llm(base_url="https://api.invalid.example/v1", api_key="", api_key_env="MEMBENCH_NO_SUCH_KEY")
    assert offline.chat(Q).cache_hit
    with pytest.raises(LLMConfigError, match=r"\$MEMBENCH_NO_SUCH_KEY"):
        offline.chat(user("not cached"))


def test_identical_concurrent_requests_cost_one_call(make_llm: Any, server: FakeOpenAIServer) -> None:
    server.add_rule("slow one", "done", delay_s=0.1)
    replies = make_llm(max_concurrency=4).chat_many([ChatRequest(user("slow one"))] * 4)
    assert server.request_count == 1
    assert sorted(r.cache_hit for r in replies) == [False, True, True, True]


# ---- retries ----------------------------------------------------------------------------------
def test_429_retry_after_is_honoured_over_backoff(make_llm: Any, server: FakeOpenAIServer, sleeps: list[float]) -> None:
    # backoff would wait >= 2.5 s; Retry-After says 0.2 s
    llm = make_llm(backoff_base_s=5.0, backoff_max_s=5.0)
    server.push_faults(Fault.rate_limited("0.2"))
    reply = llm.chat(Q)
    assert reply.ok and reply.attempts == 2 and server.request_count == 2
    assert sleeps == [pytest.approx(0.2)]


def test_retry_after_is_capped(make_llm: Any, server: FakeOpenAIServer, sleeps: list[float]) -> None:
    llm = make_llm(retry_after_cap_s=0.1)
    server.push_faults(Fault.rate_limited("30"))
    reply = llm.chat(Q)
    assert reply.ok and server.request_count == 2
    assert sleeps == [pytest.approx(0.1)]


def test_backoff_waits_between_5xx_retries(make_llm: Any, server: FakeOpenAIServer, sleeps: list[float]) -> None:
    llm = make_llm(max_retries=3, backoff_base_s=0.5, backoff_max_s=0.75)
    server.push_faults(*[Fault.server_error(503)] * 3)
    assert llm.chat(Q).ok and server.request_count == 4
    assert len(sleeps) == 3 and all(0.0 < s <= 0.75 for s in sleeps)


def test_500_then_success(make_llm: Any, server: FakeOpenAIServer) -> None:
    server.push_faults(Fault.server_error(500))
    reply = make_llm().chat(Q)
    assert reply.ok and reply.text == "Paris is the capital." and reply.attempts == 2
    assert server.request_count == 2


def test_persistent_5xx_is_recorded_failed_after_max_retries(make_llm: Any, server: FakeOpenAIServer) -> None:
    llm = make_llm(max_retries=3)
    server.push_faults(*[Fault.server_error(503)] * 4)
    reply = llm.chat(Q)
    assert not reply.ok and reply.text is None
    assert reply.attempts == 4 and server.request_count == 4
    assert "HTTP 503" in reply.error and "after 4 attempts" in reply.error
    assert (reply.cache_hit, reply.cost_usd, reply.prompt_tokens) == (False, None, None)
    # not cached: the next run asks again and gets the answer
    again = make_llm().chat(Q)
    assert again.ok and not again.cache_hit and server.request_count == 5


def test_hang_times_out_is_retried_then_recorded_failed(make_llm: Any, server: FakeOpenAIServer) -> None:
    # a hang lasts 60 s then answers 200: a failed "timeout" reply proves the client cut it short
    llm = make_llm(timeout_s=1.0, max_retries=1)
    server.push_faults(Fault.hang(60.0), Fault.hang(60.0))
    reply = llm.chat(Q)
    assert not reply.ok and reply.text is None
    assert "timeout" in reply.error and reply.attempts == 2
    assert server.request_count == 2


def test_hang_once_then_success(make_llm: Any, server: FakeOpenAIServer) -> None:
    server.push_faults(Fault.hang(60.0))
    reply = make_llm(timeout_s=2.0).chat(Q)
    assert reply.ok and reply.attempts == 2 and server.request_count == 2


@pytest.mark.parametrize(
    ("fault", "needle"),
    [
        (Fault.garbage(), "not JSON"),
        (Fault.malformed(), "no choices"),
        (Fault.empty(), "empty completion"),
    ],
)
def test_unusable_body_is_failed_not_retried_not_cached(
    make_llm: Any, server: FakeOpenAIServer, fault: Fault, needle: str
) -> None:
    server.push_faults(fault)
    llm = make_llm()
    reply = llm.chat(Q)
    assert not reply.ok and reply.text is None
    assert "malformed reply" in reply.error and needle in reply.error
    assert reply.attempts == 1 and server.request_count == 1
    assert not any(Path(llm.cache_dir).rglob("*.json"))
    assert llm.chat(Q).ok and server.request_count == 2  # retried by the next call, then cached


def test_client_error_is_not_retried(make_llm: Any, server: FakeOpenAIServer) -> None:
    server.push_faults(Fault.server_error(400))
    reply = make_llm().chat(Q)
    assert not reply.ok and "HTTP 400" in reply.error
    assert reply.attempts == 1 and server.request_count == 1


def test_connection_refused_is_retried_then_failed(make_llm: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    reply = make_llm(base_url=f"http://127.0.0.1:{dead_port}/v1", max_retries=2).chat(Q)
    assert not reply.ok and "connection error" in reply.error and reply.attempts == 3


def test_openai_client_retries_are_disabled(make_llm: Any, server: FakeOpenAIServer) -> None:
    server.push_faults(Fault.server_error(500))
    reply = make_llm(max_retries=0).chat(Q)
    assert not reply.ok and reply.attempts == 1
    assert server.request_count == 1


def test_bad_messages_and_param_clashes_raise(make_llm: Any, server: FakeOpenAIServer) -> None:
    llm = make_llm()
    with pytest.raises(ValueError, match="non-empty"):
        llm.chat([])
    with pytest.raises(ValueError, match=r"messages\[1\].*content"):
        llm.chat([Q[0], {"role": "user", "content": None}])
    with pytest.raises(ValueError, match="temperature"):
        llm.chat(Q, params={"temperature": 1.0})
    assert server.request_count == 0


# ---- concurrency ------------------------------------------------------------------------------
def test_chat_many_caps_in_flight_and_keeps_order(make_llm: Any, server: FakeOpenAIServer) -> None:
    for i in range(12):
        server.add_rule(f"question {i} ?", f"answer {i}")
    requests = [ChatRequest(user(f"question {i} ?")) for i in range(12)]
    llm = make_llm(max_concurrency=3)
    gated = gate_client(llm, parties=3)  # every call waits until 3 are in flight together
    replies = llm.chat_many(requests)
    assert [r.text for r in replies] == [f"answer {i}" for i in range(12)]
    assert server.request_count == 12
    assert gated.max_in_flight == 3  # concurrent (barrier of 3 passed), never above the cap


def test_cap_holds_for_callers_with_their_own_threads(make_llm: Any, server: FakeOpenAIServer) -> None:
    for i in range(8):
        server.add_rule(f"thread {i} ?", f"t{i}")
    llm = make_llm(max_concurrency=2)
    gated = gate_client(llm, parties=2)
    replies: dict[int, str | None] = {}

    def work(i: int) -> None:
        replies[i] = llm.chat(user(f"thread {i} ?")).text

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert replies == {i: f"t{i}" for i in range(8)}
    assert gated.max_in_flight == 2 and server.request_count == 8


def test_chat_iter_yields_every_index_once(make_llm: Any, server: FakeOpenAIServer) -> None:
    server.push_faults(Fault.server_error(400))  # one of them fails: still yielded, as failed
    got = dict(make_llm().chat_iter([ChatRequest(user(f"q{i}")) for i in range(5)]))
    assert sorted(got) == list(range(5))
    assert sum(not r.ok for r in got.values()) == 1


# ---- the key is a secret ----------------------------------------------------------------------
def test_key_is_sent_but_never_stored_or_shown(make_llm: Any, server: FakeOpenAIServer, tmp_path: Path) -> None:
    llm = make_llm()
    assert llm.chat(Q).ok and llm.chat(Q).cache_hit
    server.push_faults(Fault.server_error(400))
    failed = llm.chat(user("bad"))
    assert server.auth_headers[0] == f"Bearer {KEY}"
    assert any(Path(llm.cache_dir).rglob("*.json"))
    assert files_containing(tmp_path, KEY) == []
    shown = [repr(llm), str(llm), str(llm.describe()), repr(failed), str(llm.chat(Q).as_row())]
    assert not any(KEY in s for s in shown)


def test_from_config_reads_key_from_env_at_call_time(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = LLMConfig(base_url=server.base_url, model=MODEL, api_key_env="MEMBENCH_TEST_LLM_KEY", max_tokens=20)
    llm = OpenAIChatClient.from_config(cfg, cache_dir=tmp_path / "c")
    assert (llm.model, llm.max_tokens, llm.api_key) == (MODEL, 20, "")
    monkeypatch.setenv("MEMBENCH_TEST_LLM_KEY", KEY)  # set after construction: read when needed
    try:
        assert llm.chat(Q).ok
    finally:
        llm.close()
    assert server.auth_headers == [f"Bearer {KEY}"]
    assert server.requests[0]["max_tokens"] == 20
    assert KEY not in repr(llm)


def test_from_benchmark_uses_results_dir_and_requires_llm_section(server: FakeOpenAIServer, tmp_path: Path) -> None:
    ds = (DatasetConfig(name="d", loader="x", path="p"),)
    cfg = BenchmarkConfig(
        datasets=ds, results_dir=str(tmp_path / "res"), llm=LLMConfig(base_url=server.base_url, model=MODEL)
    )
    assert Path(OpenAIChatClient.from_benchmark(cfg).cache_dir) == tmp_path / "res" / "llm_cache"
    with pytest.raises(LLMConfigError, match="no 'llm' section"):
        OpenAIChatClient.from_benchmark(BenchmarkConfig(datasets=ds))
