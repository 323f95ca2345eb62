"""Reading one retrieval at several depths: ``cutoffs: [c, ...]`` gives units ``<system>@<c>``.

A real BM25 memory over the toy haystack, ingestion and retrieval without Dagster: each cut-off row
holds the first c units of the system's own ranking (one retrieval per question, counted), its
context rendered the same way; a system that renders no ranked context fails its cut-off rows.
"""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig
from pipeline.kinds.resolve import resolve_config
from pipeline.memory.base import MemoryDeps
from pipeline.memory.cutoffs import cutoff_hash, reading_systems, retrieval_units_for
from pipeline.memory.flat_bm25 import FlatBm25Memory
from pipeline.memory.ingest import MemoryRun, ingestion_results, units_for
from pipeline.memory.retrieve import retrieval_results
from pipeline.memory.systems import system_specs
from pipeline.readers.run import answer_units
from pipeline.run.stage import UnitResult, WorkItem
from pipeline.run.stale import configured_systems
from pipeline.store.results import ResultStore
from tests.support.memory import DATASET, question, write_toy_dataset

QUESTIONS = [question("What is the name of Alice's puppy?", "q1"), question("Which tram did Alice take?", "q2", 1)]
SYSTEMS = (
    ComponentConfig(name="bm25", kind="flat_bm25", params={"roles": ["user", "assistant"]}, cutoffs=(1, 3)),
    ComponentConfig(name="full", kind="full_context", cutoffs=(2,)),
)


def _config(tmp_path: Path) -> BenchmarkConfig:
    return BenchmarkConfig(
        results_dir=str(tmp_path / "res"),
        datasets=(DatasetConfig(name=DATASET, loader="toy", path="-"),),
        memory_systems=SYSTEMS,
    )


def _run(cfg: BenchmarkConfig, stage: str) -> dict[str, UnitResult]:
    bench = resolve_config(cfg)
    store = ResultStore(results_dir=cfg.results_dir)
    run = MemoryRun(store, bench, MemoryDeps(None))
    units = (units_for if stage == "ingestion" else retrieval_units_for)(bench)(DATASET)
    items = [WorkItem(q.partition_key, DATASET, q.question_id, tuple(units)) for q in QUESTIONS]
    compute = ingestion_results if stage == "ingestion" else retrieval_results
    return {f"{key}/{r.unit}": r for key, results in compute(run, items) for r in results}


def test_cutoffs_cut_one_retrieval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _config(tmp_path)
    write_toy_dataset(ResultStore(results_dir=cfg.results_dir), QUESTIONS)
    assert {r.status for r in _run(cfg, "ingestion").values()} == {"ok"}
    calls = []
    original = FlatBm25Memory.retrieve
    monkeypatch.setattr(FlatBm25Memory, "retrieve", lambda self, q: calls.append(q.question_id) or original(self, q))
    rows = _run(cfg, "retrievals")
    assert sorted(calls) == ["q1", "q2"]  # one retrieval per question for bm25, bm25@1 and bm25@3
    for qid in ("q1", "q2"):
        full, one, three = (rows[f"{DATASET}__{qid}/{u}"] for u in ("bm25", "bm25@1", "bm25@3"))
        assert {full.status, one.status, three.status} == {"ok"}
        ids = [u["unit_id"] for u in full.payload["units"]]
        assert [u["unit_id"] for u in one.payload["units"]] == ids[:1]
        assert [u["unit_id"] for u in three.payload["units"]] == ids[:3]
        assert all(u["bm25"] is not None and u["semantic"] is None for u in three.payload["units"])
        assert one.payload["context_tokens"] < three.payload["context_tokens"] <= full.payload["context_tokens"]
        assert one.payload["retrieval_latency_s"] == full.payload["retrieval_latency_s"]  # the one retrieval's
        assert '"cutoff": 3' in three.payload["notes"]
    # the first unit of bm25@1 is the puppy turn: its context is that turn under its session header
    assert "Biscuit" in rows[f"{DATASET}__q1/bm25@1"].payload["context"]
    failed = rows[f"{DATASET}__q1/full@2"]
    assert failed.status == "failed" and "cannot be read at a depth" in (failed.error or "")
    assert rows[f"{DATASET}__q1/full"].status == "ok"


def test_cutoff_units_have_their_own_identity(tmp_path: Path) -> None:
    bench = resolve_config(_config(tmp_path))
    [bm25, full] = system_specs(bench, DATASET)
    names = dict(reading_systems(bench, DATASET))
    assert list(names) == ["bm25", "bm25@1", "bm25@3", "full", "full@2"]
    assert names["bm25@3"] == cutoff_hash(bm25.unit_hash, 3) != names["bm25@1"] != bm25.unit_hash
    # a param of the system changes its cut-offs' hashes too
    changed = [ComponentConfig(name="bm25", kind="flat_bm25", params={"roles": ["user"]}, cutoffs=(1, 3)), SYSTEMS[1]]
    other = resolve_config(_config(tmp_path).model_copy(update={"memory_systems": tuple(changed)}))
    assert dict(reading_systems(other, DATASET))["bm25@3"] != names["bm25@3"]
    # readers read every cut-off as a system of its own (answers, then judgments, derive from these)
    answers = {u.system: u.system_hash for u in answer_units(bench, DATASET)}
    assert answers == names
    assert {"bm25@1", "bm25@3", "full@2"} <= configured_systems(bench.config, DATASET)  # never "stale"
    assert full.unit_hash == names["full"]


@pytest.mark.parametrize(
    ("entry", "section", "message"),
    [
        ({"name": "r", "kind": "offline", "cutoffs": [5]}, "readers", "'cutoffs' applies to memory systems only"),
        ({"name": "b", "kind": "flat_bm25", "cutoffs": [5, 5]}, "memory_systems", "distinct integers >= 1"),
        ({"name": "b", "kind": "flat_bm25", "cutoffs": [0]}, "memory_systems", "distinct integers >= 1"),
    ],
)
def test_bad_cutoffs_fail_the_config(entry: dict[str, object], section: str, message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        BenchmarkConfig(datasets=(DatasetConfig(name="d", loader="toy", path="-"),), **{section: (entry,)})


def test_hybrid_reads_at_a_depth() -> None:
    """hybrid renders its context from its ranking: a depth cut keeps its first units and channel scores."""
    from tests.support.hybrid import ask, build, ids

    mem = build(None, channels={"semantic": False}, top_k=6)
    result = mem.retrieve(ask("What did my sister say about my cat and my bike?"))
    assert result.at_depth is not None and len(result.units) == 6
    cut = result.at_depth(2)
    assert ids(cut) == ids(result)[:2] and [u.bm25 for u in cut.units] == [u.bm25 for u in result.units[:2]]
    assert cut.context_tokens < result.context_tokens and cut.notes["cutoff"] == 2
