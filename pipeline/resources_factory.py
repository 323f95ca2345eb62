"""Build the Dagster resources of a benchmark config.

Why here and not in YAML run config: the benchmark config already names the embedding model and
the LLM endpoint; deriving the resources from it keeps one source of truth. The API key only
ever travels as ``dg.EnvVar`` (Dagster stores the variable's name, never its value).
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg

from pipeline.config import PROJECT_ROOT, BenchmarkConfig
from resources.benchmark import BenchmarkResource
from resources.embeddings import EmbeddingResource
from resources.llm import CACHE_SUBDIR, LLMResource


def build_llm(cfg: BenchmarkConfig) -> LLMResource | dg.ResourceDefinition:
    """The ``llm`` resource, or a None resource when the config has no ``llm:`` block."""
    if cfg.llm is None:
        return dg.ResourceDefinition.none_resource(description="no LLM endpoint configured")
    llm = cfg.llm
    key: Any = dg.EnvVar(llm.api_key_env) if os.environ.get(llm.api_key_env) else ""
    prices = (PROJECT_ROOT / cfg.prices_path).resolve()
    cache_dir = cfg.resolved_results_dir() / CACHE_SUBDIR
    return LLMResource.from_config(llm, cache_dir=str(cache_dir), prices_path=str(prices), api_key=key)


def build_resources(cfg: BenchmarkConfig) -> dict[str, Any]:
    emb = cfg.embeddings
    return {
        "benchmark": BenchmarkResource(config_path=cfg.source),
        "embeddings": EmbeddingResource.from_config(emb),
        "llm": build_llm(cfg),
    }
