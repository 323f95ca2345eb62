"""The several-machines instance files send every run's logs to the shared folder the hub reads.

Why: a run's stdout and stderr are captured by the compute log manager of the machine that runs it.
Dagster builds that class only on that machine, so a wrong section would first show as logs missing
from the hub's UI. The run launchers' own sections need packages outside membench's install
(dagster-celery, dagster-k8s): benchmarks/several_hosts.py builds the Celery one; the Kubernetes
one is on paper.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import yaml

from tests.support.paths import PROJECT_ROOT


@pytest.mark.parametrize("name", ["dagster_celery.yaml", "dagster_k8s.yaml"])
def test_run_logs_go_to_the_shared_folder(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = yaml.safe_load((PROJECT_ROOT / "configs" / name).read_text())["compute_logs"]
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump({"compute_logs": section}))
    monkeypatch.setenv("MEMBENCH_COMPUTE_LOGS", str(tmp_path / "shared_logs"))
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        path = Path(instance.compute_log_manager.get_captured_local_path(["run", "compute_logs", "step"], "err"))
    finally:
        instance.dispose()
    assert path.is_relative_to(tmp_path / "shared_logs")
