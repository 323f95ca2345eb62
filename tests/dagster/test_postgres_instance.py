"""The Dagster instance on a real PostgreSQL server (configs/dagster_postgres.yaml), started here.

Needs Debian's postgresql server binaries (initdb, pg_ctl; scripts/setup.sh installs them): without
them the test fails with that instruction, it does not skip. The server runs
as the ``postgres`` user when the tests run as root (PostgreSQL refuses root), on 127.0.0.1 and a
free port, and is stopped at the end. The same run modes as tests/dagster/test_partition_status.py then
leave partition status equal to the ``progress`` view, read back through the Postgres instance.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from pipeline.config.model import load_config
from pipeline.definitions import build_defs, partition_keys
from pipeline.llm.fake_server import Fault, running_fake_server
from pipeline.store.results import ResultStore
from tests.support.dagster import FAILING, FAILING_KEYS, status_config, status_mismatches
from tests.support.paths import PROJECT_ROOT

BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture()
def postgres() -> Iterator[dict[str, str]]:
    assert BIN, "PostgreSQL server binaries not installed: run scripts/setup.sh (apt-get install -y postgresql)"
    assert os.geteuid() != 0 or shutil.which("runuser"), "as root, runuser (util-linux) starts PostgreSQL"
    bin_dir = Path(BIN[-1])
    root = Path(tempfile.mkdtemp(prefix="membench-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    port = _free_port()
    run = lambda *a: subprocess.run(_as_postgres([*a]), check=True, capture_output=True, text=True)  # noqa: E731
    run(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust")
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1"
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start")
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "membench")
        yield {"MEMBENCH_PG_URL": f"postgresql+psycopg2://postgres@127.0.0.1:{port}/membench"}
    finally:
        subprocess.run(_as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]), check=False)
        shutil.rmtree(root, ignore_errors=True)


def test_partition_status_on_a_postgres_instance(
    tmp_path: Path, postgres: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in postgres.items():
        monkeypatch.setenv(name, value)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    shutil.copy(PROJECT_ROOT / "configs" / "dagster_postgres.yaml", home / "dagster.yaml")
    with running_fake_server(default_reply="A golden retriever.") as server:
        for text in FAILING:
            server.add_rule(text, "unused", faults=[Fault.server_error(400)] * 50)
        config = status_config(tmp_path, server.base_url)
        keys = partition_keys(load_config(str(config)))
        store = ResultStore(results_dir=str(tmp_path / "res"))
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            job = build_defs(str(config)).resolve_job_def("full_benchmark")
            assert not job.execute_in_process(instance=instance, raise_on_error=False).success
            assert status_mismatches(instance, "status", keys, store) == []
            failed = instance.get_status_by_partition(
                dg.AssetKey(["status", "judgments"]), keys, dg.StaticPartitionsDefinition(keys)
            )
            assert {k for k, v in failed.items() if v == dg.AssetPartitionStatus.FAILED} == FAILING_KEYS
            server.rules.clear()
            assert job.execute_in_process(instance=instance).success
            assert status_mismatches(instance, "status", keys, store) == []
