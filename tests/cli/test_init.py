"""``membench init DIR``: the project it writes loads as a project (config, results and Dagster home in
DIR, datasets the bundled samples), a second init keeps what was edited, and the virtualenv hook is
added once. The whole flow from a built wheel in a fresh virtualenv: tests/tree/test_installed_package.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pipeline.cli import init as init_mod
from pipeline.cli.main import main
from pipeline.cli.project_cmds import load_project_env
from pipeline.config.model import config_path_from_env, load_config
from tests.support.paths import PROJECT_ROOT, SAMPLE_DATA

FILES = {
    "configs/sample.yaml", "configs/prices.yaml", ".dagster_home/dagster.yaml", "workspace.yaml", "README.md",
    ".gitignore", ".env",
}  # fmt: skip


def _init(target: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["init", str(target), "--no-venv-hook"]) == 0  # never the virtualenv running the tests
    return capsys.readouterr().out


def test_init_writes_a_project_that_loads_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "bench"
    out = _init(project, capsys)
    assert {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()} == FILES
    assert f"cd {project} && dagster job execute -j full_benchmark && membench results" in out
    copies = {"configs/sample.yaml": "configs/sample.yaml", "configs/prices.yaml": "configs/prices.yaml",
              ".dagster_home/dagster.yaml": "configs/dagster.yaml"}  # fmt: skip
    for written, shipped in copies.items():
        assert (project / written).read_bytes() == (PROJECT_ROOT / shipped).read_bytes()
    env = dict(line.split("=", 1) for line in (project / ".env").read_text().splitlines() if "=" in line)
    assert env["DAGSTER_HOME"] == str(project / ".dagster_home")
    assert yaml.safe_load((project / "workspace.yaml").read_text())["load_from"][0]["python_module"] == {
        "module_name": "pipeline.definitions", "working_directory": ".",
    }  # fmt: skip

    monkeypatch.delenv("MEMBENCH_CONFIG", raising=False)
    for name in env:  # main() applies the project's .env to this process: restored after the test
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.chdir(project)
    load_config.cache_clear()
    cfg = load_config(str(config_path_from_env()))
    assert cfg.source == str(project / "configs" / "sample.yaml") and cfg.base_dir == project
    assert cfg.resolved_results_dir() == project / "results" / "sample"
    assert [d.resolved_path(cfg.base_dir).parent for d in cfg.datasets] == [SAMPLE_DATA] * 4
    assert main(["check-config", "configs/sample.yaml"]) == 0
    assert "ok: config 'sample'; 4 dataset(s)" in capsys.readouterr().out


def test_a_second_init_keeps_edits_and_follows_a_moved_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    _init(first, capsys)
    (first / "configs" / "sample.yaml").write_text("datasets: []  # mine\n")
    with (first / ".env").open("a") as f:
        f.write("OPENAI_API_KEY=sk-mine\n")
    moved = tmp_path / "moved"
    first.rename(moved)
    out = _init(moved, capsys)
    assert "written: .env" in out and "kept (already there): configs/sample.yaml" in out
    assert (moved / "configs" / "sample.yaml").read_text() == "datasets: []  # mine\n"
    env = (moved / ".env").read_text()
    assert f"DAGSTER_HOME={moved / '.dagster_home'}\n" in env and "OPENAI_API_KEY=sk-mine\n" in env
    assert "first" not in env
    assert "kept (already there): .env" in _init(moved, capsys)  # nothing left to change


def test_the_virtualenv_hook_is_added_once(tmp_path: Path) -> None:
    activate = tmp_path / "bin" / "activate"
    activate.parent.mkdir()
    activate.write_text("# a virtualenv's activate\nexport VIRTUAL_ENV=/x\n")
    result = init_mod.init_project(tmp_path / "p", activate)
    assert result.hook_added and not init_mod.init_project(tmp_path / "p", activate).hook_added
    text = activate.read_text()
    assert text.startswith("# a virtualenv's activate\nexport VIRTUAL_ENV=/x\n") and text.count(init_mod.VENV_MARK) == 1
    assert 'export DAGSTER_CLI_JOB_EXECUTE_MODULE_NAME="pipeline.definitions"' in text
    # an older hook is replaced, not stacked
    activate.write_text(text.replace("JOB_LAUNCH", "JOB_OLD"))
    assert init_mod.add_venv_hook(activate) and activate.read_text().count(init_mod.VENV_MARK) == 1
    assert "JOB_OLD" not in activate.read_text()


def test_the_hook_matches_what_the_setup_writes_for_the_clone(tmp_path: Path) -> None:
    """The clone's .venv and a researcher's virtualenv point the dagster CLI at the same definitions; in
    the clone's .venv, whose set-up block already does (and sets its DAGSTER_HOME), init adds nothing."""
    setup = (PROJECT_ROOT / "scripts" / "setup.sh").read_text()
    exports = [line for line in init_mod.venv_hook().splitlines() if "MODULE_NAME" in line]
    assert exports and all(line in setup for line in exports)
    start = setup.index("$MARK\n")
    block = setup[start : setup.index("# <<< membench <<<", start)].replace("$MARK", "# >>> membench >>>")
    activate = tmp_path / "activate"
    activate.write_text("export VIRTUAL_ENV=/clone/.venv\n" + block.replace("$ROOT", "/clone") + "# <<< membench <<<\n")
    before = activate.read_text()
    assert not init_mod.add_venv_hook(activate) and activate.read_text() == before


def test_init_refuses_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["init", str(target), "--no-venv-hook"]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_membench_reads_the_projects_env_as_dagster_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("# comment\nDAGSTER_HOME=/somewhere/.dagster_home\nMEMBENCH_TEST_VALUE='a b'\n")
    monkeypatch.setenv("DAGSTER_HOME", "/from/the/shell")  # the file wins, as in `dagster job execute`
    monkeypatch.setenv("MEMBENCH_TEST_VALUE", "")  # restored (removed) after the test
    assert load_project_env(tmp_path) == ["DAGSTER_HOME", "MEMBENCH_TEST_VALUE"]
    assert (os.environ["DAGSTER_HOME"], os.environ["MEMBENCH_TEST_VALUE"]) == ("/somewhere/.dagster_home", "a b")
    assert load_project_env(tmp_path / "nothing-here") == []
