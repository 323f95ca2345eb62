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

from assets.clients import StageClients
from pipeline.cli.main import main
from pipeline.config.model import BenchmarkConfig, ConfigError, DatasetConfig, LLMConfig, load_config
from pipeline.definitions import build_defs
from pipeline.kinds.resolve import check_config, load_benchmark
from pipeline.llm.client import client_for
from pipeline.memory.base import MemoryDeps
from pipeline.memory.systems import system_specs
from pipeline.readers.run import answer_units
from pipeline.store.results import ResultStore
from resources.factory import build_resources
from tests.conftest import PROJECT_ROOT

CLIENT_KEYS = ("embeddings", "llm", "judge_llm")  # the resources a stage hands its components

LOCOMO = {"name": "loco", "loader": "locomo", "path": str(PROJECT_ROOT / "pipeline/sample_data/locomo_sample.json")}


def _config(tmp_path: Path, **sections: object) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"results_dir": str(tmp_path / "res"), "datasets": [LOCOMO], **sections}))
    load_config.cache_clear()
    return path


CASES = [
    (
        {"memory_systems": [{"name": "rag", "kind": "rag"}, {"name": "full", "kind": "full_context"},
                            {"name": "hybrid", "kind": "hybird"}]},
        r"memory_systems\[2\] \(name: hybrid\): kind: unknown memory system 'hybird'; "
        r"known: agent, flat_bm25, flat_dense, full_context, graphiti, hindsight, hybrid, langmem,",
    ),
    (
        {"memory_systems": [{"name": "rag", "kind": "rag", "params": {"topk": 5}}]},
        r"memory_systems\[0\] \(name: rag\): params.topk: unknown parameter; allowed: .*top_k",
    ),
    (
        {"readers": [{"name": "offline", "kind": "offlien"}]},
        r"readers\[0\] \(name: offline\): kind: unknown reader 'offlien'; known: agentic, llm, offline",
    ),
    (
        {"judges": [{"name": "f1", "kind": "locomo_f1"}, {"name": "x", "kind": "locomo_f2"}]},
        r"judges\[1\] \(name: x\): kind: unknown judge 'locomo_f2'; known: ",
    ),
    (
        {"judges": [{"name": "f1", "kind": "locomo_f1", "params": {"model": "gpt-4o"}}]},
        r"judges\[0\] \(name: f1\): params.model: unknown parameter; allowed: none",
    ),
    (
        {"readers": [{"name": "gpt", "kind": "llm"}]},
        r"readers\[0\] \(name: gpt\): kind: 'llm' needs an LLM but the config has no 'llm:' block",
    ),
    (
        {"judges": [{"name": "j", "kind": "locomo_llm_judge"}]},
        r"judges\[0\] \(name: j\): kind: 'locomo_llm_judge' needs an LLM but the config has no 'judge_llm:' or",
    ),
    (
        {"memory_systems": [{"name": "rag", "kind": "rag", "datasets": ["locomo"]}]},
        r"memory_systems\[0\] \(name: rag\): datasets: unknown dataset\(s\) \['locomo'\]; the config's",
    ),
    (
        {"memory_systems": [{"name": "rag", "kind": "rag", "params": {"top_k": "ten"}}]},
        r"memory_systems\[0\] \(name: rag\): params.top_k: Input should be a valid integer.*\(got 'ten'\)",
    ),
]


@pytest.mark.parametrize(("sections", "message"), CASES)
def test_mistakes_fail_when_the_definitions_load(tmp_path: Path, sections: dict[str, object], message: str) -> None:
    path = _config(tmp_path, **sections)
    with pytest.raises(ConfigError, match=rf"^{path}: {message}"):
        build_defs(str(path))


def test_an_unknown_loader_names_the_dataset_entry(tmp_path: Path) -> None:
    path = tmp_path / "loader.yaml"
    path.write_text(yaml.safe_dump({"datasets": [LOCOMO, {**LOCOMO, "name": "lme", "loader": "longmemevl"}]}))
    with pytest.raises(ConfigError, match=r"datasets\[1\] \(name: lme\): loader: unknown loader 'longmemevl'"):
        check_config(load_config(str(path)))


def test_check_config_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(PROJECT_ROOT / "configs/sample.yaml")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "ok: config 'sample'" in out[0] and "hybrid (hybrid)" in out[0]
    bad = _config(tmp_path, readers=[{"name": "offline", "kind": "offlien"}])
    assert main(["check-config", str(bad)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1
    assert err[0].startswith(f"membench check-config: {bad}: readers[0] (name: offline): kind: unknown reader")
    assert main(["check-config", str(tmp_path / "missing.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err


def test_params_are_parsed_once_and_shared_by_hashes_and_builds(tmp_path: Path) -> None:
    path = str(_config(tmp_path, memory_systems=[{"name": "rag", "kind": "rag", "params": {"top_k": 7}}]))
    res = load_benchmark(path)
    assert load_benchmark(path) is res  # one resolution per process and config file
    cfg = res.config
    [entry] = res.memory_systems
    [spec] = system_specs(res, "loco")
    assert system_specs(res, "loco")[0] is spec  # unit hashes computed once per benchmark, not per call
    assert spec.entry is entry and entry.params.top_k == 7  # type: ignore[attr-defined]
    clients = StageClients(**{k: v for k, v in build_resources(cfg).items() if k in CLIENT_KEYS})
    encoder = clients.deps(cfg, ResultStore(results_dir=str(tmp_path / "res")), (True, False)).encoder
    built = spec.build(MemoryDeps(encoder=encoder))  # the model loads on first use only
    assert built.params is entry.params  # type: ignore[attr-defined]  # the parsed model itself, not a re-parse
    [unit] = answer_units(res, "loco")
    assert unit.reader.name == "offline"  # the default reader is resolved like a written one


def _bench(tmp_path: Path, llm: LLMConfig | None) -> BenchmarkConfig:
    ds = DatasetConfig(name="d", loader="locomo", path="x.json")
    return BenchmarkConfig(datasets=(ds,), llm=llm, results_dir=str(tmp_path / "res"), source=str(tmp_path / "a.yaml"))


def test_the_stages_llm_is_the_configs(tmp_path: Path) -> None:
    """One source of truth: the ``llm`` resource reads its endpoint from the benchmark object (no
    settings of its own to disagree with the config) and holds one client for the run."""
    llm = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m-1", max_tokens=64, max_concurrency=3)
    path = _config(tmp_path, llm=llm.model_dump())
    cfg = load_config(str(path))
    resources = build_resources(cfg)
    assert set(resources) == {"benchmark", "store", "embeddings", "llm", "judge_llm"}
    client = resources["llm"].client()
    assert client is not None and (client.model, client.max_tokens, client.base_url) == ("m-1", 64, llm.base_url)
    assert client.cache_dir == str(tmp_path / "res" / "llm_cache") and client.api_key == ""  # key read at call time
    assert resources["llm"].client() is client  # one client per bound resource: one gate for the run
    judges = resources["judge_llm"].client()
    assert judges is not None and judges.model == "m-1"  # no judge_llm: the judges use the llm endpoint
    assert resources["store"].store() == ResultStore(results_dir=str(tmp_path / "res"))
    clients = StageClients(**{k: v for k, v in resources.items() if k in CLIENT_KEYS})
    deps = clients.deps(cfg, ResultStore(results_dir=str(tmp_path / "res")), (False, True))
    assert deps.llm is client and deps.encoder is None and deps.workers == 3
    assert client_for(_bench(tmp_path, None)) is None
    other = client_for(_bench(tmp_path, llm.model_copy(update={"model": "m-2"})))
    assert other is not None and other.model == "m-2" and other is not client  # a switched config, its own client
