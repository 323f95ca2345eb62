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


REMOTE = {"base_url": "https://llm.example.invalid/v1", "model": "m", "api_key_env": "MEMBENCH_TEST_UNSET_KEY"}


def _check_config_err(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["check-config", str(path)])
    return code, capsys.readouterr().err.strip().splitlines()


def test_a_remote_endpoint_without_its_key_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMBENCH_TEST_UNSET_KEY", raising=False)
    path = write_config(tmp_path, readers=[{"name": "gpt", "kind": "llm"}], llm=REMOTE)
    code, err = _check_config_err(path, capsys)
    assert code == 2 and len(err) == 1, err
    assert f"{path}: llm: api_key_env: $MEMBENCH_TEST_UNSET_KEY is not set" in err[0]
    assert "https://llm.example.invalid/v1 is not a local server (needed by readers[0] (name: gpt))" in err[0]
    monkeypatch.setenv("MEMBENCH_TEST_UNSET_KEY", "")  # set but empty: no key either
    assert _check_config_err(path, capsys)[0] == 2
    monkeypatch.setenv("MEMBENCH_TEST_UNSET_KEY", "sk-test")
    assert _check_config_err(path, capsys) == (0, [])


def test_the_judges_own_endpoint_and_the_default_llm_judges_need_their_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMBENCH_TEST_UNSET_KEY", raising=False)
    local = {**REMOTE, "base_url": "http://127.0.0.1:8765/v1"}  # a local server needs no key
    judged = write_config(
        tmp_path, judges=[{"name": "j", "kind": "locomo_llm_judge"}], llm=local, judge_llm={**REMOTE, "model": "judge"}
    )
    code, err = _check_config_err(judged, capsys)
    assert code == 2 and "judge_llm: api_key_env: $MEMBENCH_TEST_UNSET_KEY" in err[0]
    assert "(needed by judges[0] (name: j))" in err[0]
    defaults = write_config(tmp_path, llm=REMOTE)  # no judges: LoCoMo's default LLM judge is bound to llm:
    code, err = _check_config_err(defaults, capsys)
    assert code == 2 and "llm: api_key_env" in err[0] and "(needed by the default judges (locomo_llm_judge))" in err[0]
    assert _check_config_err(
        write_config(tmp_path, judges=[{"name": "j", "kind": "locomo_llm_judge"}], llm=local), capsys
    ) == (0, [])
    offline_only = write_config(tmp_path, judges=[{"name": "f1", "kind": "locomo_f1"}], llm=REMOTE)
    assert _check_config_err(offline_only, capsys) == (0, [])  # nothing calls the endpoint: no key needed
