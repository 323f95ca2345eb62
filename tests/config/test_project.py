"""Where a config's relative paths, the default config and ``membench:`` paths resolve
(pipeline/config/project.py): the clone's own configs as before, a project folder's against that
folder, an installed membench outside any project refused with the command that makes one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.config import project
from pipeline.config.model import ConfigError, config_path_from_env, load_config
from tests.support.paths import PROJECT_ROOT, SAMPLE_DATA

SAMPLE = {"name": "loco", "loader": "locomo", "path": "membench:pipeline/sample_data/locomo_sample.json"}


def _config(folder: Path, **extra: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"datasets": [SAMPLE, {**SAMPLE, "name": "rel", "path": "data/x.json"}], **extra}))
    load_config.cache_clear()
    return path


def test_a_project_resolves_relative_paths_against_its_folder(tmp_path: Path) -> None:
    (tmp_path / "workspace.yaml").write_text("load_from: []\n")
    cfg = load_config(str(_config(tmp_path / "configs")))
    assert cfg.base_dir == tmp_path.resolve()
    assert cfg.resolved_results_dir() == tmp_path.resolve() / "results" / "sample"
    assert cfg.resolved_prices_path() == tmp_path.resolve() / "configs" / "prices.yaml"
    bundled, relative = (d.resolved_path(cfg.base_dir) for d in cfg.datasets)
    assert bundled == (SAMPLE_DATA / "locomo_sample.json").resolve() and bundled.is_file()
    assert relative == tmp_path.resolve() / "data" / "x.json"


def test_a_config_outside_any_project_resolves_in_the_clone_as_before(tmp_path: Path) -> None:
    cfg = load_config(str(_config(tmp_path)))
    assert project.in_clone()  # the tests run from a checkout
    assert cfg.base_dir == PROJECT_ROOT and cfg.resolved_results_dir() == PROJECT_ROOT / "results" / "sample"


def test_installed_outside_a_project_a_config_resolves_in_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project, "in_clone", lambda: False)
    cfg = load_config(str(_config(tmp_path / "elsewhere")))
    assert cfg.base_dir == (tmp_path / "elsewhere").resolve()


def test_the_default_config_is_the_working_directory_projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMBENCH_CONFIG", raising=False)
    (tmp_path / "workspace.yaml").write_text("load_from: []\n")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "sample.yaml").write_text("datasets: []\n")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")  # anywhere inside the project
    assert config_path_from_env() == tmp_path.resolve() / "configs" / "sample.yaml"
    monkeypatch.chdir(tmp_path.parent)  # outside any project: the clone's own
    assert config_path_from_env() == PROJECT_ROOT / "configs" / "sample.yaml"


def test_installed_outside_a_project_the_default_config_names_membench_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMBENCH_CONFIG", raising=False)
    monkeypatch.setattr(project, "in_clone", lambda: False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"no membench project in .*: create one with `membench init DIR`"):
        config_path_from_env()


def test_bundled_paths_name_the_shipped_files() -> None:
    shipped = project.resolve_path("membench:configs/prices.yaml", Path("/nowhere"))
    assert shipped == PROJECT_ROOT / "configs" / "prices.yaml" and shipped.is_file()
    assert project.resolve_path("/abs/file.json", Path("/nowhere")) == Path("/abs/file.json")
    assert project.resolve_path("rel/file.json", Path("/base")) == Path("/base/rel/file.json")
