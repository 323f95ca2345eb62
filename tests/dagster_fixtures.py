"""Run membench's real stage assets in tests, and compare Dagster partition status with `progress`.

Why a helper: tests that hand-write canonical tables have no source file to read partition keys
from, so they build the stage assets of their config with explicit keys (the same factory that
pipeline/definitions.py uses) and run them for one partition or a range, as Dagster would.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from assets.layout import STAGES
from assets.question_assets import build_stage_assets, question_partitions
from assets.run_gate import RANGE_END_TAG, RANGE_START_TAG
from pipeline.config.model import load_config
from pipeline.store.results import ResultStore
from resources.factory import build_resources
from tests.conftest import PROJECT_ROOT

LME_ORACLE_SAMPLE = PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"


def lme_sample_config(tmp_path: Path, name: str, **sections: Any) -> Path:
    """A config file ``tmp_path/<name>.yaml`` over the LongMemEval oracle sample (dataset ``lme``,
    results in ``tmp_path/res``) with ``sections`` (memory_systems, readers, judges, llm, ...)."""
    dataset = {"name": "lme", "loader": "longmemeval", "path": str(LME_ORACLE_SAMPLE)}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"results_dir": str(tmp_path / "res"), "datasets": [dataset], **sections}))
    load_config.cache_clear()
    return path


EXPECTED = {"done": dg.AssetPartitionStatus.MATERIALIZED, "failed": dg.AssetPartitionStatus.FAILED, "missing": None}


def stage_assets(config: Path, keys: Sequence[str]) -> tuple[str, list[dg.AssetsDefinition]]:
    """(config prefix, the four stage assets over partitions ``keys``)."""
    cfg = load_config(str(config))
    parts = question_partitions(list(keys))
    return cfg.config_name, build_stage_assets(cfg.config_name, parts, dg.BackfillPolicy.single_run())


def run_stages(
    config: Path,
    keys: Sequence[str],
    stages: Sequence[str],
    instance: dg.DagsterInstance,
    *,
    partition_key: str | None = None,
    key_range: tuple[str, str] | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize ``stages`` for one partition, a range, or (default) every key, upstream as specs."""
    prefix, assets = stage_assets(config, keys)
    upstream = [
        dg.AssetSpec(dg.AssetKey([prefix, n])) for n in ("questions", "haystacks", "turns", "embeddings", "evidence")
    ]
    rng = None if partition_key else (key_range or (keys[0], keys[-1]))
    tags = {RANGE_START_TAG: rng[0], RANGE_END_TAG: rng[1]} if rng else None
    return dg.materialize(
        [*upstream, *assets],
        selection=[dg.AssetKey([prefix, s]) for s in stages],
        partition_key=partition_key,
        tags=tags,
        resources=build_resources(load_config(str(config))),
        instance=instance,
        raise_on_error=False,
    )


def status_mismatches(
    instance: dg.DagsterInstance, prefix: str, keys: Sequence[str], store: ResultStore, stages: Sequence[str] = STAGES
) -> list[tuple[str, str, str, object]]:
    """(stage, key, progress status, Dagster status) for every key where the two disagree."""
    progress = {
        (r["stage"], r["partition_key"]): r["status"]
        for r in store.query("SELECT stage, partition_key, status FROM progress").to_pylist()
    }
    parts = question_partitions(list(keys))
    bad = []
    for stage in stages:
        status = instance.get_status_by_partition(dg.AssetKey([prefix, stage]), list(keys), parts) or {}
        for key in keys:
            want = EXPECTED[progress.get((stage, key), "missing")]
            if status.get(key) != want:
                bad.append((stage, key, progress.get((stage, key), "missing"), status.get(key)))
    return bad


def stage_run_metadata(result: dg.ExecuteInProcessResult, stage: str) -> dict[str, Any]:
    """The run-level metadata of ``stage``'s step (questions, computed, already_done, stopped, ...).

    It is the metadata of the step's output: each question's materialization carries that
    question's own metadata (assets/partition_status.py).
    """
    for event in result.all_events:
        if event.event_type != dg.DagsterEventType.STEP_OUTPUT or not (event.step_key or "").endswith(f"__{stage}"):
            continue
        meta = {k: v.value for k, v in event.step_output_data.metadata.items()}
        if "computed" in meta:  # the asset's output, not one of its checks'
            return meta
    raise AssertionError(f"no output of stage {stage} in the run")
