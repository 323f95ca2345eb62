"""The answers stage (pipeline.readers.run) on a real store: units, upstream failures, LLM path."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config.model import BenchmarkConfig, ComponentConfig
from pipeline.core.status import STATUS_FAILED, STATUS_OK
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault
from pipeline.memory.base import Encoder
from pipeline.readers.base import ReaderConfigError, ReaderDeps
from pipeline.readers.run import AnswerRun, answer_units, build_readers, needs
from pipeline.run.stage import WorkItem
from pipeline.store.results import ResultStore
from tests.support.answers import (
    config,
    retrieval_payload,
    system_hashes,
    unit_row,
    write_canonical,
    write_stage,
)
from tests.support.judges import MC_CHOICES, question
from tests.support.memory import encoder as make_encoder

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return make_encoder(Path(tmp_path_factory.mktemp("emb")))


def _items(run: AnswerRun, keys: list[tuple[str, str]]) -> list[WorkItem]:
    return [WorkItem(key, "d", qid, tuple(run.units_for("d"))) for key, qid in keys]


def test_units_are_system_x_reader_and_hash_follows_the_config(tmp_path: Path) -> None:
    cfg = config(tmp_path, "locomo")
    units = answer_units(resolve_config(cfg), "d")
    assert [u.spec.unit for u in units] == ["rag/offline", "full/offline"]  # default reader: offline
    other = config(
        tmp_path, "locomo", readers=(ComponentConfig(name="offline", kind="offline", params={"abstain_below": 0.5}),)
    )
    assert [u.spec.unit_hash for u in answer_units(resolve_config(other), "d")] != [u.spec.unit_hash for u in units]
    assert needs(resolve_config(cfg)) == (True, False)


def test_offline_answers_and_upstream_failures(tmp_path: Path, minilm: Encoder) -> None:
    cfg = config(tmp_path, "locomo")
    store = ResultStore(results_dir=cfg.results_dir)
    qs = [
        question(dataset="d", question_id=f"q{i}", text="What did Melanie paint?", answer="a lake sunrise")
        for i in range(3)
    ]
    write_canonical(store, qs)
    h = system_hashes(cfg)
    texts = ["Melanie: I painted a lake sunrise last year.", "Caroline: I went hiking."]
    write_stage(
        store,
        "retrievals",
        "d__q0",
        [
            unit_row("d__q0", "q0", "rag", h["rag"], **retrieval_payload(texts, 17)),
            unit_row("d__q0", "q0", "full", h["full"], "failed", "ingestion failed: boom"),
        ],
    )
    # d__q1: no retrievals file at all; d__q2: rows from another config (stale hash)
    write_stage(
        store,
        "retrievals",
        "d__q2",
        [unit_row("d__q2", "q2", "rag", "0ld", **retrieval_payload(texts)), unit_row("d__q2", "q2", "full", "0ld")],
    )
    run = AnswerRun(store, resolve_config(cfg), build_readers(resolve_config(cfg), ReaderDeps(encoder=minilm)))
    keys = [("d__q0", "q0"), ("d__q1", "q1"), ("d__q2", "q2"), ("d__q9", "q9")]
    out = dict(run.compute(_items(run, keys)))
    # an unexpected error (no canonical row for d__q9) fails that question only
    assert [r.error for r in out["d__q9"]] == ["KeyError: 'd__q9'"] * 2

    ok, failed = out["d__q0"]
    assert (ok.unit, ok.status) == ("rag/offline", STATUS_OK)
    p = ok.payload
    assert p["prediction"] == "I painted a lake sunrise last year."
    assert (p["system"], p["reader"], p["reader_kind"], p["label"]) == ("rag", "offline", "offline", "offline")
    assert p["context_tokens"] == 17 and p["invalid"] is False and p["latency_s"] > 0
    assert (failed.unit, failed.status) == ("full/offline", STATUS_FAILED)
    assert failed.error == "upstream retrieval failed: ingestion failed: boom"
    assert all(r.status == STATUS_FAILED and "upstream retrieval missing" in (r.error or "") for r in out["d__q1"])
    assert all("upstream retrieval stale" in (r.error or "") for r in out["d__q2"])


def _mc_store(tmp_path: Path, server: FakeOpenAIServer) -> tuple[BenchmarkConfig, ResultStore]:
    llm_reader = ComponentConfig(name="gpt", kind="llm")
    cfg = config(tmp_path, "locomo_mc10", readers=(llm_reader,), llm_url=server.base_url)
    cfg = cfg.model_copy(update={"memory_systems": cfg.memory_systems[:1]})  # rag only
    store = ResultStore(results_dir=cfg.results_dir)
    texts = ["Caroline: I visited Paris in May."]
    qs = [
        question(dataset="d", question_id=f"q{i}", text=f"Question {i}: which city?", type_raw="single_hop",
                 answer="Paris", choices=MC_CHOICES, correct_choice_index=0)
        for i in range(3)
    ]  # fmt: skip
    write_canonical(store, qs)
    h = system_hashes(cfg)
    for i in range(3):
        key = f"d__q{i}"
        write_stage(store, "retrievals", key, [unit_row(key, f"q{i}", "rag", h["rag"], **retrieval_payload(texts))])
    return cfg, store


def test_llm_reader_concurrent_valid_invalid_failed_then_cached(
    tmp_path: Path, server: FakeOpenAIServer, llm: OpenAIChatClient
) -> None:
    server.add_rule("Question 0:", "0")
    server.add_rule("Question 1:", "I think it is option 0")
    server.add_rule("Question 2:", "0", faults=[Fault.server_error(500)])
    cfg, store = _mc_store(tmp_path, server)
    run = AnswerRun(store, resolve_config(cfg), build_readers(resolve_config(cfg), ReaderDeps(llm=llm)), max_workers=3)
    items = _items(run, [(f"d__q{i}", f"q{i}") for i in range(3)])
    out = {k: r[0] for k, r in run.compute(items)}
    assert set(out) == {"d__q0", "d__q1", "d__q2"}
    assert out["d__q0"].status == STATUS_OK and out["d__q0"].payload["predicted_index"] == 0
    assert out["d__q0"].payload["label"] == "llm" and out["d__q0"].payload["model"] == llm.model
    invalid = out["d__q1"].payload
    assert out["d__q1"].status == STATUS_OK and invalid["invalid"] is True and invalid["predicted_index"] is None
    assert out["d__q2"].status == STATUS_FAILED and "HTTP 500" in (out["d__q2"].error or "")

    requests = server.request_count
    again = {k: r[0] for k, r in run.compute(items)}
    assert again["d__q0"].payload["cache_hit"] is True and again["d__q2"].status == STATUS_OK  # retried
    assert server.request_count == requests + 1  # only the failed question hit the server again


def test_llm_reader_without_llm_block_fails_at_start(tmp_path: Path) -> None:
    cfg = config(tmp_path, "locomo", readers=(ComponentConfig(name="gpt", kind="llm"),))
    with pytest.raises(ReaderConfigError, match=r"reader 'gpt' .*no 'llm:' block"):
        build_readers(resolve_config(cfg), ReaderDeps())


def test_prefetch_sees_usable_inputs_per_chunk_and_its_failure_only_logs(tmp_path: Path, minilm: Encoder) -> None:
    """The serial path hands a batching reader each chunk's usable inputs (ok, current rows)
    before answering; a prefetch that raises is logged and the answers are computed anyway."""
    cfg = config(tmp_path, "locomo")
    store = ResultStore(results_dir=cfg.results_dir)
    write_canonical(store, [question(dataset="d", question_id=f"q{i}", text="What did Melanie paint?") for i in (0, 1)])
    h = system_hashes(cfg)
    texts = ["Melanie: I painted a lake sunrise last year.", "Caroline: I went hiking."]
    for i in (0, 1):
        rows = [unit_row(f"d__q{i}", f"q{i}", "rag", h["rag"], **retrieval_payload(texts))]
        rows.append(unit_row(f"d__q{i}", f"q{i}", "full", h["full"], "failed", "ingestion failed: boom"))
        write_stage(store, "retrievals", f"d__q{i}", rows)
    logs: list[str] = []
    run = AnswerRun(
        store, resolve_config(cfg), build_readers(resolve_config(cfg), ReaderDeps(encoder=minilm)), log=logs.append
    )
    reader = run.readers["offline"]
    seen: list[list[str]] = []
    reader.prefetch = lambda batch: seen.append([i.question.question_id for i in batch])  # type: ignore[attr-defined]
    out = dict(run.compute(_items(run, [("d__q0", "q0"), ("d__q1", "q1")])))
    assert seen == [["q0", "q1"]]  # one chunk, only the usable (rag) inputs
    assert [r.status for r in out["d__q0"]] == [STATUS_OK, STATUS_FAILED]

    def boom(_batch: object) -> None:
        raise RuntimeError("disk full")

    reader.prefetch = boom  # type: ignore[attr-defined]
    again = dict(run.compute(_items(run, [("d__q0", "q0")])))
    assert again["d__q0"][0].payload["prediction"] == out["d__q0"][0].payload["prediction"]
    assert any("prefetch of 1 questions failed (RuntimeError: disk full)" in line for line in logs)


def test_an_unreadable_retrieval_file_fails_its_question_only(tmp_path: Path, minilm: Encoder) -> None:
    """The serial path reads a chunk's retrievals up front; a corrupt file still fails only its
    own question, with the reader's error, and the chunk's other questions are answered."""
    cfg = config(tmp_path, "locomo")
    store = ResultStore(results_dir=cfg.results_dir)
    write_canonical(store, [question(dataset="d", question_id=f"q{i}", text="What did Melanie paint?") for i in (0, 1)])
    h = system_hashes(cfg)
    texts = ["Melanie: I painted a lake sunrise last year."]
    for i in (0, 1):
        row = unit_row(f"d__q{i}", f"q{i}", "rag", h["rag"], **retrieval_payload(texts))
        write_stage(store, "retrievals", f"d__q{i}", [row])
    store.partition_path("retrievals", "d__q1").write_bytes(b"not parquet")
    run = AnswerRun(store, resolve_config(cfg), build_readers(resolve_config(cfg), ReaderDeps(encoder=minilm)))
    out = dict(run.compute(_items(run, [("d__q0", "q0"), ("d__q1", "q1")])))
    assert out["d__q0"][0].status == STATUS_OK
    assert all(r.status == STATUS_FAILED and "ArrowInvalid" in (r.error or "") for r in out["d__q1"])
