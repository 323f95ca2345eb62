"""Run membench's real stage assets in tests, and compare Dagster partition status with `progress`.

Why a helper: tests that hand-write canonical tables have no source file to read partition keys
from, so they build the stage assets of their config with explicit keys (the same factory that
pipeline/definitions.py uses) and run them for one partition or a range, as Dagster would.

The comparison itself is the library's (assets/partition_status.py ``status_mismatches``, which
benchmarks/soak.py also runs); the tests import it through this module. Also: the LongMemEval-sample config with an LLM
reader whose questions FAILING fail, and the environment of a ``dagster`` CLI process.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from assets.partition_status import status_mismatches as status_mismatches  # the tests import it from here
from assets.question_assets import build_stage_assets, question_partitions
from assets.run_gate import RANGE_END_TAG, RANGE_START_TAG
from pipeline.config.model import load_config
from resources.factory import build_resources
from tests.support.paths import PROJECT_ROOT

LME_ORACLE_SAMPLE = PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"


def lme_sample_config(tmp_path: Path, name: str, **sections: Any) -> Path:
    """A config file ``tmp_path/<name>.yaml`` over the LongMemEval oracle sample (dataset ``lme``,
    results in ``tmp_path/res``) with ``sections`` (memory_systems, readers, judges, llm, ...)."""
    dataset = {"name": "lme", "loader": "longmemeval", "path": str(LME_ORACLE_SAMPLE)}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"results_dir": str(tmp_path / "res"), "datasets": [dataset], **sections}))
    load_config.cache_clear()
    return path


# questions of the LongMemEval sample whose reader calls the fake server fails (non-retryable HTTP 400)
FAILING = ("What breed is the dog I adopted?", "Where do I work now?")
FAILING_KEYS = {"lme__5d1c2a7e", "lme__e0f4c6d9"}  # their partition keys


def status_config(tmp_path: Path, base_url: str, **llm: object) -> Path:
    """``tmp_path/status.yaml`` (config ``status``, results in ``tmp_path/res``): the LongMemEval
    oracle sample, full-context memory, the LLM reader on ``base_url`` (no retries, one call at a
    time; ``llm`` adds or overrides llm settings) and the lme_contains_normalized judge."""
    return lme_sample_config(
        tmp_path,
        "status",
        memory_systems=[{"name": "full", "kind": "full_context"}],
        readers=[{"name": "llm", "kind": "llm"}],
        judges=[{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
        llm={
            "base_url": base_url,
            "model": "fake-model",
            "api_key_env": "MEMBENCH_TEST_KEY",
            "max_retries": 0,
            "max_concurrency": 1,
            **llm,
        },
    )


def dagster_cli_env(tmp_path: Path, config: Path) -> dict[str, str]:
    """The environment of a ``dagster`` CLI process on ``config``: DAGSTER_HOME=``tmp_path/home``
    (configs/dagster.yaml copied there), the membench definitions module, offline model hubs."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    shutil.copy(PROJECT_ROOT / "configs" / "dagster.yaml", home / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_CLI_JOB_EXECUTE_MODULE_NAME": "pipeline.definitions",
        "MEMBENCH_CONFIG": str(config),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


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
