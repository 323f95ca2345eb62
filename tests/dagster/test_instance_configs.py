"""The Dagster instance files under configs/ load as Dagster reads them.

Why: Dagster checks a ``dagster.yaml``'s shape when an instance starts, but a configurable class's own
section (the run launcher, the compute log manager) only when that class is built, on the machine
that builds it. A misspelt key in the several-machines files would first fail on a worker. The run
launchers' own sections need packages outside membench's install (dagster-celery, dagster-k8s):
benchmarks/several_hosts.py builds the Celery one; the Kubernetes one is on paper.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster._core.instance.config import dagster_instance_config
from dagster._core.storage.local_compute_log_manager import LocalComputeLogManager
from dagster._serdes import ConfigurableClassData

from tests.support.paths import PROJECT_ROOT

INSTANCE_FILES = sorted((PROJECT_ROOT / "configs").glob("dagster*.yaml"))
SHARED_LOGS = ("dagster_celery.yaml", "dagster_k8s.yaml")


def _section(name: str, key: str) -> dict[str, Any]:
    return dict(yaml.safe_load((PROJECT_ROOT / "configs" / name).read_text())[key])


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=[p.name for p in INSTANCE_FILES])
def test_instance_file_has_dagsters_shape(path: Path, tmp_path: Path) -> None:
    shutil.copy(path, tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    assert config["storage"]


@pytest.mark.parametrize("name", SHARED_LOGS)
def test_run_logs_go_to_the_shared_folder(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every machine's compute log manager writes under $MEMBENCH_COMPUTE_LOGS (a shared path)."""
    section = _section(name, "compute_logs")
    monkeypatch.setenv("MEMBENCH_COMPUTE_LOGS", str(tmp_path / "shared_logs"))
    data = ConfigurableClassData(section["module"], section["class"], yaml.safe_dump(section["config"]))
    manager = data.rehydrate(as_type=LocalComputeLogManager)
    assert Path(manager._base_dir) == tmp_path / "shared_logs"

