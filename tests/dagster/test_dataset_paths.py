"""A dataset path that is missing or cannot be read is a config error at load (issue 24 item 2).

Why at load: ``check-config`` used to answer "ok" for a missing dataset file and the run then
failed in the embeddings step with a message about canonical tables. Now ``check-config`` and the
Dagster definitions (``build_defs``) both stop with one line naming the config file, the dataset
entry, the key ``path`` and what is wrong with the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.cli.main import main
from pipeline.config.model import ConfigError, load_config
from pipeline.definitions import build_defs
from tests.support.paths import PROJECT_ROOT

GOOD = {"name": "loco", "loader": "locomo", "path": str(PROJECT_ROOT / "pipeline/sample_data/locomo_sample.json")}


def _config(tmp_path: Path, path: Path) -> Path:
    cfg = {
        "results_dir": str(tmp_path / "res"),
        "datasets": [GOOD, {"name": "lme", "loader": "longmemeval", "path": str(path)}],
    }
    out = tmp_path / "paths.yaml"
    out.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    return out


def _bad_path(tmp_path: Path, how: str) -> tuple[Path, str]:
    """A dataset path broken in one way, and the words the error must use."""
    if how == "missing":
        return tmp_path / "nowhere" / "lme.json", "file not found"
    if how == "directory":
        folder = tmp_path / "a_folder.json"
        folder.mkdir()
        return folder, "is a directory, not a file"
    link = tmp_path / "dangling.json"  # a symlink whose target is gone: exists() is False, the name is listed
    link.symlink_to(tmp_path / "deleted.json")
    return link, "file not found"


@pytest.mark.parametrize("how", ["missing", "directory", "dangling_link"])
def test_check_config_refuses_a_dataset_path_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    bad, words = _bad_path(tmp_path, how)
    config = _config(tmp_path, bad)
    assert main(["check-config", str(config)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1, err
    assert err[0].startswith(f"membench check-config: {config}: datasets[1] (name: lme): path: "), err[0]
    assert str(bad) in err[0] and words in err[0]


def test_the_definitions_refuse_a_missing_dataset_path_at_load(tmp_path: Path) -> None:
    bad, _ = _bad_path(tmp_path, "missing")
    config = _config(tmp_path, bad)
    with pytest.raises(ConfigError, match=rf"^{config}: datasets\[1\] \(name: lme\): path: file not found: {bad}$"):
        build_defs(str(config))


def test_an_unreadable_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission bits do not stop root, so the open itself is made to fail as it would for a user."""
    bad = tmp_path / "lme.json"
    bad.write_text("[]")
    config = _config(tmp_path, bad)
    real_open = Path.open

    def deny(self: Path, *args: object, **kwargs: object) -> object:
        if self == bad:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", deny)
    with pytest.raises(ConfigError, match=r"datasets\[1\] \(name: lme\): path: cannot be read: .*Permission denied"):
        build_defs(str(config))


def test_a_readable_dataset_path_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json")
    assert main(["check-config", str(config)]) == 0
    assert "ok: config" in capsys.readouterr().out


def _folder_config(tmp_path: Path, loader: str, path: Path) -> Path:
    cfg = {"results_dir": str(tmp_path / "res"), "datasets": [GOOD, {"name": "b", "loader": loader, "path": str(path)}]}
    out = tmp_path / "folders.yaml"
    out.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    return out


def test_a_beam_folder_passes_and_a_folder_without_chats_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """BEAM is read from a folder: a tier folder passes, a folder holding no chat fails at load."""
    good = _folder_config(tmp_path, "beam", PROJECT_ROOT / "pipeline/sample_data/beam/100K")
    assert main(["check-config", str(good)]) == 0
    capsys.readouterr()
    empty = tmp_path / "empty_tier"
    empty.mkdir()
    bad = _folder_config(tmp_path, "beam", empty)
    assert main(["check-config", str(bad)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"datasets[1] (name: b): path: {empty}" in line and "no BEAM chat folder" in line
    plus = _folder_config(tmp_path, "locomo_plus", PROJECT_ROOT / "pipeline/sample_data/locomo_plus")
    assert main(["check-config", str(plus)]) == 0
