"""Config mistakes fail when Dagster loads the definitions, and the run's resources are the config's."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets.clients import StageClients
from pipeline.config.model import BenchmarkConfig, ConfigError, DatasetConfig, LLMConfig, load_config
from pipeline.definitions import build_defs
from pipeline.llm.client import client_for
from pipeline.store.results import ResultStore
from resources.factory import build_resources
from tests.support.configs import CASES, write_config

CLIENT_KEYS = ("embeddings", "llm", "judge_llm")  # the resources a stage hands its components


def _bench(tmp_path: Path, llm: LLMConfig | None) -> BenchmarkConfig:
    ds = DatasetConfig(name="d", loader="locomo", path="x.json")
    return BenchmarkConfig(datasets=(ds,), llm=llm, results_dir=str(tmp_path / "res"), source=str(tmp_path / "a.yaml"))


@pytest.mark.parametrize(("sections", "message"), CASES)
def test_mistakes_fail_when_the_definitions_load(tmp_path: Path, sections: dict[str, object], message: str) -> None:
    path = write_config(tmp_path, **sections)
    with pytest.raises(ConfigError, match=rf"^{path}: {message}"):
        build_defs(str(path))


def test_the_stages_llm_is_the_configs(tmp_path: Path) -> None:
    """One source of truth: the ``llm`` resource reads its endpoint from the benchmark object (no
    settings of its own to disagree with the config) and holds one client for the run."""
    llm = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m-1", max_tokens=64, max_concurrency=3)
    path = write_config(tmp_path, llm=llm.model_dump())
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
