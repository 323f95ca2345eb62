"""Plugins end to end: a memory system from outside the package, through the real Dagster definitions.

The worked example of the README (examples/plugins/) is used as a user would: by import path in a
config (``kind: membench_example_plugins.recent:RecentSessionsMemory``) and, installed, by its
entry-point name (``kind: recent_sessions``). The config runs the real ``full_benchmark`` job on the
LongMemEval oracle sample with an LLM reader on the project's fake OpenAI-compatible server.
Broken plugins (import error, wrong type, bad params) fail when the config is resolved, naming the
file, the entry and the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipeline.config.model import ConfigError, load_config
from pipeline.definitions import build_defs
from pipeline.kinds.memory import MEMORY_SYSTEMS
from pipeline.kinds.plugins import GROUP_MEMORY_SYSTEMS
from pipeline.kinds.resolve import check_config
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.store.results import ResultStore
from tests.support.paths import PROJECT_ROOT

PLUGIN_DIR = PROJECT_ROOT / "examples" / "plugins"
PLUGIN_REF = "membench_example_plugins.recent:RecentSessionsMemory"
LME_ORACLE = PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"


@pytest.fixture()
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example package importable, as after ``pip install examples/plugins``."""
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))


def _write(tmp_path: Path, systems: list[dict[str, object]], llm_url: str | None = None) -> Path:
    cfg: dict[str, object] = {
        "name": "plug",
        "results_dir": str(tmp_path / "res"),
        "datasets": [{"name": "lme", "loader": "longmemeval", "path": str(LME_ORACLE)}],
        "memory_systems": systems,
        "judges": [{"name": "contains", "kind": "lme_contains_normalized"}],
    }
    if llm_url:
        cfg["readers"] = [{"name": "llm", "kind": "llm"}]
        cfg["llm"] = {"base_url": llm_url, "model": "fake-model", "api_key_env": "MEMBENCH_TEST_KEY", "max_retries": 0}
    path = tmp_path / "plug.yaml"
    path.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    return path


@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="A golden retriever.") as srv:
        yield srv


def test_plugin_memory_system_runs_through_the_real_definitions(
    plugin_path: None, tmp_path: Path, server: FakeOpenAIServer
) -> None:
    config = _write(tmp_path, [{"name": "recent", "kind": PLUGIN_REF, "params": {"sessions": 1}}], server.base_url)
    with dg.instance_for_test() as instance:
        result = build_defs(str(config)).resolve_job_def("full_benchmark").execute_in_process(instance=instance)
    assert result.success
    store = ResultStore(results_dir=str(tmp_path / "res"))
    rows = store.query(
        "SELECT system_kind, status, len(units) AS n, notes FROM retrievals ORDER BY partition_key"
    ).to_pylist()
    assert len(rows) == 8 and {r["system_kind"] for r in rows} == {PLUGIN_REF}
    assert all(r["status"] == "ok" and r["n"] > 0 and '"sessions_kept": 1' in r["notes"] for r in rows)
    answers = store.query("SELECT count(*) AS n FROM answers WHERE system = 'recent' AND status = 'ok'").to_pylist()
    assert answers == [{"n": 8}]
    judged = store.query("SELECT count(*) AS n FROM judgments WHERE system = 'recent' AND status = 'ok'").to_pylist()
    assert judged == [{"n": 8}]


def test_entry_point_name_resolves_once_installed(
    plugin_path: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed distribution's entry point (a dist-info on sys.path, as pip writes it)."""
    site = tmp_path / "site"
    info = site / "membench_example_plugins-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: membench-example-plugins\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP_MEMORY_SYSTEMS}]\nrecent_sessions = {PLUGIN_REF}\n")
    monkeypatch.syspath_prepend(str(site))
    config = _write(tmp_path, [{"name": "recent", "kind": "recent_sessions", "params": {"sessions": 3}}])
    resolved = check_config(load_config(str(config)))
    [spec] = resolved.memory_systems
    assert spec.impl is MEMORY_SYSTEMS.get("recent_sessions")
    assert spec.impl.__name__ == "RecentSessionsMemory" and spec.params_json() == {"sessions": 3}


@pytest.mark.parametrize(
    ("kind", "params", "message"),
    [
        ("no_such_pkg.memory:Memory", {}, r"kind: cannot import module 'no_such_pkg.memory'.*ModuleNotFoundError"),
        ("membench_example_plugins.recent:Missing", {}, r"kind: module 'membench_example_plugins.recent' has no attr"),
        ("membench_example_plugins.recent:RecentSessionsParams", {}, r"kind: .*is not a memory system: missing"),
        ("membench_example_plugins.recent:render", {}, r"kind: .*expected a memory system class, got function"),
        (PLUGIN_REF, {"session": 2}, r"params.session: unknown parameter; allowed: sessions"),
        (PLUGIN_REF, {"sessions": 0}, r"params.sessions: Input should be greater than or equal to 1"),
        ("no_such_entry_point", {}, r"kind: unknown memory system 'no_such_entry_point'; known: .*package.module:Name"),
    ],
)
def test_broken_plugins_fail_at_load_naming_file_entry_and_key(
    plugin_path: None, tmp_path: Path, kind: str, params: dict[str, object], message: str
) -> None:
    systems = [{"name": "full", "kind": "full_context"}, {"name": "mine", "kind": kind, "params": params}]
    config = _write(tmp_path, systems)
    with pytest.raises(ConfigError, match=rf"{config}: memory_systems\[1\] \(name: mine\): {message}"):
        build_defs(str(config))
