"""Explicit wiring: what a process can see does not depend on what it happened to import.

Every CLI command and the Dagster definitions are run each in a FRESH process (as a newcomer types
them) over one complete results folder; each must see every catalog view, and every built-in kind
must be accepted the same way by ``membench check-config`` and by the Dagster definitions.
And importing any module of the project has no side effect beyond its definitions: no env var
set, no config read, no Dagster definitions built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.catalog.docs import VIEW_DOCS
from pipeline.catalog.report import REPORT_VIEWS
from tests.support.paths import PROJECT_ROOT
from tests.support.report import build_full_store

VENV_BIN = Path(sys.executable).parent
VIEWS_SQL = "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1"

# a fresh process that loads the definitions as Dagster does (the module's @definitions function),
# then asks the benchmark resource's store for its views and the resolver for every kind
DEFS_PROBE = """
import json, sys
import pipeline.definitions as entry
defs = entry.defs()
store = defs.resources["benchmark"].store()
with store.connect() as con:
    views = sorted(r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall())
res = defs.resources["benchmark"].resolved()
kinds = sorted(s.kind for s in (*res.memory_systems, *res.readers, *res.judges))
print(json.dumps({"views": views, "kinds": kinds}))
"""


def _env(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMBENCH_")}
    return {**env, "MEMBENCH_CONFIG": str(config), "PYTHONDONTWRITEBYTECODE": "1"}


def _run(args: list[str], config: Path, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(args, cwd=PROJECT_ROOT, env=_env(config), capture_output=True, text=True, timeout=600)
    assert done.returncode in ok, f"{args}: exit {done.returncode}\n{done.stderr[-2000:]}"
    return done.stdout


def _table_column(out: str) -> list[str]:
    """The one column of ``membench sql`` output (header, rule, rows)."""
    return [line.strip() for line in out.splitlines()[2:] if line.strip()]


# kinds that cannot be built from an empty params block (which server to drive)
REQUIRED_PARAMS = {
    "mcp": {
        "command": ["{python}", "-m", "pipeline.agentic.mcp.server", "--data", "{data_file}"],
        "ingest_tool": "remember",
        "search_tool": "recall",
    },
}


@pytest.fixture(scope="module")
def every_kind_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample datasets, every built-in memory system, reader and judge, results in a complete folder."""
    from pipeline.kinds.judges import BUILTIN_JUDGES
    from pipeline.kinds.memory import BUILTIN_MEMORY_SYSTEMS
    from pipeline.kinds.readers import BUILTIN_READERS

    tmp = tmp_path_factory.mktemp("wiring")
    build_full_store(tmp / "results")
    sample = yaml.safe_load((PROJECT_ROOT / "configs" / "sample.yaml").read_text())
    config = {
        "results_dir": str(tmp / "results"),
        "datasets": sample["datasets"],  # membench:... paths: the bundled samples, wherever the config is
        "memory_systems": [
            {"name": k, "kind": k, "params": REQUIRED_PARAMS.get(k, {})} for k in sorted(BUILTIN_MEMORY_SYSTEMS)
        ],
        "readers": [{"name": k, "kind": k} for k in sorted(BUILTIN_READERS)],
        "judges": [{"name": s.metric, "kind": s.metric} for s in BUILTIN_JUDGES],
        "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "never-called", "api_key_env": "NO_KEY_NEEDED"},
    }
    path = tmp / "every_kind.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def expected_views(every_kind_config: Path) -> list[str]:
    config = yaml.safe_load(every_kind_config.read_text())
    from pipeline.store.results import ResultStore

    with ResultStore(results_dir=config["results_dir"]).connect() as con:
        views = sorted(r[0] for r in con.execute(VIEWS_SQL).fetchall())
    assert set(REPORT_VIEWS) <= set(views) and set(views) <= set(VIEW_DOCS) | {"catalog_errors"}
    return views


def test_membench_sql_sees_every_view_in_a_fresh_process(every_kind_config: Path, expected_views: list[str]) -> None:
    out = _run([str(VENV_BIN / "membench"), "sql", VIEWS_SQL], every_kind_config)
    assert _table_column(out) == expected_views
    # the README's own first query, as a newcomer types it
    out = _run([str(VENV_BIN / "membench"), "sql", "SELECT * FROM accuracy_report"], every_kind_config)
    assert "locomo_f1" in out


def test_membench_schema_lists_every_view_in_a_fresh_process(
    every_kind_config: Path, expected_views: list[str]
) -> None:
    out = _run([str(VENV_BIN / "membench"), "schema"], every_kind_config)
    listed = sorted(line.split(":", 1)[0] for line in out.splitlines() if line and not line.startswith(" "))
    assert listed == expected_views


@pytest.mark.parametrize("command", [["results"], ["progress"], ["failed"]])
def test_other_commands_run_over_the_views_in_a_fresh_process(every_kind_config: Path, command: list[str]) -> None:
    # membench failed exits 1 when it lists failed questions (this run stores some), 0 when there are none
    out = _run([str(VENV_BIN / "membench"), *command], every_kind_config, ok=(0, 1) if command == ["failed"] else (0,))
    if command == ["failed"]:
        assert "membench forget" in out or "no failed" in out.lower(), out[-2000:]
    if command == ["results"]:
        assert "headline (accuracy_report" in out  # the report views exist in this process too


def test_definitions_see_every_view_and_every_kind_in_a_fresh_process(
    every_kind_config: Path, expected_views: list[str]
) -> None:
    probe = json.loads(_run([sys.executable, "-c", DEFS_PROBE], every_kind_config).strip().splitlines()[-1])
    assert probe["views"] == expected_views
    out = _run([str(VENV_BIN / "membench"), "check-config", str(every_kind_config)], every_kind_config)
    config = yaml.safe_load(every_kind_config.read_text())
    kinds = sorted(e["kind"] for section in ("memory_systems", "readers", "judges") for e in config[section])
    assert probe["kinds"] == kinds
    assert all(f"({k})" in out for k in kinds), out


def test_dagster_cli_loads_the_definitions_lazily(every_kind_config: Path) -> None:
    """``dagster`` finds the module's @definitions function (what workspace.yaml and job execute load)."""
    out = _run([str(VENV_BIN / "dagster"), "asset", "list", "-m", "pipeline.definitions"], every_kind_config)
    assert "every_kind/answers" in out


IMPORT_PROBE = """
import importlib, json, os, pkgutil, sys
import pandera.pandas  # third-party: pandera sets PYARROW_IGNORE_TIMEZONE and SPARK_LOCAL_IP on import
before = dict(os.environ)
names = []
for package in ("pipeline", "assets", "resources"):
    pkg = importlib.import_module(package)
    names += [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".")]
for name in sorted(names):
    importlib.import_module(name)
changed = sorted(k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k))
import pipeline.definitions as entry
print(json.dumps({"modules": len(names), "env_changed": changed, "defs_type": type(entry.defs).__name__}))
"""


def test_importing_every_module_has_no_side_effect(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["MEMBENCH_CONFIG"] = str(tmp_path / "does_not_exist.yaml")  # reading it would fail the import
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["modules"] > 50
    assert probe["env_changed"] == []
    assert probe["defs_type"] == "LazyDefinitions"  # built when Dagster asks, not on import
