"""A dead endpoint stops a stage after a short, bounded retry budget, whichever way it is dead.

Counted, not timed: how many attempts each call makes once the endpoint is known to be
unreachable, that a black-holed endpoint (a listening socket whose accept queue is full, so the
kernel drops every new SYN) is cut by the connect timeout and not by the 60 s reply timeout, that
an endpoint that accepts connections and never answers is cut by a probe (not by the reply
timeout, and not retried) while a slow one that answers its probe is waited for, that the retry
log counts the attempts a call will really make, and, through the real ``full_benchmark`` job with
the shipped LLM defaults, that the judgments stage does not claim it could not reach an endpoint
it never called and that no message nests "failed: not attempted: ...". The seconds to the stop
are printed by benchmarks/dead_endpoint.py.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from pipeline.config.model import LLMConfig
from pipeline.definitions import build_defs
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import running_fake_server
from pipeline.store.results import ResultStore
from tests.support.dagster import lme_sample_config, stage_run_metadata

Q = [{"role": "user", "content": "Is anybody there?"}]


def _dead_url() -> str:
    with running_fake_server() as srv:
        url = srv.base_url  # stopped at the end of the block: nothing listens there
    return url


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A port that takes no connection: its accept queue (backlog 0) holds one, later SYNs are dropped."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        filler.close()
        srv.close()


def _llm(tmp_path: Path, base_url: str, **overrides: Any) -> OpenAIChatClient:
    """The shipped LLM defaults (LLMConfig), except tiny backoffs so the test does not sleep."""
    cfg = LLMConfig(base_url=base_url, model="fake-model")
    llm = OpenAIChatClient.from_config(cfg, cache_dir=tmp_path / "cache")
    return llm.model_copy(update={"backoff_base_s": 0.01, "backoff_max_s": 0.02, **overrides})


def test_shipped_defaults_bound_the_retries_of_an_unreachable_endpoint() -> None:
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")
    assert cfg.max_retries == 5  # 429 / 5xx keep their retries ...
    assert cfg.unreachable_retries == 2  # ... a connection that fails is retried twice
    assert cfg.connect_timeout_s == 5.0 and cfg.timeout_s == 60.0


def test_refused_endpoint_gives_up_after_the_unreachable_budget_then_fails_fast(tmp_path: Path) -> None:
    llm = _llm(tmp_path, _dead_url())
    first = llm.chat(Q)
    assert not first.ok and first.error is not None and first.error.startswith("connection error: ")
    assert first.attempts == 3  # 1 + unreachable_retries, not 1 + max_retries (6)
    later = [llm.chat([{"role": "user", "content": f"question {i}"}]) for i in range(4)]
    assert [r.attempts for r in later] == [1, 1, 1, 1]  # known down: one attempt each, no retries
    assert all("endpoint unreachable" in (r.error or "") for r in later)
    llm.close()


def test_endpoint_that_answers_again_gets_its_retries_back(tmp_path: Path) -> None:
    with running_fake_server(default_reply="yes") as srv:
        llm = _llm(tmp_path, srv.base_url)
        llm._runtime().health.mark_down()  # as after a failed call
        assert llm.chat(Q).ok
        assert not llm._runtime().health.down  # a reply proves it up: the next failure is retried again
        llm.close()


def test_black_holed_endpoint_is_cut_by_the_connect_timeout(tmp_path: Path, black_hole: str) -> None:
    llm = _llm(tmp_path, black_hole, connect_timeout_s=0.3)
    assert llm.timeout_s == 60.0  # the reply timeout stays long (slow local servers)
    reply = llm.chat(Q)
    assert not reply.ok and reply.error is not None
    assert reply.error.startswith("timeout: ") and "no connection within 0.3s" in reply.error
    assert reply.attempts == 3
    assert llm.chat([{"role": "user", "content": "again"}]).attempts == 1
    llm.close()


def test_retry_log_counts_the_attempts_the_call_makes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    llm = _llm(tmp_path, _dead_url())
    with caplog.at_level(logging.WARNING, logger="dagster.builtin.membench.llm"):
        reply = llm.chat(Q)
    attempts = [
        r.getMessage().split("(attempt ")[1].split(":")[0] for r in caplog.records if "(attempt " in r.getMessage()
    ]
    assert attempts == ["1/3", "2/3"]  # 1 + unreachable_retries, not "1/6" (1 + max_retries)
    assert reply.attempts == 3 and reply.error is not None
    assert reply.error.endswith("(endpoint unreachable) (after 3 attempts)")  # it was retried: no "not retried"
    llm.close()


def test_an_endpoint_that_hangs_is_cut_by_a_probe_and_not_retried(tmp_path: Path) -> None:
    with running_fake_server() as srv:
        srv.hang_everything()  # accepts every connection, answers nothing
        llm = _llm(tmp_path, srv.base_url, timeout_s=3.0, probe_after_s=0.2, connect_timeout_s=0.3)
        first = llm.chat(Q)
        assert not first.ok and first.error is not None and first.attempts == 1, first
        assert "no answer to GET /models within 0.3s: the endpoint hangs (endpoint unreachable, not retried)" in (
            first.error
        )
        later = [llm.chat([{"role": "user", "content": f"question {i}"}]) for i in range(3)]
        assert [r.attempts for r in later] == [1, 1, 1]
        assert all("the endpoint hangs" in (r.error or "") for r in later)
        assert srv.hung["/v1/chat/completions"] == 4  # one request per call: no retry of a hung endpoint
        assert srv.hung["/v1/models"] >= 4  # each call's own probe said so
        assert llm._runtime().health.down
        srv.hang_everything(False)
        back = llm.chat([{"role": "user", "content": "and now?"}])  # probed at once, answered: up again
        assert back.ok and back.attempts == 1 and not llm._runtime().health.down
        llm.close()


def test_a_slow_endpoint_that_answers_its_probe_is_waited_for(tmp_path: Path) -> None:
    with running_fake_server() as srv:
        srv.add_rule("slow", "finally", delay_s=1.0)
        llm = _llm(tmp_path, srv.base_url, probe_after_s=0.2, connect_timeout_s=0.3)
        reply = llm.chat([{"role": "user", "content": "a slow one"}])
        assert reply.ok and reply.text == "finally" and reply.attempts == 1
        assert srv.probes >= 2 and srv.request_count == 1  # probed while it waited, never sent twice
        llm.close()


def _config(tmp_path: Path, base_url: str, **llm: object) -> Path:
    return lme_sample_config(
        tmp_path,
        "dead",
        memory_systems=[{"name": "full", "kind": "full_context"}],
        readers=[{"name": "llm", "kind": "llm"}],
        judges=[{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
        llm={
            "base_url": base_url,
            "model": "fake-model",
            "api_key_env": "MEMBENCH_TEST_KEY",
            **llm,
        },  # shipped defaults
    )


def _stopped(result: dg.ExecuteInProcessResult, stage: str) -> object:
    return stage_run_metadata(result, stage).get("stopped")


def test_judgments_do_not_blame_an_endpoint_they_never_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    config = _config(tmp_path, _dead_url())
    with dg.instance_for_test() as instance:
        result = (
            build_defs(str(config))
            .resolve_job_def("full_benchmark")
            .execute_in_process(instance=instance, raise_on_error=False)
        )
    assert not result.success
    assert "could not reach the endpoint" in str(_stopped(result, "answers"))
    assert _stopped(result, "judgments") is None  # the judge needs no endpoint: nothing to stop for
    store = ResultStore(results_dir=str(tmp_path / "res"))
    errors = [r["error"] for r in store.query("SELECT error FROM judgments").to_pylist()]
    assert len(errors) == 8 and all(e.startswith("answer ") for e in errors), errors
    for error in errors:
        assert "failed: not attempted" not in error and error.count("not attempted") <= 1, error
    answers = [r["error"] for r in store.query("SELECT error FROM answers").to_pylist()]
    assert all(a.count("not attempted") <= 1 for a in answers), answers


def test_a_hanging_endpoint_stops_the_stage_with_one_request_per_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real job, shipped defaults but a short probe: the answers stage stops on its breaker, each
    question it tried sent one request, and the stop names the hang."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    with running_fake_server() as srv:
        srv.hang_everything()
        config = _config(tmp_path, srv.base_url, probe_after_s=0.3, connect_timeout_s=0.5)
        with dg.instance_for_test() as instance:
            result = (
                build_defs(str(config))
                .resolve_job_def("full_benchmark")
                .execute_in_process(instance=instance, raise_on_error=False)
            )
        held = dict(srv.hung)
    assert not result.success
    stopped = str(_stopped(result, "answers"))
    assert "answers stopped after 5 consecutive questions could not reach the endpoint" in stopped
    assert "the endpoint hangs" in stopped
    answers = [
        r["error"]
        for r in ResultStore(results_dir=str(tmp_path / "res")).query("SELECT error FROM answers").to_pylist()
    ]
    tried = [a for a in answers if not a.startswith("not attempted")]
    assert len(answers) == 8 and 5 <= len(tried) < 8, answers
    # at most one request per question (none retried): those tried, and those in flight at the stop
    assert len(tried) <= held["/v1/chat/completions"] <= len(answers)
