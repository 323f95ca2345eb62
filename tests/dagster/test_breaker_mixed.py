"""The dead-endpoint breaker in questions that mix offline and LLM units: a question whose LLM
units all failed with connection errors counts as unreachable whatever its offline units did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from pipeline.config.model import load_config
from pipeline.core.status import STATUS_FAILED, STATUS_OK
from pipeline.definitions import build_defs, partition_keys
from pipeline.llm.fake_server import running_fake_server
from pipeline.llm.protocol import UNREACHABLE_CONNECTION
from pipeline.run.stage import EndpointBreaker, UnitResult
from pipeline.store.results import ResultStore
from tests.support.paths import PROJECT_ROOT

SAMPLE = PROJECT_ROOT / "pipeline" / "sample_data" / "longmemeval_oracle_sample.json"
DEAD = f"ReaderCallFailed: LLM call failed (m): {UNREACHABLE_CONNECTION}[Errno 111] Connection refused"


def _ok(unit: str, **payload: Any) -> UnitResult:
    return UnitResult(unit, "h", STATUS_OK, None, 0.0, payload)


def _failed(unit: str, error: str = DEAD) -> UnitResult:
    return UnitResult(unit, "h", STATUS_FAILED, error)


QUESTIONS: dict[str, tuple[list[UnitResult], bool]] = {
    "offline ok, llm unreachable": ([_ok("full/offline", cache_hit=None), _failed("full/llm")], True),
    "offline judge ok, llm judge unreachable": (
        [_ok("full/offline/f1", judge_cache_hit=None), _failed("full/offline/llm_judge")],
        True,
    ),
    "cached llm reply, other llm unit unreachable": ([_ok("a/llm", cache_hit=True), _failed("b/llm")], True),
    "a fresh llm reply: the endpoint answers": ([_ok("a/llm", cache_hit=False), _failed("b/llm")], False),
    "a failure that is not a connection error": ([_ok("full/offline"), _failed("full/llm", "bad reply")], False),
    "nothing failed": ([_ok("full/offline"), _ok("full/llm", cache_hit=False)], False),
}


@pytest.mark.parametrize("case", list(QUESTIONS))
def test_what_counts_as_unreachable(case: str) -> None:
    results, dead = QUESTIONS[case]
    breaker = EndpointBreaker(stop_after=2)
    assert (breaker.observe(results), breaker.observe(results)) == (False, dead)


def _mixed_config(tmp_path: Path, base_url: str) -> Path:
    cfg = {
        "results_dir": str(tmp_path / "res"),
        "datasets": [
            {"name": "lme", "loader": "longmemeval", "path": str(SAMPLE)}
        ],
        "memory_systems": [{"name": "full", "kind": "full_context"}],
        "readers": [{"name": "offline", "kind": "offline"}, {"name": "llm", "kind": "llm"}],
        "judges": [{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
        "llm": {"base_url": base_url, "model": "m", "api_key_env": "MEMBENCH_TEST_KEY", "max_retries": 0,
                "max_concurrency": 1, "stop_after_unreachable": 2},
    }  # fmt: skip
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    return path


def test_mixed_readers_on_a_dead_endpoint_stop_the_stage(tmp_path: Path) -> None:
    with running_fake_server() as srv:
        dead_url = srv.base_url  # nothing listens there after the block
    config = _mixed_config(tmp_path, dead_url)
    keys = partition_keys(load_config(str(config)))
    assert len(keys) > 2
    store = ResultStore(results_dir=str(tmp_path / "res"))
    with dg.instance_for_test() as instance:
        job = build_defs(str(config)).resolve_job_def("full_benchmark")
        assert not job.execute_in_process(instance=instance, raise_on_error=False).success
    rows = store.query("SELECT partition_key, unit, status, error FROM answers").to_pylist()
    llm_tried = [r for r in rows if r["unit"].endswith("/llm") and not (r["error"] or "").startswith("not attempted")]
    assert len(llm_tried) == 2 and all(UNREACHABLE_CONNECTION in r["error"] for r in llm_tried)  # not one per question
    failed = {r["partition_key"] for r in rows if r["status"] == STATUS_FAILED}
    assert failed == set(keys)  # every question failed (recorded, retried next run), none dropped
