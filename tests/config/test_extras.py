"""A config naming a kind whose extra is missing fails at ``membench check-config`` in one line that
names the extra and the command installing it (pipeline/config/extras.py), for every optional kind."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from pipeline.agentic.mcp import memory as mcp_memory
from pipeline.cli.main import main
from pipeline.config import extras, project
from pipeline.config.model import load_config

LOCOMO = {"name": "loco", "loader": "locomo", "path": "membench:pipeline/sample_data/locomo_sample.json"}
MCP_PARAMS = {"command": ["{python}", "-m", "pipeline.agentic.mcp.server", "--data", "{data_file}"],
              "ingest_tool": "remember", "search_tool": "recall"}  # fmt: skip
# kind -> (params, the module whose absence makes its extra missing)
KINDS = {
    "mem0": ({}, "mem0"),
    "langmem": ({}, "langmem"),
    "graphiti": ({}, "kuzu"),
    "mcp": (MCP_PARAMS, "mcp"),
}


def _check(tmp_path: Path, kind: str, params: dict[str, object], capsys: pytest.CaptureFixture[str]) -> str:
    config = tmp_path / f"{kind}.yaml"
    config.write_text(yaml.safe_dump({
        "datasets": [LOCOMO],
        "memory_systems": [{"name": f"my_{kind}", "kind": kind, "params": params}],
        "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
    }))  # fmt: skip
    load_config.cache_clear()
    assert main(["check-config", str(config)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_missing_extra_is_one_line_naming_it(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    params, module = KINDS[kind]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == module else real(m, *a))
    err = _check(tmp_path, kind, params, capsys)
    assert f"memory_systems[0] (name: my_{kind})" in err
    assert f"needs the extra membench[{kind}]" in err and f"run `bash scripts/setup.sh --extras {kind}`" in err


def test_missing_hindsight_server_names_its_extra(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    venv = tmp_path / "no-server"
    err = _check(tmp_path, "hindsight", {"server_venv": str(venv)}, capsys)
    assert "needs the extra membench[hindsight]" in err and f"`membench install-hindsight --venv {venv}`" in err


def test_installed_the_command_is_pip_or_the_server_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(project, "in_clone", lambda: False)
    assert extras.install_command("mem0") == "pip install 'membench[mem0]'"
    assert extras.install_command("hindsight") == "membench install-hindsight"
    assert "run `pip install 'membench[graphiti]'`" in extras.missing_extra("graphiti", "graphiti-core", "kuzu")


def test_npm_servers_missing_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command naming {npm_servers} (the npm server-memory) before they are installed."""
    monkeypatch.setattr(mcp_memory, "NPM_SERVERS", tmp_path / "npm" / "node_modules")
    params = {**MCP_PARAMS, "command": ["node", "{npm_servers}/@modelcontextprotocol/server-memory/dist/index.js"]}
    err = _check(tmp_path, "mcp", params, capsys)
    assert f"run `npm ci --prefix {tmp_path / 'npm'}`" in err
