"""Config mistakes fail at load, naming the file, the entry and the key (issue 12 item 2).

Why at load: a wrong ``kind`` or param used to surface only when its stage ran, after the
canonical tables and the embeddings. Covered: the resolver itself, the real Dagster definitions
(``build_defs``: what ``dagster job execute`` loads), ``membench check-config``, params parsed
once, and the single source of settings (the stages' LLM and encoder come from the config).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.cli.main import main
from pipeline.config.model import ConfigError, load_config
from pipeline.embeddings.encoder import store_encoder
from pipeline.kinds.resolve import check_config, load_benchmark
from pipeline.memory.base import MemoryDeps
from pipeline.memory.systems import system_specs
from pipeline.readers.run import answer_units
from pipeline.store.results import ResultStore
from tests.support.configs import LOCOMO, write_config
from tests.support.paths import PROJECT_ROOT


def test_an_unknown_loader_names_the_dataset_entry(tmp_path: Path) -> None:
    path = tmp_path / "loader.yaml"
    path.write_text(yaml.safe_dump({"datasets": [LOCOMO, {**LOCOMO, "name": "lme", "loader": "longmemevl"}]}))
    with pytest.raises(ConfigError, match=r"datasets\[1\] \(name: lme\): loader: unknown loader 'longmemevl'"):
        check_config(load_config(str(path)))


def test_check_config_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(PROJECT_ROOT / "configs/sample.yaml")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "ok: config 'sample'" in out[0] and "hybrid (hybrid)" in out[0]
    bad = write_config(tmp_path, readers=[{"name": "offline", "kind": "offlien"}])
    assert main(["check-config", str(bad)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1
    assert err[0].startswith(f"membench check-config: {bad}: readers[0] (name: offline): kind: unknown reader")
    assert main(["check-config", str(tmp_path / "missing.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err


def test_params_are_parsed_once_and_shared_by_hashes_and_builds(tmp_path: Path) -> None:
    path = str(write_config(tmp_path, memory_systems=[{"name": "rag", "kind": "rag", "params": {"top_k": 7}}]))
    res = load_benchmark(path)
    assert load_benchmark(path) is res  # one resolution per process and config file
    cfg = res.config
    [entry] = res.memory_systems
    [spec] = system_specs(res, "loco")
    assert system_specs(res, "loco")[0] is spec  # unit hashes computed once per benchmark, not per call
    assert spec.entry is entry and entry.params.top_k == 7  # type: ignore[attr-defined]
    encoder = store_encoder(cfg.embeddings, ResultStore(results_dir=str(tmp_path / "res")))
    built = spec.build(MemoryDeps(encoder=encoder))  # the model loads on first use only
    assert built.params is entry.params  # type: ignore[attr-defined]  # the parsed model itself, not a re-parse
    [unit] = answer_units(res, "loco")
    assert unit.reader.name == "offline"  # the default reader is resolved like a written one
