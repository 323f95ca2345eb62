"""Stages use the bound ``llm`` resource only when it agrees with the config's ``llm:`` section.

Why: unit hashes come from the config; a resource pointing at another model would file its
replies under the config's model name.
"""

from __future__ import annotations

import dagster as dg
import pytest

from assets.stage_deps import resolve_llm
from pipeline.config import BenchmarkConfig, DatasetConfig, LLMConfig
from pipeline.resources_factory import build_llm
from resources.llm import LLMResource

LLM = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m-1", temperature=0.0, max_tokens=64)


def config(llm: LLMConfig | None) -> BenchmarkConfig:
    ds = DatasetConfig(name="d", loader="locomo", path="x.json")
    return BenchmarkConfig(datasets=(ds,), llm=llm, source="cfg.yaml")


@pytest.fixture
def context() -> dg.AssetExecutionContext:
    return dg.build_asset_context()


def test_the_factory_resource_is_used_as_is(context: dg.AssetExecutionContext) -> None:
    cfg = config(LLM)
    bound = build_llm(cfg)
    assert isinstance(bound, LLMResource)
    assert resolve_llm(context, cfg, bound) is bound


@pytest.mark.parametrize(
    ("field", "value"),
    [("model", "m-2"), ("base_url", "http://127.0.0.1:10/v1"), ("temperature", 0.7), ("max_tokens", 10)],
)
def test_a_resource_disagreeing_with_the_config_fails(
    context: dg.AssetExecutionContext, field: str, value: object
) -> None:
    bound = build_llm(config(LLM.model_copy(update={field: value})))
    with pytest.raises(dg.Failure, match=f"{field}: resource {value!r} vs config"):
        resolve_llm(context, config(LLM), bound)


def test_no_llm_section_means_no_llm_and_missing_binding_falls_back(context: dg.AssetExecutionContext) -> None:
    assert resolve_llm(context, config(None), None) is None
    built = resolve_llm(context, config(LLM), None)
    assert isinstance(built, LLMResource) and built.model == "m-1" and built.max_tokens == 64
