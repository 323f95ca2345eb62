"""The judgments stage (pipeline.judges.run) on a real store: units, failed answers, LLM judges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config.model import ComponentConfig
from pipeline.core.status import STATUS_FAILED, STATUS_OK
from pipeline.judges.run import JUDGED_ANSWER_COLUMNS, JudgmentRun, judgment_units
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault
from pipeline.readers.run import answer_units
from pipeline.run.stage import UnitResult, WorkItem
from pipeline.store.results import ResultStore, write_parquet_atomic
from tests.support.answers import config, unit_row, write_canonical, write_results, write_stage
from tests.support.judges import MC_CHOICES, question

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)


def _answer(unit: str, h: str, key: str, qid: str, prediction: str | None, **kw: Any) -> dict[str, Any]:
    system, reader = unit.split("/")
    payload = {
        "system": system,
        "reader": reader,
        "reader_kind": "offline",
        "label": "offline",
        "model": "all-MiniLM-L6-v2",
        "prediction": prediction,
        "predicted_index": None,
        "invalid": False,
        "context_tokens": 10,
        **kw,
    }
    return unit_row(key, qid, unit, h, **payload)


def _items(run: JudgmentRun, keys: list[str]) -> list[WorkItem]:
    return [WorkItem(k, "d", k.split("__")[1], tuple(run.units_for("d"))) for k in keys]


def _by_unit(results: list[UnitResult]) -> dict[str, UnitResult]:
    return {r.unit: r for r in results}


def _persist(store: ResultStore, items: list[WorkItem], out: dict[str, list[UnitResult]]) -> None:
    """Writing through the real judgments schema proves the payload columns match it."""
    for item in items:
        write_results(store, "judgments", item, out[item.partition_key])


def test_locomo_judgments_and_failed_answers(tmp_path: Path) -> None:
    cfg = config(tmp_path, "locomo")
    store = ResultStore(results_dir=cfg.results_dir)
    write_canonical(
        store, [question(dataset="d", question_id=f"q{i}", type_raw="4", answer="a lake sunrise") for i in range(3)]
    )
    h = {u.spec.unit: u.spec.unit_hash for u in answer_units(resolve_config(cfg), "d")}
    write_stage(
        store,
        "answers",
        "d__q0",
        [
            _answer("rag/offline", h["rag/offline"], "d__q0", "q0", "She painted a lake sunrise"),
            unit_row("d__q0", "q0", "full/offline", h["full/offline"], "failed", "upstream retrieval failed: boom"),
        ],
    )
    write_stage(store, "answers", "d__q2", [_answer("rag/offline", "0ld", "d__q2", "q2", "x")])
    run = JudgmentRun(store, resolve_config(cfg), None)
    units = [u.spec.unit for u in judgment_units(resolve_config(cfg), "d", None)]
    assert units == [
        f"{a}/{j}"
        for a in ("rag/offline", "full/offline")
        for j in ("locomo_f1", "locomo_exact_match", "locomo_keyword_overlap")
    ]
    items = _items(run, ["d__q0", "d__q1", "d__q2"])
    out = dict(run.compute(items))
    _persist(store, items, out)
    q0 = _by_unit(out["d__q0"])
    # 'she painted lake sunris' vs 'lake sunris': P=2/4, R=1 -> F1 = 2/3
    f1 = q0["rag/offline/locomo_f1"]
    assert f1.status == STATUS_OK and abs(f1.payload["score"] - 2 / 3) < 1e-9 and f1.payload["correct"] is False
    assert f1.payload["metric"] == "locomo_f1" and f1.payload["judge"] == "locomo_f1"
    assert json.loads(f1.payload["details"])["gold"] == "a lake sunrise"
    assert f1.payload["judge_cache_hit"] is None  # lexical judge: no LLM
    assert q0["rag/offline/locomo_keyword_overlap"].payload["correct"] is True  # substring of the prediction
    assert q0["rag/offline/locomo_exact_match"].payload["correct"] is False
    for judge in ("locomo_f1", "locomo_exact_match", "locomo_keyword_overlap"):
        failed = q0[f"full/offline/{judge}"]
        assert failed.status == STATUS_FAILED and failed.payload == {}
        assert failed.error == "answer failed: upstream retrieval failed: boom"
    assert all((r.error or "").startswith("answer missing: no") for r in out["d__q1"])
    assert all("answer stale" in (r.error or "") or "answer missing" in (r.error or "") for r in out["d__q2"])
    rows = store.query("SELECT unit, status, metric, score FROM judgments WHERE partition_key = 'd__q0' ORDER BY unit")
    assert rows.num_rows == 6


def test_mc_invalid_answer_is_ok_not_correct_and_flagged(tmp_path: Path) -> None:
    cfg = config(tmp_path, "locomo_mc10")
    store = ResultStore(results_dir=cfg.results_dir)
    write_canonical(
        store,
        [
            question(dataset="d", question_id="q0", type_raw="single_hop", choices=MC_CHOICES, correct_choice_index=0),
            question(dataset="d", question_id="q1", type_raw="single_hop", choices=MC_CHOICES, correct_choice_index=2),
        ],
    )
    h = {u.spec.unit: u.spec.unit_hash for u in answer_units(resolve_config(cfg), "d")}
    for key, qid, kw in (
        ("d__q0", "q0", {"prediction": "Paris", "predicted_index": 0}),
        ("d__q1", "q1", {"prediction": "I think Berlin", "predicted_index": None, "invalid": True}),
    ):
        write_stage(store, "answers", key, [_answer(u, h[u], key, qid, **kw) for u in h])  # type: ignore[arg-type]
    run = JudgmentRun(store, resolve_config(cfg), None)
    out = dict(run.compute(_items(run, ["d__q0", "d__q1"])))
    right = _by_unit(out["d__q0"])["rag/offline/mc_accuracy"]
    assert right.status == STATUS_OK and right.payload["correct"] is True and right.payload["score"] == 1.0
    invalid = _by_unit(out["d__q1"])["rag/offline/mc_accuracy"]
    assert invalid.status == STATUS_OK and invalid.payload["correct"] is False
    assert json.loads(invalid.payload["details"]) == {"invalid": True, "gold_index": 2}


def test_lme_llm_judge_cached_and_failures(tmp_path: Path, server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    server.add_rule("Model Response: You bought it at Target", "Yes")
    server.add_rule("Model Response: Maybe Walmart", "Possibly")
    server.add_rule("Model Response: At Costco", "no", faults=[Fault.server_error(503)])
    cfg = config(tmp_path, "longmemeval", llm_url=server.base_url)
    cfg = cfg.model_copy(update={"memory_systems": cfg.memory_systems[:1]})
    store = ResultStore(results_dir=cfg.results_dir)
    preds = {"q0": "You bought it at Target", "q1": "Maybe Walmart", "q2": "At Costco"}
    write_canonical(
        store,
        [
            question(
                dataset="d", question_id=q, type_raw="single-session-user", text="Where did I buy it?", answer="Target"
            )
            for q in preds
        ],
    )
    h = {u.spec.unit: u.spec.unit_hash for u in answer_units(resolve_config(cfg), "d")}
    for qid, pred in preds.items():
        write_stage(store, "answers", f"d__{qid}", [_answer("rag/offline", h["rag/offline"], f"d__{qid}", qid, pred)])
    run = JudgmentRun(store, resolve_config(cfg), llm, max_workers=3)
    assert [u.spec.unit for u in judgment_units(resolve_config(cfg), "d", llm)] == [
        "rag/offline/lme_contains_normalized",
        "rag/offline/lme_official_llm_judge",
    ]
    items = _items(run, ["d__q0", "d__q1", "d__q2"])
    out = {k: _by_unit(v) for k, v in run.compute(items)}
    official = "rag/offline/lme_official_llm_judge"
    ok = out["d__q0"][official]
    assert ok.status == STATUS_OK and ok.payload["correct"] is True
    assert ok.payload["judge_cache_hit"] is False and ok.payload["judge_prompt_tokens"] > 0
    assert out["d__q0"]["rag/offline/lme_contains_normalized"].payload["correct"] is True
    # the official preset reads replies as evaluate_qa.py does: no "yes" in "Possibly" -> wrong
    assert out["d__q1"][official].status == STATUS_OK and out["d__q1"][official].payload["correct"] is False
    assert out["d__q2"][official].status == STATUS_FAILED and "HTTP 503" in (out["d__q2"][official].error or "")
    _persist(store, items, {k: list(v.values()) for k, v in out.items()})

    again = {k: _by_unit(v) for k, v in run.compute(items)}
    assert again["d__q0"][official].payload["judge_cache_hit"] is True
    assert again["d__q2"][official].payload["correct"] is False  # transport failure retried: now judged


def test_config_judges_select_units(tmp_path: Path) -> None:
    cfg = config(tmp_path, "locomo", judges=(ComponentConfig(name="f1", kind="locomo_f1"),))
    assert [u.spec.unit for u in judgment_units(resolve_config(cfg), "d", None)] == [
        "rag/offline/f1",
        "full/offline/f1",
    ]


def test_judging_reads_only_the_judged_columns_and_legacy_files_judge_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why: the judgments stage read all ~28 columns of each answers file where judging uses 8. A file
    an earlier version wrote (``config_hash`` for ``unit_hash``, no ``record_hash``, ``predicted_index``
    or ``invalid``) must give the same judgments as the same answer written now."""
    cfg = config(tmp_path, "locomo")
    store = ResultStore(results_dir=cfg.results_dir)
    write_canonical(
        store, [question(dataset="d", question_id=f"q{i}", type_raw="4", answer="a lake") for i in range(2)]
    )
    h = {u.spec.unit: u.spec.unit_hash for u in answer_units(resolve_config(cfg), "d")}
    for key, qid in (("d__q0", "q0"), ("d__q1", "q1")):
        rows = [_answer(u, h[u], key, qid, "She saw a lake", record_hash="r") for u in h]
        write_stage(store, "answers", key, rows)
    old = pq.read_table(store.partition_path("answers", "d__q1"))
    old = old.drop_columns(["record_hash", "predicted_index", "invalid"])
    old = old.rename_columns(["config_hash" if n == "unit_hash" else n for n in old.column_names])
    write_parquet_atomic(store.partition_path("answers", "d__q1"), old)

    read: list[list[str]] = []
    original = ResultStore.read_partition

    def spy(self: ResultStore, stage: str, key: str, columns: list[str] | None = None) -> pa.Table | None:
        table = original(self, stage, key, columns)
        read.append([] if table is None else table.column_names)
        return table

    monkeypatch.setattr(ResultStore, "read_partition", spy)
    run = JudgmentRun(store, resolve_config(cfg), None)
    items = [WorkItem(k, "d", k.split("__")[1], tuple(run.units_for("d")), "r") for k in ("d__q0", "d__q1")]
    out = dict(run.compute(items))
    assert read[0] == JUDGED_ANSWER_COLUMNS  # in the order asked, nothing else
    assert read[1] == [c for c in JUDGED_ANSWER_COLUMNS if c not in ("record_hash", "predicted_index", "invalid")]
    new, legacy = (sorted((r.unit, r.status, r.error, r.payload) for r in out[k]) for k in ("d__q0", "d__q1"))
    assert new == legacy and len(new) == 6 and all(r[1] == STATUS_OK for r in new)
