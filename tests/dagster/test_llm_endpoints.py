"""LLM endpoints: the requests-per-minute limit in the real client against the fake server (fake
clock, counted, never timed; the budget itself: tests/llm/test_ratelimit.py), and a judge endpoint
separate from the reader's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.config.model import BenchmarkConfig, ComponentConfig, LLMConfig, load_config
from pipeline.judges.run import JudgmentRun, judgment_units
from pipeline.judges.select import judges_for
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import ROLE_JUDGES, OpenAIChatClient, client_for
from pipeline.llm.fake_server import FakeOpenAIServer
from pipeline.llm.ratelimit import Limits, RequestBudget
from pipeline.readers.run import answer_units
from pipeline.store.results import ResultStore
from resources.factory import build_resources
from tests.support.clock import FakeClock
from tests.support.llm import llm, server

__all__ = ["llm", "server"]  # fixtures


def test_client_books_every_http_request(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    """The real client against the fake server: each live request takes a slot, cache hits do not."""
    clock = FakeClock()
    paced = llm.model_copy(update={"requests_per_minute": 2.0})
    rt = paced._runtime()
    rt.limiter = RequestBudget(Limits(rpm=2.0), clock=clock, sleep=clock.sleep, margin_s=0.0)
    for i in range(3):
        assert paced.chat([{"role": "user", "content": f"question {i}"}]).ok
    assert paced.chat([{"role": "user", "content": "question 0"}]).cache_hit
    assert len(server.requests) == 3 and rt.limiter.acquired == 3
    assert clock.sleeps == pytest.approx([60.0])  # two fit the minute, the third waited for the next
    assert paced.describe()["llm_requests_per_minute"] == 2.0


def test_rpm_from_config() -> None:
    cfg = LLMConfig(base_url="http://127.0.0.1:1/v1", model="m", requests_per_minute=30, tokens_per_minute=9000)
    res = OpenAIChatClient.from_config(cfg, cache_dir="/tmp/unused")
    assert res.requests_per_minute == 30 and res.tokens_per_minute == 9000
    assert res.describe()["llm_tokens_per_minute"] == 9000
    with pytest.raises(ValueError):
        LLMConfig(base_url="http://x/v1", model="m", requests_per_minute=0)
    with pytest.raises(ValueError):
        LLMConfig(base_url="http://x/v1", model="m", tokens_per_minute=-1)


# ---- a judge endpoint apart from the reader's --------------------------------------------------
def _config(tmp_path: Path, judge_model: str | None) -> BenchmarkConfig:
    raw = {
        "results_dir": str(tmp_path / "results"),
        "datasets": [{"name": "lme", "loader": "longmemeval_s", "path": "x.json"}],
        "memory_systems": [{"name": "rag", "kind": "rag"}],
        "readers": [{"name": "offline", "kind": "offline"}],
        "judges": [{"name": "judge", "kind": "lme_official_llm_judge"}],
        "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "reader-model", "api_key_env": "READER_KEY"},
    }
    if judge_model:
        raw["judge_llm"] = {"base_url": "http://127.0.0.1:8/v1", "model": judge_model, "api_key_env": "JUDGE_KEY"}
    path = tmp_path / f"cfg-{judge_model}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_config(str(path))


def test_judges_use_the_judge_endpoint(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "judge-model")
    resources = build_resources(cfg)
    reader = resources["llm"].client()
    client = resources["judge_llm"].client()
    assert isinstance(client, OpenAIChatClient) and client is not reader
    assert (client.model, client.base_url, client.api_key_env) == ("judge-model", "http://127.0.0.1:8/v1", "JUDGE_KEY")
    assert resources["judge_llm"].client() is client  # one client per run: one rate limit and gate for every judge
    [bound] = judges_for("longmemeval", "lme", resolve_config(cfg), client)
    assert bound.llm_model == "judge-model"
    run = JudgmentRun(ResultStore(results_dir=str(tmp_path / "results")), resolve_config(cfg), client)
    assert run.llm is client
    # without judge_llm the judges share the reader's endpoint
    plain = _config(tmp_path, None)
    shared = client_for(plain, ROLE_JUDGES)
    assert shared is not None and (shared.model, shared.base_url) == ("reader-model", "http://127.0.0.1:9/v1")
    assert judges_for("longmemeval", "lme", resolve_config(plain), shared)[0].llm_model == "reader-model"


def test_a_new_judge_model_rejudges_only(tmp_path: Path) -> None:
    """Changing judge_llm.model changes every judgment's unit hash and no answer's: a run then
    recomputes the judgments only (the stage driver re-runs units whose hash changed)."""
    a, b = _config(tmp_path, "judge-v1"), _config(tmp_path, "judge-v2")
    answers = [{u.spec.unit: u.spec.unit_hash for u in answer_units(resolve_config(c), "lme")} for c in (a, b)]
    judgments = [
        {u.spec.unit: u.spec.unit_hash for u in judgment_units(resolve_config(c), "lme", client_for(c, ROLE_JUDGES))}
        for c in (a, b)
    ]
    assert answers[0] == answers[1]
    assert judgments[0].keys() == judgments[1].keys()
    assert all(judgments[0][k] != judgments[1][k] for k in judgments[0])


def test_judge_llm_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        BenchmarkConfig(
            datasets=(), judge_llm={"base_url": "http://x/v1"},  # type: ignore[arg-type]
            judges=(ComponentConfig(name="j", kind="k"),),
        )  # fmt: skip
