"""Commands printed for copying carry the config selection: copied into a fresh shell, they run the
config they were printed for, not configs/sample.yaml."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from pipeline.config.model import DEFAULT_CONFIG
from pipeline.config.printed_commands import config_selection
from tests.support.cli import configs, run

__all__ = ["configs"]  # fixtures (configs: results with one failed answer)


def _selected_config(line: str) -> Path:
    """The file a copied command line would select (its MEMBENCH_CONFIG=... word)."""
    words = shlex.split(line.split(":  ", 1)[-1].strip("` "))
    [selection] = [w for w in words if w.startswith("MEMBENCH_CONFIG=")]
    return Path(os.path.abspath(selection.removeprefix("MEMBENCH_CONFIG=")))


def test_failed_prints_rerun_commands_with_the_config(
    configs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run(["--config", configs["RUN"], "failed"], capsys)
    assert rc == 1  # questions failed
    commands = [
        line for line in out.splitlines() if "dagster job execute" in line or "dagster asset materialize" in line
    ]
    assert len(commands) == 2
    for line in commands:
        assert _selected_config(line) == Path(configs["RUN"])
    assert "MEMBENCH_CONFIG=" in commands[0] and commands[0].endswith("dagster job execute -j full_benchmark")


def test_no_results_yet_prints_the_first_run_with_the_config(
    configs: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = run(["--config", configs["EMPTY"], "progress"], capsys)
    assert rc == 2 and "no results yet" in err
    assert _selected_config(err.split("run `", 1)[1].split("`", 1)[0]) == Path(configs["EMPTY"])


def test_the_default_config_needs_no_selection() -> None:
    assert config_selection(DEFAULT_CONFIG) == ""
    assert config_selection("/elsewhere/my run.yaml") == "MEMBENCH_CONFIG='/elsewhere/my run.yaml' "
