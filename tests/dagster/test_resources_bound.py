"""The stages run on the definitions' bound resources, built from the benchmark object.

The readers' LLM, the judges' LLM, the encoder and the result store are Dagster resources; each
holds a plain client that library code takes as a protocol (pipeline/ imports no Dagster). No
``lru_cache`` or factory list holds a client: a stage given another ``embeddings`` resource
encodes with that one, and the model loads once in the process however many stages use it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import dagster as dg
import pytest
import yaml

from pipeline.config.model import EmbeddingConfig
from pipeline.definitions import build_defs
from pipeline.embeddings import model as embeddings_module
from pipeline.embeddings.encoder import CachedEncoder
from pipeline.embeddings.spec import EmbeddingModelError
from pipeline.llm.client import ROLE_JUDGES, ROLE_READER, OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.store.results import ResultStore
from resources.benchmark import BenchmarkResource, ResultStoreResource
from resources.embeddings import EmbeddingResource
from resources.llm import LLMResource
from tests.support.dagster import lme_sample_config
from tests.support.llm import files_containing
from tests.support.paths import PROJECT_ROOT

STAGES = ("ingestion", "retrievals", "answers", "judgments")
# the types of clients and of the resources that hold them: none may be the result of a cached function
CLIENT_TYPES = {
    "OpenAIChatClient",
    "LLMResource",
    "ChatClient",
    "LLMClient",
    "CachedEncoder",
    "Encoder",
    "EmbeddingResource",
    "ResultStore",
    "ResultStoreResource",
}
CACHING_DECORATORS = {"lru_cache", "cache"}


def _config(tmp_path: Path, **extra: Any) -> Path:
    return lme_sample_config(
        tmp_path,
        "bound",
        memory_systems=[{"name": "rag", "kind": "rag", "params": {"top_k": 3}}],
        readers=[{"name": "offline", "kind": "offline"}],
        judges=[{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
        **extra,
    )


def test_the_definitions_bind_the_clients_resources(tmp_path: Path) -> None:
    llm = {"base_url": "http://127.0.0.1:9/v1", "model": "reader-m", "api_key_env": "NO_SUCH_KEY"}
    judge = {"base_url": "http://127.0.0.1:8/v1", "model": "judge-m", "api_key_env": "NO_SUCH_KEY"}
    defs = build_defs(str(_config(tmp_path, llm=llm, judge_llm=judge)))
    res = defs.resources
    assert isinstance(res["benchmark"], BenchmarkResource)
    assert isinstance(res["store"], ResultStoreResource) and isinstance(res["embeddings"], EmbeddingResource)
    assert isinstance(res["llm"], LLMResource) and isinstance(res["judge_llm"], LLMResource)
    assert (res["llm"].role, res["judge_llm"].role) == (ROLE_READER, ROLE_JUDGES)
    assert res["store"].store() == ResultStore(results_dir=str(tmp_path / "res"))
    reader, judges = res["llm"].client(), res["judge_llm"].client()
    assert isinstance(reader, OpenAIChatClient) and isinstance(judges, OpenAIChatClient)
    assert (reader.model, judges.model) == ("reader-m", "judge-m")
    stage_assets = [
        a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition) and any(k.path[-1] in STAGES for k in a.keys)
    ]
    assert len(stage_assets) == len(STAGES)
    for asset in stage_assets:
        assert {"benchmark", "store", "embeddings", "llm", "judge_llm"} <= asset.required_resource_keys
    readers_of_results = [
        a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition) and a.required_resource_keys
    ]
    assert len(readers_of_results) > len(STAGES)  # canonical, embeddings and the reports too
    for asset in readers_of_results:  # every asset gets the result store from the bound resource
        assert "store" in asset.required_resource_keys, asset.keys


def test_no_llm_section_means_no_client(tmp_path: Path) -> None:
    res = build_defs(str(_config(tmp_path))).resources
    assert res["llm"].client() is None and res["judge_llm"].client() is None


class CountingEmbeddings(EmbeddingResource):
    """The bound encoder resource, counting the encoders handed out (the embeddings asset's and the stages')."""

    handed_out: ClassVar[list[str]] = []

    def store_encoder(self, store: ResultStore) -> CachedEncoder:
        type(self).handed_out.append(str(store.root))
        return super().store_encoder(store)


def test_the_stages_encode_with_the_bound_resource_and_load_the_model_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    real = embeddings_module.EmbeddingModel

    class CountedModel(real):  # type: ignore[misc, valid-type]
        def __init__(self, spec: Any) -> None:
            loads.append(spec.variant())
            super().__init__(spec)

    monkeypatch.setattr(embeddings_module, "EmbeddingModel", CountedModel)
    embeddings_module.load_model.cache_clear()
    CountingEmbeddings.handed_out.clear()
    config = _config(tmp_path)
    defs = build_defs(str(config))
    bound = defs.resources["embeddings"]
    resources = {**defs.resources, "embeddings": CountingEmbeddings(**bound.model_dump())}
    job = dg.Definitions(assets=defs.assets, resources=resources, jobs=defs.jobs).resolve_job_def("full_benchmark")
    try:
        with dg.instance_for_test() as instance:
            result = job.execute_in_process(instance=instance)
    finally:
        embeddings_module.load_model.cache_clear()  # no counted model left for later tests
    assert result.success
    root = str(ResultStore(results_dir=str(tmp_path / "res")).root)
    # the embeddings asset's encoder, then the rag memory's in ingestion and in retrievals: all from it
    assert len(CountingEmbeddings.handed_out) >= 3 and set(CountingEmbeddings.handed_out) == {root}
    assert loads == [bound.spec().variant()]  # one model load in the process for every stage


def _cached_functions(path: Path) -> list[tuple[str, str]]:
    """(function name, return annotation) of every lru_cache/cache-decorated function in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = {ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1] for d in node.decorator_list}
            if names & CACHING_DECORATORS:
                out.append((node.name, ast.unparse(node.returns) if node.returns else ""))
    return out


def test_no_cached_function_holds_a_client() -> None:
    cached = [
        (str(p.relative_to(PROJECT_ROOT)), name, returns)
        for folder in ("pipeline", "assets", "resources")
        for p in sorted((PROJECT_ROOT / folder).rglob("*.py"))
        for name, returns in _cached_functions(p)
    ]
    assert cached, "the scan found no cached function at all: it would prove nothing"
    holding = [c for c in cached if not c[2] or set(c[2].replace("|", " ").replace("[", " ").split()) & CLIENT_TYPES]
    assert holding == [], holding
    assert all(name != "_llm_client" for _p, name, _r in cached)


def test_embeddings_resource_mirrors_the_config_block() -> None:
    cfg = EmbeddingConfig(backend="fp32", batch_size=8, max_seq_length=128, num_threads=1)
    assert EmbeddingResource.from_config(cfg).settings() == cfg


def test_embeddings_resource_with_a_bad_backend_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="backend 'onnx' is unknown"):
        EmbeddingResource(backend="onnx").encoder(tmp_path)


KEY = "sk-membench-test-7f3a9c1e"
MODEL = "fake-model"
Q = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
]


@pytest.fixture
def capital_server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server() as srv:
        srv.add_rule("capital of France", "Paris is the capital.")
        yield srv


def test_key_never_reaches_dagster_storage(
    capital_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = capital_server
    monkeypatch.setenv("MEMBENCH_DAGSTER_TEST_KEY", KEY)
    prices_file = tmp_path / "prices.yaml"
    prices_file.write_text(f"models:\n  {MODEL}: {{input_per_1m: 2.0, output_per_1m: 10.0}}\n")

    @dg.asset
    def answer(llm: LLMResource) -> dg.MaterializeResult:
        client = llm.client()
        assert client is not None
        reply = client.chat(Q)
        return dg.MaterializeResult(metadata={**client.describe(), "text": reply.text or "", "ok": reply.ok})

    config = tmp_path / "bench.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "results_dir": str(tmp_path / "res"),
                "prices_path": str(prices_file),
                "datasets": [
                    {
                        "name": "d",
                        "loader": "locomo",
                        "path": str(PROJECT_ROOT / "pipeline/sample_data/locomo10_sample.json"),
                    }
                ],
                "llm": {"base_url": server.base_url, "model": MODEL, "api_key_env": "MEMBENCH_UNSET_KEY"},
            }
        )
    )
    benchmark = BenchmarkResource(config_path=str(config))
    resource = LLMResource(benchmark=benchmark, api_key=dg.EnvVar("MEMBENCH_DAGSTER_TEST_KEY"))
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        result = dg.materialize([answer], resources={"llm": resource}, instance=instance)
    assert result.success
    mat = result.asset_materializations_for_node("answer")[0]
    assert mat.metadata["ok"].value is True and mat.metadata["text"].value == "Paris is the capital."
    assert server.auth_headers == [f"Bearer {KEY}"]
    assert any(home.rglob("*.db"))
    assert files_containing(tmp_path, KEY) == []
