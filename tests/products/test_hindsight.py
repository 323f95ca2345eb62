"""The ``hindsight`` kind: the real Hindsight server (its own virtualenv, its own PostgreSQL), started here.

scripts/setup.sh installs the server in ``.venv-hindsight``; the test starts it once for the module
(through the kind, as a run does) against membench's proxy, which forwards to the fake OpenAI server
scripted for Hindsight's fact-extraction prompt (matched on ``Content:`` + the session's first line,
which Hindsight puts in its prompt). Each test uses its own haystack id, so its own memory bank.
Asserted: what Hindsight stored (its documents are our session keys) and recalls (facts mapped back
to sessions), the per-session usage, a Hindsight error as a failed unit with Hindsight's message and
the resume after it (nothing stored twice), 0 upstream calls on a rerun, the missing-server line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.config.model import ComponentConfig
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, running_fake_server
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.checkpoint import load
from pipeline.memory.ingest import IngestOutcome, ingest_haystack
from pipeline.memory.systems import SystemSpec
from pipeline.products import hindsight_server
from pipeline.products.base import KIND_PRODUCT_SESSION
from pipeline.products.hindsight_memory import HindsightMemory, HindsightParams
from tests.support.kind_worker import kill_9_then_rerun
from tests.support.memory import HAYSTACK, SESSIONS, build_haystack, encoder, question
from tests.support.products_worker import deps_for

FACTS = [
    [("Alice adopted a golden retriever puppy named Biscuit", ["Alice", "Biscuit"]),
     ("Bob trains for the Boston marathon every morning", ["Bob", "Boston marathon"])],
    [("Alice spent a week in Lisbon, Portugal", ["Alice", "Lisbon"])],
    [("Alice takes cello lessons on Tuesday evenings", ["Alice"])],
]  # fmt: skip


def first_line(i: int) -> str:
    speaker, _, text = SESSIONS[i][2][0]
    return f"{speaker}: {text}"


def _reply(facts: list[tuple[str, list[str]]]) -> str:
    def fact(what: str, who: list[str]) -> dict[str, object]:
        return {"what": what, "when": "N/A", "where": "N/A", "who": ", ".join(who), "why": "N/A",
                "fact_type": "world", "entities": who}  # fmt: skip

    return json.dumps({"facts": [fact(w, e) for w, e in facts]})


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One results dir for the module: the kind starts one server for it (start-up runs migrations)."""
    path = tmp_path_factory.mktemp("hindsight-results")
    yield path
    for server in list(hindsight_server._SERVERS.values()):
        server.drop()
    hindsight_server._SERVERS.clear()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="{}") as srv:  # an unscripted prompt fails Hindsight's parsing
        for i, facts in enumerate(FACTS):
            srv.add_rule(f"Content:\n{first_line(i)}", _reply(facts))
        yield srv


def _deps(server: FakeOpenAIServer, enc: Encoder, tmp: Path, state_dir: Path) -> MemoryDeps:
    llm = OpenAIChatClient(
        base_url=server.base_url, model="fake-hindsight", cache_dir=str(tmp / "llm"), max_retries=0, timeout_s=60
    )
    return MemoryDeps(enc, llm=llm, state_dir=state_dir)


def _ingest(deps: MemoryDeps, tmp: Path, haystack: str, params: dict[str, float | str] | None = None) -> IngestOutcome:
    spec = SystemSpec.from_class(ComponentConfig(name="hindsight", kind="hindsight"), HindsightMemory, "hash-h", None)
    memory = lambda: HindsightMemory(params or {}, deps)  # noqa: E731
    return ingest_haystack(spec, memory, haystack, build_haystack(), tmp / "ck.parquet")


def _documents(deps: MemoryDeps, haystack: str, tmp: Path) -> tuple[HindsightMemory, list[str]]:
    ck = load(tmp / "ck.parquet")
    assert ck is not None
    memory = HindsightMemory({}, deps)
    memory.restore(ck.units)
    return memory, sorted(memory._documents())


def test_ingest_store_recall_and_usage(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path, state_dir: Path) -> None:
    deps = _deps(server, enc, tmp_path, state_dir)
    outcome = _ingest(deps, tmp_path, "hs-a")
    assert outcome.error is None and outcome.sessions_completed == 3
    assert server.request_count == 3  # one fact-extraction call per session (observations off)
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    markers = [json.loads(u.text) for u in ck.units if u.kind == KIND_PRODUCT_SESSION]
    assert [m["upstream_llm_calls"] for m in markers] == [1, 1, 1]
    assert all(m["embed_calls"] >= 1 and m["prompt_tokens"] > 0 for m in markers)
    memory, documents = _documents(deps, "hs-a", tmp_path)
    assert documents == ["s0", "s1", "s2"]
    result = memory.retrieve(question("Where did Alice travel?", haystack_id="hs-a"))
    top = result.units[0]
    assert (top.text.split(" | ")[0], top.session_key, top.turn_ids) == (
        "Alice spent a week in Lisbon, Portugal",
        "s1",
        (),
    )
    stored = {(u.session_key, u.text.split(" | ")[0]) for u in result.units}
    assert stored <= {(f"s{i}", what) for i, facts in enumerate(FACTS) for what, _ in facts}
    assert result.notes["source_ids"] == "session" and result.notes["search_usage"]["llm_calls"] == 0
    assert result.notes["search_usage"]["embed_calls"] >= 1


def test_hindsight_error_is_a_failed_unit_then_resumes(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path, state_dir: Path
) -> None:
    server.rules[1].reply = '{"memories": []}'  # not Hindsight's schema: its own parser rejects it
    deps = _deps(server, enc, tmp_path, state_dir)
    failed = _ingest(deps, tmp_path, "hs-b")
    assert failed.error is not None and failed.sessions_completed == 1
    assert "ingestion stopped at session 1" in failed.error and "no top-level 'facts' list" in failed.error
    server.rules[1].reply = _reply(FACTS[1])
    server.reset_counts()
    deps = _deps(server, enc, tmp_path / "other-cache", state_dir)  # the bad reply is cached: a fresh cache
    resumed = _ingest(deps, tmp_path, "hs-b")
    assert resumed.error is None and resumed.sessions_completed == 3 and resumed.resumed_from == 1
    assert server.request_count == 2  # sessions 2 and 3 only
    assert _documents(deps, "hs-b", tmp_path)[1] == ["s0", "s1", "s2"]


def test_rerun_makes_no_upstream_call_and_stores_nothing_twice(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path, state_dir: Path
) -> None:
    deps = _deps(server, enc, tmp_path, state_dir)
    assert _ingest(deps, tmp_path, "hs-c").error is None
    memory, _ = _documents(deps, "hs-c", tmp_path)
    before = sorted(u.text for u in memory.retrieve(question("Alice", haystack_id="hs-c")).units)
    (tmp_path / "ck.parquet").unlink()  # forget the checkpoint: every session is retained again
    server.reset_counts()
    assert _ingest(deps, tmp_path, "hs-c").error is None
    assert server.request_count == 0  # Hindsight's prompts answered by membench's cache
    memory, documents = _documents(deps, "hs-c", tmp_path)
    assert documents == ["s0", "s1", "s2"]
    assert sorted(u.text for u in memory.retrieve(question("Alice", haystack_id="hs-c")).units) == before


def test_kill_9_mid_session_then_rerun(server: FakeOpenAIServer, tmp_path: Path, state_dir: Path) -> None:
    """A child process ingests with its own server; it is SIGKILLed while session 3's extraction is in flight.
    Its Hindsight server dies with it, its PostgreSQL is left running: the rerun stops and restarts it."""
    hanging = server.rules[2]
    hanging.faults.append(Fault.hang(600))
    kill_9_then_rerun(server, hanging, tmp_path, "hindsight", 900)
    assert server.request_count == 1  # only the killed session was sent again
    assert _documents(deps_for(server.base_url, tmp_path), HAYSTACK, tmp_path)[1] == ["s0", "s1", "s2"]


def test_retain_cap_and_frequency_penalty_reach_the_endpoint(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path, state_dir: Path
) -> None:
    """``retain_max_completion_tokens`` is Hindsight's own setting: its server (a second one, for these
    params) asks the endpoint for at most that many tokens per fact extraction; the default asks 64,000.
    ``frequency_penalty`` is membench's endpoint option: Hindsight sets none, the proxy adds it."""
    deps = _deps(server, enc, tmp_path, state_dir)
    done = _ingest(deps, tmp_path, "hs-e", {"retain_max_completion_tokens": 4096, "frequency_penalty": 0.4})
    assert done.error is None and done.sessions_completed == 3
    assert [(r["max_tokens"], r.get("frequency_penalty")) for r in server.requests] == [(4096, 0.4)] * 3
    (tmp_path / "default").mkdir()
    assert _ingest(_deps(server, enc, tmp_path / "default", state_dir), tmp_path / "default", "hs-e").error is None
    assert [(r["max_tokens"], r.get("frequency_penalty")) for r in server.requests[3:]] == [(64000, None)] * 3


def test_chunks_mode_stores_each_session_as_it_is_with_no_llm_call(
    server: FakeOpenAIServer, enc: Encoder, tmp_path: Path, state_dir: Path
) -> None:
    """``retain_extraction_mode: chunks`` reaches Hindsight (a server for these params): it stores the
    session's own lines, makes no LLM call, and recall still maps what it finds back to the session."""
    deps = _deps(server, enc, tmp_path, state_dir)
    done = _ingest(deps, tmp_path, "hs-f", {"retain_extraction_mode": "chunks"})
    assert done.error is None and done.sessions_completed == 3
    assert server.request_count == 0
    ck = load(tmp_path / "ck.parquet")
    assert ck is not None
    markers = [json.loads(u.text) for u in ck.units if u.kind == KIND_PRODUCT_SESSION]
    assert [m["upstream_llm_calls"] for m in markers] == [0, 0, 0]
    assert all(m["embed_calls"] >= 1 for m in markers)
    memory = HindsightMemory({"retain_extraction_mode": "chunks"}, deps)
    memory.restore(ck.units)
    assert sorted(memory._documents()) == ["s0", "s1", "s2"]
    top = memory.retrieve(question("Where did Alice travel? Lisbon", haystack_id="hs-f")).units[0]
    assert top.session_key == "s1" and first_line(1) in top.text


def test_unknown_extraction_mode_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="retain_extraction_mode"):
        HindsightParams(retain_extraction_mode="summaries")  # type: ignore[arg-type]


def test_retain_cap_below_hindsight_chunk_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="retain_max_completion_tokens"):
        HindsightParams(retain_max_completion_tokens=3000)


def test_missing_server_is_one_config_line(tmp_path: Path) -> None:
    venv = tmp_path / "nowhere"
    with pytest.raises(ValueError, match=rf"kind 'hindsight' needs the extra membench\[hindsight\].*{venv}.*"
                       rf"run `membench install-hindsight --venv {venv}`") as exc:  # fmt: skip
        HindsightParams(server_venv=str(venv))
    assert "\n" not in str(exc.value).split("\n  ")[0]
