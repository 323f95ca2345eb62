"""A dataset whose file cannot be read fails its own questions, never the run's other datasets (issue 24 item 1).

The real definitions of a two-dataset config (LongMemEval oracle sample: ``good`` and a copy
``bad``) run ``full_benchmark``. The copy is broken on its FIRST load (no earlier canonical
tables: a truncated file, a non-UTF-8 byte, a file removed after the definitions loaded) or after
a good load. Every case: the embeddings step and every stage go on, the good dataset's questions
are judged, the bad dataset's questions (those the definitions know) are failed in every stage
with an error naming the load failure, Dagster partition status equals ``progress``, and the run
ends failed with a summary that names the dataset.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipeline.config.model import load_config
from pipeline.definitions import build_defs, partition_keys
from pipeline.store.results import ResultStore
from tests.support.dagster import status_mismatches
from tests.support.paths import PROJECT_ROOT

SAMPLE = PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"
STAGES = ("ingestion", "retrievals", "answers", "judgments")


def _config(tmp_path: Path, bad: Path) -> Path:
    cfg = {
        "name": "twods",
        "results_dir": str(tmp_path / "res"),
        "datasets": [
            {"name": "good", "loader": "longmemeval", "path": str(SAMPLE)},
            {"name": "bad", "loader": "longmemeval", "path": str(bad)},
        ],
        "memory_systems": [{"name": "full", "kind": "full_context"}],
        "readers": [{"name": "offline", "kind": "offline"}],
        "judges": [{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
    }
    path = tmp_path / "twods.yaml"
    path.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    return path


def _break(path: Path, how: str) -> None:
    data = SAMPLE.read_bytes()
    third = data.index(b'"question_id"', data.index(b'"question_id"', data.index(b'"question_id"') + 1) + 1)
    if how == "truncated":
        path.write_bytes(data[: third + 200])
    elif how == "non_utf8":
        cut = data.index(b'"question"', third)
        path.write_bytes(data[:cut] + b'"x": "\xff", ' + data[cut:])
    st = path.stat()  # a new mtime: the converter must not skip the file as unchanged
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


def _progress(store: ResultStore, dataset: str) -> dict[tuple[str, str], tuple[str, str | None]]:
    rows = store.query(
        "SELECT partition_key, stage, status, errors FROM progress WHERE dataset = ?", [dataset]
    ).to_pylist()
    return {(r["partition_key"], r["stage"]): (r["status"], r["errors"]) for r in rows}


def _run(config: Path, instance: dg.DagsterInstance, before_run: object = None) -> dg.ExecuteInProcessResult:
    job = build_defs(str(config)).resolve_job_def("full_benchmark")
    if callable(before_run):
        before_run()
    return job.execute_in_process(instance=instance, raise_on_error=False)


def _assert_isolated(result: dg.ExecuteInProcessResult, store: ResultStore, keys: list[str]) -> str:
    """The run failed at its last step (the dataset) and at the checks of stages with failed questions
    only; good is judged; bad's known keys failed everywhere."""
    assert not result.success
    failures = [f for f in result.get_step_failure_events() if f.step_key == "twods__benchmark_report"]
    checks = {f"twods__{s}_no_failed_units" for s in STAGES}
    assert failures and {f.step_key for f in result.get_step_failure_events()} <= checks | {"twods__benchmark_report"}
    good = _progress(store, "good")
    good_keys = [k for k in keys if k.startswith("good__")]
    assert len(good_keys) == 8
    for key in good_keys:
        for stage in STAGES:
            assert good[(key, stage)][0] == "done", (key, stage, good[(key, stage)])
    bad = _progress(store, "bad")
    for key in (k for k in keys if k.startswith("bad__")):
        for stage in STAGES:
            status, errors = bad[(key, stage)]
            assert status == "failed" and "failed to load" in (errors or ""), (key, stage, status, errors)
    message = failures[0].step_failure_data.error.message  # type: ignore[union-attr]
    assert "bad" in message
    return message


@pytest.mark.parametrize("how", ["truncated", "non_utf8", "removed_after_load"])
def test_a_dataset_broken_on_its_first_load_fails_only_its_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(SAMPLE.read_bytes())
    if how != "removed_after_load":
        _break(bad, how)
    config = _config(tmp_path, bad)
    keys = partition_keys(load_config(str(config)))
    store = ResultStore(results_dir=str(tmp_path / "res"))
    with dg.instance_for_test() as instance:
        result = _run(config, instance, bad.unlink if how == "removed_after_load" else None)
        message = _assert_isolated(result, store, keys)
        assert "dataset bad failed to load" in message
        assert status_mismatches(instance, "twods", keys, store) == []


def test_a_dataset_broken_after_a_good_load_still_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(SAMPLE.read_bytes())
    config = _config(tmp_path, bad)
    store = ResultStore(results_dir=str(tmp_path / "res"))
    with dg.instance_for_test() as instance:
        first = _run(config, instance)
        assert first.success
        _break(bad, "truncated")
        load_config.cache_clear()
        keys = partition_keys(load_config(str(config)))
        second = _run(config, instance)
        assert not second.success
        message = second.get_step_failure_events()[-1].step_failure_data.error.message  # type: ignore[union-attr]
        assert "dataset bad failed to load" in message and "earlier tables" in message
        good = _progress(store, "good")
        assert all(good[(k, "judgments")][0] == "done" for k in keys if k.startswith("good__"))
        assert status_mismatches(instance, "twods", keys, store) == []
